#!/usr/bin/env bash
# hcsim exec when a user's program misbehaves, and its command line (docs/exec.md#when-a-rank-fails):
#  - a rank that aborts is a rank loss: the others' all-reduce fails (HCOMM_E_RANK_LOST or the device
#    error of a transfer to it), hcsim's exit code is the worst rank's (134 = 128 + SIGABRT);
#  - a rank_crash fault kills the rank's process (exit 137) and the survivors see the loss;
#  - a rank that stops calling hcomm is ended by the watchdog (exit 124, the rank named);
#  - a copy from a bad host pointer fails that rank's synchronize, the run goes on;
#  - a program polling hcomm_test advances simulated time (2 ms of a peer's compute) in few polls;
#  - the wall clocks of the programs report simulated time (Release builds); --host-time charges CPU time;
#  - Ctrl-C (SIGINT to hcsim) ends every rank and the trace is complete (run.status interrupted);
#    hcsim killed outright takes its ranks with it;
#  - point-to-point across servers moves the right bytes over RoCE and, with HCOMM_PROTOCOL=TCP, the
#    hosts' front-end network (about 20x slower: 25 Gb/s NICs shared by 8 ranks, kernel stacks);
#  - --tag-output prefixes lines, -n above the NPU count and a missing program are errors.
# Usage: exec_cli_test.sh HCSIM_BINARY CASES_PROGRAM HELLO_PROGRAM SOURCE_DIR [sanitized]
set -u
HCSIM=$(realpath "$1")
CASES=$(realpath "$2")
HELLO=$(realpath "$3")
SRC=$(realpath "$4")
SANITIZED=${5:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
# Sanitizer builds: the cases program leaves its handles on purpose (it exits mid-way), so its
# processes run without the leak check (hcsim itself keeps it).
WRAP=()
[ -n "$SANITIZED" ] && WRAP=(--wrapper "env ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0")
X() { "$HCSIM" exec --topology a2-2node "${WRAP[@]}" "$@"; }

expect "hello: 4 ranks all-reduce, results checked" 0 "rank 3: all-reduce of 1048576 floats took .* 0 wrong elements" -- X -n 4 --no-trace -q -- "$HELLO"
expect "crash: the aborting rank sets the exit code" 134 "rank 1 \(pid [0-9]+\) killed by signal 6" -- X -n 4 --no-trace -q -- "$CASES" crash
if grep -qE "rank [023]: allreduce: (rank lost|device task failed|remote)" out.txt && ! grep -q "allreduce: success" out.txt; then ok "crash: survivors' all-reduce failed"; else bad "crash: survivors" out.txt; fi
expect "rank_crash fault: the rank's process is killed" 137 "failed: rank lost" -- X -n 4 --db crash.db --fault 'rank_crash rank=2 at=45us' -- "$HELLO"
if grep -q "ranks' exit codes: 1 1 137 1" out.txt; then ok "rank_crash fault: rank 2 killed (137), the survivors' calls failed (1)"; else bad "rank_crash fault: exit codes" out.txt; fi
if [ "$(sqlite3 crash.db "select count(*) from faults where fired = 1")" = 1 ]; then ok "rank_crash fault: in the trace's faults table"; else bad "rank_crash fault: faults table" out.txt; fi
start=$(date +%s)
expect "watchdog: a rank that stops calling ends the run" 124 "watchdog: rank 0 \(pid [0-9]+\) made no driver call for 2 s" -- X -n 4 --no-trace -q --watchdog 2 -- "$CASES" hang
if [ $(( $(date +%s) - start )) -le 20 ]; then ok "watchdog: within 20 s"; else bad "watchdog: took too long" out.txt; fi
expect "bad host pointer: an error to that rank" 0 "copy from a bad pointer: device task failed" -- X -n 2 --no-trace -q -- "$CASES" badptr
expect "no finalize: said so" 0 "exited without destroying" -- X -n 2 --no-trace -q -- "$CASES" nofinal
expect "polling advances simulated time" 0 "rank 0: received after 20[0-9][0-9]\.[0-9] us of simulated time and [0-9]{1,4} polls: success" -- X -n 2 --no-trace -q -- "$CASES" spin
if [ -z "$SANITIZED" ]; then
  expect "wall clocks report simulated time" 0 "rank 1: wtime advanced 0.005000 s, CLOCK_REALTIME 0.005000 s" -- X -n 2 --no-trace -q -- "$CASES" clock
fi
expect "--host-time zero: host code costs nothing" 0 "rank 0: 50 ms of CPU cost 0.000 ms of simulated time" -- X -n 1 --no-trace -q -- "$CASES" busy
expect "--host-time measured:2: twice the CPU time" 0 "rank 0: 50 ms of CPU cost (9[5-9]|1[0-9][0-9])\.[0-9]+ ms of simulated time" -- X -n 1 --no-trace -q --host-time measured:2 -- "$CASES" busy
expect "p2p over RoCE (the default RDMA)" 0 "rank 3: swapped 1 MiB with rank 11 in [0-9]{2,3}\.[0-9] us: success, 0 wrong" -- X --no-trace -q -- "$CASES" p2p
if [ "$(grep -c ', 0 wrong' out.txt)" = 16 ]; then ok "p2p over RoCE: 16 ranks' bytes checked"; else bad "p2p over RoCE: bytes" out.txt; fi
expect "p2p with HCOMM_PROTOCOL=TCP (the hosts' front-end network)" 0 "rank 3: swapped 1 MiB with rank 11 in [0-9]{4}\.[0-9] us: success, 0 wrong" -- env HCOMM_PROTOCOL=TCP "$HCSIM" exec --topology a2-2node "${WRAP[@]}" --no-trace -q -- "$CASES" p2p
if [ "$(grep -c ', 0 wrong' out.txt)" = 16 ]; then ok "p2p over TCP: 16 ranks' bytes checked"; else bad "p2p over TCP: bytes" out.txt; fi
expect "--tag-output" 0 "^\[2\] rank 2: all-reduce" -- X -n 4 --no-trace -q --tag-output -- "$HELLO"
expect "environment: RANK, WORLD_SIZE, LOCAL_RANK, the NPU" 0 "^3 4 3 node0/npu3$" -- X -n 4 --no-trace -q -- sh -c 'echo $RANK $WORLD_SIZE $LOCAL_RANK $HCSIM_NPU'
expect "--ranks-per-server 2: ranks 2, 3 on the second server" 0 "^3 4 1 node1/npu1$" -- X -n 4 --ranks-per-server 2 --no-trace -q -- sh -c 'echo $RANK $WORLD_SIZE $LOCAL_RANK $HCSIM_NPU'
cat > scen.json <<JSON
{"format": "hcsim-scenario", "version": 1, "name": "ex", "topology": "$SRC/topologies/a2-2node.json", "payload": "real",
 "hcomm_env": {"HCOMM_ALGO": "level0:NA;level1:ring"}, "workload": []}
JSON
expect "a SCENARIO: its hcomm_env reaches the programs" 0 "0 wrong elements" -- "$HCSIM" exec scen.json "${WRAP[@]}" --db scen.db -q -- "$HELLO"
if [ "$(sqlite3 scen.db "select kind || ' ' || chosen_by || ' ' || count(*) from operations group by kind, chosen_by")" = "allreduce HCOMM_ALGO 16" ] &&
   [ "$(sqlite3 scen.db "select count(*) > 0 from routes")" = 1 ] && [ "$(sqlite3 scen.db "select status from run")" = ok ]; then
  ok "a SCENARIO: operations (chosen by HCOMM_ALGO) and routes traced, run ok"
else bad "a SCENARIO: trace" out.txt; fi
expect "-n above the NPU count" 2 "-n 17: the topology a2-2node has 16 NPUs" -- X -n 17 -- "$HELLO"
expect "no program" 2 "no program" -- X -n 2
expect "a program that does not exist" 127 "cannot start the program: ./nope" -- "$HCSIM" exec --topology a2-2node -n 2 --no-trace -- ./nope
expect "bad --host-time" 2 "--host-time: expected zero, measured" -- X --host-time sometimes -- "$HELLO"

# Ctrl-C: hcsim gets SIGINT while rank 0 sleeps (the others wait in the simulation): every rank
# ends, the exit code is 130, and the trace says interrupted.
"$HCSIM" exec --topology a2-2node "${WRAP[@]}" -n 4 --db int.db -q -- "$CASES" hang > int.txt 2>&1 &
pid=$!
sleep 2
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && [ "$(sqlite3 int.db "select status from run")" = interrupted ]; then ok "Ctrl-C: exit 130, trace complete"; else bad "Ctrl-C: exit $rc, status $(sqlite3 int.db "select status from run" 2>&1)" int.txt; fi
if ! pgrep -f "$CASES hang" > /dev/null; then ok "Ctrl-C: no rank process left"; else bad "Ctrl-C: rank processes left"; pkill -9 -f "$CASES hang"; fi

# hcsim killed outright (SIGKILL cannot be caught): its ranks die with it, none is left behind.
"$HCSIM" exec --topology a2-2node "${WRAP[@]}" -n 2 --no-trace -q -- "$CASES" hang > kill.txt 2>&1 &
pid=$!
sleep 2
kill -9 $pid
wait $pid 2> /dev/null
sleep 1
if ! pgrep -f "$CASES hang" > /dev/null; then ok "hcsim killed: its ranks die with it"; else bad "hcsim killed: rank processes left" kill.txt; pkill -9 -f "$CASES hang"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
