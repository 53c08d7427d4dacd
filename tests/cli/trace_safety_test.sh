#!/usr/bin/env bash
# The trace never destroys what it must not and never loses what it committed: --db refuses files
# that are not hcsim traces, directories and devices; a default trace name cannot leave the current
# directory; a second run on the same --db is refused while the first holds it; SIGINT/SIGTERM
# finalise the trace (run.status 'interrupted', exit 130/143); a full disk is reported (exit 2) and
# what was committed stays readable. Usage: trace_safety_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
MNT=""
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2> /dev/null
  jobs -p | xargs -r kill 2> /dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"
set -m  # background runs get default SIGINT handling (a non-interactive shell would ignore it for them)
pass=0 fail=0 skip=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; [ -f out.txt ] && sed 's/^/    /' out.txt | tail -10; fail=$((fail + 1)); }
skipped() { echo "skip $1: $2"; skip=$((skip + 1)); }

expect() {  # expect NAME CODE PATTERN -- command...
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" > out.txt 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name" "exit $rc, expected $code"; return 1; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" out.txt; then bad "$name" "output lacks /$pattern/"; return 1; fi
  return 0
}
have_sqlite=0
command -v sqlite3 > /dev/null && have_sqlite=1

scenario() {  # scenario FILE NAME REPEAT: an all-reduce of 4 KiB on one Atlas 800T A2
  printf '{"format":"hcsim-scenario","version":1,"name":"%s","topology":"%s","workload":[{"op":"allreduce","bytes":"4KiB","repeat":%s}]}\n' \
    "$2" "$SRC/topologies/atlas800t-a2.json" "$3" > "$1"
}
scenario s.json s 2
scenario long.json long 100000

# --db naming the scenario itself (refused even with --force: docs/tools.md#outputs), or another
# JSON file: refused, file untouched.
cp s.json s.orig
expect db-is-scenario 2 "--db s.json is the same file as input SCENARIO s.json: an output may not replace an input" -- "$HCSIM" run s.json --db s.json --force -q &&
  { cmp -s s.json s.orig && [ ! -e s.json.lock ] && ok db-is-scenario || bad db-is-scenario "the scenario was modified"; }
cp "$SRC/topologies/atlas800t-a2.json" topo.json
expect db-is-topology 2 "topo.json: .*not an hcsim trace" -- "$HCSIM" run s.json --db topo.json -q &&
  { cmp -s topo.json "$SRC/topologies/atlas800t-a2.json" && ok db-is-topology || bad db-is-topology "the topology was modified"; }
: > empty.db
expect db-empty-file 2 "empty.db: .*not an hcsim trace \(an empty file\)" -- "$HCSIM" run s.json --db empty.db -q &&
  { [ -f empty.db ] && [ ! -s empty.db ] && ok db-empty-file || bad db-empty-file "the file was modified"; }
mkdir emptydir
expect db-is-directory 2 "emptydir: .*is a directory" -- "$HCSIM" run s.json --db emptydir -q &&
  { [ -d emptydir ] && ok db-is-directory || bad db-is-directory "the directory was removed"; }
mkfifo fifo
expect db-is-fifo 2 "fifo: .*not a regular file" -- "$HCSIM" run s.json --db fifo -q &&
  { [ -p fifo ] && ok db-is-fifo || bad db-is-fifo "the FIFO was removed"; }
if mknod null c 1 3 2> /dev/null; then
  expect db-is-device 2 "null: .*not a regular file" -- "$HCSIM" run s.json --db null --force -q &&
    { [ -c null ] && ok db-is-device || bad db-is-device "the device node was removed"; }
else skipped db-is-device "mknod not permitted"; fi
if [ $have_sqlite = 1 ]; then
  sqlite3 other.db "CREATE TABLE t(x); INSERT INTO t VALUES(42);"
  sum=$(md5sum < other.db)
  expect db-other-sqlite 2 "other.db: .*an SQLite database hcsim did not write" -- "$HCSIM" run s.json --db other.db -q &&
    { [ "$(md5sum < other.db)" = "$sum" ] && ok db-other-sqlite || bad db-other-sqlite "the database was modified"; }
fi
# --force replaces a regular file; an hcsim trace is replaced without it.
cp s.json forced.db
expect db-force 0 "PASS" -- "$HCSIM" run s.json --db forced.db --force -q &&
  { [ "$(head -c 15 forced.db)" = "SQLite format 3" ] && ok db-force || bad db-force "not replaced by a trace"; }
expect db-replace-trace 0 "PASS" -- "$HCSIM" run s.json --db forced.db -q && ok db-replace-trace
# Unwritable places for --db: exit 2 before simulating, naming the path and the reason.
expect db-no-dir 2 "/nonexistent-dir/x.db: cannot create trace database: .*No such file or directory" -- "$HCSIM" run s.json --db /nonexistent-dir/x.db -q &&
  { grep -q "step" out.txt && bad db-no-dir "simulated anyway" || ok db-no-dir; }
expect db-not-dir 2 "s.json/x.db: cannot create trace database: .*Not a directory" -- "$HCSIM" run s.json --db s.json/x.db -q && ok db-not-dir

# A scenario name cannot take the default trace path out of the current directory.
mkdir -p sub/work
scenario sub/work/victim.json "../victim" 1
(cd sub/work && "$HCSIM" run victim.json -q > ../../out.txt 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ ! -e sub/victim.hcsim.db ] && [ -f sub/work/_._victim.hcsim.db ]; then ok default-name-sanitised
else bad default-name-sanitised "exit $rc; $(cd sub && find . -name '*.db' | tr '\n' ' ')"; fi

wait_for() {  # wait_for FILE: until it exists (10 s at most)
  for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}

# SIGINT / SIGTERM while simulating: the run stops, the trace is finalised.
for sig in INT TERM; do
  code=$([ $sig = INT ] && echo 130 || echo 143)
  rm -f sig.db
  "$HCSIM" run long.json --db sig.db -q > out.txt 2>&1 &
  pid=$!
  wait_for sig.db.lock
  sleep 1
  kill -$sig $pid
  wait $pid
  rc=$?
  if [ $rc -ne $code ]; then bad sig$sig "exit $rc, expected $code"; continue; fi
  if ! grep -q "interrupted by SIG$sig" out.txt; then bad sig$sig "no message"; continue; fi
  if [ -e sig.db.lock ]; then bad sig$sig "lock file left"; continue; fi
  if [ $have_sqlite = 1 ]; then
    row=$(sqlite3 sig.db "PRAGMA integrity_check; SELECT exit_code, status FROM run; SELECT COUNT(*) > 0 FROM operations" | tr '\n' ' ')
    [ "$row" = "ok $code|interrupted 1 " ] && ok sig$sig || bad sig$sig "trace: $row"
  else ok sig$sig; fi
done

# A second run on the same --db while the first writes it is refused; the first one's trace is intact.
rm -f busy.db
"$HCSIM" run long.json --db busy.db -q > first.txt 2>&1 &
pid=$!
wait_for busy.db.lock
sleep 0.3
expect second-writer 2 "busy.db: cannot create trace database: another hcsim run is writing this trace" -- "$HCSIM" run s.json --db busy.db -q
r2=$?
kill -INT $pid
wait $pid
rc=$?
if [ $r2 -eq 0 ]; then
  if [ $rc -ne 130 ]; then bad second-writer "the first run exited $rc"
  elif [ $have_sqlite = 1 ] && [ "$(sqlite3 busy.db 'PRAGMA integrity_check; SELECT scenario, status FROM run' | tr '\n' ' ')" != "ok long.json|interrupted " ]; then
    bad second-writer "the first run's trace was damaged: $(sqlite3 busy.db 'SELECT * FROM run' 2>&1)"
  else ok second-writer; fi
fi

# A full disk: reported, exit 2, the committed part readable (a 600 KiB tmpfs, more than the first batch of 2000 rows; needs root).
mkdir small-fs
if mount -t tmpfs -o size=600k tmpfs small-fs 2> /dev/null; then
  MNT=$TMP/small-fs
  if expect disk-full 2 "small-fs/full.db: cannot write the trace: database or disk is full; it keeps the [0-9]+ rows committed" -- \
      "$HCSIM" run long.json --db small-fs/full.db -q; then
    if [ $have_sqlite = 1 ]; then
      row=$(sqlite3 small-fs/full.db "PRAGMA integrity_check; SELECT COUNT(*) > 0 FROM operations; SELECT COUNT(*) FROM meta" | tr '\n' ' ')
      [ "$row" = "ok 1 2 " ] && ok disk-full || bad disk-full "trace: $row"
    else ok disk-full; fi
  fi
  umount small-fs && MNT=""
else skipped disk-full "cannot mount a tmpfs (not root?)"; fi

# The same without root: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes writes past
# 600 KiB fail with EFBIG, which SQLite reports as an I/O error.
if expect fsize-limit 2 "fsize.db: cannot write the trace: .*; it keeps the [0-9]+ rows committed" -- \
    bash -c 'trap "" XFSZ; ulimit -f 600; exec "$@"' _ "$HCSIM" run long.json --db fsize.db -q; then
  if [ $have_sqlite = 1 ]; then
    row=$(sqlite3 fsize.db "PRAGMA integrity_check; SELECT COUNT(*) > 0 FROM operations; SELECT COUNT(*) FROM meta" | tr '\n' ' ')
    [ "$row" = "ok 1 2 " ] && ok fsize-limit || bad fsize-limit "trace: $row"
  else ok fsize-limit; fi
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
