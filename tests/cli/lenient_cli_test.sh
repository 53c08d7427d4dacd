#!/usr/bin/env bash
# Inputs that used to be taken leniently (issue 46): the command line's number grammar (--chaos,
# --refresh, -n, -j, --timeout-ms, --tolerance and --fault values: integers [0-9]+ up to 2^64 - 1,
# decimals, no sign, spaces, hex or exponent, overflow an error), keys a fault type does not take,
# faults without effect in the flow tier (a warning; --chaos does not draw them there), rank_crash
# at time 0, plans told apart by hcsim validate, and names with control characters or empty.
# Usage: lenient_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
F=$SRC/tests/fixtures/faults-2node.json  # a2-2node: cross-server send/recv, then a 1 MiB all-reduce x2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

# 1. Numbers on the command line: refused before anything runs (exit 2, naming the option).
for v in ' 1:2' '1:2 ' '+1:2' '1:+2' '-1:2' '0x10:2' '1e2:2' '1:1e1' '1.0:2' '18446744073709551616:2' '99999999999999999999999:1' '1:0x2' '1: 2'; do
  expect "--chaos '$v' refused" 2 "--chaos .*: expected SEED:N" -- "$HCSIM" run "$F" --no-trace --chaos "$v"
done
for v in ' 1' '1 ' '1e0' '0x1' '+1' '.5' '1.' 'inf' 'nan'; do
  expect "--refresh '$v' refused" 2 "--refresh: expected seconds" -- "$HCSIM" run "$F" --no-trace --refresh "$v"
  expect "diff --tolerance '$v' refused" 2 "--tolerance needs a percentage" -- "$HCSIM" diff --tolerance "$v" a.db b.db
done
for v in ' 5' '5 ' '+5' '0x5' '5e0' '18446744073709551621'; do
  expect "top -n '$v' refused" 2 "-n needs a number from 1 to 999999" -- "$HCSIM" top -n "$v" none.db
  expect "plan -j '$v' refused" 2 "-j needs a number from 1 to 256" -- "$HCSIM" plan -j "$v" "$SRC/plans/a2-scaling.json" --dry-run
  expect "discover --timeout-ms '${v}000' refused" 2 "--timeout-ms needs 1000..300000" -- "$HCSIM" discover --timeout-ms "${v}000" "$F"
done
for v in 'rank=1e2' 'rank=-1' 'rank=+1' 'rank=0x1' 'rank=.5' 'rank=18446744073709551616'; do
  expect "--fault rank_crash $v refused" 2 "--fault 'rank_crash at=0us ${v//+/\\+}': ${v//+/\\+}: not a number|is larger than" -- "$HCSIM" run "$F" --no-trace --fault "rank_crash at=0us $v"
done
for v in '0x10%' '1e2%' '+5%' '.5%' '5.%'; do
  expect "--fault at.after=$v refused" 2 "at/after: expected a percentage" -- \
    "$HCSIM" run "$F" --no-trace --fault "nic_flap npu=node0/npu0 at.step=1 at.after=$v duration=5us"
done
expect "--fault at=1e2us refused" 2 "at: expected a decimal number followed by a unit" -- \
  "$HCSIM" run "$F" --no-trace --fault "nic_down npu=node0/npu0 at=1e2us"
for v in '1e3us' '0x10' '.5us' '5.us' ' 1us' '+1us' '1e3'; do
  expect "trace --from '$v' refused" 2 "--from: bad time" -- "$HCSIM" trace none.db --from "$v"
done
expect "--sample-interval ' 1us' refused" 2 "--sample-interval" -- "$HCSIM" run "$F" --no-trace --sample-interval ' 1us'
expect "--max-memory 1e9B refused" 2 "--max-memory" -- "$HCSIM" run "$F" --no-trace --max-memory 1e9B
# The largest seed is a seed (not clamped, not refused): its campaign is drawn and listed.
expect "--chaos 18446744073709551615:1 accepted" 0 "--chaos 18446744073709551615:1 fault 1/1: --fault" -- \
  "$HCSIM" run "$F" --no-trace -q --chaos 18446744073709551615:1 --set /network/timeout_exp=3 --set /network/retry_count=3 --set /workload/1/repeat=1

# 2. Keys a fault type does not take: exit 2 naming the type's keys.
expect "link_down rate= refused" 2 "--fault 'link_down a=node0/npu0 b=node0/npu1 at=1us rate=0.5': rate: link_down does not take \"rate\" \(link_down takes type, at, a, b\)" -- \
  "$HCSIM" run "$F" --no-trace --fault 'link_down a=node0/npu0 b=node0/npu1 at=1us rate=0.5'
expect "switch_link_down rate= refused" 2 "rate: switch_link_down does not take \"rate\" \(switch_link_down takes type, at, switch, port, npu\)" -- \
  "$HCSIM" run "$F" --no-trace --fault 'switch_link_down npu=node0/npu0 at=1us rate=0.5'
expect "rank_crash npu= refused" 2 "npu: rank_crash does not take \"npu\" \(rank_crash takes type, at, rank\)" -- \
  "$HCSIM" run "$F" --no-trace --fault 'rank_crash rank=1 at=1us npu=node0/npu0'

# 3. Flow tier: a warning for faults acting on packets; --chaos draws none of them there.
expect "flow tier: packet_corruption warned" 0 "warning: packet_corruption has no effect in the flow tier" -- \
  "$HCSIM" run "$F" --no-trace -q --set /fidelity=flow --fault 'packet_corruption npu=node0/npu0 rate=0.01 at=0us'
cat > flow.json <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "flow-drop", "topology": "$SRC/topologies/a2-2node.json", "fidelity": "flow",
  "workload": [ { "op": "allreduce", "bytes": "1MiB" } ], "faults": [ { "type": "drop_rate", "rate": 0.1, "at": "0us" } ] }
JSON
expect "flow tier: validate warns about drop_rate" 0 "flow.json: /faults/0/type: warning: drop_rate has no effect in the flow tier" -- "$HCSIM" validate flow.json
"$HCSIM" run "$F" --no-trace -q --set /fidelity=flow --chaos 5:60 --set /workload/1/repeat=1 > chaos-flow.txt 2>&1
if [ "$(grep -c 'fault [0-9]*/60: --fault' chaos-flow.txt)" = 60 ] && ! grep -q "packet_corruption" chaos-flow.txt; then ok "flow tier: --chaos draws no packet_corruption"
else bad "flow tier: --chaos draws no packet_corruption" chaos-flow.txt; fi

# 4. rank_crash at exactly 0 kills the rank at time 0: its process never runs (no task of its NPU,
# no hcomm call of it fails), so, as for a crash at 1 ps, nobody gets past communicator setup.
"$HCSIM" run "$F" --no-trace --fault "rank_crash rank=2 at=1ps" > ref.txt 2>&1
summary() { grep '^  rank ' "$1"; }  # what each rank got
for at in 0us 0ps 0s 0.0ms 1ps; do
  "$HCSIM" run "$F" --no-trace --fault "rank_crash rank=2 at=$at" > crash.txt 2>&1
  if grep -qE '^\[ +0\.000 us\] \[HCSIM_ERR\] fault injected: rank 2 crashed' crash.txt &&
     grep -q '^  rank 2 (node0/npu2): failed in step 0 rep 0 (sendrecv): rank crashed (rank_crash fault)$' crash.txt &&
     ! grep -qE 'node0/npu2 \(rank 2\) stream|Device2 stream|^FAIL: rank 2:' crash.txt &&
     [ "$(summary crash.txt)" = "$(summary ref.txt)" ] && [ -n "$(summary ref.txt)" ]; then ok "rank_crash at=$at kills rank 2 at time 0"
  else bad "rank_crash at=$at kills rank 2 at time 0" crash.txt; fi
done

# 5. hcsim validate tells plans apart and validates them as plans.
for p in "$SRC"/plans/*.json; do
  expect "validate $(basename "$p")" 0 "$(basename "$p"): ok" -- "$HCSIM" validate "$p"
done
mkplan() {  # mkplan FILE NAME-JSON [SWEEP-NAME-JSON]
  cat > "$1" <<JSON
{ "format": "hcsim-plan", "version": 1, "name": $2, "topology": "$SRC/topologies/a2-2node.json",
  "sweep": [ { "pointer": "/servers/0/nic/bandwidth", "name": ${3:-\"bw\"}, "values": ["200Gb/s"] } ],
  "workloads": [ { "op": "allreduce", "sizes": ["1MiB"] } ] }
JSON
}
sed "s|../../../topologies|$SRC/topologies|" "$SRC/tests/fixtures/plan/impossible.json" > impossible.json
expect "validate checks a plan's layouts (an impossible one warned: an infeasible cell)" 0 "impossible.json: /sweep: warning: layout 1 \(radix=32\) is infeasible: layout1.topology.json: /fabric/tiers" -- "$HCSIM" validate impossible.json
mkplan noformat.json '"x"'
sed -i 's/"format": "hcsim-plan", //' noformat.json
expect "validate: a plan without format is read as a plan" 2 "noformat.json: /format: missing required key" -- "$HCSIM" validate noformat.json
if grep -q "unknown key" out.txt; then bad "validate lists no scenario keys for a plan without format" out.txt; else ok "validate lists no scenario keys for a plan without format"; fi
mkplan badop.json '"x"'
sed -i 's/"allreduce"/"allreduse"/' badop.json
expect "validate reports plan errors" 2 "badop.json: /workloads/0/op: unknown op \"allreduse\"" -- "$HCSIM" validate badop.json
if grep -q "unknown key" out.txt; then bad "validate lists no scenario keys for a plan" out.txt; else ok "validate lists no scenario keys for a plan"; fi

# 6. Names: empty or with control characters (C0, DEL, C1) are refused with the pointer.
for n in '""' '"a\u001b[31mb"' '"x\u007f"' '"c1\u0085"' '"csi\u009b2J"' '"nl\n"'; do
  mkplan name.json "$n"
  expect "plan name $n refused" 2 "name.json: /name: " -- "$HCSIM" validate name.json
  expect "hcsim plan refuses name $n" 2 "/name: " -- "$HCSIM" plan name.json --dry-run
  mkplan sweep.json '"x"' "$n"
  expect "plan sweep name $n refused" 2 "sweep.json: /sweep/0/name: " -- "$HCSIM" validate sweep.json
  ns=${n//\\/\\\\}  # the JSON escape as sed must see it (sed reads \u and \n itself)
  sed "s|\"name\": \"a2-2node\"|\"name\": $ns|" "$SRC/topologies/a2-2node.json" > topo.json
  expect "topology name $n refused" 2 "topo.json: /name: " -- "$HCSIM" validate topo.json
  sed "s|\"name\": \"faults-2node\"|\"name\": $ns|; s|\"../../topologies|\"$SRC/topologies|" "$F" > sc.json
  expect "scenario name $n refused" 2 "sc.json: /name: " -- "$HCSIM" validate sc.json
done
[ -e .plan ] && bad "a plan named \"\" wrote .plan/" || ok "no .plan/ written"

echo "lenient_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
