#!/usr/bin/env bash
# Failover on by default and rank loss (docs/failover.md#op-retry-hcomm_op_retry1,
# docs/failover.md#rank-loss, docs/scenario-format.md#expect):
#   1. fault-free runs are the same to the picosecond with op retry on (the default) and off;
#   2. per fault type the library routes around (HCCS link down, NIC down, leaf-spine cable down
#      on a Clos, a NIC flap longer than the port debounce, a CRC storm): no knob set, every rank
#      finishes, every result equals the host reference, the failovers rows say what was done and
#      every rank's error callback got the informational HCOMM_I_FAILOVER (66); with
#      HCOMM_OP_RETRY=0 (HCCL's default) the documented abort (the CRC storm stays non-fatal);
#   3. a rank crash with /on_rank_loss "stop": every survivor stops at once with HCOMM_E_RANK_LOST,
#      within the loss bound of the crash, no later step, no check of an unfinished operation;
#   4. a rank crash with "shrink": expect/outcome "shrunk" passes (exit 0) with every survivor's
#      results correct; a wrong outcome fails the run, a bad one is refused (exit 2).
# Usage: failover_default_test.sh HCSIM SRC
set -u
HCSIM=$(realpath "$1"); SRC=$(realpath "$2")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -25; }
has() { if grep -qE -- "$3" "$2"; then ok "$1"; else bad "$1: no /$3/ in $2" "$2"; fi; }
run() {  # name want-exit args... : stdout+stderr to out.txt
  local name=$1 want=$2; shift 2
  "$HCSIM" run "$@" > out.txt 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] && ok "$name: exit $rc" || bad "$name: exit $rc, want $want ($*)" out.txt
}
q() { sqlite3 "$1" "$2"; }
OFF='/hcomm_env/HCOMM_OP_RETRY="0"'

# 1. Fault-free: the operations and summary tables (and the end) equal with op retry on and off
#    (quickstart in 8 MiB slices: op retry's slice markers cost the streams nothing).
for s in collectives-2node host-dma quickstart; do
  more=(); [ $s = quickstart ] && more=(--set /workload/0/repeat=1 --set '/hcomm_env={"HCOMM_BUFFSIZE_MB": "8"}')
  "$HCSIM" run "$SRC/scenarios/$s.json" -q --db on.db --force "${more[@]}" > /dev/null 2>&1
  "$HCSIM" run "$SRC/scenarios/$s.json" -q --db off.db --force "${more[@]}" --set "$OFF" > /dev/null 2>&1
  for db in on off; do
    q $db.db "SELECT rank, seq, kind, algorithm, bytes, step, rep, printf('%.3f', start_ns), printf('%.3f', end_ns), status FROM operations ORDER BY rank, seq, step, rep" > $db.ops
    q $db.db "SELECT step, rep, kind, bytes, printf('%.6f', time_us) FROM summary ORDER BY step, rep; SELECT sim_end_ns FROM run" >> $db.ops
  done
  if [ -s on.ops ] && cmp -s on.ops off.ops && [ "$(q on.db 'SELECT COUNT(*) FROM failovers')" = 0 ]; then ok "fault-free $s: op retry on and off alike ($(wc -l < on.ops) rows)"
  else diff on.ops off.ops | head > d.txt; bad "fault-free $s: op retry on and off differ" d.txt; fi
done

# 2. Survived by default, aborted with op retry off.
#    survived NAME SCENARIO [args]: exit 0, every check ok, retry/resume rows, every rank told 66.
survived() {
  local name=$1 f=$2; shift 2
  run "$name by default" 0 "$f" -q --db s.db --force --report s.json "$@"
  local nranks; nranks=$(q s.db "SELECT ranks FROM run")
  local checks; checks=$(q s.db "SELECT COUNT(*), SUM(ok) FROM checks")
  local rows; rows=$(q s.db "SELECT COUNT(DISTINCT detected_by) FROM failovers WHERE action IN ('retry', 'resume') AND resumed_at_ns > 0")
  local told; told=$(q s.db "SELECT COUNT(DISTINCT rank) FROM logs WHERE message LIKE '%error callback: fault survived (informational) (66)%'")
  local errs; errs=$(q s.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%error callback%' AND message NOT LIKE '%(66)%'")
  local c=${checks%|*} o=${checks#*|}
  if [ "$c" -gt 0 ] && [ "$c" = "$o" ] && [ "$rows" = "$nranks" ] && [ "$told" = "$nranks" ] && [ "$errs" = 0 ] &&
     python3 -c 'import json,sys; r=json.load(open("s.json")); sys.exit(0 if r["outcome"]=="survived" and r["ranks_failed"]==0 else 1)'; then
    ok "$name: $o/$c checks ok, $rows of $nranks ranks re-executed, $told told HCOMM_I_FAILOVER"
  else bad "$name: checks $checks, re-executed $rows, told $told, errors $errs of $nranks ranks" out.txt; fi
}
#    aborted NAME SCENARIO [args]: with HCOMM_OP_RETRY=0 a call fails (exit 1), every failovers
#    row is an abort, the hint names the knob; expect/outcome "aborted" makes it the pass.
aborted() {
  local name=$1 f=$2; shift 2
  run "$name, HCOMM_OP_RETRY=0" 1 "$f" -q --db a.db --force "$@" --set "$OFF"
  has "$name, HCOMM_OP_RETRY=0: the hint" out.txt '^hint: a fault aborted an operation because op retry is off; HCOMM_OP_RETRY=1'
  local rows; rows=$(q a.db "SELECT COUNT(*), SUM(action = 'abort'), SUM(code IN (15, 21)) FROM failovers")
  local n=${rows%%|*}
  [ "$n" -gt 0 ] && [ "$rows" = "$n|$n|$n" ] && ok "$name, HCOMM_OP_RETRY=0: $n abort rows" || bad "$name: rows (all, abort, code 15/21) $rows" out.txt
  run "$name, HCOMM_OP_RETRY=0, expect/outcome aborted" 0 "$f" -q --no-trace "$@" --set "$OFF" --set '/expect={"outcome": "aborted"}'
}
Q=$SRC/scenarios/quickstart.json
LINK=(--set /workload/0/bytes=16MiB --set /workload/0/repeat=2 --fault 'link_down a=server0/npu2 b=server0/npu5 at.step=0 at.rep=1 at.after=40%')
survived "HCCS link down" "$Q" "${LINK[@]}"
aborted "HCCS link down" "$Q" "${LINK[@]}"
NIC=(--set /workload/0/bytes=16MiB --set /workload/0/repeat=1 --set '/hcomm_env={}' --set '/faults/0/at/after="30%"')
survived "NIC down" "$SRC/scenarios/nic-down-borrow.json" "${NIC[@]}"
aborted "NIC down" "$SRC/scenarios/nic-down-borrow.json" "${NIC[@]}"
SPINE=(--set '/hcomm_env={"HCOMM_NUM_QP": "2", "HCOMM_TIMEOUT_MS": "1000"}' --set /workload/0/repeat=1)
survived "leaf-spine cable down (Clos)" "$SRC/scenarios/spine-link-down-retry.json" "${SPINE[@]}"
aborted "leaf-spine cable down (Clos)" "$SRC/scenarios/spine-link-down-retry.json" "${SPINE[@]}"
FLAP=(--set '/hcomm_env={}' --set '/faults/0/duration="200us"' --set /faults/0/count=1 --set '/faults/0/at/after="20%"')
survived "NIC flap over the debounce" "$SRC/tests/fixtures/nic-flap-debounce.json" "${FLAP[@]}"
aborted "NIC flap over the debounce" "$SRC/tests/fixtures/nic-flap-debounce.json" "${FLAP[@]}"
# A CRC storm is non-fatal (the link's replay keeps the data): a warn row per rank at its ends and
# the notice to those ranks' callbacks, with op retry on or off.
for mode in default off; do
  extra=(); [ $mode = off ] && extra=(--set "$OFF")
  run "CRC storm, op retry $mode" 0 "$SRC/scenarios/hccs-crc-retries.json" -q --db c.db --force "${extra[@]}"
  got="$(q c.db "SELECT COUNT(*), SUM(action = 'warn') FROM failovers")|$(q c.db "SELECT COUNT(DISTINCT rank) FROM logs WHERE message LIKE '%error callback: fault survived (informational) (66)%'")|$(q c.db "SELECT COUNT(*) = SUM(ok) FROM checks")"
  [ "$got" = "2|2|2|1" ] && ok "CRC storm, op retry $mode: 2 warn rows, ranks 0 and 1 told, checks ok" || bad "CRC storm, op retry $mode: $got" out.txt
done

# 3. stop after a rank crash: three steps; rank 9 dies 40 % into step 0. Every survivor's call
#    returns HCOMM_E_RANK_LOST (65) within 4 x the 1 ms loss bound; nobody starts step 1 or 2; no
#    check row for an operation that did not finish; the run ends right after the crash.
cat > stop.json <<EOF
{ "format": "hcsim-scenario", "version": 1, "name": "crash-stop", "topology": "$SRC/topologies/a2-2node.json",
  "network": { "timeout_exp": 12, "retry_count": 3 },
  "workload": [ { "op": "allreduce", "bytes": "16MiB", "repeat": 2 }, { "op": "allgather", "bytes": "1MiB" }, { "op": "allreduce", "bytes": "4MiB" } ],
  "faults": [ { "type": "rank_crash", "at": { "step": 0, "rep": 1, "after": "40%" }, "rank": 9 } ],
  "expect": { "outcome": "aborted" } }
EOF
run "crash, stop" 0 stop.json -q --db stop.db --report stop.json.out --all-failures
python3 - stop.db stop.json.out > py.txt 2>&1 <<'PY' && ok "crash, stop: every survivor stopped at once with HCOMM_E_RANK_LOST" || bad "crash, stop" py.txt
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); r = json.load(open(sys.argv[2]))
fo = db.execute("SELECT fault_at_ns FROM failovers LIMIT 1").fetchone()[0]
end = db.execute("SELECT sim_end_ns FROM run").fetchone()[0]
assert end - fo < 4e6, ("run ended", end, "crash", fo)              # within 4 ms of the crash, not 30 s
survivors = [x for x in range(16) if x != 9]
codes = dict(db.execute("SELECT detected_by, code FROM failovers"))
assert sorted(codes) == survivors and set(codes.values()) == {65}, codes
later = db.execute("SELECT COUNT(*) FROM operations WHERE step > 0 OR (step = 0 AND rep > 1)").fetchone()[0]
assert later == 0, ("operations after the failed repetition", later)
bad_checks = db.execute("SELECT COUNT(*) FROM checks c WHERE NOT EXISTS (SELECT 1 FROM operations o WHERE o.rank = c.rank AND o.step = c.step AND o.rep = c.rep AND o.status = 'ok')").fetchone()[0]
failed_checks = db.execute("SELECT COUNT(*) FROM checks WHERE ok = 0").fetchone()[0]
assert bad_checks == 0 and failed_checks == 0, ("checks of unfinished operations", bad_checks, failed_checks)
assert r["outcome"] == "aborted" and r["exit_code"] == 0, r
PY
has "crash, stop: survivors listed with the loss code" out.txt '^  rank 15 \(node1/npu7\): failed in step 0 rep 1 \(allreduce\): hcomm_stream_synchronize: rank lost$'
[ "$(grep -cE '^  rank [0-9]+ .*: rank lost$' out.txt)" = 15 ] && ok "crash, stop: 15 survivors with 'rank lost'" || bad "crash, stop: survivors' codes" out.txt

# 4. shrink: expect/outcome "shrunk" passes with every survivor finishing with correct results.
run "crash, shrink, expect shrunk" 0 "$SRC/scenarios/rank-crash-shrink.json" -q --db sh.db --report sh.json
has "crash, shrink: survivors went on" out.txt '^ranks that went on after a rank loss: 15$'
got="$(q sh.db "SELECT COUNT(DISTINCT rank), COUNT(*), SUM(ok) FROM checks")|$(python3 -c 'import json; r=json.load(open("sh.json")); print(r["outcome"], r["ranks_failed"], r["ranks_recovered"])')"
[ "$got" = "15|60|60|shrunk 1 15" ] && ok "crash, shrink: 15 ranks x 4 repetitions checked ok, outcome shrunk" || bad "crash, shrink: $got" out.txt
run "crash, shrink, expect aborted" 1 "$SRC/scenarios/rank-crash-shrink.json" -q --no-trace --set '/expect/outcome="aborted"'
has "crash, shrink, expect aborted: says why" out.txt 'expect/outcome is "aborted", but the run shrunk'
run "crash, stop, expect shrunk" 1 "$SRC/scenarios/rank-crash.json" -q --no-trace --set '/expect/outcome="shrunk"'
run "expect/outcome refused" 2 "$SRC/scenarios/rank-crash.json" -q --no-trace --set '/expect/outcome="gone"'
has "expect/outcome refused: names it" out.txt '/expect/outcome: expected "survived", "aborted" or "shrunk", got "gone"'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
