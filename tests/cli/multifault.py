#!/usr/bin/env python3
"""Randomized multi-fault test of HCOMM_OP_RETRY (docs/failover.md#several-faults).

Each seed draws two or three overlapping faults (HCCS links, NICs, spine cables, a link of a
likely relay NPU, the NIC of a likely lender, a fault timed to land in the re-execution of an
earlier one) on the scenario's topology, runs `hcsim run SCENARIO --fault ...`, and compares the
outcome with this script's own verdict, reached WITHOUT the library from the topology JSON:

  survivable  <=>  the NICs still alive reach each other through the switches (a spine path), and
                   every server's ranks can still be ordered on the op retry's ring
                   (docs/failover.md#op-retry-hcomm_op_retry1): a path over the server's NPUs in
                   which no two neighbours are a dead HCCS pair, every two neighbours have some
                   path left (a live HCCS link, PCIe peer-to-peer, a relay NPU with live HCCS links
                   to both, or both NICs alive), and, with several servers, both ends have live NICs.

The op retry's GO needs that ring order whatever path the re-execution then takes (relays, NIC
lenders or the ring itself), so this is the documented condition for a relay, a lender or the
ring to exist for every dead element.

  survivable:    exit 0, every result check passed bit for bit (int32 payload), no failed rank.
  unsurvivable:  exit 1, every rank has a failed operation (status 'failed', not a timeout) and a
                 failovers row whose code is one of those docs/failover.md lists as what a rank's
                 call returns on a fault; no device rejected a task.
Anything else (a mismatch, a device rejecting a task, a timeout, "not supported", exit 2, a
crash) fails the seed. Prints one line per seed and the counts.

Usage: multifault.py HCSIM SCENARIO DOCS_FAILOVER_MD HCOMM_H SEEDS [--keep DIR] [-v]
SEEDS: "1-80" or "3,7,9" (ranges and lists).
"""
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile

PRESET_NPUS = {"atlas800t-a2": 8, "atlas800-910": 8}
PRESET_HCCS = {"atlas800t-a2": "full-mesh", "atlas800-910": "groups-of-4"}
PRESET_PCIE_SWITCH = {"atlas800-910": True}
# A device that refused a malformed task, or the library refusing: never a fault's outcome.
FORBIDDEN = ["must read or write", "not supported", "out of relay channels", "cannot create streams", "invalid task"]


class Topo:
    """The hardware as the topology JSON describes it (servers written one by one, links by hand)."""

    def __init__(self, path):
        t = json.load(open(path))
        if "servers" not in t or "fabric" in t or "server_groups" in t:
            raise SystemExit(f"{path}: this test reads servers and links written one by one")
        self.servers = []  # (name, npus, pcie_switch)
        self.hccs = set()  # frozenset({"s/npuA", "s/npuB"})
        for s in t["servers"]:
            typ = s["type"]
            n = s.get("npus", {}).get("count", PRESET_NPUS.get(typ))
            topo = s.get("hccs", {}).get("topology", PRESET_HCCS.get(typ, "none"))
            sw = s.get("pcie", {}).get("switch", PRESET_PCIE_SWITCH.get(typ, False))
            names = [f"{s['name']}/npu{i}" for i in range(n)]
            self.servers.append((s["name"], names, sw))
            for i in range(n):
                for j in range(i + 1, n):
                    if topo == "full-mesh" or (topo == "groups-of-4" and i // 4 == j // 4):
                        self.hccs.add(frozenset((names[i], names[j])))
        self.nic = {}     # npu -> (switch, port)
        self.cables = []  # (switch, port, switch, port): between switches
        for l in t.get("links", []):
            a, b = l["a"], l["b"]
            if l["type"] == "hccs":
                self.hccs.add(frozenset((a, b)))
            elif "/npu" in a and l["type"] in ("roce", "ethernet"):
                sw, port = b.split("/")
                self.nic[a] = (sw, int(port))
            elif l["type"] in ("roce", "ethernet"):
                sa, pa = a.split("/")
                sb, pb = b.split("/")
                self.cables.append((sa, int(pa), sb, int(pb)))
        self.npus = [n for _, names, _ in self.servers for n in names]
        self.server_of = {n: s for s, names, _ in self.servers for n in names}
        self.pcie = {n: sw for _, names, sw in self.servers for n in names}

    def survivable(self, dead_hccs, dead_nics, dead_cables):
        # Spine path: the switches of the live NICs are connected over live cables.
        adj = {}
        for c in self.cables:
            if c in dead_cables:
                continue
            adj.setdefault(c[0], set()).add(c[2])
            adj.setdefault(c[2], set()).add(c[0])
        leaves = {self.nic[n][0] for n in self.npus if n in self.nic and n not in dead_nics}
        if leaves:
            start = next(iter(leaves))
            seen, todo = {start}, [start]
            while todo:
                x = todo.pop()
                for y in adj.get(x, ()):
                    if y not in seen:
                        seen.add(y)
                        todo.append(y)
            if not leaves <= seen:
                return False, "no spine path between the live NICs' leaves"
        live = lambda a, b: frozenset((a, b)) in self.hccs and frozenset((a, b)) not in dead_hccs
        nic_ok = lambda a: a in self.nic and a not in dead_nics
        multi = len(self.servers) > 1
        for name, m, sw in self.servers:
            def neighbours(a, b):
                if frozenset((a, b)) in dead_hccs:
                    return False
                if live(a, b) or sw or (nic_ok(a) and nic_ok(b)):
                    return True
                return any(k not in (a, b) and live(a, k) and live(k, b) for k in m)
            n = len(m)
            if n == 1:
                if multi and not nic_ok(m[0]):
                    return False, f"{m[0]}: its server's only NIC is dead"
                continue
            ok = [[neighbours(m[i], m[j]) for j in range(n)] for i in range(n)]
            # Hamiltonian path (with several servers, its ends with live NICs) or, with one server,
            # cycle (a path from NPU 0 whose end is adjacent to NPU 0), by DP over subsets.
            reach = [[False] * n for _ in range(1 << n)]
            for i in range(n):
                if (multi and nic_ok(m[i])) or (not multi and i == 0):
                    reach[1 << i][i] = True
            for mask in range(1 << n):
                for i in range(n):
                    if not reach[mask][i]:
                        continue
                    for j in range(n):
                        if not mask >> j & 1 and ok[i][j]:
                            reach[mask | 1 << j][j] = True
            full = (1 << n) - 1
            found = any(reach[full][j] and (nic_ok(m[j]) if multi else (n == 2 or ok[j][0])) for j in range(n))
            if not found:
                return False, f"server {name}: no ring order"
        return True, "a relay, lender or ring order and a spine path exist"


def draw(topo, seed):
    """Two or three faults: (kind, target, --fault string)."""
    rng = random.Random(seed)
    k = rng.choice([2, 3])
    links = sorted(tuple(sorted(p)) for p in topo.hccs)
    nics = sorted(topo.nic)
    faults, dead_h, dead_n, dead_c = [], set(), set(), set()
    first_rep, first_after, first_kind = None, None, None
    # When, after a fault, its re-execution starts (percent of the all-reduce's estimate, about
    # 100 us): HCCS faults are seen at once, a NIC's port event takes 100 us, a spine cable the
    # RDMA retries (4 x 131 us); then one agreement (about 60 us).
    retry_start = {"hccs": 60, "nic": 160, "spine": 580}
    for i in range(k):
        kinds = ["hccs", "nic", "spine", "relay", "lender"] if i else ["hccs", "nic", "spine"]
        kind = rng.choice(kinds)
        if kind == "relay":  # a link of an NPU that could relay a dead pair
            cands = []
            for p in dead_h:
                a, b = sorted(p)
                for kk in topo.npus:
                    if kk not in (a, b) and frozenset((a, kk)) in topo.hccs and frozenset((kk, b)) in topo.hccs:
                        cands += [tuple(sorted((a, kk))), tuple(sorted((kk, b)))]
            cands = sorted(set(c for c in cands if frozenset(c) not in dead_h))
            kind = "hccs" if not cands else "relay"
        if kind == "lender":  # the NIC of an HCCS neighbour of a dead NIC
            cands = sorted({n for x in dead_n for n in topo.npus if frozenset((x, n)) in topo.hccs and n not in dead_n})
            kind = "nic" if not cands else "lender"
        if kind == "hccs":
            cands = [l for l in links if frozenset(l) not in dead_h]
        elif kind == "nic":
            cands = [n for n in nics if n not in dead_n]
        elif kind == "spine":
            cands = [c for c in topo.cables if c not in dead_c]
        if not cands:
            continue
        target = rng.choice(cands)
        if i and rng.random() < 0.35:  # seen during the re-execution of the first fault
            # A dead NIC is seen 100 us after its fault (its port event): it dies earlier, so that
            # the event lands in the re-execution's first part, while every rank still holds it.
            late = 100 if kind in ("nic", "lender") else 0
            rep, after = first_rep, max(5, first_after + retry_start[first_kind] + rng.randint(20, 80) - late)
            when = "retry"
        else:
            # A NIC's port event comes 100 us (about one all-reduce here) after its fault: a NIC
            # fault late in an operation is taken after most ranks finished it, which op retry
            # does not recover (docs/failover.md#not-done-yet); NIC faults land in its first third.
            hi = 35 if kind in ("nic", "lender") else 60
            rep, after, when = rng.choice([0, 1]), rng.randint(5, hi), "op"
        at = f"at.step=0 at.rep={rep} at.after={after}%"
        if kind in ("hccs", "relay"):
            dead_h.add(frozenset(target))
            s = f"link_down a={target[0]} b={target[1]} {at}"
        elif kind in ("nic", "lender"):
            dead_n.add(target)
            s = f"nic_down npu={target} {at}"
        else:
            dead_c.add(target)
            s = f"switch_link_down switch={target[0]} port={target[1]} {at}"
        if first_rep is None:
            first_rep, first_after, first_kind = rep, after, {"relay": "hccs", "lender": "nic"}.get(kind, kind)
        faults.append((kind + ("@retry" if when == "retry" else ""), s, target))
    return faults


def dead_sets(faults):
    """The dead HCCS links, NICs and cables of these faults."""
    dh, dn, dc = set(), set(), set()
    for kind, _, target in faults:
        if kind.startswith(("hccs", "relay")):
            dh.add(frozenset(target))
        elif kind.startswith(("nic", "lender")):
            dn.add(target)
        else:
            dc.add(target)
    return dh, dn, dc


def injected(fault, messages):
    """Whether the simulator's log says this fault was injected (a fault timed after the workload
    ended never is: it cannot count against the run)."""
    kind, _, t = fault
    if kind.startswith(("hccs", "relay")):
        names = [f"HCCS link {t[0]}<->{t[1]} down", f"HCCS link {t[1]}<->{t[0]} down"]
    elif kind.startswith(("nic", "lender")):
        names = [f"NIC of {t} "]
    else:
        names = [f"cable {t[0]}/{t[1]}<->{t[2]}/{t[3]} down", f"cable {t[2]}/{t[3]}<->{t[0]}/{t[1]} down"]
    return any("fault injected: " in m and any(n in m for n in names) for m in messages)


def documented_codes(doc_path, header_path):
    """The codes docs/failover.md's detection table says a rank's call returns, as numbers."""
    doc = open(doc_path).read()
    table = doc[doc.index("## Detection and notification"):doc.index("### Detection times")]
    names = set(re.findall(r"`(HCOMM_E_[A-Z_]+)`", table))
    hdr = open(header_path).read()
    codes = {}
    for name in names:
        m = re.search(name + r"\s*=\s*(\d+)", hdr)
        if not m:
            raise SystemExit(f"{header_path}: no value for {name}")
        codes[int(m.group(1))] = name
    if not codes:
        raise SystemExit(f"{doc_path}: no codes in the detection table")
    return codes


def parse_seeds(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    keep = None
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
        del args[args.index("--keep"):args.index("--keep") + 2]
    args = [a for a in args if a != "-v"]
    if len(args) != 5:
        print(__doc__)
        return 2
    hcsim, scenario, doc, header, seeds = args
    codes = documented_codes(doc, header)
    sc = json.load(open(scenario))
    topo = Topo(os.path.join(os.path.dirname(os.path.abspath(scenario)), sc["topology"]))
    reps = sc["workload"][0].get("repeat", 1)
    nranks = len(topo.npus)
    counts = {"passed-survivable": 0, "aborted-unsurvivable": 0, "other": 0}
    tmp = keep or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    for seed in parse_seeds(seeds):
        faults = draw(topo, seed)
        ok, why = topo.survivable(*dead_sets(faults))
        db = os.path.join(tmp, f"seed{seed}.db")
        if os.path.exists(db):
            os.remove(db)
        cmd = [hcsim, "run", scenario, "-q", "--db", db]
        for _, f, _ in faults:
            cmd += ["--fault", f]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, out = -1, "wall-clock timeout (120 s)"
        problems = []
        if rc in (0, 1) and os.path.exists(db):
            con = sqlite3.connect(db)
            q = lambda s: con.execute(s).fetchall()
            logs = [m for (m,) in q("SELECT message FROM logs")]
            fired = [f for f in faults if injected(f, logs)]
            if len(fired) < len(faults):  # the verdict over the faults that happened
                ok, why = topo.survivable(*dead_sets(fired))
                why += f"; {len(faults) - len(fired)} fault(s) timed after the workload's end"
            bad = [m for m in logs for f in FORBIDDEN if f in m.lower()]
            if bad:
                problems.append("rejected: " + bad[0][:200])
            status = q("SELECT status, COUNT(*) FROM operations GROUP BY status")
            if ok:
                checks = q("SELECT COUNT(*), COALESCE(SUM(ok = 0), 0) FROM checks")[0]
                if rc != 0:
                    problems.append(f"survivable but exit {rc}")
                if checks != (nranks * reps, 0):
                    problems.append(f"checks (count, failed) {checks}, expected ({nranks * reps}, 0)")
                if any(s not in ("ok", "unfinished") for s, _ in status):  # unfinished: an attempt a recovery aborted
                    problems.append(f"operations {status}")
            else:
                if rc != 1:
                    problems.append(f"unsurvivable but exit {rc}")
                if any(s not in ("ok", "failed", "unfinished") for s, _ in status):
                    problems.append(f"operations {status} (a timeout)")
                failed = {r for (r,) in q("SELECT DISTINCT rank FROM operations WHERE status = 'failed'")}
                if failed != set(range(nranks)):
                    problems.append(f"ranks without a failed operation: {sorted(set(range(nranks)) - failed)}")
                rows = q("SELECT detected_by, code FROM failovers WHERE action != 'warn' AND resumed_at_ns IS NULL")
                coded = {r for r, c in rows if c in codes}
                if coded != set(range(nranks)):
                    got = sorted({c for _, c in rows if c not in codes})
                    problems.append(f"ranks without a failovers row of a documented code {sorted(codes)}: "
                                    f"{sorted(set(range(nranks)) - coded)} (other codes {got})")
            con.close()
        else:
            problems.append(f"exit {rc}: {out.strip().splitlines()[-1] if out.strip() else ''}")
        verdict = ("passed-survivable" if ok else "aborted-unsurvivable") if not problems else "other"
        counts[verdict] += 1
        line = f"seed {seed}: {'survivable' if ok else 'unsurvivable'} ({why}): {verdict}"
        if problems or verbose:
            line += "\n    " + " ".join(f"--fault '{f}'" for _, f, _ in faults)
            line += "\n    kinds: " + ", ".join(k for k, _, _ in faults)
            for pr in problems:
                line += "\n    " + pr
        print(line, flush=True)
        if not problems and not keep:
            os.remove(db)
    print(f"seeds {seeds}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"{counts['passed-survivable'] + counts['aborted-unsurvivable']} passed, {counts['other']} failed")
    return 0 if counts["other"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
