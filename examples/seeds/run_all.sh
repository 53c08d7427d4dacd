#!/usr/bin/env bash
# Run every adapted seed sample under hcsim exec (docs/python.md) and report each one's status.
#   examples/seeds/run_all.sh [BUILD_DIR] [hcsim exec options...]   (default: build, --topology a2-2node -n 4)
# Exits non-zero when a sample fails.
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}; shift || true
OPTS=("$@"); [ ${#OPTS[@]} -eq 0 ] && OPTS=(--topology a2-2node -n 4 --no-trace)
fails=0
for f in examples/seeds/*.py; do
  [ "$(basename "$f")" = perf_table.py ] && continue  # one configuration per run on 4 NPUs: docs/seeds-performance.md
  start=$(date +%s%N)
  if out=$(PYTHONPATH="$BUILD/python" timeout 120 "$BUILD/tools/hcsim" exec "${OPTS[@]}" -- /usr/bin/python3 "$f" 2>&1); then st=ok
  else st="FAIL ($?)"; fails=$((fails + 1)); fi
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%-40s %-10s %4d.%03d s\n' "$f" "$st" $((ms / 1000)) $((ms % 1000))
  [ "$st" = ok ] || echo "$out" | tail -15 | sed 's/^/    /'
done
exit $((fails > 0))
