#!/usr/bin/env bash
# Route decisions in CI (docs/routing.md#cli): every golden scenario's decisions equal its reviewed
# golden file (tests/golden/NAME.routes); two runs give the same bytes; deliberate changes (an
# HCCS link down at start, oversubscription 1:1 -> 2:1, the NIC's hash instead of probes) show up
# in hcsim diff (exit 1, the moved decisions listed, JUnit failure); an unrelated change (counter
# sampling) does not; the slot rule spreads each leaf's stripes evenly over its uplinks; bad input
# exits 2.
# Usage: routes_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
G=$SRC/tests/golden
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

# 1. Golden files.
for g in a2-2node clos-nr-4 clos3-small; do
  "$HCSIM" run "$G/$g.scenario.json" --db "$g.db" -q > run.txt 2>&1 || bad "$g: run failed" run.txt
  expect "golden $g" 0 "no differences" -- "$HCSIM" diff "$G/$g.routes" "$g.db"
done

# 2. Determinism: the same scenario twice, the same routes bytes.
"$HCSIM" routes "$G/clos-nr-4.scenario.json" -o a.routes > /dev/null 2>&1
"$HCSIM" routes "$G/clos-nr-4.scenario.json" -o b.routes > /dev/null 2>&1
if cmp -s a.routes b.routes && [ -s a.routes ]; then ok "determinism"; else bad "determinism: routes differ between two runs" a.routes; fi

# 3. The slot rule (docs/routing.md): on clos-nr-4 (radix 8 leaves: ports 0-3 down, 4-7 up; 2
#    stripes per peer) stripe i of the NIC on leaf port p leaves by uplink 4 + (p + 2i) mod 4 —
#    every leaf's 8 stripes per peer set spread 2 per uplink, and its 4 stripes 0 (all a write
#    below the multi-QP threshold uses) 1 per uplink. Checked on every cross-leaf decision.
awk -F'\t' '$6=="roce" && $9 ~ /spine/ {n++; split($9,h," "); split(h[1],a,":"); split(a[2],p,">");
  if (p[2] != 4 + (p[1] + 2 * $4) % 4) {print "wrong uplink: " $0; bad=1}}
  END {if (n < 64) {print "only " n " cross-leaf decisions"; bad=1}; exit bad}' a.routes > slot.txt \
  && ok "slot rule on every cross-leaf stripe" || bad "slot rule" slot.txt

# 4. Deliberate changes show up.
python3 - "$G/a2-2node.scenario.json" "$SRC/topologies/a2-2node.json" > linkdown.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"] = sys.argv[2]
s["faults"] = [{"type": "link_down", "at": "0us", "a": "node0/npu0", "b": "node0/npu1"}]
print(json.dumps(s))
PY
"$HCSIM" run linkdown.json --db linkdown.db -q > run.txt 2>&1
# A link down at start: discovery finds the pair without HCCS or PCIe, so both directions go
# through a relay NPU (docs/routing.md#relay), chosen by bottleneck rate, then fewest pairs
# relayed, then lowest rank: rank 2; exactly those two decisions move.
expect "link down at start moves 0->1 to hccs-relay" 1 "changed comm 1 rank 0 -> 1 qp 0 #0: hccs - sport 0 \[node0/hccs0-1\] \(hccs direct \(priority 1\)\)  ->  hccs-relay - sport 0 \[node0/hccs0-2 node0/hccs1-2\] \(hccs relay via rank 2" -- "$HCSIM" diff "$G/a2-2node.routes" linkdown.db --junit j.xml
grep -q "changed comm 1 rank 1 -> 0 qp 0 #0: .* hccs-relay - sport 0 \[node0/hccs1-2 node0/hccs0-2\]" out.txt && grep -q "144 vs 144 decisions, 2 moved" out.txt &&
  ok "only the two directions of the pair moved" || bad "relay diff" out.txt
grep -q "PASS: all expectations held" run.txt && ok "link-down scenario's collectives pass through the relay" || bad "link-down run" run.txt
# The relay rule: largest bottleneck rate first (0-1 down, 0-2 at 4 of 8 lanes: rank 3, not 2),
# then fewest pairs already relayed (0-1 and 0-3 down: 0-1 takes rank 2, 0-3 then rank 4, not 2).
relay_case() {  # name, faults JSON, expected pair, expected relay
  python3 - "$G/a2-2node.scenario.json" "$SRC/topologies/a2-2node.json" "$2" > "$1.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"] = sys.argv[2]; s["faults"] = json.loads(sys.argv[3])
print(json.dumps(s))
PY
  "$HCSIM" routes "$1.json" -o "$1.routes" > run.txt 2>&1 || { bad "$1 run" run.txt; return; }
  grep -qP "^1\t$3\t0\t0\thccs-relay\t.*hccs relay via rank $4 " "$1.routes" && ok "$1: $3 relayed via rank $4" || bad "$1" "$1.routes"
}
relay_case relay-bottleneck '[{"type": "link_down", "at": "0us", "a": "node0/npu0", "b": "node0/npu1"},
  {"type": "lane_degrade", "at": "0us", "a": "node0/npu0", "b": "node0/npu2", "lanes": 4}]' "0\t1" 3
relay_case relay-fewest '[{"type": "link_down", "at": "0us", "a": "node0/npu0", "b": "node0/npu1"},
  {"type": "link_down", "at": "0us", "a": "node0/npu0", "b": "node0/npu3"}]' "0\t3" 4
if grep -q '<failure message=' j.xml && grep -q 'name="routes"' j.xml; then ok "junit failure written"; else bad "junit" j.xml; fi
python3 - "$G/clos-nr-4.scenario.json" "$SRC/topologies/clos-nr-4.json" > oversub.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
t["fabric"]["oversubscription"] = "3:1"; json.dump(t, open("oversub.topology.json", "w"))
s["topology"] = "oversub.topology.json"; print(json.dumps(s))
PY
"$HCSIM" run oversub.json --db oversub.db -q > run.txt 2>&1
expect "oversubscription 3:1 moves cross-leaf routes" 1 "changed comm 1 rank 0 -> 8 qp 0 #0: roce" -- "$HCSIM" diff "$G/clos-nr-4.routes" oversub.db
"$HCSIM" run "$G/clos-nr-4.scenario.json" --db hash.db -q --set /hcomm_env/HCOMM_ROUTE_SPORT=hash > run.txt 2>&1
expect "hash policy differs from probe" 1 "NIC hash \(HCOMM_ROUTE_SPORT=hash\)" -- "$HCSIM" diff "$G/clos-nr-4.routes" hash.db
expect "trace vs trace: summary time moved" 1 "summary: .* [1-9][0-9]* outside" -- "$HCSIM" diff clos-nr-4.db hash.db

# Congestion re-routing (HCOMM_ROUTE_CNP_THRESHOLD): chunk tier (DCQCN), a 4 MiB all-to-all
# twice (1 MiB, one QP per peer, marks nothing on the balanced uplinks); the second operation sees
# the first one's CNPs and re-decides, recorded as second decisions.
python3 - "$G/clos-nr-4.scenario.json" "$SRC/topologies/clos-nr-4.json" > cong.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"] = sys.argv[2]; s["fidelity"] = "chunk"
s["hcomm_env"]["HCOMM_ROUTE_CNP_THRESHOLD"] = "1"
s["network"] = {"profile": "sigcomm2015"}  # marks from 5 KB (NVIDIA's 150 KB marks nothing in 4 MiB)
s["workload"] = [{"op": "alltoall", "bytes": "4MiB", "dtype": "int8", "repeat": 2}]
print(json.dumps(s))
PY
"$HCSIM" routes cong.json -o cong.routes > run.txt 2>&1 || bad "congestion scenario" run.txt
n2=$(awk -F'\t' '$5 == 1 && $11 ~ /^congestion: [0-9]+ CNPs/' cong.routes | wc -l)
if [ "$n2" -gt 0 ]; then ok "congestion re-routes ($n2 second decisions)"; else bad "congestion: no re-route" cong.routes; fi

# A dead spine cable from the start (scenarios/spine-link-down.json): probes through it do not
# come back, so no stripe is put on it and the results are right; the NIC's hash puts some there.
expect "dead spine cable: probed routes avoid it" 0 "PASS" -- "$HCSIM" run "$SRC/scenarios/spine-link-down.json" --db dead.db -q
n_dead=$(sqlite3 dead.db "SELECT COUNT(*) FROM routes WHERE hops LIKE 'leaf0:_>4 %' OR hops LIKE '% spine0:%>0 leaf0:%'")
if [ "$n_dead" = 0 ]; then ok "no stripe on leaf0 port 4"; else bad "$n_dead stripes on the dead uplink"; fi
"$HCSIM" run "$SRC/scenarios/spine-link-down.json" --no-trace -q --set /hcomm_env/HCOMM_ROUTE_SPORT=hash > hash.txt 2>&1
if [ $? -eq 1 ]; then ok "dead spine cable: the NIC hash fails"; else bad "dead spine cable with hash did not fail" hash.txt; fi

# 5. An unrelated change does not.
"$HCSIM" run "$G/clos-nr-4.scenario.json" --db sampled.db -q --sample-interval 10us > run.txt 2>&1
expect "counter sampling changes nothing" 0 "no differences" -- "$HCSIM" diff clos-nr-4.db sampled.db

# 5b. Notify-only peers (docs/routing.md#control-only-peers): a barrier first, then an all-reduce
#     on clos-nr-4. The barrier's cross-leaf peers stay on the NIC's hash, no port set; the
#     all-reduce routes each of them again with trigger "first data", by probe (slot rule), and
#     every barrier-only pair keeps its one decision.
python3 - "$G/clos-nr-4.scenario.json" "$SRC/topologies/clos-nr-4.json" > barrier.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"] = sys.argv[2]
s["workload"] = [{"op": "barrier"}, {"op": "allreduce", "bytes": "16MiB", "dtype": "fp32", "reduce": "sum"}]
print(json.dumps(s))
PY
"$HCSIM" routes barrier.json -o barrier.routes > run.txt 2>&1 || bad "barrier-then-allreduce run" run.txt
awk -F'\t' '/^#/ {next}
  $10 ~ /notifies only/ { if ($11 != "first use" || $6 != "roce" || $9 !~ /spine/) {print "bad control row: " $0; bad=1}; ctl[$2" "$3]=1; nctl++ }
  $11 == "first data" { if (!(($2" "$3) in ctl) || $10 !~ /^probed uplink/) {print "bad first-data row: " $0; bad=1}; up[$2" "$3]=1; nup++ }
  END { if (nctl < 16 || nup < 16) {print "control " nctl ", first data " nup; bad=1}; exit bad }' barrier.routes > ctl.txt \
  && ok "barrier peers on the hash, probed at first data" || bad "notify-only peers" ctl.txt

# 5c. Notify-only peers over a dead cable: spine-link-down (leaf0 port 4 down from the start) with
#     three barriers before its all-reduce. The notifies' stripe is connected only on a probed port
#     whose probe came back, so no notify is lost on the dead cable and the run passes; with the
#     NIC's hash alone (no probe) rank 24's notifies died there.
python3 - "$SRC/scenarios/spine-link-down.json" "$SRC/topologies/clos-nr-4.json" > sld.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"] = sys.argv[2]
s["workload"] = [{"op": "barrier", "repeat": 3}, {"op": "allreduce", "bytes": "4MiB", "dtype": "int32", "reduce": "sum"}]
print(json.dumps(s))
PY
if "$HCSIM" run sld.json --db sld.db -q > run.txt 2>&1 && grep -q "PASS: all expectations held" run.txt; then
  ok "barriers over a dead spine cable pass"; else bad "barriers over a dead spine cable" run.txt; fi
"$HCSIM" routes sld.db -o sld.routes > /dev/null 2>&1
awk -F'\t' '/^#/ {next} $10 ~ /^probed path/ {n++; if ($9 ~ /down|broken|no path/) {print "notify stripe on a dead path: " $0; bad=1}}
  END {if (n < 16) {print "only " n " notify stripes probed"; bad=1}; exit bad}' sld.routes > sld.txt \
  && ok "no notify stripe crosses the dead cable" || bad "notify stripes over the dead cable" sld.txt

# 6. Bad input.
expect "diff: missing file" 2 "no such file" -- "$HCSIM" diff "$G/a2-2node.routes" nope.db
expect "diff: one input" 2 "needs two inputs" -- "$HCSIM" diff "$G/a2-2node.routes"
printf 'hello\n' > junk.txt
expect "diff: not a routes file" 2 "not a trace, a scenario or a routes file" -- "$HCSIM" diff junk.txt "$G/a2-2node.routes"
printf '%s\n1\t2\n' "# hcsim routes 1: comm src dst qp n transport nic udp_sport hops reason trigger" > short.routes
expect "diff: malformed routes line" 2 "short.routes:2: expected 11" -- "$HCSIM" diff short.routes "$G/a2-2node.routes"
expect "routes: bad scenario" 2 "" -- "$HCSIM" routes "$SRC/tests/fixtures/not-json.json"
expect "routes --help" 0 "usage: hcsim routes" -- "$HCSIM" routes --help
expect "diff --help" 0 "usage: hcsim diff" -- "$HCSIM" diff --help

echo "routes_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
