#!/usr/bin/env bash
# Recoveries that meet a second fault (docs/failover.md#several-faults), from the command line:
#  1. HCCS links 2-5 and 0-5 down together, and 0-5 dying in the next all-reduce after 2-5's relay
#     went through NPU 0: the op retry relays over links known live only (NPU 1), results correct.
#  2. nic-down-borrow.json's lender (rank 0) losing its NIC in the next all-reduce: a new lender,
#     the relay channels of the old one rebuilt, results correct on all 16 ranks.
#  3. The randomized multi-fault test (tests/cli/multifault.py): two or three overlapping faults
#     per seed on tests/fixtures/multifault, each outcome against the script's own verdict.
#     Seeds: $HCSIM_MULTIFAULT_SEEDS (e.g. "1-700"), default 1-80 (6 s of CPU in Release).
# Usage: multifault_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
if ! command -v sqlite3 > /dev/null || ! command -v python3 > /dev/null; then echo "SKIP: sqlite3 or python3 not installed"; exit 0; fi
q() { sqlite3 "$1" "$2"; }
check() {  # check NAME CONDITION-OUTPUT EXPECTED
  if [ "$2" = "$3" ]; then ok "$1"; else echo "    got '$2', expected '$3'" > why.txt; bad "$1" why.txt; fi
}

# 1. Two dead links at one NPU: no relay through NPU 0 (its link to 5 is dead too).
R=$SRC/scenarios/hccs-link-down-retry.json
expect "hccs 2-5 and 0-5 down together: recovered" 0 "PASS" -- \
  "$HCSIM" run "$R" --db two.db -q --fault 'link_down a=server0/npu0 b=server0/npu5 at=1.3ms'
check "hccs 2-5 and 0-5 together: results correct on every rank" "$(q two.db "SELECT COUNT(*), SUM(ok) FROM checks")" "16|16"
check "hccs 2-5 and 0-5 together: no relay route through rank 0 after the retry" \
  "$(q two.db "SELECT COUNT(*) FROM routes WHERE transport = 'hccs-relay' AND trigger LIKE 'op retry%' AND reason LIKE '%via rank 0 %'")" 0
check "hccs 2-5 and 0-5 together: the four relayed routes avoid both dead links" \
  "$(q two.db "SELECT COUNT(*) FROM routes WHERE transport = 'hccs-relay' AND trigger LIKE 'op retry%' AND hops NOT LIKE '%hccs0-5%' AND hops NOT LIKE '%hccs2-5%'")" 4
expect "hccs 0-5 dies in the next all-reduce (2-5 relayed through 0): recovered" 0 "PASS" -- \
  "$HCSIM" run "$R" --db later.db -q --fault 'link_down a=server0/npu0 b=server0/npu5 at.step=0 at.rep=1 at.after=30%'
check "hccs 0-5 later: two recoveries per rank, both resumed" \
  "$(q later.db "SELECT COUNT(*), COUNT(resumed_at_ns) FROM failovers WHERE action IN ('retry', 'resume')")" "16|16"
check "hccs 0-5 later: the relay of 2-5 decided again, away from rank 0" \
  "$(q later.db "SELECT COUNT(*) FROM routes WHERE src IN (2, 5) AND dst IN (2, 5) AND trigger = 'op retry: hccs 0-5,2-5 down' AND reason NOT LIKE '%via rank 0 %'")" 2

# 2. The lender's NIC dies in the next all-reduce.
B=$SRC/scenarios/nic-down-borrow.json
expect "lender rank 0's NIC dies in the next all-reduce: recovered" 0 "PASS" -- \
  "$HCSIM" run "$B" --db lend.db -q --fault 'nic_down npu=node0/npu0 at.step=0 at.rep=1 at.after=300us'
check "lender dies: results correct on all 16 ranks" "$(q lend.db "SELECT COUNT(*), SUM(ok) FROM checks")" "32|32"
check "lender dies: no device rejected a task" "$(q lend.db "SELECT COUNT(*) FROM logs WHERE message LIKE '%must read or write%'")" 0
check "lender dies: the second recovery lends NICs 0 and 3 elsewhere (rank 1, rank 2)" \
  "$(q lend.db "SELECT COUNT(*), COUNT(DISTINCT path_after), MIN(path_after) FROM failovers WHERE op_seq > 0 AND code = 0")" "16|1|as selected, nic 0 via rank 1, 3 via rank 2 (borrowed over hccs)"

# 3. Randomized overlapping faults against the script's own verdict.
SEEDS=${HCSIM_MULTIFAULT_SEEDS:-1-80}
if python3 "$SRC/tests/cli/multifault.py" "$HCSIM" "$SRC/tests/fixtures/multifault/scenario.json" "$SRC/docs/failover.md" \
  "$SRC/hcomm/include/hcomm/hcomm.h" "$SEEDS" > mf.txt 2>&1; then
  ok "multifault seeds $SEEDS: $(tail -2 mf.txt | head -1)"
else
  bad "multifault seeds $SEEDS" mf.txt
fi
echo "multifault_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
