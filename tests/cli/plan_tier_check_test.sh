#!/usr/bin/env bash
# hcsim plan --tier-check K (docs/plan-format.md#tier-check): a two-layout plan (8 servers of
# clos-1024 on 16-port switches, not rail-optimised, at 1:1 and 4:1) with workloads in all three
# tiers. Checked against the traces, recomputed here and not taken from the plan's report: which
# point each layout re-ran (the highest peak switch port utilisation), the finer run's tier, the
# spread (finer - coarse) / finer from the two runs' times; a warning exactly for the rows beyond
# 5 %; tier_check.csv, plan.db's tier_check table and the stdout table; the packet tier's
# "nothing finer"; bad K exit 2. No spread value is assumed: a model change may move them all.
# Usage: plan_tier_check_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

python3 - "$SRC/topologies/clos-1024.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["server_groups"][0]["count"] = 8
t["fabric"].update(switch_radix=16, rail_optimized=False)
json.dump(t, open("base.json", "w"), indent=1)
p = {"format": "hcsim-plan", "version": 1, "name": "tiers", "topology": "base.json",
     "sweep": [{"pointer": "/fabric/oversubscription", "name": "oversub", "values": ["1:1", "4:1"]}],
     "workloads": [{"op": "allreduce", "sizes": ["256KiB"], "fidelity": "chunk"},
                   {"op": "alltoall", "sizes": ["4MiB"]},
                   {"op": "broadcast", "sizes": ["64KiB"], "fidelity": "packet"}],
     "fidelity": "flow",
     "target": {"op": "alltoall", "bytes": "4MiB", "max_time_us": 100000}}
json.dump(p, open("plan.json", "w"), indent=1)
PY

COLS="layout,workload,op,algo_requested,bytes,peak_port,peak_util,coarse_tier,coarse_time_us,finer_tier,finer_time_us,spread,status,trace"

# check.py DIR K: every claim of the tier check in DIR recomputed from the traces; prints one line
# per problem, or OK. Also writes DIR.warn (the rows that must be warned about, "layout op").
cat > check.py <<'PY'
import csv, json, sqlite3, sys
d, k = sys.argv[1], int(sys.argv[2])
plan = json.load(open("plan.json"))
works = plan["workloads"]
problems = []
def db(path): return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
def times(path):  # mean time per step, as the plan reads a trace
    return [r[0] for r in db(path).execute("SELECT AVG(time_us) FROM summary GROUP BY step ORDER BY step")]
def util(path):   # busiest switch egress port's busy time / the span of the run's operations
    c = db(path)
    busy = c.execute("SELECT MAX(busy_ns) FROM port_counters WHERE node NOT IN (SELECT name FROM npus)").fetchone()[0] or 0
    span = c.execute("SELECT MAX(end_ns) - MIN(start_ns) FROM operations").fetchone()[0]
    return busy / span
rows = list(csv.DictReader(open(f"{d}/tier_check.csv")))
dbrows = db(f"{d}/plan.db").execute("SELECT * FROM tier_check ORDER BY layout, workload, bytes").fetchall()
if len(dbrows) != len(rows): problems.append(f"plan.db has {len(dbrows)} tier_check rows, the CSV {len(rows)}")
fin = {"flow": "chunk", "chunk": "packet", "packet": ""}
picked = {}
for l in (0, 1):
    u = {w: util(f"{d}/l{l}-w{w}.hcsim.db") for w in range(len(works))}
    best = sorted(u, key=lambda w: (-u[w], w))[:k]  # ties: workload order
    picked[l] = sorted(best)
    got = sorted(int(r["workload"]) for r in rows if int(r["layout"]) == l)
    if got != picked[l]: problems.append(f"layout {l}: re-ran workloads {got}, the busiest {k} are {picked[l]} (utils {u})")
    for r in rows:
        if int(r["layout"]) == l and abs(float(r["peak_util"]) - u[int(r["workload"])]) > 1e-6:
            problems.append(f"layout {l} w{r['workload']}: peak_util {r['peak_util']}, trace gives {u[int(r['workload'])]}")
warn = []
for r, x in zip(rows, dbrows):
    l, w = int(r["layout"]), int(r["workload"])
    tier = works[w].get("fidelity", plan["fidelity"])
    if r["coarse_tier"] != tier or r["finer_tier"] != fin[tier]: problems.append(f"l{l}-w{w}: tiers {r['coarse_tier']} -> {r['finer_tier']}")
    coarse = times(f"{d}/l{l}-w{w}.hcsim.db")[0]
    if abs(float(r["coarse_time_us"]) - coarse) > 5e-4: problems.append(f"l{l}-w{w}: coarse time {r['coarse_time_us']}, trace {coarse}")
    if tier == "packet":
        if r["finer_time_us"] or r["spread"] or x[11] is not None or not r["status"].startswith("nothing finer"):
            problems.append(f"l{l}-w{w}: a packet row with a finer time, spread or no 'nothing finer'")
        continue
    t = f"{d}/l{l}-w{w}.{fin[tier]}.hcsim.db"
    if r["trace"] != t.split("/")[-1]: problems.append(f"l{l}-w{w}: trace {r['trace']}")
    ran = json.loads(db(t).execute("SELECT value FROM provenance WHERE key = 'scenario_json'").fetchone()[0])["fidelity"]
    if ran != fin[tier]: problems.append(f"l{l}-w{w}: the finer run ran in the {ran} tier")
    finer = times(t)[0]
    spread = (finer - coarse) / finer
    if abs(x[11] - spread) > 1e-9: problems.append(f"l{l}-w{w}: plan.db spread {x[11]}, recomputed {spread}")
    if abs(float(r["spread"]) - spread) > 2e-6: problems.append(f"l{l}-w{w}: CSV spread {r['spread']}, recomputed {spread}")
    if abs(x[10] - finer) > 1e-9: problems.append(f"l{l}-w{w}: plan.db finer time {x[10]}, trace {finer}")
    if abs(spread) > 0.05: warn.append(f"{l} {works[w]['op']} {fin[tier]}")
open(f"{d}.warn", "w").write("".join(s + "\n" for s in sorted(warn)))
print("\n".join(problems) if problems else "OK")
PY

# warned OUT: the warnings in OUT as "layout op finer-tier", sorted.
warned() {
  sed -n 's/^hcsim plan: warning: tier check: layout \([0-9]*\) ([^)]*) \([a-z]*\) .* beyond 5 %: believe the \([a-z]*\) tier$/\1 \2 \3/p' "$1" | sort
}

# ---- --tier-check 1: each layout's busiest point, flow -> chunk ----
expect "plan --tier-check 1" 0 "^tier check: " -- "$HCSIM" plan plan.json -o out -j 2 --tier-check 1
cp out.txt k1.txt
if [ -f out/tier_check.csv ] && [ "$(head -1 out/tier_check.csv)" = "$COLS" ]; then ok "tier_check.csv with its columns"
else bad "tier_check.csv missing or wrong header" out/tier_check.csv; fi
dbcols=$(sqlite3 out/plan.db "SELECT group_concat(name, ',') FROM pragma_table_info('tier_check')")
if [ "$dbcols" = "$COLS" ]; then ok "plan.db tier_check table with the CSV's columns"; else bad "plan.db tier_check columns: $dbcols"; fi
n=$(($(wc -l < out/tier_check.csv) - 1))
if [ "$n" -eq 2 ]; then ok "2 rows: one point of one size per layout"; else bad "$n tier check rows, expected 2" out/tier_check.csv; fi
python3 check.py out 1 > chk.txt
if grep -qx OK chk.txt; then ok "picked points, tiers, times and spreads recomputed from the traces"; else bad "tier check recomputed" chk.txt out/tier_check.csv; fi
warned k1.txt > got.warn
if cmp -s out.warn got.warn; then ok "a warning exactly for |spread| > 5 % ($(wc -l < got.warn) of $n rows), naming the finer tier"
else bad "warnings differ from |spread| > 5 %" out.warn got.warn k1.txt; fi
tab=$(sed -n '/^tier check: the points/,/^tier check: /p' k1.txt | grep -cE '^[01] +oversub=')
if [ "$tab" -eq "$n" ]; then ok "stdout table: $n rows"; else bad "stdout table has $tab rows" k1.txt; fi
if grep -qE "^target alltoall 4 MiB.*; tier check: " k1.txt; then ok "the verdict mentions the tier check"; else bad "verdict lacks the tier check" k1.txt; fi
if grep -q '>tiers: chunk, flow, packet</text>' out/busbw.svg; then ok "busbw.svg subtitle names the tiers"; else bad "busbw.svg subtitle" out/busbw.svg; fi

# ---- --tier-check 3: every point; chunk -> packet, and packet has nothing finer ----
expect "plan --tier-check 3" 0 "nothing finer" -- "$HCSIM" plan plan.json -o out3 -j 2 --tier-check 3
cp out.txt k3.txt
python3 check.py out3 3 > chk.txt
if grep -qx OK chk.txt; then ok "K = 3: every point, recomputed from the traces"; else bad "K = 3 recomputed" chk.txt out3/tier_check.csv; fi
for t in "flow,.*,chunk" "chunk,.*,packet" "packet,[0-9.]*,,,,nothing finer: packet is the finest tier"; do
  if grep -qE ",$t" out3/tier_check.csv; then ok "K = 3: a row $t"; else bad "K = 3: no row $t" out3/tier_check.csv; fi
done
warned k3.txt > got.warn
if cmp -s out3.warn got.warn; then ok "K = 3: warnings exactly for |spread| > 5 %"; else bad "K = 3: warnings" out3.warn got.warn k3.txt; fi

# ---- without --tier-check (a dry run: the same report path, no simulation): no table, and an
# earlier tier_check.csv is gone ----
expect "plan without --tier-check" 0 "" -- "$HCSIM" plan plan.json -o out3 --dry-run
if [ ! -e out3/tier_check.csv ] && ! grep -q "tier check" out.txt &&
   [ "$(sqlite3 out3/plan.db "SELECT COUNT(*) FROM sqlite_master WHERE name = 'tier_check'")" = 0 ]; then
  ok "no tier check without the option (stale CSV removed)"
else bad "tier check without the option" out.txt; fi

# ---- bad K ----
for k in -1 abc 1001 1.5 ""; do
  expect "--tier-check '$k': exit 2" 2 "--tier-check needs a number of points per layout from 0 to 1000, got \"$k\"" -- \
    "$HCSIM" plan plan.json -o badk --tier-check "$k"
done
if [ ! -e badk ]; then ok "bad K: nothing written"; else bad "bad K wrote badk/"; fi
expect "--tier-check without K: exit 2" 2 "--tier-check needs a number" -- "$HCSIM" plan plan.json -o badk --tier-check

echo "plan_tier_check_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
