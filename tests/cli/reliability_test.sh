#!/usr/bin/env bash
# Reliability contract of the CLIs under adversarial input (crashes, bad numbers, unbounded
# memory): each case states the exit code a user must get. Usage: reliability_test.sh HCSIM HCOMM_TEST SRC
set -u
HCSIM=$(realpath "$1"); HT=$(realpath "$2"); SRC=$(realpath "$3")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
expect_exit() {  # name expected-exit command...
  local name=$1 want=$2; shift 2
  "$@" > "$TMP/out.txt" 2>&1; local got=$?
  if [ "$got" -eq "$want" ]; then ok "$name (exit $got)"; else bad "$name: exit $got, want $want"; tail -5 "$TMP/out.txt" | sed 's/^/    /'; fi
}

# 1. A rank crashing while host<->device copies are in flight (input copies at 100 us, output
#    copies after ~1.7 ms, and the same rank twice) never kills the simulator: exit 0 when the
#    crash hits the all-reduce (API errors expected), 1 when it comes after the work is done.
crash() {  # name at [second-at]
  local extra=""
  [ -n "${3:-}" ] && extra=", {\"type\":\"rank_crash\",\"at\":\"$3\",\"rank\":3}"
  cat > "$TMP/$1.json" <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "$1", "topology": "$SRC/topologies/atlas800t-a2.json",
  "hcomm_env": { "HCOMM_TIMEOUT_MS": "2000" },
  "workload": [ { "op": "allreduce", "bytes": "64MiB" } ],
  "faults": [ { "type": "rank_crash", "at": "$2", "rank": 3 }$extra ],
  "expect": { "api_errors": "expected" } }
JSON
}
for at in 100us 400us 1000us; do
  crash "crash-$at" "$at"
  expect_exit "rank_crash at $at during host copies" 0 "$HCSIM" run "$TMP/crash-$at.json" --no-trace -q
done
crash crash-late 1800us  # after the work (communicator init includes discovery, about 47 us here)
expect_exit "rank_crash at 1800us during device-to-host copies (work done: expectation fails)" 1 "$HCSIM" run "$TMP/crash-late.json" --no-trace -q
crash crash-twice 100us 150us
expect_exit "the same rank crashed twice" 0 "$HCSIM" run "$TMP/crash-twice.json" --no-trace -q

# 6. Bad numbers are usage errors, not wrapped loops.
for args in "-b 1 -e -1 -c 0" "-e 99999999999999999999 -c 0" "-b -1" "-b 8K -e 8K -n -5" "-b 8K -e 8K -w 1x" "-b 0" "-b 16E"; do
  expect_exit "hcomm_test allreduce $args" 2 $HT allreduce $args
done

# 7. Iterations stream in bounded memory: 10x the iterations, about the same peak RSS.
# (Under ASan, freed blocks wait in its quarantine and RSS grows until it is full: measure without.)
rss() { ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0" /usr/bin/time -f "%M" "$HT" allreduce -b 8K -e 8K -n "$1" -w 0 -c 0 2>&1 >/dev/null | tail -1; }
small=$(rss 1000); large=$(rss 10000)
if [ -n "$small" ] && [ -n "$large" ] && [ "$large" -lt $((small * 13 / 10)) ]; then ok "hcomm_test -n 10000 peak RSS ${large} KB vs -n 1000 ${small} KB"
else bad "hcomm_test memory grows with iterations: -n 1000 ${small} KB, -n 10000 ${large} KB"; fi

# 8. A real payload larger than memory is refused up front with the estimate.
expect_exit "hcomm_test -b 17G (real bytes) refused" 2 "$HT" allreduce -b 17G -e 17G
grep -q "host memory" "$TMP/out.txt" && ok "the refusal names the memory estimate" || bad "no memory estimate in: $(head -2 "$TMP/out.txt")"
expect_exit "hcomm_test --max-memory 1G with 1 GiB x 8 ranks refused" 2 "$HT" allreduce -b 1G -e 1G --max-memory 1G

# 8 (hcsim run): a real payload larger than memory is refused with the estimate; --max-memory caps it.
cat > "$TMP/big.json" <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "big", "topology": "$SRC/topologies/atlas800t-a2.json",
  "workload": [ { "op": "allreduce", "bytes": "16GiB" } ] }
JSON
expect_exit "hcsim run: 16 GiB real all-reduce on 8 NPUs refused" 2 "$HCSIM" run "$TMP/big.json" --no-trace -q
grep -q "host memory" "$TMP/out.txt" && ok "hcsim's refusal names the memory estimate" || bad "no estimate in: $(head -2 "$TMP/out.txt")"
sed 's/16GiB/64MiB/' "$TMP/big.json" > "$TMP/mid.json"
expect_exit "hcsim run --max-memory 1GiB: 64 MiB x 8 ranks (about 1.8 GiB) refused" 2 "$HCSIM" run "$TMP/mid.json" --no-trace -q --max-memory 1GiB

# 8b. Unchecked host copies with real bytes: the DMA still reads and writes every byte of the host
#     buffer, which must be there (a one-page buffer made this a bus error, exit 135).
cat > "$TMP/h2d-nocheck.json" <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "h2d-nocheck", "topology": "$SRC/topologies/atlas800t-a2.json",
  "workload": [ { "op": "h2d", "bytes": "1MiB", "check": false }, { "op": "d2h", "bytes": "1MiB", "check": false } ] }
JSON
expect_exit "unchecked 1 MiB h2d and d2h with real bytes" 0 "$HCSIM" run "$TMP/h2d-nocheck.json" --no-trace -q

# 9. More ranks than the kernel's memory-map limit allows thread stacks for: refused up front,
#    naming vm.max_map_count (only where the limit is the default-sized one that 65,536 exceed).
if [ "$(cat /proc/sys/vm/max_map_count)" -lt 135168 ]; then
  cat > "$TMP/t65k.json" <<JSON
{ "format": "hcsim-topology", "version": 1, "name": "a2-8192",
  "server_groups": [ { "name": "node{i}", "count": 8192, "type": "atlas800t-a2", "host_ip": "10.0.0.1" } ],
  "fabric": { "type": "clos", "tiers": 3, "switch_radix": 128, "link_bandwidth": "200Gb/s" } }
JSON
  cat > "$TMP/r65k.json" <<JSON
{ "format": "hcsim-scenario", "version": 1, "name": "r65k", "topology": "$TMP/t65k.json", "payload": "timing",
  "workload": [ { "op": "barrier" } ] }
JSON
  expect_exit "65,536 ranks refused before elaboration" 2 "$HCSIM" run "$TMP/r65k.json" --no-trace -q
  grep -q "vm.max_map_count" "$TMP/out.txt" && ok "the refusal names vm.max_map_count" || bad "no limit named in: $(head -2 "$TMP/out.txt")"
else
  echo "skip 65,536 ranks: vm.max_map_count is raised on this machine"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
