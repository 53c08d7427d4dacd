# Shared by the CLI test scripts (source it after cd-ing into the scratch directory):
#   ok NAME                      count a pass
#   bad NAME [FILE...]           count a failure, show the files' last lines
#   count NAME FILE REGEX N      pass when FILE has exactly N lines matching the extended regex
#   expect NAME CODE PATTERN -- command...
#                                run the command (output in out.txt); pass when it exits CODE and,
#                                if PATTERN is not empty, its output matches the extended regex
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; shift; for f in "$@"; do sed 's/^/    /' "$f" | tail -30; done; fail=$((fail + 1)); }
count() {
  local n; n=$(grep -cE -- "$3" "$2")
  if [ "$n" -eq "$4" ]; then ok "$1: $n lines /$3/"; else bad "$1: $n lines /$3/, want $4" "$2"; fi
}
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" > out.txt 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, expected $code" out.txt; return; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" out.txt; then bad "$name: output lacks /$pattern/" out.txt; return; fi
  ok "$name"
}
