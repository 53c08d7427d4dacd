#!/usr/bin/env bash
# No file of the source tree holds a merge's conflict markers (a line that is exactly `=======`
# between `<<<<<<< ` and `>>>>>>> ` lines): a merge resolved by hand must not land half done.
# Usage: conflict_markers_test.sh SOURCE_DIR
set -u
SRC=$(realpath "$1")
hits=$(grep -rnE --exclude-dir=.git --exclude-dir='build*' --exclude-dir=node_modules \
         -e '^<<<<<<< [^ ]' -e '^>>>>>>> [^ ]' "$SRC" 2>/dev/null || true)
if [ -n "$hits" ]; then
  echo "conflict markers:"; echo "$hits"
  echo "0 passed, 1 failed"; exit 1
fi
echo "1 passed, 0 failed"
