#!/usr/bin/env bash
# hcsim plan with a training step (docs/plan-format.md#training-steps): the shipped scaled-down
# plan plans/train-ci.json (a DP x TP step over two oversubscriptions, a missing spine cable as a
# what-if, two ECMP salts), every row against a direct `hcsim run` of a scenario and topology
# written here (dp given, not derived), the verdict per what-if value recomputed from the CSV, the
# cost metric (cost x iteration time), and a step whose tp does not divide the ranks infeasible.
# Usage: plan_train_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

python3 - "$SRC" <<'PY'
import json, sys
src = sys.argv[1]
p = json.load(open(f"{src}/plans/train-ci.json"))
p["topology"] = f"{src}/topologies/clos-1024.json"
bad = json.loads(json.dumps(p["workloads"][0])); bad["parallel"] = {"tp": 3}
p["workloads"].append(bad)
json.dump(p, open("plan.json", "w"), indent=1)
PY
expect "the training-step plan runs" 0 "what-if whatif=spine0:0 missing:" -- "$HCSIM" plan plan.json -o out -j 2
cp out.txt run.txt

# Direct runs: the same step on hand-written topologies and scenarios, dp = 32 / 8 = 4 given.
python3 - "$SRC" <<'PY'
import json, sys
src = sys.argv[1]
p = json.load(open("plan.json"))
w = {k: v for k, v in p["workloads"][0].items()}
w["parallel"] = {"tp": 8, "dp": 4}
for ov in ("1:1", "3:1"):
    for f in (0, 1):
        t = json.load(open(f"{src}/topologies/clos-1024.json"))
        t["server_groups"][0]["count"] = 4
        t["fabric"].update(switch_radix=16, rail_optimized=False, oversubscription=ov)
        t["as_built"] = [{"kind": "cable_missing", "switch": "spine0", "port": 0}] if f else []
        json.dump(t, open(f"t{ov[0]}{f}.json", "w"))
        for salt in (0, 1):
            s = {"format": "hcsim-scenario", "version": 1, "name": "d", "topology": f"t{ov[0]}{f}.json", "fidelity": "flow",
                 "payload": "timing", "hcomm_env": {"HCOMM_ROUTE_SPORT": "hash"}, "network": {"ecmp_salt": salt}, "workload": [w]}
            json.dump(s, open(f"d{ov[0]}{f}{salt}.json", "w"))
PY
for f in d*.json; do "$HCSIM" run "$f" --db "${f%.json}.db" -q > /dev/null 2>&1 || bad "direct run $f failed"; done
python3 - > chk.txt <<'PY'
import csv, sqlite3
bad = []
def step(ov, f, salt):
    return sqlite3.connect(f"d{ov}{f}{salt}.db").execute("select iteration_us, exposed_comm_us, overlap from train_steps").fetchone()
rows = list(csv.DictReader(open("out/plan.csv")))
seen = 0
for r in rows:
    L = int(r["layout"]); ov = "13"[L // 2]; f = L % 2
    if r["algo_requested"] and r["status"].startswith("infeasible"):
        if "tp x pp = 3 does not divide the layout's 32 ranks" not in r["status"]: bad.append("tp 3: " + r["status"])
        continue
    runs = sorted((step(ov, f, s) for s in (0, 1)), key=lambda x: x[0])
    med = runs[0]  # the lower median of two runs
    got = [float(r[k]) for k in ("time_us", "time_min_us", "time_max_us", "exposed_comm_us", "overlap")]
    want = [med[0], runs[0][0], runs[1][0], med[1], med[2]]
    if any(abs(a - b) > 1e-3 * max(1, abs(b)) for a, b in zip(got, want)) or r["runs"] != "2":
        bad.append(f"layout {L}: plan {got} runs {r['runs']}, direct {want}")
    if abs(float(r["cost_metric"]) - float(r["cost"]) * med[0] * 1e-6) > 0.01 * float(r["cost_metric"]):
        bad.append(f"layout {L}: cost_metric {r['cost_metric']} != cost x time")
    seen += 1
if seen != 4: bad.append(f"{seen} feasible rows, expected 4")
print("\n".join(bad) if bad else "OK")
PY
if grep -qx OK chk.txt; then ok "every row: iteration (median, min, max over the salts), exposed communication, overlap = direct runs; cost_metric = cost x time; tp 3 infeasible"
else bad "rows against direct runs" chk.txt out/plan.csv; fi
# The missing cable costs time at 3:1 (one of the leaf's few uplinks gone): compare the direct runs.
if python3 -c "
import sqlite3
a = sqlite3.connect('d300.db').execute('select iteration_us from train_steps').fetchone()[0]
b = sqlite3.connect('d310.db').execute('select iteration_us from train_steps').fetchone()[0]
assert b > a, (a, b)"; then ok "the missing spine cable slows the 3:1 step"; else bad "missing cable did not slow the step"; fi
# One verdict per what-if value, each the cheapest layout of that value meeting 16 ms.
python3 - > want.txt <<'PY'
import csv
rows = [r for r in csv.DictReader(open("out/plan.csv")) if r["time_us"] != "-"]
for f in (0, 1):
    meet = [r for r in rows if int(r["layout"]) % 2 == f and float(r["time_us"]) <= 16000]
    best = min(meet, key=lambda r: (float(r["cost"]), float(r["time_us"]), int(r["layout"]))) if meet else None
    print(best["layout"] if best else None)
PY
python3 - > got.txt <<'PY'
import re
s = open("run.txt").read()
for part in s.split("what-if whatif=")[1:]:
    m = re.search(r"target train_step under 16000.0 us: cheapest layout (\d+)", part)
    print(m.group(1) if m else None)
PY
if cmp -s want.txt got.txt; then ok "a verdict per what-if value ($(tr '\n' ' ' < got.txt))"; else bad "verdicts" want.txt got.txt run.txt; fi

echo "plan_train_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
