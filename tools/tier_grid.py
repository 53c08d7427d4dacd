#!/usr/bin/env python3
"""tier_grid.py: how far the chunk and flow tiers agree with the packet tier (issue 48).

Enumerates a grid of generated 2-tier Clos fabrics x collectives x sizes x network modes, writes
the topologies and scenarios to an output directory, runs `hcsim run` on each in the three tiers,
and writes grid.csv (one row per run) and grid.md (one row per point: the packet tier's time, the
chunk and flow tiers as signed % against it, a class per tier, and a summary per tier and class).

Grid (docs/models/tiers.md):
  leaves {2, 4} x oversubscription {1,2,3,4}:1 x servers {8, 16, 32} (atlas800t-a2, 8 NPUs,
  one 200 Gb/s NIC each) x NICs in rank order ("rank", rail_optimized false) or rail-optimised
  ("rail": a rail fabric has a leaf per rail at least, so leaves 2 and 4 mean 1 and 2 leaves per
  rail, 8 and 16 in all; combinations the generator cannot build are listed as skipped) x ops (all-reduce forced to
  ring, H-D_R, NHR, NB, double tree through HCCL_ALGO; all-gather, reduce-scatter, broadcast,
  all-to-all, an 8:1 incast) x sizes {1, 16, 256} MiB x network lossless (PFC on, the default) or
  lossy (PFC off; seeds 1-3, the ECN marking seed, median reported).

Python 3 standard library only.
"""
import argparse
import csv
import json
import math
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time

TIERS = ("packet", "chunk", "flow")
AR_ALGOS = {"ar-ring": "ring", "ar-hdr": "H-D_R", "ar-nhr": "NHR", "ar-nb": "NB", "ar-dtree": "DOUBLE_TREE"}
OPS = ("ar-ring", "ar-hdr", "ar-nhr", "ar-nb", "ar-dtree", "allgather", "reducescatter", "broadcast", "alltoall", "incast8")
MIB = 1 << 20
AGREE_PCT = 5.0

SUBSETS = {
    # ~1 min of CPU in Release: one small fabric, every op at 1 and 16 MiB, lossless
    "ci": dict(servers=[8], leaves=[2], oversub=[1, 2], nics=["rank"], ops=list(OPS), sizes=[1, 16], nets=["lossless"]),
    # the documented table (docs/models/tiers.md)
    "doc": dict(servers=[8, 16], leaves=[2, 4], oversub=[1, 2, 4], nics=["rank", "rail"], ops=list(OPS), sizes=[1, 16],
                nets=["lossless", "lossy"]),
    "full": dict(servers=[8, 16, 32], leaves=[2, 4], oversub=[1, 2, 3, 4], nics=["rank", "rail"], ops=list(OPS),
                 sizes=[1, 16, 256], nets=["lossless", "lossy"]),
}


def fabric_radix(servers, leaves, k, rail):
    """(radix, up ports per leaf) of a fabric with exactly `leaves` leaves, or None when none exists.

    Rank order: `leaves` leaves in all. Rail-optimised: every rail has leaves/2 leaves (8 x leaves/2
    in all; a rail fabric has at least one leaf per rail, 8, and exactly 2 or 4 cannot be built).
    docs/topology-format.md: at k:1 a leaf of radix R has u = floor(R/(k+1)) up and k*u down ports
    (R - (k+1)*u < k+1 ports dark); rank order fills ceil(8S / down) leaves, rails ceil(S / down)
    leaves per rail; a 2-tier fabric has at most R leaves. The smallest u that gives the leaf count
    with R >= the leaves in all.
    """
    if rail and leaves % 2:
        return None
    nics = servers if rail else 8 * servers
    per = leaves // 2 if rail else leaves
    total = 8 * per if rail else leaves
    for u in range(1, nics + 1):
        if math.ceil(nics / (k * u)) != per:
            continue
        radix = max((k + 1) * u, total)
        if radix - (k + 1) * u <= k:  # u = floor(radix / (k+1)) still
            return radix, u
    return None


class Point:
    def __init__(self, servers, leaves, k, nic, op, size, net):
        self.servers, self.leaves, self.k, self.nic, self.op, self.size, self.net = servers, leaves, k, nic, op, size, net

    @property
    def topo_name(self):
        return f"s{self.servers}-l{self.leaves}-o{self.k}-{self.nic}"

    @property
    def name(self):
        return f"{self.topo_name}-{self.op}-{self.size}m-{self.net}"

    def seeds(self, lossy_seeds):
        return lossy_seeds if self.net == "lossy" else [1]

    def cost_key(self):
        return (self.size, self.servers, self.net != "lossless", self.leaves, self.k, self.nic, OPS.index(self.op))


def topology_json(p):
    radix, _ = fabric_radix(p.servers, p.leaves, p.k, p.nic == "rail")
    return {
        "format": "hcsim-topology", "version": 1, "name": p.topo_name,
        "description": f"{p.servers} atlas800t-a2 servers, 2-tier Clos of radix {radix} at {p.k}:1, "
                       f"{'rail-optimised' if p.nic == 'rail' else 'NICs in rank order'} (tools/tier_grid.py)",
        "server_groups": [{"name": "node{i}", "count": p.servers, "type": "atlas800t-a2", "host_ip": "10.0.0.1",
                           "nic": {"bandwidth": "200Gb/s", "device_ip": "10.1.0.1"}}],
        "fabric": {"type": "clos", "tiers": 2, "switch_radix": radix, "oversubscription": f"{p.k}:1",
                   "rail_optimized": p.nic == "rail", "link_bandwidth": "200Gb/s"},
    }


FLOW_CC = "ideal"  # the flow tier's congestion control (--flow-cc)


def scenario_json(p, tier, seed, topo_rel):
    nbytes = p.size * MIB
    env = {}
    if p.op in AR_ALGOS:
        step = {"op": "allreduce", "bytes": f"{p.size}MiB"}
        env["HCCL_ALGO"] = f"allreduce=level0:NA;level1:{AR_ALGOS[p.op]}"
    elif p.op == "incast8":
        step = {"op": "incast", "bytes": f"{p.size}MiB", "root": 0, "senders": "remote:8"}
        ranks = 8 * p.servers
        region = nbytes * ranks  # the root's symmetric region must hold bytes x ranks
        if region > 1 << 30:
            env["HCOMM_SLOT_SIZE_MB"] = "4096"
            env["HCOMM_SYM_SLOTS"] = str(max(4, math.ceil(region / (4096 * MIB))))
    else:
        step = {"op": p.op, "bytes": f"{p.size}MiB"}
    step["check"] = False
    sc = {"format": "hcsim-scenario", "version": 1, "name": f"{p.name}-{tier}-s{seed}", "topology": topo_rel,
          "seed": seed, "fidelity": tier, "payload": "timing", "workload": [step]}
    if env:
        sc["hcomm_env"] = env
    if p.net == "lossy":
        sc["network"] = {"pfc": {"enabled": False}}
    if tier == "flow" and FLOW_CC != "ideal":
        sc.setdefault("network", {})["flow_cc"] = FLOW_CC
    return sc


def enumerate_points(sel):
    pts, skipped = [], []
    for s in sel["servers"]:
        for l in sel["leaves"]:
            for k in sel["oversub"]:
                for nic in sel["nics"]:
                    if fabric_radix(s, l, k, nic == "rail") is None:
                        skipped.append(f"s{s}-l{l}-o{k}-{nic}")
                        continue
                    for op in sel["ops"]:
                        for size in sel["sizes"]:
                            for net in sel["nets"]:
                                pts.append(Point(s, l, k, nic, op, size, net))
    pts.sort(key=Point.cost_key)
    return pts, skipped


def topo_leaves(hcsim, path):
    """The leaf and spine counts `hcsim topo` reports for a topology file."""
    out = subprocess.run([hcsim, "topo", path], capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        if "Ethernet switches" in line and "leaf" in line:
            inner = line.split("(", 1)[1].split(")", 1)[0]  # "leaf 2, spine 32, core 0"
            parts = dict(x.strip().split(" ", 1) for x in inner.split(","))
            return int(parts["leaf"]), int(parts["spine"])
    raise RuntimeError(f"hcsim topo {path}: no switch counts in its output:\n{out.stdout}{out.stderr}")


def read_db(db):
    r = {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = con.execute("select status, wall_seconds from run").fetchone()
        r["status"] = row[0] if row else None
        r["sim_wall_s"] = row[1] if row else None
        t = con.execute("select max(time_us), count(*) from summary").fetchone()
        r["time_us"] = t[0] if t and t[1] else None
        c = dict(con.execute("select name, value from counters").fetchall())
        for n in ("ecn_marked", "drops", "pfc_pause_sent", "rdma_timeouts", "rdma_retransmits"):
            r[n] = int(c.get(n, 0) or 0)
        q = con.execute("select max(max_queue_bytes) from port_counters").fetchone()
        r["max_queue_bytes"] = int(q[0] or 0) if q else 0
        a = con.execute("select group_concat(distinct algorithm) from operations").fetchone()
        r["algorithm"] = a[0] or ""
    finally:
        con.close()
    return r


def run_one(hcsim, scen, db, timeout):
    """Runs hcsim; returns the result dict (status 'wall-timeout' when it ran over `timeout`)."""
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.monotonic()
    proc = subprocess.Popen([hcsim, "run", scen, "--db", db, "-q", "--force"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "wall-timeout", "exit_code": None, "wall_s": round(time.monotonic() - t0, 3),
                "error": f"over {timeout} s"}
    wall = time.monotonic() - t0
    # The flow tier's congestion warning (docs/models/tiers.md#warnings-at-run-time), on stderr even with -q.
    r = {"exit_code": proc.returncode, "wall_s": round(wall, 3), "error": "",
         "fanin_warning": int("fan-in bottlenecks" in (err or "")),
         "chunk_warning": int("chunk tier: congestion" in (err or ""))}
    try:
        r.update(read_db(db))
    except Exception as e:  # no trace (a load error) or an unreadable one
        r["status"] = "no-trace"
        r["error"] = str(e)
    if proc.returncode != 0 or r.get("status") != "ok" or r.get("time_us") is None:
        tail = (err or "").strip().splitlines()[-3:]
        r["error"] = (r.get("error") or "") + " | ".join(tail)
        if r.get("status") == "ok":
            r["status"] = "no-time"
    return r


CSV_FIELDS = ["point", "servers", "leaves", "oversub", "nics", "op", "size_MiB", "net", "tier", "seed", "status",
              "time_us", "ecn_marked", "drops", "pfc_pause_sent", "rdma_timeouts", "rdma_retransmits",
              "max_queue_bytes", "algorithm", "wall_s", "leaf_switches", "spine_switches", "radix", "fanin_warning", "chunk_warning", "error"]


def pct(a, b):
    return None if a is None or b is None or b == 0 else 100.0 * (a - b) / b


def classify(p, ref, mine):
    """A tier's class at a point, from the packet tier's and this tier's aggregated results."""
    if ref["failed"] or mine["failed"]:
        return "failed"
    if ref["timeouts"] or mine["timeouts"]:
        return "timeout"
    if p.net == "lossy" and (ref["drops"] or mine["drops"]):
        return "drops"
    e = pct(mine["time_us"], ref["time_us"])
    return "agrees" if abs(e) <= AGREE_PCT else "differs"


def aggregate(rows):
    """Median time over the seeds of one (point, tier); any failure, timeout or drop counts."""
    ok = [r for r in rows if r.get("status") == "ok" and r.get("time_us") is not None]
    return {
        "failed": len(ok) < len(rows) or not rows,
        "time_us": statistics.median(r["time_us"] for r in ok) if ok else None,
        "timeouts": sum(int(r.get("rdma_timeouts") or 0) for r in rows),
        "drops": sum(int(r.get("drops") or 0) for r in rows),
        "wall_s": sum(float(r.get("wall_s") or 0) for r in rows),
    }


def fmt_pct(x):
    return "—" if x is None else f"{x:+.1f} %"


def write_outputs(out, points, results, skipped, cmdline, lossy_seeds, not_run):
    rows = []
    for p in points:
        for tier in TIERS:
            for seed in p.seeds(lossy_seeds):
                r = results.get((p.name, tier, seed))
                if r is None:
                    continue
                rows.append({**{k: r.get(k, "") for k in CSV_FIELDS}, "point": p.name, "servers": p.servers,
                             "leaves": p.leaves, "oversub": f"{p.k}:1", "nics": p.nic, "op": p.op, "size_MiB": p.size,
                             "net": p.net, "tier": tier, "seed": seed})
    with open(os.path.join(out, "grid.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})

    lines = [f"Reproduce: `{cmdline}`", "",
             f"chunk and flow as signed % against the packet tier; class: `agrees` (|error| <= {AGREE_PCT:g} %), "
             "`differs`, `drops` (a lossy point where the packet tier or this tier dropped packets), `timeout` "
             "(an RDMA retransmit timeout in either run), `failed` (a run failed or ran over its wall time limit). "
             f"Lossy points: median over seeds {', '.join(map(str, lossy_seeds))}.", "",
             "| servers | leaves | oversub | NICs | op | size | net | packet µs | chunk | flow | chunk class | flow class |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    per_tier = {t: {} for t in ("chunk", "flow")}
    per_op = {}
    wall = {t: [] for t in TIERS}
    complete = 0
    for p in points:
        agg = {}
        for tier in TIERS:
            rs = [results[(p.name, tier, s)] for s in p.seeds(lossy_seeds) if (p.name, tier, s) in results]
            if len(rs) == len(p.seeds(lossy_seeds)):
                agg[tier] = aggregate(rs)
        if len(agg) < len(TIERS):
            continue
        complete += 1
        for tier in TIERS:
            wall[tier].append(agg[tier]["wall_s"] / len(p.seeds(lossy_seeds)))
        cells, classes = {}, {}
        for tier in ("chunk", "flow"):
            cls = classify(p, agg["packet"], agg[tier])
            e = pct(agg[tier]["time_us"], agg["packet"]["time_us"])
            cells[tier], classes[tier] = e, cls
            per_tier[tier].setdefault(cls, []).append(e)
            per_op.setdefault((tier, p.op, p.net), []).append((cls, e))
        ref = agg["packet"]["time_us"]
        lines.append(f"| {p.servers} | {p.leaves // 2 if p.nic == 'rail' else p.leaves}{'/rail' if p.nic == 'rail' else ''} | {p.k}:1 | {p.nic} | {p.op} | "
                     f"{p.size} MiB | {p.net} | {'—' if ref is None else f'{ref:.1f}'} | {fmt_pct(cells['chunk'])} | "
                     f"{fmt_pct(cells['flow'])} | {classes['chunk']} | {classes['flow']} |")
    lines += ["", f"{complete} of {len(points)} points complete (all three tiers, every seed)." +
              (f" {not_run} runs not started (budget)." if not_run else "")]
    if skipped:
        lines += ["", "Not buildable with exactly that many leaves (per rail): " + ", ".join(skipped) + "."]
    lines += ["", "| tier | class | points | median \\|error\\| | max \\|error\\| |", "|---|---|---|---|---|"]
    for tier in ("chunk", "flow"):
        for cls in ("agrees", "differs", "drops", "timeout", "failed"):
            es = per_tier[tier].get(cls)
            if not es:
                continue
            ae = [abs(e) for e in es if e is not None]
            med = f"{statistics.median(ae):.1f} %" if ae else "—"
            mx = f"{max(ae):.1f} %" if ae else "—"
            lines.append(f"| {tier} | {cls} | {len(es)} | {med} | {mx} |")
    lines += ["", "| tier | op | net | points | agrees | median \\|error\\| | max \\|error\\| | worst point's error |",
              "|---|---|---|---|---|---|---|---|"]
    for (tier, op, net), v in sorted(per_op.items(), key=lambda kv: (kv[0][0], OPS.index(kv[0][1]), kv[0][2])):
        ae = [abs(e) for _, e in v if e is not None]
        worst = max((e for _, e in v if e is not None), key=abs, default=None)
        lines.append(f"| {tier} | {op} | {net} | {len(v)} | {sum(1 for c, _ in v if c == 'agrees')} | "
                     f"{f'{statistics.median(ae):.1f} %' if ae else '—'} | {f'{max(ae):.1f} %' if ae else '—'} | "
                     f"{fmt_pct(worst)} |")
    lines += ["", "| tier | runs | median wall s per run | max wall s | total wall s |", "|---|---|---|---|---|"]
    for tier in TIERS:
        ws = [float(r["wall_s"]) for r in rows if r["tier"] == tier and r.get("wall_s") not in ("", None)]
        if ws:
            lines.append(f"| {tier} | {len(ws)} | {statistics.median(ws):.2f} | {max(ws):.2f} | {sum(ws):.1f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "grid.md"), "w") as f:
        f.write(text)
    return rows, text


def parse_size(s):
    s = s.strip()
    for suf in ("MiB", "M", "m"):
        if s.endswith(suf):
            return int(s[: -len(suf)])
    return int(s)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", choices=sorted(SUBSETS), default="ci", help="the grid to run (default ci)")
    ap.add_argument("--hcsim", default=os.environ.get("HCSIM", "build/tools/hcsim"), help="the hcsim binary")
    ap.add_argument("--out", default="tier-grid", help="output directory (default ./tier-grid)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="simulations at once (default 1)")
    ap.add_argument("--timeout", type=float, default=600, help="wall seconds per run before it is killed (default 600)")
    ap.add_argument("--budget", type=float, default=0, help="start no run after this many wall seconds (0: no limit)")
    ap.add_argument("--servers", help="comma list, e.g. 8,16")
    ap.add_argument("--leaves", help="comma list: 2,4")
    ap.add_argument("--oversub", help="comma list of k in k:1, e.g. 1,2")
    ap.add_argument("--nics", help="rank,rail")
    ap.add_argument("--ops", help="comma list of " + ",".join(OPS) + " (allreduce = the five ar-*)")
    ap.add_argument("--sizes", help="comma list, e.g. 1MiB,16MiB")
    ap.add_argument("--nets", help="lossless,lossy")
    ap.add_argument("--seeds", default="1,2,3", help="seeds of lossy points (default 1,2,3)")
    ap.add_argument("--rerun", action="store_true", help="forget OUT/results.jsonl and run every point again (else runs already there are reused)")
    ap.add_argument("--keep-db", action="store_true", help="keep the traces (OUT/db/)")
    ap.add_argument("--flow-cc", choices=("ideal", "dcqcn"), default="ideal",
                    help="the flow tier's /network/flow_cc (default ideal; use a fresh --out per value)")
    ap.add_argument("--list", action="store_true", help="list the points and exit")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 on any failed run (or one over --timeout) or any RDMA timeout on a lossless point")
    a = ap.parse_args(argv)
    global FLOW_CC
    FLOW_CC = a.flow_cc

    sel = dict(SUBSETS[a.subset])
    if a.servers: sel["servers"] = [int(x) for x in a.servers.split(",")]
    if a.leaves: sel["leaves"] = [int(x) for x in a.leaves.split(",")]
    if a.oversub: sel["oversub"] = [int(x.split(":")[0]) for x in a.oversub.split(",")]
    if a.nics: sel["nics"] = a.nics.split(",")
    if a.ops:
        ops = []
        for o in a.ops.split(","):
            ops += [x for x in OPS if x.startswith("ar-")] if o == "allreduce" else [o]
        bad = [o for o in ops if o not in OPS]
        if bad:
            ap.error(f"unknown op(s) {bad} (known: {', '.join(OPS)}, allreduce)")
        sel["ops"] = ops
    if a.sizes: sel["sizes"] = [parse_size(x) for x in a.sizes.split(",")]
    if a.nets: sel["nets"] = a.nets.split(",")
    lossy_seeds = [int(x) for x in a.seeds.split(",")]
    points, skipped = enumerate_points(sel)
    if a.list:
        for p in points:
            print(p.name)
        print(f"{len(points)} points; skipped fabrics: {', '.join(skipped) or 'none'}")
        return 0

    hcsim = os.path.abspath(a.hcsim)
    if not os.access(hcsim, os.X_OK):
        print(f"tier_grid: {hcsim} is not an executable hcsim (--hcsim)", file=sys.stderr)
        return 2
    out = os.path.abspath(a.out)
    for d in ("topologies", "scenarios", "db"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    cmdline = "python3 tools/tier_grid.py " + " ".join(
        x for x in (argv if argv is not None else sys.argv[1:]))

    # topologies, checked for their leaf count
    topo_info = {}
    for p in points:
        if p.topo_name in topo_info:
            continue
        path = os.path.join(out, "topologies", p.topo_name + ".json")
        with open(path, "w") as f:
            json.dump(topology_json(p), f, indent=1)
        leaves, spines = topo_leaves(hcsim, path)
        want = p.leaves * 4 if p.nic == "rail" else p.leaves
        if leaves != want:
            print(f"tier_grid: {path}: {leaves} leaves, wanted {want}", file=sys.stderr)
            return 2
        topo_info[p.topo_name] = (leaves, spines, fabric_radix(p.servers, p.leaves, p.k, p.nic == "rail")[0])

    # earlier results
    cache_path = os.path.join(out, "results.jsonl")
    results = {}
    if os.path.exists(cache_path) and not a.rerun:
        with open(cache_path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                results[(r["point"], r["tier"], r["seed"])] = r

    jobs = []
    for p in points:
        for tier in TIERS:
            for seed in p.seeds(lossy_seeds):
                if (p.name, tier, seed) in results:
                    continue
                rid = f"{p.name}-{tier}-s{seed}"
                scen = os.path.join(out, "scenarios", rid + ".json")
                with open(scen, "w") as f:
                    json.dump(scenario_json(p, tier, seed, "../topologies/" + p.topo_name + ".json"), f, indent=1)
                jobs.append((p, tier, seed, scen, os.path.join(out, "db", rid + ".db")))

    t_start = time.monotonic()
    not_run = 0
    running = []  # (job, future-like thread)
    import concurrent.futures as cf
    total = len(jobs)
    done = 0
    with open(cache_path, "w" if a.rerun else "a") as cache, cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {}
        it = iter(jobs)
        def submit_next():
            nonlocal not_run
            for job in it:
                if a.budget and time.monotonic() - t_start > a.budget:
                    not_run += 1
                    continue
                futs[ex.submit(run_one, hcsim, job[3], job[4], a.timeout)] = job
                return True
            return False
        for _ in range(max(1, a.jobs)):
            submit_next()
        while futs:
            fin, _ = cf.wait(list(futs), return_when=cf.FIRST_COMPLETED)
            for fu in fin:
                p, tier, seed, scen, db = futs.pop(fu)
                r = fu.result()
                leaves, spines, radix = topo_info[p.topo_name]
                r.update({"point": p.name, "tier": tier, "seed": seed, "leaf_switches": leaves,
                          "spine_switches": spines, "radix": radix})
                results[(p.name, tier, seed)] = r
                cache.write(json.dumps(r) + "\n")
                cache.flush()
                if not a.keep_db:
                    for f in (db, db + "-wal", db + "-shm", db + ".lock"):
                        if os.path.exists(f):
                            os.remove(f)
                done += 1
                t = r.get("time_us")
                print(f"[{done}/{total}] {p.name} {tier} s{seed}: {r.get('status')} "
                      f"{'' if t is None else f'{t:.1f} us'} ({r.get('wall_s')} s){' ' + r['error'] if r.get('error') else ''}",
                      file=sys.stderr, flush=True)
                submit_next()

    rows, text = write_outputs(out, points, results, skipped, cmdline, lossy_seeds, not_run)
    print(text)
    if a.check:
        bad = []
        for r in rows:
            if r.get("status") != "ok":
                bad.append(f"{r['point']} {r['tier']} seed {r['seed']}: {r.get('status')} {r.get('error') or ''}")
            elif r["net"] == "lossless" and int(r.get("rdma_timeouts") or 0) > 0:
                bad.append(f"{r['point']} {r['tier']}: {r['rdma_timeouts']} RDMA timeouts on a lossless point")
        # The flow and chunk tiers' warnings must fire wherever the tier is optimistic by more than
        # AGREE_PCT against the packet tier on a lossless point (they may fire where the tiers agree:
        # conservative triggers).
        for p in points:
            if p.net != "lossless":
                continue
            fr, pr = results.get((p.name, "flow", 1)), results.get((p.name, "packet", 1))
            if not fr or not pr or fr.get("time_us") is None or pr.get("time_us") is None or "fanin_warning" not in fr:
                continue
            e = pct(fr["time_us"], pr["time_us"])
            if e < -AGREE_PCT and not fr["fanin_warning"]:
                bad.append(f"{p.name} flow: {e:+.1f} % against the packet tier without the flow tier's fan-in warning")
            cr = results.get((p.name, "chunk", 1))
            if cr and cr.get("time_us") is not None and "chunk_warning" in cr:
                e = pct(cr["time_us"], pr["time_us"])
                if e < -AGREE_PCT and not cr["chunk_warning"]:
                    bad.append(f"{p.name} chunk: {e:+.1f} % against the packet tier without the chunk tier's congestion warning")
        expected = sum(len(TIERS) * len(p.seeds(lossy_seeds)) for p in points)
        if len(rows) < expected:
            bad.append(f"{expected - len(rows)} runs missing (budget)")
        for b in bad:
            print("tier_grid: FAIL: " + b, file=sys.stderr)
        if bad:
            return 1
        print(f"tier_grid: check passed: {len(rows)} runs, none failed, no RDMA timeout on a lossless point, "
              "the flow and chunk tiers' warnings on every lossless point they are optimistic on by more than 5 %",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
