#!/usr/bin/env bash
# hcsim diff at review size and the text timing golden (docs/tools.md#diff, #summary), on
# clos-nr-4 (8 leaves with 4 uplinks each, 32 ranks, 2 QP stripes per peer):
#   1. An ECMP hash change (--set /network/ecmp_hash=src-dst): the per-port load and per-switch
#      uplinks-used lines equal those computed here with sqlite3 + awk from the two traces' routes
#      tables (not from diff's output), sorted by |change| then name in natural order; the moved
#      decisions are in numeric key order (rank 0 -> 8 before rank 0 -> 16).
#   2. JUnit: one case per (step, op, size) and per changed aggregate (the first N of each kind, the
#      rest in one case), failure bodies bounded by -n.
#   3. hcsim summary: deterministic bytes, the median over repetitions equal to the one computed
#      from the summary table; diff against the same trace passes (also at --tolerance 0), against
#      a trace with slower links fails (exit 1); malformed goldens exit 2 naming file and line.
# Usage: diff_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

python3 - "$SRC" <<'PY'
import json, sys
t = json.load(open(sys.argv[1] + "/topologies/clos-nr-4.json"))
json.dump(t, open("fast.json", "w"))
t["fabric"]["link_bandwidth"] = "100Gb/s"; t["server_groups"][0]["nic"]["bandwidth"] = "100Gb/s"
json.dump(t, open("slow.json", "w"))
for name in ("fast", "slow"):
    json.dump({"format": "hcsim-scenario", "version": 1, "name": "diff-" + name, "topology": name + ".json", "seed": 1,
               "payload": "timing", "fidelity": "flow", "hcomm_env": {"HCOMM_NUM_QP": "2"},
               "workload": [{"op": "allreduce", "bytes": "4MiB", "repeat": 3},
                            {"op": "alltoall", "bytes": "1MiB", "dtype": "int8", "repeat": 2}]}, open(name + "-scen.json", "w"))
PY
for r in "a fast-scen.json" "b fast-scen.json --set /network/ecmp_hash=src-dst" "slow slow-scen.json" "a2 fast-scen.json"; do
  set -- $r
  db=$1; shift
  "$HCSIM" run "$@" --db "$db.db" -q > "run-$db.txt" 2>&1 || bad "run $db" "run-$db.txt"
done

# --- 1. Aggregates against sqlite3 + awk. ----------------------------------------------------------
# load: per switch egress port (hop sw:in>out -> sw:out) or other link token, the decisions crossing
# it (once per decision); uplinks: on a path of k switch hops the egress ports of the first
# int((k-1)/2) switches.
agg() {  # DB -> load.DB (name count) and up.DB (switch count ports)
  sqlite3 -separator $'\t' "$1" "SELECT hops FROM routes" | awk -v L="load.$1" -v U="up.$1" '
    { delete seen; k = 0; n = split($0, h, " ")
      for (i = 1; i <= n; i++) {
        if (h[i] ~ /^[^:]+:[0-9]+>[0-9]+$/) { split(h[i], a, ":"); split(a[2], p, ">"); t = a[1] ":" p[2]; k++; sw[k] = a[1]; port[k] = p[2] }
        else t = h[i]
        if (!(t in seen)) { seen[t] = 1; load[t]++ }
      }
      for (i = 1; i <= int((k - 1) / 2); i++) if (!((sw[i], port[i]) in up)) { up[sw[i], port[i]] = 1; nup[sw[i]]++ } }
    END { for (t in load) print t, load[t] > L; for (s in nup) print s, nup[s] > U }'
}
agg a.db; agg b.db
# Expected changed lines, unordered.
awk 'FNR == NR {a[$1] = $2; next} {b[$1] = $2} END {for (t in a) if (!(t in b)) b[t] = 0; for (t in b) { x = t in a ? a[t] : 0; if (x != b[t]) printf "%s %d -> %d (%+d)\n", t, x, b[t], b[t] - x } }' \
  load.a.db load.b.db | sort > want-load.txt
awk 'FNR == NR {a[$1] = $2; next} {b[$1] = $2} END {for (t in a) if (!(t in b)) b[t] = 0; for (t in b) { x = t in a ? a[t] : 0; if (x != b[t]) printf "%s uplinks used %d -> %d\n", t, x, b[t] } }' \
  up.a.db up.b.db | sort > want-up.txt
expect "ecmp hash change: DIFFERENT" 1 "^hcsim diff: DIFFERENT" -- "$HCSIM" diff a.db b.db -n 100000 --junit all.xml
cp out.txt full.txt
grep -E '^    [^ ]+ -?[0-9]+ -> [0-9]+ \([-+][0-9]+\)$' full.txt | sed 's/^    //' > got-load-ordered.txt
sort got-load-ordered.txt > got-load.txt
grep -E '^    [^ ]+ uplinks used ' full.txt | sed 's/^    //; s/ (ports .*//' > got-up-ordered.txt
sort got-up-ordered.txt > got-up.txt
nl=$(wc -l < want-load.txt); nu=$(wc -l < want-up.txt)
[ "$nl" -gt 10 ] && cmp -s want-load.txt got-load.txt && ok "load per port: $nl changed lines equal sqlite3's" || { diff want-load.txt got-load.txt > d.txt; bad "load per port" d.txt; }
[ "$nu" -ge 1 ] && cmp -s want-up.txt got-up.txt && ok "uplinks used: $nu changed switches equal sqlite3's" || { diff want-up.txt got-up.txt > d.txt; bad "uplinks used" d.txt; }
grep -q "load per switch port or link (decisions crossing it): $nl of $(cat load.a.db load.b.db | cut -d' ' -f1 | sort -u | wc -l) changed" full.txt &&
  ok "load header counts" || bad "load header" full.txt
# Order: |change| descending, then natural name order; decisions by numeric (comm, src, dst, qp, n).
python3 - got-load-ordered.txt got-up-ordered.txt full.txt > order.txt <<'PY' && ok "natural and |change| order" || bad "order" order.txt
import re, sys
nat = lambda s: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]
bad = 0
for f, chg in ((sys.argv[1], lambda l: int(l.rsplit("(", 1)[1].strip(")+"))), (sys.argv[2], lambda l: int(l.split()[-1]) - int(l.split()[-3]))):
    rows = [l.rstrip("\n") for l in open(f)]
    keys = [(-abs(chg(l)), nat(l.split()[0])) for l in rows]
    if keys != sorted(keys): print("not sorted:", f); bad = 1
dec = [tuple(map(int, m.groups())) for m in re.finditer(r"^    \w+ +comm (\d+) rank (\d+) -> (\d+) qp (\d+) #(\d+):", open(sys.argv[3]).read(), re.M)]
if len(dec) < 100 or dec != sorted(dec): print("decisions not in numeric order", len(dec)); bad = 1
t = open(sys.argv[3]).read()
i8, i16 = t.find("rank 0 -> 8 qp 0 #0"), t.find("rank 0 -> 16 qp 0 #0")
if not (0 < i8 < i16): print("rank 0 -> 8 not before rank 0 -> 16"); bad = 1
sys.exit(bad)
PY
# Report order kept: run, provenance, failed operations, faults, summary, routes.
order=$(grep -oE '^(run|provenance|failed operations|faults and failovers|summary|routes):' full.txt | tr '\n' ',')
[ "$order" = "run:,provenance:,failed operations:,faults and failovers:,summary:,routes:," ] && ok "sections in order" || bad "sections: $order" full.txt
expect "-n bounds each list" 1 "^    \.\.\. and [0-9]+ more \(-n to show more\)" -- "$HCSIM" diff a.db b.db -n 2
[ "$(grep -cE '^    (changed|added|removed) ' out.txt)" -eq 2 ] && ok "-n 2: two decisions listed" || bad "-n 2 decisions" out.txt
expect "same run twice: no differences" 0 "^hcsim diff: no differences" -- "$HCSIM" diff a.db a2.db

# --- 2. JUnit cases. -----------------------------------------------------------------------------
"$HCSIM" diff a.db b.db -n 3 --junit j.xml > /dev/null 2>&1
groups=$(sqlite3 a.db "SELECT COUNT(*) FROM (SELECT DISTINCT step, kind, bytes FROM summary)")
python3 - j.xml "$groups" "$nl" "$nu" 3 > junit.txt <<'PY' && ok "junit: one case per step and per changed aggregate, bodies bounded" || bad "junit" junit.txt j.xml
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
groups, nl, nu, n = map(int, sys.argv[2:])
cases = root.findall("testcase")
names = [c.get("name") for c in cases]
bad = 0
summ = [x for x in names if x.startswith("summary step ")]
load = [x for x in names if x.startswith("routes load ")]
up = [x for x in names if x.startswith("routes uplinks ")]
want = 3 + groups + 1 + min(nl, n) + (nl > n) + min(nu, n) + (nu > n)
if len(cases) != want or int(root.get("tests")) != want: print("cases", len(cases), "want", want, names); bad = 1
if len(summ) != groups: print("summary cases", summ); bad = 1
if len(load) != min(nl, n) + (nl > n) or len(up) != min(nu, n) + (nu > n): print("aggregate cases", load, up); bad = 1
if nl > n and f"routes load ({nl - n} more)" not in names: print("no rest case"); bad = 1
for c in cases:
    f = c.find("failure")
    if f is not None and len(f.text.strip().split("\n")) > n + 1: print("unbounded body", c.get("name")); bad = 1
fails = sum(c.find("failure") is not None for c in cases)
if int(root.get("failures")) != fails or fails < 3: print("failures", fails); bad = 1
sys.exit(bad)
PY
[ "$(grep -c '<testcase' all.xml)" -eq $((3 + groups + 1 + nl + nu)) ] && ok "junit -n 100000: every changed aggregate its own case" || bad "junit all" all.xml

# --- 3. The timing golden. -------------------------------------------------------------------------
expect "summary -o" 0 "" -- "$HCSIM" summary a.db -o g.tsv
"$HCSIM" summary a2.db > g2.tsv 2> /dev/null
cmp -s g.tsv g2.tsv && ok "summary: the same run, the same bytes" || bad "summary determinism" g.tsv g2.tsv
# Medians from the summary table (an even count: the mean of the middle two).
sqlite3 -separator $'\t' a.db "SELECT step, kind, bytes, time_us FROM summary ORDER BY step, time_us" | awk -F'\t' '
  {k = $1 "\t" $2 "\t" $3; if (!(k in n)) order[++m] = k; t[k, ++n[k]] = $4}
  END {for (i = 1; i <= m; i++) {k = order[i]; c = n[k]; med = c % 2 ? t[k, (c + 1) / 2] : (t[k, c / 2] + t[k, c / 2 + 1]) / 2; printf "%s\t%d\t%.3f\n", k, c, med}}' > want-med.txt
awk -F'\t' 'NR > 3 {printf "%s\t%s\t%s\t%s\t%s\n", $1, $2, $4, $5, $6}' g.tsv > got-med.txt
[ "$(wc -l < want-med.txt)" -eq 2 ] && cmp -s want-med.txt got-med.txt && ok "summary: median time per step as the summary table gives it" || { paste want-med.txt got-med.txt > d.txt; bad "medians" d.txt; }
sed -n 3p g.tsv | grep -qx $'step\top\talgorithm\tbytes\treps\ttime_us\talgbw_GBps\tbusbw_GBps' && ok "summary: column line" || bad "column line" g.tsv
alg=$(sqlite3 a.db "SELECT group_concat(a, ',') FROM (SELECT DISTINCT algorithm a FROM operations WHERE step = 0 AND algorithm != '' ORDER BY a)")
[ "$(awk -F'\t' 'NR == 4 {print $3}' g.tsv)" = "$alg" ] && ok "summary: algorithm $alg" || bad "algorithm" g.tsv
expect "golden vs the same trace" 0 "^hcsim diff: no differences" -- "$HCSIM" diff g.tsv a.db --tolerance 0 --junit gj.xml
grep -c '<testcase classname="hcsim.diff" name="summary step' gj.xml | grep -qx 2 && ok "golden junit: one case per step" || bad "golden junit" gj.xml
expect "golden vs slower links" 1 "step 0 allreduce 4194304 B: median time [0-9.]+ -> [0-9.]+ us \(\+[0-9.]+ %" -- "$HCSIM" diff g.tsv slow.db
"$HCSIM" summary slow.db -o gslow.tsv > /dev/null 2>&1
expect "golden vs golden of slower links" 1 "step 1 alltoall 1048576 B: median time" -- "$HCSIM" diff g.tsv gslow.tsv
expect "golden vs a routes file: bad input" 2 "a timing golden \(g.tsv\) is compared with a trace" -- "$HCSIM" diff g.tsv "$SRC/tests/golden/clos-nr-4.routes"
# Malformed goldens: file, line and reason; exit 2.
mal() {  # name, sed script, expected message
  sed "$2" g.tsv > m.tsv
  expect "malformed golden: $1" 2 "^hcsim: m.tsv:$3" -- "$HCSIM" diff m.tsv a.db
}
mal "a field missing" '4s/\t[^\t]*$//' "4: expected 8 tab-separated fields"
mal "time not a number" '5s/\t[0-9.]*\t\([0-9.]*\t[0-9.]*\)$/\tfast\t\1/' "5: time_us: expected a decimal number, got \"fast\""
mal "no column line" '3d' "3: expected the column line"
mal "a step twice" '5s/^1/0/' "5: step 0 appears twice"
mal "reps zero" '4s/\t3\t/\t0\t/' "4: reps: expected a whole number from 1"
printf '# hcsim summary 1\n' > m.tsv
expect "malformed golden: header only" 2 "m.tsv:2: no column line" -- "$HCSIM" diff m.tsv a.db
expect "summary of a routes file: bad input" 2 "not an hcsim trace|no such|not a" -- "$HCSIM" summary "$SRC/tests/golden/clos-nr-4.routes"
expect "summary -o onto a trace refused" 2 "" -- "$HCSIM" summary a.db -o b.db
expect "summary --help" 0 "usage: hcsim summary" -- "$HCSIM" summary --help

echo "diff_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
