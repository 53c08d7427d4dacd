#!/usr/bin/env bash
# Every scenario shipped in scenarios/ runs and meets its own expectations (exit 0).
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
for f in "$SRC"/scenarios/*.json; do
  if (cd "$TMP" && "$HCSIM" run "$f" --no-trace -q > out.txt 2>&1); then
    echo "ok   $(basename "$f")"; pass=$((pass + 1))
  else
    echo "FAIL $(basename "$f")"; tail -15 "$TMP/out.txt" | sed 's/^/    /'; fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
