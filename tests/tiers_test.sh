#!/usr/bin/env bash
# Fidelity tiers agree on a small case: the same 2-server, 16-NPU exchange (every rank swaps
# 16 MiB with its partner on the other server over RoCE), an all-reduce and an 8:1 DCQCN incast
# simulated at the packet tier (4 KiB MTU, per-hop queues) and the chunk tier (64 KiB units on the
# same mechanism): completion times within 10 % (measured 0.27, 0.10, 2.1 %). The flow tier
# (ideal congestion control) must agree on the exchange and the all-reduce; its incast is not
# comparable (no DCQCN). Each run is its own process (one simulation per process).
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for tier in packet chunk flow; do
  cat > "$TMP/tier-$tier.json" <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "tier-$tier", "topology": "$SRC/topologies/a2-2node.json",
  "payload": "timing", "fidelity": "$tier", "hcomm_env": { "HCOMM_NUM_QP": "1" },
  "workload": [ { "op": "sendrecv", "bytes": "16MiB", "pattern": "halves", "check": false },
                { "op": "allreduce", "bytes": "64MiB", "check": false },
                { "op": "incast", "bytes": "32MiB", "root": 0, "senders": "remote", "check": false } ] }
JSON
  "$HCSIM" run "$TMP/tier-$tier.json" --db "$TMP/$tier.db" -q > "$TMP/$tier.txt" 2>&1 || { cat "$TMP/$tier.txt"; echo "0 passed, 1 failed"; exit 1; }
done
fail=0
for cmp in chunk:0 chunk:1 chunk:2 flow:0 flow:1; do
  other=${cmp%%:*}; step=${cmp##*:}
  a=$(sqlite3 "$TMP/packet.db" "SELECT time_us FROM summary WHERE step=$step")
  b=$(sqlite3 "$TMP/$other.db" "SELECT time_us FROM summary WHERE step=$step")
  err=$(awk -v a="$a" -v b="$b" 'BEGIN { d = (b - a) / a; if (d < 0) d = -d; printf "%.4f", d }')
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 0.10) ? 1 : 0 }')
  echo "step $step: packet tier $a us, $other tier $b us, difference $(awk -v e="$err" 'BEGIN { printf "%.2f", e * 100 }') %"
  [ "$ok" -eq 1 ] || fail=1
done
if [ $fail -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
