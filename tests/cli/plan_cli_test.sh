#!/usr/bin/env bash
# hcsim plan (docs/plan-format.md): a two-layout sweep run with -j 2; every row checked against a
# direct `hcsim run` of a scenario and topology written here by hand (not the plan's files); the
# target's verdict recomputed from the CSV; -j 1 gives the same rows; bad plans exit 2 naming the
# JSON pointer; an output directory it did not make is refused.
# Usage: plan_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
FX=$SRC/tests/fixtures/plan
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
# plan.json: the fixture with an absolute topology path and a target of $1 us.
mkplan() {
  python3 - "$FX/small.json" "$SRC/topologies/clos-1024.json" "$1" > plan.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["topology"] = sys.argv[2]
p["target"]["max_time_us"] = float(sys.argv[3])
print(json.dumps(p, indent=1))
PY
}

# ---- the sweep, -j 2 ----
mkplan 1000000
expect "plan runs 2 layouts x 2 workloads" 0 "target allreduce 4 MiB" -- "$HCSIM" plan plan.json -o out -j 2
cp out.txt first.txt
for f in plan.csv plan.db busbw.svg time-vs-servers.svg cost.svg l0-w0.hcsim.db l1-w1.hcsim.db .hcsim-plan; do
  if [ -e "out/$f" ]; then ok "out/$f written"; else bad "out/$f missing" out.txt; fi
done
rows=$(($(wc -l < out/plan.csv) - 1))
if [ "$rows" -eq 6 ]; then ok "plan.csv: 6 rows"; else bad "plan.csv: $rows rows, expected 6" out/plan.csv; fi
n=$(python3 -c "import sqlite3; print(sqlite3.connect('out/plan.db').execute('select count(*) from points where status=\"ok\" and time_us > 0').fetchone()[0])")
if [ "$n" -eq 6 ]; then ok "plan.db: 6 points with times"; else bad "plan.db: $n ok points" out/plan.csv; fi
if python3 -c "import xml.dom.minidom,sys; [xml.dom.minidom.parse(f) for f in sys.argv[1:]]" out/*.svg; then ok "SVGs parse"; else bad "SVG does not parse"; fi
# A workload's hcomm_env reaches its runs only: workload 0 sets HCOMM_MULTI_QP_THRESHOLD, workload 1 HCOMM_ALGO by "algo".
envs=$(python3 -c "
import json
for f in ('out/l0-w0.scenario.json', 'out/l1-w0.scenario.json', 'out/l0-w1.scenario.json'):
    print(json.dumps(json.load(open(f)).get('hcomm_env'), sort_keys=True))" | tr '\n' ' ')
want='{"HCOMM_MULTI_QP_THRESHOLD": "1"} {"HCOMM_MULTI_QP_THRESHOLD": "1"} {"HCOMM_ALGO": "level0:NA;level1:H-D_R"} '
if [ "$envs" = "$want" ]; then ok "workload hcomm_env in its scenarios only"; else bad "scenario envs: $envs"; fi

# ---- every row against a direct run of a hand-written scenario (topology edited here) ----
python3 - "$SRC/topologies/clos-1024.json" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
for servers in (2, 3):
    t = dict(base); t["server_groups"] = [dict(base["server_groups"][0], count=servers)]
    json.dump(t, open(f"topo{servers}.json", "w"))
    for algo in ("auto", "hd"):
        s = {"format": "hcsim-scenario", "version": 1, "name": f"direct{servers}{algo}", "topology": f"topo{servers}.json",
             "fidelity": "flow", "payload": "timing",
             "workload": [{"op": "allreduce", "bytes": b} for b in (["1MiB", "4MiB"] if algo == "auto" else ["4MiB"])]}
        if algo == "hd": s["hcomm_env"] = {"HCOMM_ALGO": "level0:NA;level1:H-D_R"}
        else: s["hcomm_env"] = {"HCOMM_MULTI_QP_THRESHOLD": "1"}
        json.dump(s, open(f"direct{servers}{algo}.json", "w"))
PY
for servers in 2 3; do
  for algo in auto hd; do
    "$HCSIM" run direct$servers$algo.json --db d$servers$algo.db -q > /dev/null 2>&1
    sqlite3 d$servers$algo.db "select printf('%.3f', avg(time_us)) from summary group by step order by step" >> direct.txt
  done
done
python3 - > planned.txt <<'PY'
import csv
rows = list(csv.DictReader(open("out/plan.csv")))
for r in rows: print(r["time_us"])
PY
if diff -q direct.txt planned.txt > /dev/null; then ok "plan times = direct hcsim run times ($(tr '\n' ' ' < direct.txt))"
else bad "plan times differ from direct runs" direct.txt planned.txt; fi
python3 - <<'PY' > check.txt
import csv
rows = list(csv.DictReader(open("out/plan.csv")))
ok = True
for r in rows:
    s, n = int(r["servers"]), int(r["npus"])
    if n != 8 * s: ok = False; print("npus", r)
    if abs(float(r["cost"]) - (100 * s + 10 * int(r["switches"]) + int(r["cables"]))) > 1e-6: ok = False; print("cost", r)
    if int(r["cables"]) < n: ok = False; print("cables < npus", r)
    if r["algo_requested"] != "auto" and r["algorithm"] != "mesh+H-D_R": ok = False; print("forced H-D_R not used", r)
print("OK" if ok else "BAD")
PY
if grep -qx OK check.txt; then ok "layout counts, costs, forced algorithm"; else bad "CSV columns" check.txt; fi

# ---- the automatic choice against the forced H-D_R: recomputed from the CSV ----
# Per layout, the 4 MiB all-reduce ran with auto and forced: the report's line names the auto
# algorithm and the fastest, and how much slower auto was, as the CSV's times give it.
python3 - > want.txt <<'PY'
import csv
r = [x for x in csv.DictReader(open('out/plan.csv')) if x['bytes'] == '4194304']
for l in ('0', '1'):
    a = next(x for x in r if x['layout'] == l and x['algo_requested'] == 'auto')
    f = min((x for x in r if x['layout'] == l), key=lambda x: float(x['time_us']))
    print(f"{l} allreduce 4MiB {a['algorithm']} {float(a['time_us']):.1f} {f['algorithm']} {float(f['time_us']):.1f} {100 * (float(a['time_us']) / float(f['time_us']) - 1):.1f}%")
PY
sed -n '/^automatic choice against the forced algorithms (2 op\/size points)/,/^automatic choice slower/p' first.txt |
  awk 'NR > 2 && $1 ~ /^[0-9]+$/ {print $1, $2, $3 $4, $5, $6, $7, $8, $9}' > got.txt
if [ -s want.txt ] && cmp -s want.txt got.txt; then ok "selection report = CSV's auto against fastest"; else bad "selection report differs" want.txt got.txt first.txt; fi
if grep -q "^automatic choice slower than the fastest by" first.txt; then ok "selection summary line"; else bad "no selection summary" first.txt; fi

# ---- the target: verdicts recomputed from the CSV ----
# A layout's time for the target: its fastest 4 MiB all-reduce over the workloads' algorithms.
read -r t0 t1 c0 c1 < <(python3 -c "
import csv
r = [x for x in csv.DictReader(open('out/plan.csv')) if x['bytes'] == '4194304']
t = [min(float(x['time_us']) for x in r if x['layout'] == l) for l in ('0', '1')]
c = [next(x['cost'] for x in r if x['layout'] == l) for l in ('0', '1')]
print(t[0], t[1], c[0], c[1])")
lo=$(python3 -c "print(min($t0, $t1) - 1)"); hi=$(python3 -c "print(max($t0, $t1) + 1)")
mkplan "$lo"
expect "target below every layout: exit 1" 1 "no layout meets it" -- "$HCSIM" plan plan.json -o out
mkplan "$hi"
cheap=$(python3 -c "print(0 if $c0 <= $c1 else 1)")
expect "target every layout meets: the cheaper one" 0 "cheapest layout $cheap .*2 of 2 layouts meet it" -- "$HCSIM" plan plan.json -o out
mid=$(python3 -c "print(($t0 + $t1) / 2)")
fast=$(python3 -c "print(0 if $t0 < $t1 else 1)")
if [ "$t0" != "$t1" ]; then
  mkplan "$mid"
  expect "target only the faster layout meets" 0 "cheapest layout $fast .*1 of 2 layouts meet it" -- "$HCSIM" plan plan.json -o out
fi

# ---- -j 1 gives the same rows (wall and peak columns aside) ----
mkplan 1000000
"$HCSIM" plan plan.json -o out1 -j 1 > /dev/null 2>&1
if diff <(cut -d, -f1-15 out/plan.csv) <(cut -d, -f1-15 out1/plan.csv) > /dev/null; then ok "-j 1 = -j 2"; else bad "-j 1 differs" out/plan.csv out1/plan.csv; fi

# ---- bad input ----
cp "$FX/bad.json" "$FX/impossible.json" .
sed -i "s|../../../topologies|$SRC/topologies|" bad.json impossible.json
expect "unknown key" 2 "bad.json: /colour" -- "$HCSIM" plan bad.json
for p in "/sweep/0/pointer: \"/fabric/no_such_key\" names nothing" "/sweep/1/values: must be a non-empty array" \
         "/workloads/0/op: unknown op" "/workloads/0/sizes/0: unknown size unit" "/workloads/0/hcomm_env/HCOMM_NUM_QP: must be a string" \
         "/target: no workload runs allreduce at 1 GiB"; do
  if grep -qF -- "$p" out.txt; then ok "bad plan names $p"; else bad "bad plan lacks $p" out.txt; fi
done
# An impossible layout is an infeasible cell, named with its reason; the other layouts run.
expect "impossible layout: an infeasible cell, the rest runs" 0 "^1 +radix=32 .*infeasible: .*/fabric/tiers" -- "$HCSIM" plan impossible.json -o imp
if grep -qE '^0 +radix=128 .* ok$' out.txt; then ok "the feasible layout ran"; else bad "layout 0 did not run" out.txt; fi
if [ "$(sqlite3 imp/plan.db "select count(*) from points where status like 'infeasible: %/fabric/tiers%' and layout = 1")" = 1 ]; then ok "plan.db: the infeasible cell with its reason"
else bad "plan.db lacks the infeasible cell" imp/plan.csv; fi
mkdir mine && echo keep > mine/notes.txt
expect "a directory it did not make is refused" 2 "not made by hcsim plan" -- "$HCSIM" plan plan.json -o mine
if [ "$(cat mine/notes.txt)" = keep ]; then ok "the user's file is untouched"; else bad "mine/notes.txt changed"; fi
echo x > afile
expect "-o naming a file" 2 "not a directory" -- "$HCSIM" plan plan.json -o afile
expect "no plan" 2 "plan needs a plan file" -- "$HCSIM" plan
expect "-j 0" 2 "-j needs a number" -- "$HCSIM" plan plan.json -j 0
expect "a scenario is not a plan" 2 "quickstart.json: /: is a scenario, not a plan: pass it to hcsim run" -- "$HCSIM" plan "$SRC/scenarios/quickstart.json" -o q
expect "--help" 0 "usage: hcsim plan" -- "$HCSIM" plan --help

echo "plan_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
