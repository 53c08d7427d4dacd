#!/usr/bin/env bash
# CLI contract of hcsim: exit codes (0 ok, 1 expectation failed, 2 bad input/usage) and messages
# that name the file and the JSON pointer. Usage: cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
FX=$SRC/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
pass=0 fail=0

expect() {  # expect NAME CODE PATTERN -- command...
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" > out.txt 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL $name: exit $rc, expected $code"; sed 's/^/    /' out.txt | tail -20; fail=$((fail + 1)); return
  fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" out.txt; then
    echo "FAIL $name: output lacks /$pattern/"; sed 's/^/    /' out.txt | tail -20; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

expect help 0 "usage: hcsim" -- "$HCSIM" --help
expect no-command 2 "no command given" -- "$HCSIM"
expect unknown-command 2 "unknown command" -- "$HCSIM" frobnicate
expect unknown-option 2 "unknown option --fast" -- "$HCSIM" run --fast
expect missing-file 2 "nope.json: /: cannot open file" -- "$HCSIM" run nope.json
expect not-json 2 "not-json.json: /: not valid JSON at byte" -- "$HCSIM" run "$FX/not-json.json"
expect unknown-key 2 "unknown-key.json: /workload/0/repaet: unknown key" -- "$HCSIM" run "$FX/unknown-key.json"
expect bad-topology 2 "bad-topology.json: /servers/0/hccs/bandwidth: bandwidth needs a unit" -- "$HCSIM" validate "$FX/bad-topology.json"
expect bad-topology-ip 2 "bad-topology.json: /servers/0/host_ip: not an IPv4 address" -- "$HCSIM" validate "$FX/bad-topology.json"
expect bad-topology-ref 2 "bad-topology-ref.json: /topology: topology file is invalid" -- "$HCSIM" run "$FX/bad-topology-ref.json"
# Chunk size: only in the chunk tier, 64 KiB .. 1 MiB.
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","fidelity":"packet","network":{"chunk":"128KiB"},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > chunk-packet.json
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","network":{"chunk":"2MiB"},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > chunk-big.json
expect chunk-needs-tier 2 "chunk-packet.json: /network/chunk: a chunk size needs" -- "$HCSIM" validate chunk-packet.json
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","network":{"ecmp_hash":"random","ecn":{"mode":"pi"}},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > policy-bad.json
expect ecmp-policy 2 "policy-bad.json: /network/ecmp_hash: expected \"5-tuple\" or \"src-dst\"" -- "$HCSIM" validate policy-bad.json
expect ecn-policy 2 "policy-bad.json: /network/ecn/mode: expected \"red\" or \"step\"" -- "$HCSIM" validate policy-bad.json
expect chunk-range 2 "chunk-big.json: /network/chunk: chunk must be 64 KiB .. 1 MiB" -- "$HCSIM" validate chunk-big.json
expect validate-ok 0 "atlas800t-a2.json: ok" -- "$HCSIM" validate "$SRC/topologies/atlas800t-a2.json" "$SRC/scenarios/quickstart.json"
expect unwritable-db 2 "cannot create trace database" -- "$HCSIM" run "$FX/small.json" --db /nonexistent-dir/x.db
expect small-run 0 "PASS: all expectations held" -- "$HCSIM" run "$FX/small.json" --db small.db
expect default-db 0 "trace database small.hcsim.db" -- "$HCSIM" run "$FX/small.json" -q
expect corrupt 1 "rank 3 step 0 rep 1: result check failed: 1 wrong elements, first element 1024" -- "$HCSIM" run "$FX/corrupt.json" --no-trace
expect corrupt-expected 0 "PASS" -- "$HCSIM" run "$FX/corrupt-expected.json" --no-trace

# A timed-out wait names what the stream is blocked on, read from the NPU's registers by MMIO.
expect timeout-diagnostic 0 "synchronize timed out after 2000 ms: stream [0-9]+ of npu[0-9]+: SQ tail [0-9]+, SQ head [0-9]+, CQ tail [0-9]+; blocked in notify_wait on notify register [0-9]+ \(MMIO 0x1[0-9a-f]{7}\) = 0" -- "$HCSIM" run "$SRC/scenarios/rank-crash.json" --no-trace

expect topo-summary 0 "bisection +102400.0 GB/s" -- "$HCSIM" topo "$SRC/topologies/clos-1024.json"
expect topo-dot 0 "node0 .. node63 \(64 servers\)" -- "$HCSIM" topo "$SRC/topologies/clos-1024.json" --dot
expect topo-svg 0 "</svg>" -- "$HCSIM" topo "$SRC/topologies/a2-pod-16.json" --svg
expect topo-ranktable 0 '"rank_id": "15"' -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --ranktable 1.2
expect topo-ranktable-version 2 "needs a version" -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --ranktable 3
expect topo-ranked 0 '"device_id": "7",\s*$' -- "$HCSIM" topo "$FX/ranked-2node.json" --ranktable 1.0
expect topo-ranked-bad 2 "ranktable-interleaved.json: /server_list/0/device: rank ids of a server must be contiguous" -- "$HCSIM" validate "$FX/ranked-bad.json"
expect run-pcie 0 "PASS" -- "$HCSIM" run "$FX/pcie.json" --no-trace
expect run-network 0 "PASS" -- "$HCSIM" run "$FX/network.json" --no-trace
expect topo-unwritable 2 "cannot write" -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --svg -o /nonexistent-dir/x.svg

# The trace has rows in every table, and one operation row per rank per op (8 ranks x 2 all-reduce + 16 p2p).
if command -v sqlite3 > /dev/null; then
  empty=""
  for t in meta run npus links operations link_counters logs checks summary; do
    n=$(sqlite3 small.db "SELECT COUNT(*) FROM $t" 2>/dev/null || echo 0)
    [ "$n" -gt 0 ] || empty="$empty $t"
  done
  ops=$(sqlite3 small.db "SELECT COUNT(*) FROM operations" 2>/dev/null || echo 0)
  if [ -z "$empty" ] && [ "$ops" -eq 32 ]; then echo "ok   trace-tables"; pass=$((pass + 1));
  else echo "FAIL trace-tables: empty:$empty operations=$ops"; fail=$((fail + 1)); fi
  # Determinism: a second run gives the same rows (wall-clock column aside).
  "$HCSIM" run "$FX/small.json" --db small2.db -q > /dev/null 2>&1
  q="SELECT * FROM operations; SELECT * FROM link_counters; SELECT * FROM logs; SELECT * FROM summary; SELECT sim_end_ns FROM run;"
  a=$(sqlite3 small.db "$q" 2>&1); b=$(sqlite3 small2.db "$q" 2>&1)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   deterministic-trace"; pass=$((pass + 1));
  else echo "FAIL deterministic-trace"; fail=$((fail + 1)); fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
