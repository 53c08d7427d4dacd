#!/usr/bin/env bash
# hcsim discover (docs/discovery.md): discovery agrees with the simulator's oracle (pair_link) on
# every preset; each miswiring in /as_built is reported as expected vs found with exit 1; a rank
# that never joins is named; the bootstrap's simulated time equals its closed form; bad input is
# exit 2. Usage: discover_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
D=$SRC/tests/cli/discover
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

expect help 0 "usage: hcsim discover SCENARIO[|]TOPOLOGY" -- "$HCSIM" discover --help
expect no-file 2 "discover needs a scenario or topology file" -- "$HCSIM" discover
expect bad-timeout 2 "--timeout-ms needs 1000..300000" -- "$HCSIM" discover --timeout-ms 5 "$SRC/topologies/a2-2node.json"
expect bad-as-built 2 "/as_built/0/link: no link named \"node0/hccs4-9\"" -- "$HCSIM" discover "$D/a2-2node-bad.json"
grep -q '/as_built/1/kind: unknown kind "cable_cut"' out.txt && { echo "ok   bad-as-built-all"; pass=$((pass + 1)); } ||
  { echo "FAIL bad-as-built-all: the second problem is not reported"; fail=$((fail + 1)); }

# Every preset: discovery matches the description and the library's link choice equals pair_link.
for t in "$SRC"/topologies/*.json; do
  expect "preset-$(basename "$t" .json)" 0 "cross-check +[0-9]+ pairs against pair_link, 0 disagree" -- "$HCSIM" discover --cross-check "$t"
done
# A scenario is read for its topology.
expect scenario 0 "discovery matches the description" -- "$HCSIM" discover "$SRC/scenarios/collectives-2node.json"

# Miswirings: the named difference, exit 1; the transport still agrees with the models (degrade).
expect swap 1 "node1/npu0 HCCS port 1: expected partner node1/npu1, found node1/npu3" -- "$HCSIM" discover --cross-check "$D/a2-2node-swap.json"
grep -q "node1/npu3 HCCS port 2: expected partner node1/npu2, found node1/npu0" out.txt && grep -q "0 cross-check disagreements" out.txt &&
  { echo "ok   swap-both-ends"; pass=$((pass + 1)); } || { echo "FAIL swap-both-ends"; sed 's/^/    /' out.txt; fail=$((fail + 1)); }
expect down 1 "node0/npu4 HCCS port 5: expected up to node0/npu5, found down" -- "$HCSIM" discover --cross-check "$D/a2-2node-down.json"
grep -q "0 cross-check disagreements" out.txt && [ "$(grep -c '^difference:' out.txt)" -eq 2 ] &&
  { echo "ok   down-only-that-link"; pass=$((pass + 1)); } || { echo "FAIL down-only-that-link"; sed 's/^/    /' out.txt; fail=$((fail + 1)); }
expect nic-port 1 "node0/npu1 NIC: expected switch leaf0 port 1, found switch leaf0 port 2" -- "$HCSIM" discover --cross-check "$D/a2-2node-nic.json"
grep -q "node1/npu7 NIC: expected IP 192.168.101.108, found 192.168.101.250" out.txt && grep -q "0 cross-check disagreements" out.txt &&
  { echo "ok   nic-ip"; pass=$((pass + 1)); } || { echo "FAIL nic-ip"; sed 's/^/    /' out.txt; fail=$((fail + 1)); }
# Degrade / relay / refuse (docs/discovery.md#degrade-refuse, docs/routing.md#relay): on the down
# link's server the pair goes through a relay NPU, so the collectives run and their real bytes
# match the host reference; when no NPU has HCCS links up to both ends (node0/npu0 with all seven
# links down) collectives are refused naming the pair, and the other server's ranks time out.
cat > relay.json <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "relay", "topology": "$D/a2-2node-down.json", "payload": "real",
  "hcomm_env": { "HCOMM_TIMEOUT_MS": "1000" },
  "workload": [ { "op": "allreduce", "bytes": "1MiB", "dtype": "int32" }, { "op": "alltoall", "bytes": "1MiB", "dtype": "int32" } ] }
JSON
expect relay 0 "PASS: all expectations held" -- timeout 300 "$HCSIM" run relay.json --no-trace
grep -q "allreduce .* ok (16 ranks)" out.txt && grep -q "alltoall .* ok (16 ranks)" out.txt &&
  { echo "ok   relay-real-bytes"; pass=$((pass + 1)); } || { echo "FAIL relay-real-bytes"; sed 's/^/    /' out.txt; fail=$((fail + 1)); }
python3 - "$D/a2-2node-down.json" > isolated.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["name"] = "a2-2node-isolated"
t["as_built"] = [{"kind": "hccs_down", "link": "node0/hccs0-%d" % j} for j in range(1, 8)]
print(json.dumps(t))
PY
cat > degrade.json <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "degrade", "topology": "isolated.json",
  "hcomm_env": { "HCOMM_TIMEOUT_MS": "1000" },
  "workload": [ { "op": "allreduce", "bytes": "1MiB" } ], "expect": { "api_errors": "expected" } }
JSON
expect refuse 0 "Rank0 allreduce refused: rank 0 has no HCCS link or PCIe peer-to-peer path to rank 1 of its server, and no relay NPU" -- \
  timeout 300 "$HCSIM" run degrade.json --no-trace
# A rank that never joins: a timeout naming it (not a hang), within the simulated timeouts.
expect missing 1 "error: rank 13 did not join within 1000 ms" -- timeout 120 "$HCSIM" discover "$D/a2-2node-missing.json"
grep -q "node1/npu5 (rank 13): expected present, found: never joined" out.txt &&
  { echo "ok   missing-named"; pass=$((pass + 1)); } || { echo "FAIL missing-named"; sed 's/^/    /' out.txt; fail=$((fail + 1)); }

# The bootstrap's simulated time against its closed form (docs/discovery.md#costs): with L = 10 us,
# B = 1.25 GB/s, m ranks per server, S servers, record message r = (12 + 136) / B, server message
# v = (12 + 136 m) / B, table X = (12 + 136 N) / B, an ack or go a = 12 / B:
#   T = [L + (m-1) r] + [L + (S-1) v] + [L + (S-1) X] + [L + (m-1) X] + 2 [a + L] + [N a + L]   (S > 1)
#   T = [L + (m-1) r] + [L + (m-1) X] + [a + L] + [N a + L]                                     (S = 1)
closed() {  # m S -> T in ns
  awk -v m="$1" -v S="$2" 'BEGIN { L = 10000; B = 1.25; n = m * S; r = 148 / B; v = (12 + 136 * m) / B; X = (12 + 136 * n) / B;
    a = 12 / B; T = L + (m - 1) * r + L + (m - 1) * X + (a + L) + (n * a + L);
    if (S > 1) T += L + (S - 1) * v + L + (S - 1) * X + (a + L); printf "%.3f\n", T / 1000 }'
}
for c in "atlas800t-a2:8:1" "a2-2node:8:2" "a2-pod-16:8:16"; do
  IFS=: read -r name m S <<< "$c"
  "$HCSIM" discover "$SRC/topologies/$name.json" > t.txt 2>&1
  got=$(sed -nE 's/.*discovery time +([0-9.]+) us simulated.*/\1/p' t.txt)
  want=$(closed "$m" "$S")
  if awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 0.002) }'; then
    echo "ok   closed-form-$name ($got us)"; pass=$((pass + 1))
  else
    echo "FAIL closed-form-$name: simulated $got us, closed form $want us"; fail=$((fail + 1))
  fi
done

echo "discover_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
