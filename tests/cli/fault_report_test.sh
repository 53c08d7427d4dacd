#!/usr/bin/env bash
# hcsim run's fault report and pathology warnings (docs/tools.md#fault-report): per fault what it
# did, on stdout, in --report JSON and in the trace's faults table; a fault that never fired fails
# the run; a retransmit timeout, a 10x repetition and drops are warnings; failures condensed per
# cause. Usage: fault_report_test.sh HCSIM SRC
set -u
HCSIM=$(realpath "$1"); SRC=$(realpath "$2")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
. "$SRC/tests/cli/check_lib.sh"
has() {  # name file pattern (grep -E)
  if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: no /$3/ in $2" "$2"; fi
}
run() {  # want-exit args... : stdout to out.txt, stderr to err.txt
  local want=$1; shift
  "$HCSIM" run "$@" > out.txt 2> err.txt
  local rc=$?
  [ "$rc" -eq "$want" ] && ok "exit $rc: $*" || bad "exit $rc, want $want: $*" out.txt
}
Q=$SRC/scenarios/quickstart.json
LINK='link_down a=server0/npu2 b=server0/npu5 at.step=0 at.rep=1 at.after=40%'

# 1. An HCCS link down mid all-reduce with op retry: survived, every rank retried, the report says
#    when it was found, what each rank did, when traffic resumed and what the repetition cost.
run 0 "$Q" -q --db t.db --report r.json --set /workload/0/bytes=16MiB --set '/hcomm_env/HCOMM_OP_RETRY="1"' --fault "$LINK"
has "report: the fault and its target" out.txt '^  fault 0: link_down HCCS link server0/hccs2-5 down$'
has "report: injected, one transition" out.txt '^    injected at [0-9.]+ us$'
has "report: detected, every rank retried" out.txt '^    detected at [0-9.]+ us to [0-9.]+ us \(8 failovers rows\): retry ranks 0-7$'
has "report: resumed, bytes re-sent" out.txt '^    resumed at [0-9.]+ us \([0-9.]+ us after the fault\), [0-9.]+ [KMG]iB re-sent$'
has "report: the repetition against its untouched sibling" out.txt '^    step 0 rep 1: [0-9.]+ us against a median of [0-9.]+ us of its step.s untouched repetitions \([0-9.]+x\)$'
python3 - r.json t.db > py.txt 2>&1 <<'PY' && ok "JSON report and faults row agree with the failovers table" || bad "JSON report / faults row" py.txt
import json, sqlite3, sys
r = json.load(open(sys.argv[1])); db = sqlite3.connect(sys.argv[2])
f = r["faults"][0]
assert r["status"] == "ok" and r["exit_code"] == 0 and f["fired"] and f["type"] == "link_down", r
assert f["actions"] == {"retry": list(range(8))}, f["actions"]
fo = db.execute("SELECT min(detected_at_ns), max(detected_at_ns), max(resumed_at_ns), sum(bytes_resent), count(*) FROM failovers").fetchone()
assert abs(f["first_detected_us"] * 1e3 - fo[0]) < 1e-3 and abs(f["last_detected_us"] * 1e3 - fo[1]) < 1e-3, (f, fo)
assert abs(f["resumed_at_us"] * 1e3 - fo[2]) < 1e-3 and f["bytes_resent"] == fo[3] and f["detections"] == fo[4], (f, fo)
row = db.execute("SELECT fired, transitions, actions, step, rep, injected_at_ns FROM faults WHERE id = 0").fetchone()
assert row[:5] == (1, 1, "retry: ranks 0-7", 0, 1), row
assert abs(row[5] / 1e3 - f["injected_at_us"]) < 1e-6, row
ops = db.execute("SELECT min(start_ns), max(end_ns) FROM operations WHERE step = 0 AND rep = 1 AND kind = 'allreduce'").fetchone()
assert ops[0] <= row[5] <= ops[1], (ops, row)   # it hit the repetition it names
PY

# 2. The same with op retry off: every rank aborts; one line says how to turn retry on.
run 1 "$Q" -q --no-trace --set /workload/0/bytes=16MiB --set '/hcomm_env/HCOMM_OP_RETRY="0"' --fault "$LINK"
has "abort: every rank" out.txt ': abort ranks 0-7$'
has "abort: the hint names the knob" out.txt '^hint: .*HCOMM_OP_RETRY=1'
has "abort: the repetition did not complete" out.txt '^    step 0 rep 1: did not complete$'

# 3. A fault timed after the run's end never fires: a warning and a failure, unless the scenario
#    says expect/faults_fired false; its faults row says fired 0.
run 1 "$Q" -q --db nf.db --set /workload/0/bytes=1MiB --fault 'link_down a=server0/npu0 b=server0/npu1 at=10s'
has "never fired: in the report" out.txt '^    NOT FIRED: due at 10000000.000 us, the run ended at [0-9.]+ us$'
has "never fired: a failure" out.txt '^FAIL: fault 0 \(link_down .*\) never fired'
[ "$(sqlite3 nf.db 'SELECT fired, injected_at_ns IS NULL FROM faults')" = "0|1" ] && ok "never fired: faults row" || bad "never fired: faults row $(sqlite3 nf.db 'SELECT * FROM faults')"
run 0 "$Q" -q --no-trace --set /workload/0/bytes=1MiB --set /expect/faults_fired=false --fault 'link_down a=server0/npu0 b=server0/npu1 at=10s'
has "faults_fired false: only a warning (stderr)" err.txt '^hcsim: warning: fault 0 .* never fired'
has "faults_fired false: PASS says there are warnings" out.txt '^hcsim: PASS: all expectations held \(1 warning above\)$'

# 4. A 20 us NIC flap (under the port debounce) that costs one all-reduce the RDMA retransmit
#    timeout: warnings on stderr (timeout, the outlier repetition); expect/max_step_slowdown fails it.
FLAP=(--set '/network={"port_event":"100us","port_debounce":"50us"}' --set /workload/0/repeat=4
      --set '/faults/0={"type":"nic_flap","npu":"node0/npu3","at":{"step":0,"after":"180us"},"duration":"20us","count":1,"period":"100us"}')
run 0 "$SRC/tests/fixtures/nic-flap-debounce.json" -q --no-trace "${FLAP[@]}"
has "flap: the retransmit timeout is a warning" err.txt '^hcsim: warning: [0-9]+ RDMA retransmit timeout'
has "flap: the slow repetition is a warning" err.txt '^hcsim: warning: step 0 rep 0 \(allreduce\) took [0-9.]+ us, [0-9.]+x the median'
has "flap: PASS names the warnings" out.txt '^hcsim: PASS: all expectations held \([0-9]+ warnings above\)$'
has "flap: 2 transitions, 1 fault" out.txt '^faults: 1 of 1 fired$'
run 1 "$SRC/tests/fixtures/nic-flap-debounce.json" -q --no-trace "${FLAP[@]}" --set /expect/max_step_slowdown=10
has "max_step_slowdown: the failure" out.txt '^FAIL: step 0 rep 0 .* over max_step_slowdown 10$'

# 5. Counts per fault, not per transition: a flap of count 2 is one fault of 4 transitions.
run 0 "$SRC/tests/fixtures/nic-flap-debounce.json" -q --no-trace
has "flap count 2: one fault" out.txt '^faults: 1 of 1 fired$'
has "flap count 2: 4 transitions" out.txt '^    injected at [0-9.]+ us, 4 transitions until [0-9.]+ us$'

# 6. A failure of every rank prints at most 8 ranks per distinct cause, then a count;
#    --all-failures lists them all.
C=$SRC/scenarios/collectives-2node.json
KILL=(--set '/workload=[{"op":"allreduce","bytes":"4MiB"}]' --set '/hcomm_env/HCOMM_OP_RETRY="0"' --fault 'nic_down npu=node0/npu0 at.step=0 at.after=30%')
run 1 "$C" -q --no-trace "${KILL[@]}"
n=$(grep -cE '^  rank [0-9]+ \(' out.txt)
[ "$n" -le 16 ] && grep -qE '^  \.\.\. and [0-9]+ more with this cause' out.txt && ok "condensed: $n rank lines and a count" || bad "condensed ($n lines)" out.txt
total=$(sed -n 's/^ranks that failed or did not finish: //p' out.txt)
run 1 "$C" -q --no-trace "${KILL[@]}" --all-failures
[ "$(grep -cE '^  rank [0-9]+ \(' out.txt)" = "$total" ] && ok "--all-failures: all $total ranks" || bad "--all-failures" out.txt

echo "fault_report_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
