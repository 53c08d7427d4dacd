#!/usr/bin/env bash
# Fault injection from the command line (docs/scenario-format.md#faults, #from-the-command-line):
# each new fault type's observable effect (counters, drops on the port, operations.status/error,
# logs), --fault equals the same fault in the scenario JSON (same trace rows), --set, --chaos
# determinism (twice: the same logs and operations rows; another seed: other faults), relative
# times firing after the named step started, per-step expectations, the console echo, and bad
# --fault / --set / --chaos strings (exit 2 naming the problem).
# Usage: faults_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
F=$SRC/tests/fixtures/faults-2node.json      # a2-2node: cross-server send/recv, then a 1 MiB all-reduce x2
CLOS=$SRC/tests/fixtures/clos3-traffic.json  # 3-tier Clos of radix 4 (leaf ports 0-1 down, 2-3 up)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
if ! command -v sqlite3 > /dev/null; then echo "SKIP: sqlite3 not installed"; exit 0; fi
q() { sqlite3 "$1" "$2"; }
check() {  # check NAME CONDITION-OUTPUT EXPECTED
  if [ "$2" = "$3" ]; then ok "$1"; else echo "    got '$2', expected '$3'" > why.txt; bad "$1" why.txt; fi
}
# Short RDMA retransmit timeouts (4.096 us x 2^3) and few retries: lost packets are recovered,
# and dead paths fail, in little simulated time.
FAST=(--set /network/timeout_exp=3 --set /network/retry_count=3)

# 0. Baseline.
expect "baseline" 0 "PASS" -- "$HCSIM" run "$F" --db base.db -q
check "baseline: every operation ok" "$(q base.db "SELECT COUNT(*) FROM operations WHERE status != 'ok' OR error IS NOT NULL")" 0
check "baseline: run.status ok" "$(q base.db "SELECT status FROM run")" ok
check "trace schema 11" "$(q base.db "SELECT value FROM meta WHERE key = 'schema_version'")" 11

# 1. packet_corruption: the receiver's FCS check drops corrupted packets, go-back-N recovers them.
expect "packet_corruption: results still correct" 0 "PASS" -- \
  "$HCSIM" run "$F" --db pc.db -q "${FAST[@]}" --fault 'packet_corruption npu=node0/npu0 rate=0.002 at=0us'
check "packet_corruption: fcs_errors > 0" "$(q pc.db "SELECT value > 0 FROM counters WHERE name = 'fcs_errors'")" 1
check "packet_corruption: rdma_retransmits > 0" "$(q pc.db "SELECT value > 0 FROM counters WHERE name = 'rdma_retransmits'")" 1
check "packet_corruption: drops on that cable's ports only" \
  "$(q pc.db "SELECT COUNT(*) > 0, SUM(node NOT IN ('node0/npu0', 'leaf0') OR port != 0) FROM port_counters WHERE drops > 0")" "1|0"
check "packet_corruption: checks ok" "$(q pc.db "SELECT COUNT(*) FROM checks WHERE ok = 0")" 0

# 2. switch_link_down on a Clos uplink: drops on that port, operations fail with a status and error.
expect "switch_link_down: ops fail" 1 "ranks that failed or did not finish" -- \
  "$HCSIM" run "$CLOS" --db sw.db -q "${FAST[@]}" --set /workload/0/bytes=1MiB --set /workload/1/bytes=1MiB \
  --fault 'switch_link_down switch=leaf0 port=2 at=0us' --set '/hcomm_env/HCOMM_OP_RETRY="0"'
check "switch_link_down: drops on leaf0 port 2" "$(q sw.db "SELECT drops > 0 FROM port_counters WHERE node = 'leaf0' AND port = 2")" 1
check "switch_link_down: failed operations have status and error" \
  "$(q sw.db "SELECT COUNT(*) > 0, SUM(status NOT IN ('failed', 'timeout') OR error IS NULL) FROM operations WHERE status != 'ok'")" "1|0"
check "switch_link_down: run.status failed" "$(q sw.db "SELECT status FROM run")" failed
check "switch_link_down: logged" "$(q sw.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%fault injected: cable leaf0/2%down'")" 1
expect "switch_link_up restores it" 0 "PASS" -- \
  "$HCSIM" run "$CLOS" --db swup.db -q "${FAST[@]}" --set /workload/0/bytes=1MiB --set /workload/1/bytes=1MiB \
  --fault 'switch_link_down switch=leaf0 port=2 at=0us' --fault 'switch_link_up switch=leaf0 port=2 at=1us'

expect "link_flap of a switch cable: recovered" 0 "PASS" -- \
  "$HCSIM" run "$CLOS" --db swf.db -q "${FAST[@]}" --set /workload/0/bytes=1MiB --set /workload/1/bytes=1MiB \
  --fault 'link_flap switch=leaf0 port=2 at.step=0 at.after=10us duration=5us count=2 period=20us'
check "link_flap of a switch cable: drops on both ends, retransmits" \
  "$(q swf.db "SELECT (SELECT COUNT(*) FROM port_counters WHERE drops > 0 AND ((node = 'leaf0' AND port = 2) OR (node = 'spine0' AND port = 0))), (SELECT value > 0 FROM counters WHERE name = 'rdma_retransmits')")" "2|1"
check "link_flap of a switch cable: four transitions" "$(q swf.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%fault injected: cable leaf0/2<->spine0/0 % (flap %'")" 4

# 3. nic_down: the NIC's port-error event reaches rank 0 100 us later (network/port_event), before
# its QPs exhaust their retries; rank 0 reports, every failed rank says what it got.
expect "nic_down: the summary names failed ranks" 1 "rank 8 \(node1/npu0\): failed in step 0 rep 0 \(sendrecv\): hcomm_waitall: " -- \
  "$HCSIM" run "$F" --db nic.db -q "${FAST[@]}" --fault 'nic_down npu=node0/npu0 at.step=0 at.after=20us'
check "nic_down: rank 0's send is failed with its own error" \
  "$(q nic.db "SELECT status, error FROM operations WHERE rank = 0 AND kind = 'send' AND step = 0")" "failed|hcomm_waitall: device task failed"
check "nic_down: rank 8's send is failed with rank 0's report" \
  "$(q nic.db "SELECT status, error FROM operations WHERE rank = 8 AND kind = 'send' AND step = 0")" "failed|hcomm_waitall: remote error"
check "nic_down: rank 0 took its port event 100 us after the fault" \
  "$(q nic.db "SELECT CAST(ROUND((SELECT MIN(sim_time_ns) FROM logs WHERE rank = 0 AND message LIKE '%IBV_EVENT_PORT_ERR%') - (SELECT sim_time_ns FROM logs WHERE message LIKE '%fault injected: NIC of node0/npu0%')) AS INTEGER)")" 100000
check "nic_down: every rank has an operation that is not ok" "$(q nic.db "SELECT COUNT(DISTINCT rank) FROM operations WHERE status != 'ok'")" 16
check "nic_down: run.status failed" "$(q nic.db "SELECT status FROM run")" failed
expect "nic_down with api_errors expected passes" 0 "PASS" -- \
  "$HCSIM" run "$F" --no-trace -q "${FAST[@]}" --fault 'nic_down npu=node0/npu0 at.step=0 at.after=20us' --set /expect/api_errors=expected

expect "nic_up restores it" 0 "PASS" -- \
  "$HCSIM" run "$F" --no-trace -q "${FAST[@]}" --fault 'nic_down npu=node0/npu0 at.step=0 at.after=20us' --fault 'nic_up npu=node0/npu0 at.step=0 at.after=25us'

# 4. nic_flap: down 5 us twice; retransmits recover, the logs show each transition.
expect "nic_flap: recovered" 0 "PASS" -- \
  "$HCSIM" run "$F" --db flap.db -q "${FAST[@]}" --fault 'nic_flap npu=node0/npu0 at.step=0 at.after=20us duration=5us count=2 period=30us'
# Relative to step 0's start (communicator init, with its discovery, comes before it).
t0=$(q flap.db "SELECT CAST(ROUND(MIN(start_ns)) AS INTEGER) FROM operations WHERE step = 0")
check "nic_flap: four transitions at their times" \
  "$(q flap.db "SELECT GROUP_CONCAT(CAST(ROUND(sim_time_ns) AS INTEGER) - $t0, ',') FROM logs WHERE message LIKE '%fault injected: NIC of node0/npu0%flap%'")" \
  "20000,25000,50000,55000"
check "nic_flap: retransmits" "$(q flap.db "SELECT value > 0 FROM counters WHERE name = 'rdma_retransmits'")" 1

# 5. link_flap of an HCCS link, timed after step 1 started: down, then up 10 us later.
"$HCSIM" run "$F" --db hf.db -q --fault 'link_flap a=node0/npu0 b=node0/npu1 at.step=1 at.after=5us duration=10us' > hf.txt 2>&1
check "link_flap (HCCS): down at step 1's start + 5 us, up 10 us later" \
  "$(q hf.db "SELECT (SELECT MIN(sim_time_ns) FROM logs WHERE message LIKE '%HCCS link node0/hccs0-1 down (flap 1/1)') - (SELECT MIN(start_ns) FROM operations WHERE step = 1 AND rep = 0),
              (SELECT MIN(sim_time_ns) FROM logs WHERE message LIKE '%HCCS link node0/hccs0-1 up (flap 1/1)') - (SELECT MIN(sim_time_ns) FROM logs WHERE message LIKE '%hccs0-1 down (flap%')")" "5000.0|10000.0"
check "link_flap (HCCS): the all-reduce it hit did not end ok" "$(q hf.db "SELECT COUNT(*) > 0 FROM operations WHERE step = 1 AND rep = 0 AND status != 'ok'")" 1

# 6. npu_stall: the stalled NPU's stream engine dispatches nothing for 40 us, so that repetition
# takes about that much longer than without it (at least 30 us: work in flight goes on); the relative time (50 % of the estimate) fires inside it.
expect "npu_stall" 0 "PASS" -- "$HCSIM" run "$F" --db st.db -q --fault 'npu_stall npu=node0/npu3 at.step=1 at.rep=1 at.after=50% duration=40us'
check "npu_stall: step 1 rep 1 is >= 30 us longer" \
  "$(q st.db "ATTACH 'base.db' AS b; SELECT s.time_us - t.time_us >= 30 FROM summary s, b.summary t WHERE s.step = 1 AND s.rep = 1 AND t.step = 1 AND t.rep = 1")" 1
check "npu_stall: fired at 50 % of the operation's estimate after its start" \
  "$(q st.db "SELECT ABS((SELECT sim_time_ns FROM logs WHERE message LIKE '%stream engine stalled%') - (SELECT MIN(start_ns) FROM operations WHERE step = 1 AND rep = 1) - 500 * (SELECT MIN(est_us) FROM operations WHERE step = 1 AND rep = 1 AND rank = 0)) < 1")" 1
check "npu_stall: its end is logged" "$(q st.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%fault ended: node0/npu3 stream engine runs again%'")" 1

# 7. pcie_link_down: the NPU's PCIe link (on A2 its link to the host) goes down; its copy back fails.
expect "pcie_link_down" 1 "rank 3 \(node0/npu3\): failed in step 1 rep 0" -- \
  "$HCSIM" run "$F" --db pcie.db -q --fault 'pcie_link_down npu=node0/npu3 at.step=1 at.rep=0'
check "pcie_link_down: the device task error is logged" "$(q pcie.db "SELECT COUNT(*) > 0 FROM logs WHERE message LIKE '%link node0/npu3/host is down%'")" 1
check "pcie_link_down: rank 3's step 1 rep 0 has a failed row" \
  "$(q pcie.db "SELECT status FROM operations WHERE rank = 3 AND step = 1 AND rep = 0 AND status != 'ok'")" failed

# 8. --fault equals the same fault in the scenario JSON: the same trace rows.
python3 - "$F" json.json <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
s["topology"] = os.path.normpath(os.path.join(os.path.dirname(sys.argv[1]), s["topology"]))
s["faults"] = [{"type": "nic_flap", "npu": "node0/npu0", "at": {"step": 0, "after": "3us"}, "duration": "5us", "count": 2, "period": "30us"}]
json.dump(s, open(sys.argv[2], "w"))
EOF
"$HCSIM" run json.json --db j.db -q "${FAST[@]}" > /dev/null 2>&1
"$HCSIM" run "$F" --db c.db -q "${FAST[@]}" --fault 'nic_flap npu=node0/npu0 at.step=0 at.after=3us duration=5us count=2 period=30us' > /dev/null 2>&1
rows() { q "$1" "SELECT * FROM operations; SELECT sim_time_ns, rank, level, message FROM logs; SELECT * FROM counters; SELECT * FROM port_counters" | md5sum; }
if [ "$(rows j.db)" = "$(rows c.db)" ] && [ "$(q c.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%fault injected%'")" = 4 ]; then ok "--fault = JSON fault"
else bad "--fault = JSON fault: trace rows differ"; fi

# 9. --set: any scenario key.
expect "--set bytes" 0 "PASS" -- "$HCSIM" run "$F" --db set.db -q --set /workload/1/bytes=2MiB --set /workload/1/repeat=1 --set /network/ecmp_hash=src-dst
check "--set: the all-reduce moved 2 MiB, once" "$(q set.db "SELECT DISTINCT bytes FROM operations WHERE kind = 'allreduce'"),$(q set.db "SELECT COUNT(*) FROM summary")" "2097152,2"

# 10. --chaos: reproducible, and another seed draws other faults.
"$HCSIM" run "$F" --db ch1.db -q "${FAST[@]}" --chaos 7:4 > ch1.txt 2>&1
"$HCSIM" run "$F" --db ch2.db -q "${FAST[@]}" --chaos 7:4 > ch2.txt 2>&1
"$HCSIM" run "$F" --db ch3.db -q "${FAST[@]}" --chaos 8:4 > ch3.txt 2>&1
chrows() { q "$1" "SELECT sim_time_ns, rank, level, message FROM logs; SELECT * FROM operations" | md5sum; }
if [ "$(chrows ch1.db)" = "$(chrows ch2.db)" ] && [ "$(grep -c 'fault [0-9]/4' ch1.txt)" = 4 ]; then ok "--chaos: same SEED:N, same logs and operations"
else bad "--chaos: runs differ" ch1.txt ch2.txt; fi
if [ "$(grep -- '--chaos' ch1.txt | sed 's/7:4//')" != "$(grep -- '--chaos' ch3.txt | sed 's/8:4//')" ] &&
   [ "$(q ch1.db "SELECT GROUP_CONCAT(message) FROM logs WHERE message LIKE '%fault%'")" != "$(q ch3.db "SELECT GROUP_CONCAT(message) FROM logs WHERE message LIKE '%fault%'")" ]; then
  ok "--chaos: another seed, other faults"
else bad "--chaos: seeds 7 and 8 drew the same faults" ch1.txt ch3.txt; fi
check "--chaos: every drawn fault was injected" "$(q ch1.db "SELECT COUNT(*) > 0 FROM logs WHERE message LIKE '%fault injected%'")" 1

# 11. Per-step expectations.
expect "step expect max_op_time_us" 1 "step 1 rep 0: time .* exceeds the step's max_op_time_us 1" -- \
  "$HCSIM" run "$F" --no-trace -q --set /workload/1/expect/max_op_time_us=1
expect "step expect checks_pass false with a bit flip in that step" 0 "PASS" -- \
  "$HCSIM" run "$F" --no-trace -q --set /workload/0/expect/checks_pass=false --fault 'hbm_bitflip rank=1 step=0 byte=5 bit=2'
expect "step expect checks_pass false without one" 1 "step 0: expected a result check to fail" -- \
  "$HCSIM" run "$F" --no-trace -q --set /workload/0/expect/checks_pass=false

# 12. The console echo (stderr, with simulated time) unless -q.
"$HCSIM" run "$F" --no-trace "${FAST[@]}" --fault 'nic_flap npu=node0/npu0 at=20us duration=5us' > /dev/null 2> echo.txt
if grep -qE '^\[ +20\.000 us\] \[HCSIM_WARN\] fault injected: NIC of node0/npu0 .* down \(flap 1/1\)' echo.txt; then ok "echo on stderr"; else bad "echo on stderr" echo.txt; fi
"$HCSIM" run "$F" --no-trace -q "${FAST[@]}" --fault 'nic_flap npu=node0/npu0 at=20us duration=5us' > /dev/null 2> echoq.txt
if ! grep -q 'fault injected' echoq.txt; then ok "no echo with -q"; else bad "no echo with -q" echoq.txt; fi

# 13. Bad input: exit 2 naming the option and the key.
expect "bad --fault key" 2 "--fault 'lane_degrade a=node0/npu0 b=node0/npu1 at=1us lanes=9': lanes: lanes 9 out of range" -- \
  "$HCSIM" run "$F" --no-trace --fault 'lane_degrade a=node0/npu0 b=node0/npu1 at=1us lanes=9'
expect "bad --fault type" 2 "--fault 'bogus x=1': type: unknown fault type \"bogus\"" -- "$HCSIM" run "$F" --no-trace --fault 'bogus x=1'
expect "bad --fault missing key" 2 "--fault 'link_down a=node0/npu0': b: missing required key" -- "$HCSIM" run "$F" --no-trace --fault 'link_down a=node0/npu0'
expect "bad --fault syntax" 2 "--fault 'link_down a': expected key=value" -- "$HCSIM" run "$F" --no-trace --fault 'link_down a'
expect "bad --fault device" 2 "--fault 'nic_down npu=node9/npu0 at=1us': npu: no NPU named \"node9/npu0\"" -- \
  "$HCSIM" run "$F" --no-trace --fault 'nic_down npu=node9/npu0 at=1us'
expect "bad --fault switch port" 2 "port 31 of leaf0 is not cabled" -- "$HCSIM" run "$F" --no-trace --fault 'switch_link_down switch=leaf0 port=31 at=1us'
expect "bad --fault relative step" 2 "at/step: no such workload step" -- "$HCSIM" run "$F" --no-trace --fault 'npu_stall npu=node0/npu0 at.step=5 duration=1us'
expect "bad --fault percentage of a step without an estimate" 2 "at/after: a percentage is of the operation's estimate" -- \
  "$HCSIM" run "$F" --no-trace --fault 'npu_stall npu=node0/npu0 at.step=0 at.after=40% duration=1us'
expect "bad --fault flap period" 2 "period: the period must be longer than the duration" -- \
  "$HCSIM" run "$F" --no-trace --fault 'nic_flap npu=node0/npu0 at=1us duration=5us count=2 period=5us'
expect "bad --set key" 2 "--set /nope=1: /nope: unknown key" -- "$HCSIM" run "$F" --no-trace --set /nope=1
expect "bad --set index" 2 "--set /workload/9/bytes=1: unknown pointer /workload/9/bytes" -- "$HCSIM" run "$F" --no-trace --set /workload/9/bytes=1
expect "bad --set value" 2 "--set /network/ecmp_hash=bogus: /network/ecmp_hash: expected" -- "$HCSIM" run "$F" --no-trace --set /network/ecmp_hash=bogus
expect "bad --set syntax" 2 "--set noslash: expected /json/pointer=value" -- "$HCSIM" run "$F" --no-trace --set noslash
expect "bad --chaos" 2 "--chaos 7: expected SEED:N" -- "$HCSIM" run "$F" --no-trace --chaos 7
expect "bad --chaos count" 2 "--chaos 7:0: expected SEED:N" -- "$HCSIM" run "$F" --no-trace --chaos 7:0

expect "bad on_rank_loss" 2 "/on_rank_loss: expected \"stop\" or \"shrink\", got \"retry\"" -- "$HCSIM" run "$F" --no-trace --set /on_rank_loss=retry

# 14. Shrink and continue (/on_rank_loss shrink, docs/failover.md#shrink): rank 9 crashes mid
# all-reduce; the 15 survivors shrink and re-run; every repetition checked on 15 ranks against the
# host sum of exactly their inputs (a reference over 16 ranks, or over the wrong 15, would fail).
expect "rank crash, shrink and continue" 0 "PASS" -- "$HCSIM" run "$SRC/scenarios/rank-crash-shrink.json" --db shrink.db -q
check "shrink: 4 repetitions x 15 ranks checked ok, none failed, rank 9 none" \
  "$(q shrink.db "SELECT SUM(ok), SUM(ok = 0), SUM(rank = 9) FROM checks")" "60|0|0"
check "shrink: one shrink row per survivor, resumed" \
  "$(q shrink.db "SELECT COUNT(*), SUM(resumed_at_ns > fault_at_ns) FROM failovers WHERE action = 'shrink'")" "15|15"
check "shrink: rep 0 re-run ok on 15 ranks after the failed attempt on 16" \
  "$(q shrink.db "SELECT (SELECT COUNT(*) FROM operations WHERE rep = 0 AND status = 'ok'), (SELECT COUNT(*) FROM operations WHERE rep = 0 AND status != 'ok')")" "15|16"
"$HCSIM" run "$SRC/scenarios/rank-crash-shrink.json" --no-trace 2> /dev/null > shrink.txt
if grep -q 'rank 0 (node0/npu0): failed in step 0 rep 0 (allreduce): .*; then shrunk to 15 ranks (lost 9) at .* us, finished its workload' shrink.txt
then ok "shrink: summary says who shrank and finished"; else bad "shrink: summary says who shrank and finished" shrink.txt; fi
expect "shrink without op retry: rank 9's closed connection names it lost" 0 "PASS" -- \
  "$HCSIM" run "$SRC/scenarios/rank-crash-shrink.json" --db closeshrink.db -q --set '/hcomm_env/HCOMM_OP_RETRY="0"' --set /expect/failovers_min=0
check "shrink without op retry: 60 checks ok, 15 shrink rows" \
  "$(q closeshrink.db "SELECT (SELECT SUM(ok) FROM checks), (SELECT COUNT(*) FROM failovers WHERE action = 'shrink')")" "60|15"
expect "shrink without op retry or a closed connection: no lost ranks known, the error stands" 0 "PASS" -- \
  "$HCSIM" run "$SRC/scenarios/rank-crash-shrink.json" --db noshrink.db -q --set '/hcomm_env/HCOMM_OP_RETRY="0"' --set /expect/failovers_min=0 \
  --set '/network/close_notice="off"' --set '/expect/outcome="aborted"'
check "shrink without op retry or a closed connection: nothing re-run, said so" \
  "$(q noshrink.db "SELECT (SELECT COUNT(*) FROM checks), (SELECT COUNT(*) FROM failovers WHERE action = 'shrink'), (SELECT COUNT(*) > 0 FROM logs WHERE message LIKE '%on_rank_loss shrink: no lost ranks known%')")" "0|0|1"

# 15. A campaign in the scenario (/chaos): the shipped chaos-20 survives its 20 faults with every
# result correct, draws exactly what --chaos SEED:N draws, and bad /chaos values are exit 2.
expect "chaos-20: every result correct" 0 "PASS" -- "$HCSIM" run "$SRC/scenarios/chaos-20.json" --db chaos.db
check "chaos-20: 96 checks, all ok; 20 faults drawn" \
  "$(q chaos.db "SELECT (SELECT COUNT(*) FROM checks), (SELECT SUM(ok) FROM checks)")|$(grep -c 'chaos 14:20 fault' out.txt)" "96|96|20"
"$HCSIM" run "$SRC/scenarios/chaos-20.json" --chaos 14:20 --db chaos2.db -q > /dev/null 2>&1
check "chaos-20: /chaos draws what --chaos 14:20 draws (same logs)" \
  "$(q chaos.db "SELECT group_concat(sim_time_ns || message, '|') FROM logs" | md5sum)" "$(q chaos2.db "SELECT group_concat(sim_time_ns || message, '|') FROM logs" | md5sum)"
expect "bad /chaos count" 2 "/chaos/faults" -- "$HCSIM" run "$SRC/scenarios/chaos-20.json" --no-trace --set /chaos/faults=0
expect "bad /chaos key" 2 "/chaos/rate: unknown key" -- "$HCSIM" run "$SRC/scenarios/chaos-20.json" --no-trace --set /chaos/rate=1

# 16. A leaf-to-spine cable dies under traffic with op retry (docs/failover.md, issue 13): the
# agreement says an RDMA write failed, every rank probes its RoCE QPs' paths again and moves the
# lost ones to new source ports before re-executing. Dead cable leaf0 port 4 (hops through it:
# leaf0:N>4 out, leaf0:4>N in).
SP=$SRC/scenarios/spine-link-down-retry.json
expect "spine link down, op retry: results correct" 0 "PASS" -- "$HCSIM" run "$SP" --db spine.db -q
check "spine: 2 repetitions x 32 ranks checked, all ok" "$(q spine.db "SELECT COUNT(*), SUM(ok) FROM checks")" "64|64"
check "spine: 32 retry rows resumed, code 0, each saying how many QPs moved" \
  "$(q spine.db "SELECT COUNT(*), SUM(code = 0 AND resumed_at_ns > fault_at_ns), SUM(path_after LIKE '%; RoCE re-routed: % QPs on new source ports') FROM failovers WHERE action = 'retry'")" "32|32|32"
# 20 = both stripes of the 8 peers whose data crossed the cable + of the 2 whose ACKs did (a
# probe's reply comes back the way the QP's ACKs go, models/src/net/forwarding.cpp: in the chunk and
# packet tiers those QPs' writes would time out too). Every peer whose first route crossed it moved.
check "spine: the ranks whose QPs' data or ACKs crossed the cable moved 20 QPs" \
  "$(q spine.db "SELECT SUM(CAST(substr(path_after, instr(path_after, 're-routed: ') + 11) AS INTEGER)) FROM failovers")" 20
check "spine: every peer whose data crossed the cable was re-routed (8 peers)" \
  "$(q spine.db "SELECT COUNT(DISTINCT f.src || '>' || f.dst), SUM(NOT EXISTS (SELECT 1 FROM routes r WHERE r.src = f.src AND r.dst = f.dst AND r.trigger LIKE 'op retry%')) FROM routes f WHERE f.trigger = 'first use' AND (f.hops LIKE '%leaf0:_>4 %' OR f.hops LIKE '%leaf0:4>%')")" "8|0"
check "spine: the cable carried QPs before the fault" \
  "$(q spine.db "SELECT COUNT(*) > 0 FROM routes WHERE trigger = 'first use' AND (hops LIKE '%leaf0:_>4 %' OR hops LIKE '%leaf0:4>%')")" 1
check "spine: re-route rows name the fault, none crosses the dead cable" \
  "$(q spine.db "SELECT COUNT(*), SUM(hops LIKE '%leaf0:_>4 %' OR hops LIKE '%leaf0:4>%' OR hops LIKE '%(%'), SUM(udp_sport > 0) FROM routes WHERE trigger LIKE 'op retry of allreduce seq 0: RDMA write failed: retry count exceeded%'")" "20|0|20"
check "spine: after the fault no QP's latest route crosses the dead cable" \
  "$(q spine.db "SELECT COUNT(*) FROM routes r WHERE transport = 'roce' AND (hops LIKE '%leaf0:_>4 %' OR hops LIKE '%leaf0:4>%') AND sim_time_ns = (SELECT MAX(sim_time_ns) FROM routes x WHERE x.comm = r.comm AND x.src = r.src AND x.dst = r.dst AND x.qp = r.qp)")" 0
# The ring variant: the communicator already runs on the op retry's ring (node0/npu3's NIC died in step 0),
# so the re-execution reuses the ring's QPs; the cable (leaf0 port 7) carries stripe 0 of 31->0.
SR=$SRC/scenarios/spine-link-down-retry-ring.json
expect "spine link down under the ring: results correct" 0 "PASS" -- "$HCSIM" run "$SR" --db spring.db -q
check "spine ring: 3 repetitions x 32 checked ok; 32 retries of seq 2 resumed" \
  "$(q spring.db "SELECT (SELECT SUM(ok) FROM checks), (SELECT COUNT(*) FROM failovers WHERE op_seq = 2 AND code = 0 AND resumed_at_ns IS NOT NULL)")" "96|32"
check "spine ring: rank 31 moved its QPs to rank 0, off the dead cable" \
  "$(q spring.db "SELECT COUNT(*), SUM(hops LIKE '%leaf0:7>%' OR hops LIKE '%leaf0:_>7 %' OR hops LIKE '%(%') FROM routes WHERE src = 31 AND dst = 0 AND trigger LIKE 'op retry of allreduce seq 2: RDMA write failed%'")" "2|0"
check "spine ring: after the fault no QP's latest route crosses the dead cable (but rank 3's, whose NIC is dead)" \
  "$(q spring.db "SELECT COUNT(*) FROM routes r WHERE transport = 'roce' AND src != 3 AND dst != 3 AND (hops LIKE '%leaf0:7>%' OR hops LIKE '%leaf0:_>7 %') AND sim_time_ns = (SELECT MAX(sim_time_ns) FROM routes x WHERE x.comm = r.comm AND x.src = r.src AND x.dst = r.dst AND x.qp = r.qp)")" 0
# Without the re-route (HCOMM_RETRY_REROUTE=0) the re-execution posts on the same QP, still in
# error over the dead cable: rank 31 fails at once in each of the 8 agreement rounds
# (docs/failover.md#a-failure-during-the-re-execution), nothing resumes.
expect "spine ring without re-route: the re-execution fails on the same cable" 1 "expectations not met" -- \
  "$HCSIM" run "$SR" --db springno.db -q --set '/hcomm_env/HCOMM_RETRY_REROUTE="0"'
check "spine ring without re-route: rank 31's retry fails on its device in all 8 rounds, no row of seq 2 resumed" \
  "$(q springno.db "SELECT (SELECT COUNT(*) FROM logs WHERE message LIKE '%Rank31 comm 1: op retry of allreduce seq 2 failed: device task failed%'), (SELECT COUNT(*) FROM failovers WHERE op_seq = 2 AND resumed_at_ns IS NOT NULL), (SELECT COUNT(*) FROM routes WHERE trigger LIKE 'op retry%')")" "8|0|0"

# NIC borrowing (docs/failover.md#nic-borrowing): two NICs of node0 die (npu3 from the scenario,
# npu5 added); the lender rule gives each its own lender (fewest borrowers first, then the lowest
# rank): 3 via rank 0, 5 via rank 1, decided alike on all 16 ranks; the hierarchical all-reduce
# stays. With HCOMM_NIC_BORROW=0 the same run re-executes on the ring.
NB=$SRC/scenarios/nic-down-borrow.json
expect "nic borrow, two dead NICs on one server: recovered" 0 "PASS" -- \
  "$HCSIM" run "$NB" --db nb2.db -q --set '/payload="timing"' --fault 'nic_down npu=node0/npu5 at.step=0 at.after=300us'
check "nic borrow: one lender each, the same on every rank" \
  "$(q nb2.db "SELECT COUNT(*), COUNT(DISTINCT path_after), MIN(path_after) FROM failovers WHERE action = 'retry' AND code = 0")" \
  "16|1|as selected, nic 3 via rank 0, 5 via rank 1 (borrowed over hccs)"
check "nic borrow: the four borrowed routes name their lender's NIC and HCCS link" \
  "$(q nb2.db "SELECT group_concat(src || '>' || dst || ' ' || nic || ' ' || hops, '; ') FROM (SELECT DISTINCT src, dst, nic, hops FROM routes WHERE transport = 'roce-borrow' AND trigger = 'op retry: nic 3,5 down' ORDER BY src, dst)")" \
  "3>11 node0/npu0/nic node0/hccs0-3 leaf0:0>11; 5>13 node0/npu1/nic node0/hccs1-5 leaf0:1>13; 11>3 node1/npu3/nic leaf0:11>0 node0/hccs0-3; 13>5 node1/npu5/nic leaf0:13>1 node0/hccs1-5"
check "nic borrow: no ring after the fault" "$(q nb2.db "SELECT COUNT(*) FROM operations WHERE algorithm = 'ring' OR chosen_by = 'op retry'")" 0
expect "nic borrow off: the ring fallback" 0 "PASS" -- \
  "$HCSIM" run "$NB" --db nb0.db -q --set '/payload="timing"' --set '/hcomm_env/HCOMM_NIC_BORROW="0"'
check "nic borrow off: ring by op retry, no borrowed route" \
  "$(q nb0.db "SELECT (SELECT COUNT(*) FROM operations WHERE algorithm = 'ring' AND chosen_by = 'op retry' AND status = 'ok'), (SELECT COUNT(*) FROM routes WHERE transport = 'roce-borrow')")" "32|0"
# 17. Heartbeat with neighbours (docs/failover.md#heartbeat-with-neighbours): rank 9 crashes
# during a host-to-device copy; its neighbours' host agents find it LOST and notice the others;
# every survivor's next all-reduce returns HCOMM_E_RANK_LOST (65) at once. Deterministic (two runs:
# the same failovers and logs rows); a bad knob is exit 2.
HB=$SRC/scenarios/rank-crash-heartbeat.json
expect "rank crash between operations, heartbeat LOST" 0 "PASS" -- "$HCSIM" run "$HB" --db hb.db -q
check "heartbeat: 15 survivors, code 65, first by a ring neighbour of rank 9, all within 2010 us of the crash" \
  "$(q hb.db "SELECT COUNT(*), SUM(code = 65), (SELECT detected_by FROM failovers ORDER BY detected_at_ns LIMIT 1), MAX(detected_at_ns - fault_at_ns) <= 2010000 FROM failovers")" "15|15|8|1"
"$HCSIM" run "$HB" --db hb2.db -q > /dev/null 2>&1
check "heartbeat: two runs, the same rows" \
  "$(q hb.db "SELECT * FROM failovers; SELECT sim_time_ns, rank, message FROM logs" | md5sum)" "$(q hb2.db "SELECT * FROM failovers; SELECT sim_time_ns, rank, message FROM logs" | md5sum)"
expect "heartbeat LOST, then shrink (no op retry)" 0 "PASS" -- "$HCSIM" run "$HB" --db hbs.db -q --set /on_rank_loss=shrink --set '/expect/outcome="shrunk"'
check "heartbeat + shrink: 15 shrink rows, step 2 re-run ok on the 15 survivors" \
  "$(q hbs.db "SELECT (SELECT COUNT(*) FROM failovers WHERE action = 'shrink'), (SELECT COUNT(*) FROM operations WHERE step = 2 AND status = 'ok')")" "15|15"
expect "bad HCOMM_HEARTBEAT_MISSES" 2 "HCOMM_HEARTBEAT_MISSES" -- "$HCSIM" run "$HB" --no-trace --set '/hcomm_env/HCOMM_HEARTBEAT_MISSES="0"'
expect "bad max_detection_us" 2 "/expect/max_detection_us" -- "$HCSIM" run "$HB" --no-trace --set /expect/max_detection_us=-1
expect "heartbeat too slow for max_detection_us: exit 1" 1 "max_detection_us" -- "$HCSIM" run "$HB" --no-trace -q --set /expect/max_detection_us=1000

echo "faults_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
