#!/usr/bin/env bash
# Build the loaders' fuzz target with clang (libFuzzer + ASan/UBSan) and run it briefly (default
# 30 s): any crash, sanitizer report, leak, >10 s input or >2 GB RSS fails with a reproducer in
# $BUILD/fuzz-artifacts/. Long runs: docs/fuzzing.md.
# Usage: tests/fuzz/run_short.sh [SECONDS]   (env: HCSIM_FUZZ_BUILD build dir, HCSIM_FUZZ_CORPUS corpus dir)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${HCSIM_FUZZ_BUILD:-$SRC/build-fuzz}
SECS=${1:-30}
command -v clang++ > /dev/null || { echo "run_short.sh: clang++ is needed (apt-get install clang)"; exit 2; }
cmake -S "$SRC" -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHCSIM_FUZZ=ON \
      -DHCSIM_BENCHMARKS=OFF > /dev/null
cmake --build "$BUILD" -j"${HCSIM_FUZZ_JOBS:-2}" --target fuzz_loaders
CORPUS=${HCSIM_FUZZ_CORPUS:-$BUILD/fuzz-corpus}
SEEDS=$BUILD/fuzz-seeds
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$CORPUS" "$BUILD/fuzz-artifacts"
# Seeds: the first byte picks the loader ('0' topology, '1' scenario, '2' rank table, '3' units).
n=0
seed() { { printf '%s' "$1"; cat "$2"; } > "$SEEDS/$1-$(basename "$2")-$n"; n=$((n + 1)); }
for f in "$SRC"/topologies/*.json "$SRC"/tests/fixtures/*.json; do
  case "$(basename "$f")" in
    ranktable-*) seed 2 "$f" ;;
    *) if grep -q '"hcsim-scenario"' "$f"; then seed 1 "$f"; else seed 0 "$f"; fi ;;
  esac
done
for f in "$SRC"/scenarios/*.json; do seed 1 "$f"; done
for u in '28GB/s' '200Gb/s' '1.6TB/s' '64GiB' '0.5us' '1.3ms' 'HCOMM_NUM_QP=8' 'HCOMM_PROTOCOL=SHM'; do
  printf '3%s' "$u" > "$SEEDS/3-unit-$n"; n=$((n + 1))
done
exec "$BUILD/tests/fuzz_loaders" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
     -artifact_prefix="$BUILD/fuzz-artifacts/" -print_final_stats=1 "$CORPUS" "$SEEDS"
