#!/usr/bin/env bash
# The readers of a trace (health, top, trace, plot, routes, diff) never believe a broken one and
# never modify one: a killed run's trace is "unfinished" (health and diff exit 2, the others warn
# and show what it committed); a trace a run is writing is read consistently through the run's WAL
# with a "being written" warning (health and diff exit 2), and the finished trace is one file
# again; a truncated copy and a copy with a damaged page are "corrupt" (exit 2) for every reader.
# Usage: trace_readers_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
cleanup() {
  jobs -p | xargs -r kill -9 2> /dev/null
  wait 2> /dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"
set -m  # background runs get default SIGINT handling
pass=0 fail=0 skip=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; [ -f out.txt ] && sed 's/^/    /' out.txt | tail -10; fail=$((fail + 1)); }
skipped() { echo "skip $1: $2"; skip=$((skip + 1)); }
have_sqlite=0
command -v sqlite3 > /dev/null && have_sqlite=1

check() {  # check NAME CODE PATTERN [ANTIPATTERN] -- command...: exit code and output (stdout and stderr)
  local name=$1 code=$2 pattern=$3 anti=""
  shift 3
  if [ "$1" != "--" ]; then anti=$1; shift; fi
  shift
  "$@" > out.txt 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name" "exit $rc, expected $code"; return 1; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" out.txt; then bad "$name" "output lacks /$pattern/"; return 1; fi
  if [ -n "$anti" ] && grep -qE -- "$anti" out.txt; then bad "$name" "output has /$anti/"; return 1; fi
  ok "$name"
}
sums() { for f in "$@"; do [ -e "$f" ] && md5sum "$f"; done; }  # the files a reader must not change

scenario() {  # scenario FILE NAME REPEAT: an all-reduce of 4 KiB on one Atlas 800T A2
  printf '{"format":"hcsim-scenario","version":1,"name":"%s","topology":"%s","workload":[{"op":"allreduce","bytes":"4KiB","repeat":%s}]}\n' \
    "$2" "$SRC/topologies/atlas800t-a2.json" "$3" > "$1"
}
scenario s.json s 300
scenario long.json long 100000

# A finished trace: one file in rollback-journal mode (header bytes 18, 19 = 1), nothing beside it;
# the same input gives the same bytes (but for run.wall_seconds); readers see no warning.
"$HCSIM" run s.json --db f.db -q > out.txt 2>&1 || bad finished-run "exit $?"
"$HCSIM" run s.json --db f2.db -q > /dev/null 2>&1
left=$(ls f.db* | tr '\n' ' ')
mode=$(od -An -tu1 -j18 -N2 f.db | tr -s ' ')
[ "$left" = "f.db " ] && [ "$mode" = " 1 1" ] && ok finished-one-file || bad finished-one-file "files: $left; header bytes 18-19:$mode"
if [ $have_sqlite = 1 ]; then
  # Two runs with the very same command line (the trace's provenance records it).
  mkdir -p again && (cd again && "$HCSIM" run ../s.json --db f.db -q > /dev/null 2>&1) && cp again/f.db d1.db
  (cd again && "$HCSIM" run ../s.json --db f.db -q > /dev/null 2>&1) && cp again/f.db d2.db
  sqlite3 d1.db "UPDATE run SET wall_seconds=0" && sqlite3 d2.db "UPDATE run SET wall_seconds=0"
  cmp -s d1.db d2.db && ok determinism || bad determinism "two runs of s.json differ beyond run.wall_seconds"
else skipped determinism "no sqlite3"; fi
before=$(sums f.db)
check finished-health 0 "0 of 13 rules failed" "warning|unfinished|being written" -- "$HCSIM" health f.db
check finished-top 0 "status ok" "warning|unfinished|being written" -- "$HCSIM" top f.db
check finished-diff 0 "no differences" -- "$HCSIM" diff f.db f2.db
[ "$(sums f.db)" = "$before" ] && [ "$(ls f.db* | tr '\n' ' ')" = "f.db " ] && ok finished-unmodified || bad finished-unmodified "the trace or its directory changed"

# A killed run (SIGKILL): run.status NULL, nobody holds the lock (the lock file is left behind).
wait_ops() {  # wait_ops DB: until a reader sees committed operations (30 s at most)
  for _ in $(seq 300); do
    "$HCSIM" top "$1" 2> /dev/null | grep -qE "operations [1-9]" && return 0
    sleep 0.1
  done
  return 1
}
"$HCSIM" run long.json --db k.db -q > /dev/null 2>&1 &
pid=$!
wait_ops k.db || bad killed "no operations committed in 30 s"
sleep 0.5
kill -KILL $pid
wait $pid 2> /dev/null
[ -e k.db.lock ] && ok killed-lock-file-left || skipped killed-lock-file-left "no lock file left"
before=$(sums k.db k.db-wal)
unf="unfinished trace: no end recorded"
check killed-health 2 "k.db: $unf \(run.status is NULL\) and no run writing it.*health needs a finished run" "rules failed" -- "$HCSIM" health k.db
check killed-diff 2 "k.db: $unf .*diff needs a finished run" "no differences" -- "$HCSIM" diff k.db k.db
check killed-top 0 "warning: k.db: $unf" -- "$HCSIM" top k.db
grep -q "status unfinished (killed?)" out.txt && grep -qE "ranks 8 " out.txt && ok killed-top-view || bad killed-top-view "no unfinished status or not 8 ranks"
if [ $have_sqlite = 1 ]; then  # top's operations against SQLite's own count through the WAL (read-only)
  want=$(sqlite3 -readonly k.db "SELECT COUNT(*) FROM operations WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL")
  got=$(sed -n 's/.*operations \([0-9]*\).*/\1/p' out.txt | head -1)
  [ -n "$want" ] && [ "$want" -gt 0 ] && [ "$got" = "$want" ] && ok killed-top-count || bad killed-top-count "top says $got operations, sqlite3 $want"
fi
check killed-trace 0 "warning: k.db: $unf" -- "$HCSIM" trace k.db -o k.json
check killed-routes 0 "warning: k.db: $unf" -- "$HCSIM" routes k.db
check killed-plot 2 "warning: k.db: $unf" -- "$HCSIM" plot k.db -o k.svg  # then: no summary rows (written at the end)
[ "$(sums k.db k.db-wal)" = "$before" ] && ok killed-unmodified || bad killed-unmodified "a reader changed k.db or k.db-wal"
# A new run replaces the killed run's trace and its WAL: a finished trace, one file.
"$HCSIM" run s.json --db k.db -q > /dev/null 2>&1
[ "$(ls k.db* | tr '\n' ' ')" = "k.db " ] && ok killed-replaced || bad killed-replaced "files: $(ls k.db* | tr '\n' ' ')"

# A killed writer of the rollback-journal kind (sqlite3 here) leaves a hot journal: a reader does
# not roll it back (that changes the file) nor read past it; it says so, exit 2.
if [ $have_sqlite = 1 ]; then
  cp f.db hot.db
  mkfifo sql.fifo
  sqlite3 hot.db < sql.fifo > /dev/null 2>&1 &
  spid=$!
  exec 3> sql.fifo
  echo "PRAGMA cache_size=2; BEGIN; UPDATE run SET status=NULL;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
        INSERT INTO logs(sim_time_ns, rank, level, message) SELECT i, 0, 0, printf('%.100c', 'x') FROM n;" >&3
  for _ in $(seq 100); do [ -s hot.db-journal ] && [ "$(stat -c %s hot.db)" -gt "$(stat -c %s f.db)" ] && break; sleep 0.1; done
  kill -KILL $spid
  wait $spid 2> /dev/null
  exec 3>&-
  before=$(sums hot.db hot.db-journal)
  for c in top health; do
    check hot-journal-$c 2 "hot.db: unfinished trace with a hot journal: hot.db-journal holds a batch" -- "$HCSIM" $c hot.db
  done
  [ "$(sums hot.db hot.db-journal)" = "$before" ] && ok hot-journal-unmodified || bad hot-journal-unmodified "changed"
fi

# A trace being written: readers poll a running run; each sees a consistent snapshot (never
# "malformed") and says so; health and diff refuse it. SIGINT ends the run: one file again.
"$HCSIM" run long.json --db w.db -q > /dev/null 2>&1 &
pid=$!
wait_ops w.db || bad writing "no operations committed in 30 s"
bw="being written: a run holds w.db.lock"
if [ $have_sqlite = 1 ]; then  # a reader holding a snapshot for 4 s does not stall the run's commits
  count() { sqlite3 -readonly w.db "SELECT COUNT(*) FROM operations" 2> /dev/null; }
  (echo "BEGIN; SELECT COUNT(*) FROM operations;"; sleep 4; echo "COMMIT;") | sqlite3 -readonly w.db > /dev/null 2>&1 &
  hold=$!
  sleep 0.3
  n1=$(count)
  sleep 3
  n2=$(count)
  wait $hold
  [ -n "$n1" ] && [ -n "$n2" ] && [ "$n2" -gt "$n1" ] && ok writing-not-stalled || bad writing-not-stalled "operations $n1 then $n2 while a reader held a snapshot"
fi
for i in 1 2 3; do
  check writing-top-$i 0 "warning: w.db: $bw.*" "malformed|corrupt" -- "$HCSIM" top w.db
  grep -q "status being written" out.txt || bad writing-top-$i "no being-written status"
  check writing-trace-$i 0 "warning: w.db: $bw" "malformed|corrupt" -- "$HCSIM" trace w.db -o w.json
  check writing-health-$i 2 "w.db: being written: .*health needs a finished run" "malformed|rules failed" -- "$HCSIM" health w.db
done
check writing-routes 0 "warning: w.db: $bw" "malformed|corrupt" -- "$HCSIM" routes w.db
check writing-diff 2 "w.db: being written" "malformed|no differences" -- "$HCSIM" diff w.db f.db
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && [ "$(ls w.db* | tr '\n' ' ')" = "w.db " ] && ok writing-finished-one-file || bad writing-finished-one-file "exit $rc, files: $(ls w.db* | tr '\n' ' ')"
if [ $have_sqlite = 1 ]; then
  row=$(sqlite3 w.db "PRAGMA integrity_check; SELECT status FROM run; SELECT COUNT(*) > 0 FROM operations" | tr '\n' ' ')
  [ "$row" = "ok interrupted 1 " ] && ok writing-finished-intact || bad writing-finished-intact "$row"
fi
check writing-then-top 0 "status interrupted" "warning" -- "$HCSIM" top w.db

# Corrupt copies of f.db: truncated (to half, and to less than a header) and a damaged page (a
# leaf of the operations table overwritten with zeros; the file's middle page, whatever table it
# holds, with 0xff): exit 2 "corrupt" from every reader, never "not an hcsim trace", the copy
# unchanged.
size=$(stat -c %s f.db)
psize=$(($(od -An -tu1 -j16 -N1 f.db) * 256 + $(od -An -tu1 -j17 -N1 f.db)))
pages=$((size / psize))
head -c $((pages / 2 * psize)) f.db > half.db  # whole pages: the header check, not the page-size one
head -c 60 f.db > head.db
mid=$((pages / 2))
mid2=$((pages / 2 + 1))
if [ $have_sqlite = 1 ]; then  # a leaf page of the operations table, from SQLite's dbstat
  leaves=($(sqlite3 f.db "SELECT pageno FROM dbstat WHERE name='operations' AND pagetype='leaf' ORDER BY pageno" 2> /dev/null))
  [ ${#leaves[@]} -ge 2 ] && mid=${leaves[$((${#leaves[@]} / 2))]}
  [ "$mid" = "$mid2" ] && mid2=$((mid2 + 1))
fi
cp f.db zero.db
dd if=/dev/zero of=zero.db bs=$psize seek=$((mid - 1)) count=1 conv=notrunc 2> /dev/null
cp f.db ones.db
head -c $psize /dev/zero | tr '\0' '\377' | dd of=ones.db bs=$psize seek=$((mid2 - 1)) count=1 conv=notrunc 2> /dev/null
for c in half head zero ones; do
  before=$(sums $c.db)
  check $c-health 2 "$c.db: corrupt" "not an hcsim trace|rules failed" -- "$HCSIM" health $c.db
  check $c-top 2 "$c.db: corrupt" "not an hcsim trace" -- "$HCSIM" top $c.db
  check $c-trace 2 "$c.db: corrupt" "not an hcsim trace" -- "$HCSIM" trace $c.db -o $c.json
  check $c-plot 2 "$c.db: corrupt" "not an hcsim trace" -- "$HCSIM" plot $c.db -o $c.svg
  check $c-routes 2 "$c.db: corrupt" "not an hcsim trace" -- "$HCSIM" routes $c.db
  check $c-diff 2 "$c.db: corrupt" "not an hcsim trace|no differences" -- "$HCSIM" diff f.db $c.db
  [ "$(sums $c.db)" = "$before" ] && [ "$(ls $c.db* | tr '\n' ' ')" = "$c.db " ] && ok $c-unmodified || bad $c-unmodified "changed"
done
check truncated-says 2 "half.db: corrupt: truncated: its header says $pages pages of $psize bytes" -- "$HCSIM" top half.db

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
