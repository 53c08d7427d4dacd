#!/usr/bin/env bash
# Compare the traces two hcsim binaries write for the same scenarios (docs/architecture.md#refactoring-checks):
# every scenario is run with each binary, each trace dumped with `sqlite3 .dump` with the columns that
# differ between runs by nature masked (run.wall_seconds, provenance hcsim_commit and command_line),
# and the two dumps compared byte for byte. Exit 0 when every pair is identical, 1 when one differs
# (its diff's head is printed), 2 on bad arguments.
#
# Usage: tools/trace_compare.sh BEFORE_HCSIM AFTER_HCSIM [SCENARIO...] [-- EXTRA RUN ARGS...]
#   default scenarios: scenarios/*.json (not scenarios/scale/); run from the repository root.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BEFORE_HCSIM AFTER_HCSIM [SCENARIO...] [-- EXTRA RUN ARGS...]" >&2
  exit 2
fi
before=$1 after=$2
shift 2
for b in "$before" "$after"; do
  if [ ! -x "$b" ]; then echo "$0: $b: not an executable" >&2; exit 2; fi
done
command -v sqlite3 >/dev/null || { echo "$0: sqlite3 is not installed" >&2; exit 2; }
scen=()
extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
  scen+=("$1"); shift
done
[ ${#scen[@]} -eq 0 ] && scen=(scenarios/*.json)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump() {  # DB -> the masked dump on stdout
  sqlite3 "$1" "UPDATE run SET wall_seconds = 0;" \
    "UPDATE provenance SET value = '' WHERE key IN ('hcsim_commit', 'command_line');" .dump
}
same=0 differ=0
for s in "${scen[@]}"; do
  if [ ! -f "$s" ]; then echo "$0: $s: no such scenario" >&2; exit 2; fi
  n=$(basename "$s" .json)
  for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    "$bin" run "$s" --db "$tmp/$n.$side.db" --force -q "${extra[@]}" >"$tmp/$n.$side.out" 2>&1
    echo $? >"$tmp/$n.$side.rc"
    dump "$tmp/$n.$side.db" >"$tmp/$n.$side.sql" 2>/dev/null
  done
  if cmp -s "$tmp/$n.before.sql" "$tmp/$n.after.sql" && cmp -s "$tmp/$n.before.rc" "$tmp/$n.after.rc"; then
    same=$((same + 1))
    echo "same    $s (exit $(cat "$tmp/$n.after.rc"))"
  else
    differ=$((differ + 1))
    echo "DIFFERS $s (exit $(cat "$tmp/$n.before.rc") vs $(cat "$tmp/$n.after.rc"))"
    diff "$tmp/$n.before.sql" "$tmp/$n.after.sql" | head -20
  fi
done
echo "$same of $((same + differ)) traces identical"
[ $differ -eq 0 ]
