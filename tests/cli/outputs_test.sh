#!/usr/bin/env bash
# The output rule of every command (docs/tools.md#outputs), table-driven: every output option of
# hcsim and hcomm_test (the table is checked against their --help) is pointed at each of the
# command's inputs by the same path, a symlink and a hard link, and at another output of the same
# command: exit 2, a message naming both, every input byte-identical (checksums) and nothing
# created. An existing file of another kind (an empty one too) is replaced only with --force, a
# file of the option's own kind without it. A plan beyond the cap on points is refused before
# anything is written.
# Usage: outputs_test.sh HCSIM_BINARY HCOMM_TEST_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
HT=$(realpath "$2")
SRC=$(realpath "$3")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
META=$TMP/meta  # checksums and listings, outside the directory under test
mkdir "$META" "$TMP/w"
cd "$TMP/w"
. "$SRC/tests/cli/check_lib.sh"

# ---- inputs: a scenario on a topology with a rank table, two traces, a routes file, a plan ----
cp "$SRC/tests/fixtures/ranked-2node.json" t.json
cp "$SRC/tests/fixtures/ranktable-2node.json" ranktable-2node.json
printf '{"format":"hcsim-scenario","version":1,"name":"s","topology":"t.json","workload":[{"op":"allreduce","bytes":"4KiB"}]}\n' > s.json
printf '{"format":"hcsim-plan","version":1,"name":"p","topology":"t.json","workloads":[{"op":"allreduce","sizes":["4KiB"]}]}\n' > p.json
"$HCSIM" run s.json --db a.db -q > /dev/null 2>&1 || bad "fixture trace a.db"
"$HCSIM" run s.json --db b.db -q > /dev/null 2>&1 || bad "fixture trace b.db"
"$HCSIM" routes a.db -o a.routes > /dev/null 2>&1 || bad "fixture routes file"
INPUTS="s.json t.json ranktable-2node.json p.json a.db b.db a.routes"
md5sum $INPUTS > "$META/inputs.md5"
mkdir "$META/orig" && cp $INPUTS "$META/orig/"
HTRUN="$HT allreduce -b 64K -e 64K -n 1 -w 0 -c 0 --topology t.json"

# refused NAME OUT MESSAGE -- command...: exit 2, MESSAGE (a fixed string) in the output, every
# input unchanged, and no file in the directory that was not there before.
refused() {
  local name=$1 msg=$3
  shift 4
  : > out.txt
  ls -AR | sort > "$META/before.ls"
  "$@" > out.txt 2>&1
  local rc=$?
  ls -AR | sort > "$META/after.ls"
  if ! md5sum --quiet -c "$META/inputs.md5" > "$META/md5.txt" 2>&1; then
    bad "$name: an input changed (exit $rc)" "$META/md5.txt" out.txt
    for f in $INPUTS; do cp -f "$META/orig/$f" "$f"; done  # the next cases start from intact inputs
  elif [ "$rc" -ne 2 ]; then bad "$name: exit $rc, expected 2" out.txt
  elif ! grep -qF -- "$msg" out.txt; then echo "    expected: $msg"; bad "$name: message" out.txt
  elif ! diff "$META/before.ls" "$META/after.ls" > "$META/ls.diff"; then bad "$name: files created or removed" "$META/ls.diff"
  else ok "$name"; fi
}

# with_opt CMD OPT: CMD with OPT added among its options (before a " -- PROGRAM" part, exec's).
with_opt() {
  if [ -z "$2" ]; then echo "$1"; elif [[ "$1" == *" -- "* ]]; then echo "${1%% -- *} $2 -- ${1#* -- }"; else echo "$1 $2"; fi
}

# ---- every output option against every input: same path, symlink, hard link ----
# option | how the message names the input | the input as the command names it | command (@OUT@: the output)
TABLE=(
  "run --db|input SCENARIO|s.json|$HCSIM run s.json -q --db @OUT@"
  "run --db|the scenario's topology|t.json|$HCSIM run s.json -q --db @OUT@"
  "run --db|the topology's rank table|ranktable-2node.json|$HCSIM run s.json -q --db @OUT@"
  "run --report|input SCENARIO|s.json|$HCSIM run s.json -q --no-trace --report @OUT@"
  "run --report|the scenario's topology|t.json|$HCSIM run s.json -q --no-trace --report @OUT@"
  "trace -o|input DB|a.db|$HCSIM trace a.db -o @OUT@"
  "plot -o|input DB|a.db|$HCSIM plot a.db -o @OUT@"
  "routes -o|the input|a.db|$HCSIM routes a.db -o @OUT@"
  "routes -o|the input|a.routes|$HCSIM routes a.routes -o @OUT@"
  "routes -o|the input|s.json|$HCSIM routes s.json -o @OUT@"
  "routes -o|the scenario's topology|t.json|$HCSIM routes s.json -o @OUT@"
  "routes -o|the topology's rank table|ranktable-2node.json|$HCSIM routes s.json -o @OUT@"
  "diff --junit|input A|a.db|$HCSIM diff a.db b.db --junit @OUT@"
  "diff --junit|input B|a.routes|$HCSIM diff a.db a.routes --junit @OUT@"
  "summary -o|the trace|a.db|$HCSIM summary a.db -o @OUT@"
  "exec --db|input SCENARIO|s.json|$HCSIM exec s.json -q --db @OUT@ -- /bin/true"
  "exec --db|the scenario's topology|t.json|$HCSIM exec s.json -q --db @OUT@ -- /bin/true"
  "exec --db|the topology's rank table|ranktable-2node.json|$HCSIM exec s.json -q --db @OUT@ -- /bin/true"
  "exec --db|--topology|t.json|$HCSIM exec --topology t.json -q --db @OUT@ -- /bin/true"
  "topo -o|input FILE|t.json|$HCSIM topo t.json --dot -o @OUT@"
  "topo -o|the topology's rank table|ranktable-2node.json|$HCSIM topo t.json --ranktable 1.0 -o @OUT@"
  "plan -o|input PLAN|p.json|$HCSIM plan p.json --dry-run -o @OUT@"
  "plan -o|the plan's topology|t.json|$HCSIM plan p.json --dry-run -o @OUT@"
  "plan -o|the topology's rank table|ranktable-2node.json|$HCSIM plan p.json --dry-run -o @OUT@"
  "hcomm_test --db|--topology|t.json|$HTRUN --db @OUT@"
  "hcomm_test --db|the topology's rank table|ranktable-2node.json|$HTRUN --db @OUT@"
  "hcomm_test --plot|--topology|t.json|$HTRUN --plot @OUT@"
  "hcomm_test --plot|the topology's rank table|ranktable-2node.json|$HTRUN --plot @OUT@"
)
covered=""
for row in "${TABLE[@]}"; do
  IFS='|' read -r what label in cmd <<< "$row"
  opt=${what#* }
  covered="$covered|$what|"
  ln -s "$in" link.out
  ln "$in" hard.out
  for out in "$in" link.out hard.out; do
    for force in "" --force; do  # --force does not lift the rule
      read -ra argv <<< "$(with_opt "${cmd//@OUT@/$out}" "$force")"
      refused "$what onto $label ($out)${force:+ $force}" "$out" "$opt $out is the same file as $label $in: an output may not replace an input" -- "${argv[@]}"
    done
  done
  rm -f link.out hard.out
done

# Inside a plan's DIR: a file it writes there that is the topology (hard link, symlink).
mkdir pdir
: > pdir/.hcsim-plan
ln t.json pdir/layout0.topology.json
refused "plan -o: DIR/layout0.topology.json a hard link of the topology" x \
  "-o pdir/layout0.topology.json is the same file as the plan's topology t.json" -- "$HCSIM" plan p.json -n -o pdir
rm pdir/layout0.topology.json
ln -s ../t.json pdir/layout0.topology.json
refused "plan -o: DIR/layout0.topology.json a symlink to the topology" x \
  "-o pdir/layout0.topology.json is the same file as the plan's topology t.json" -- "$HCSIM" plan p.json -n -o pdir
rm -r pdir

# ---- two outputs of one command: the same path, a (dangling) symlink, a hard link ----
covered="$covered|hcomm_test --db|hcomm_test --plot|"
refused "hcomm_test --db and --plot the same path" x "--plot x.db is the same file as --db x.db: two outputs may not share a file" -- $HTRUN --db x.db --plot x.db
ln -s x.db x.svg
refused "hcomm_test --plot a dangling symlink to --db" x "--plot x.svg is the same file as --db x.db: two outputs may not share a file" -- $HTRUN --db x.db --plot x.svg
rm x.svg
cp a.db h.db && ln h.db h.svg
md5sum h.db >> "$META/inputs.md5"
refused "hcomm_test --plot a hard link of --db" x "--plot h.svg is the same file as --db h.db: two outputs may not share a file" -- $HTRUN --force --db h.db --plot h.svg
refused "run --report the file of --db" x "--report x.db is the same file as --db x.db: two outputs may not share a file" -- "$HCSIM" run s.json -q --db x.db --report x.db
refused "hcomm_test --plot the lock file of --db" x "--plot x.db.lock is the same file as --db's lock file x.db.lock" -- $HTRUN --db x.db --plot x.db.lock
"$HCSIM" plan p.json -n -o pdir > /dev/null 2>&1 && rm pdir/plan.db && ln pdir/plan.csv pdir/plan.db
md5sum pdir/plan.csv >> "$META/inputs.md5"
refused "plan -o: two of its files one file" x "-o pdir/plan.db is the same file as -o pdir/plan.csv: two outputs may not share a file" -- "$HCSIM" plan p.json -n -o pdir
rm -r pdir h.db h.svg
sed -i '/h\.db\|pdir/d' "$META/inputs.md5"

# ---- every output option is in the tables above: the options taking FILE, OUT or DIR in --help ----
inputs_only="|health --rules|hcomm_test --topology|"
for cmd in $("$HCSIM" --help | sed -n 's/^  \([a-z]\+\) .*/\1/p'); do
  # "  -o OUT  ..." or "  -o, --output FILE  ...": the option's names, comma-separated
  for names in $("$HCSIM" "$cmd" --help | sed -n 's/^  \(-[a-z-]*\(, -[a-z-]*\)\?\) \(FILE\|OUT\|DIR\)\b.*/\1/p' | tr -d ' '); do
    found=""
    for opt in ${names//,/ }; do
      case "$covered" in *"|$cmd $opt|"*) found="is tested" ;; esac
      case "$inputs_only" in *"|$cmd $opt|"*) found="is an input" ;; esac
    done
    [ -n "$found" ] && ok "help: $cmd $names $found" || bad "help: $cmd $names (an output option?) is not in the table"
  done
done
for opt in $("$HT" --help | sed -n 's/^  \(--[a-z-]*\) FILE\b.*/\1/p'); do
  case "$covered" in *"|hcomm_test $opt|"*) ok "help: hcomm_test $opt is tested"; continue ;; esac
  case "$inputs_only" in *"|hcomm_test $opt|"*) ok "help: hcomm_test $opt is an input" ;; *) bad "help: hcomm_test $opt is not in the table" ;; esac
done

# ---- a file of another kind: refused (unchanged) without --force, replaced with it; a file of the
# option's own kind replaced without it ----
# name | the first bytes of what the option writes | command (@OUT@)
KINDS=(
  "trace -o|{\"displayTimeUnit\":\"ns\",\"traceEvents\":[|$HCSIM trace a.db -o @OUT@"
  "plot -o|<?xml version=\"1.0\" encoding=\"UTF-8\"?>|$HCSIM plot a.db -o @OUT@"
  "routes -o|# hcsim routes 1:|$HCSIM routes a.db -o @OUT@"
  "routes --json -o|[|$HCSIM routes a.db --json -o @OUT@"
  "diff --junit|<?xml version=\"1.0\" encoding=\"UTF-8\"?>|$HCSIM diff a.db b.db --junit @OUT@"
  "summary -o|# hcsim summary 1|$HCSIM summary a.db -o @OUT@"
  "topo --dot -o|graph \"a2-2node-ranked\" {|$HCSIM topo t.json --dot -o @OUT@"
  "topo --svg -o|<svg xmlns=|$HCSIM topo t.json --svg -o @OUT@"
  "topo -o|topology a2-2node-ranked|$HCSIM topo t.json -o @OUT@"
  "topo --ranktable -o|{|$HCSIM topo t.json --ranktable 1.2 -o @OUT@"
  "hcomm_test --plot|<?xml version=\"1.0\" encoding=\"UTF-8\"?>|$HTRUN --plot @OUT@"
  "hcomm_test --db|SQLite format 3|$HTRUN --db @OUT@"
  "run --db|SQLite format 3|$HCSIM run s.json -q --db @OUT@"
  "exec --db|SQLite format 3|$HCSIM exec s.json -q --db @OUT@ -- /bin/true"
  "run --report|{|$HCSIM run s.json -q --no-trace --report @OUT@"
)
for row in "${KINDS[@]}"; do
  IFS='|' read -r what head cmd <<< "$row"
  read -ra argv <<< "${cmd//@OUT@/k.out}"
  for content in "notes: keep me" ""; do
    printf '%s' "$content" > k.out
    "${argv[@]}" > out.txt 2>&1
    rc=$?
    if [ "$rc" -eq 2 ] && grep -qE "k.out.*(exists and is not|not an hcsim trace).*\(--force replaces it\)" out.txt && [ "$(cat k.out)" = "$content" ]; then
      ok "$what: a file of another kind (${content:-empty}) refused, unchanged"
    else bad "$what: a file of another kind (${content:-empty}): exit $rc" out.txt; fi
  done
  read -ra fargv <<< "$(with_opt "${cmd//@OUT@/k.out}" --force)"
  "${fargv[@]}" > out.txt 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && [ "$(head -c ${#head} k.out)" = "$head" ]; then ok "$what --force replaces it"; else bad "$what --force: exit $rc" out.txt; fi
  cp k.out k.first
  "${argv[@]}" > out.txt 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && [ "$(head -c ${#head} k.out)" = "$head" ]; then ok "$what replaces its own kind"; else bad "$what onto its own output: exit $rc" out.txt; fi
  rm -f k.out k.first
done
# hcomm_test opens --plot before simulating: when the run then fails (--db refused), an existing
# plot is left as it was and a new one is not left behind.
$HTRUN --plot keep.svg > /dev/null 2>&1
cp keep.svg keep.orig
echo "not a trace" > foreign.db
refused "hcomm_test --plot kept when --db is refused" x "foreign.db: cannot create trace database" -- $HTRUN --plot keep.svg --db foreign.db
cmp -s keep.svg keep.orig && ok "hcomm_test: the existing --plot file is unchanged" || bad "hcomm_test: --plot truncated by a failed run"
refused "hcomm_test: no new --plot file after a refused --db" x "foreign.db: cannot create trace database" -- $HTRUN --plot new.svg --db foreign.db
rm keep.svg keep.orig foreign.db
# A device is written to as it is.
for cmd in "$HCSIM trace a.db -o /dev/null" "$HCSIM topo t.json -o /dev/null" "$HTRUN --plot /dev/null"; do
  read -ra argv <<< "$cmd"
  if "${argv[@]}" > out.txt 2>&1 && [ -c /dev/null ]; then ok "$cmd"; else bad "$cmd" out.txt; fi
done
md5sum --quiet -c "$META/inputs.md5" > "$META/md5.txt" 2>&1 && ok "inputs unchanged at the end" || bad "inputs changed" "$META/md5.txt"

# ---- the plan's cap on points: every sweep dimension times every workload size ----
# 7 x 11 x 13 = 1001 layouts (below 10000) x 10 sizes = 10010 points: refused before anything is written.
python3 - > cap.json <<'PY'
import json
print(json.dumps({"format": "hcsim-plan", "version": 1, "name": "cap", "topology": "t.json",
  "sweep": [{"pointer": "/description", "name": n, "values": [f"{n}{i}" for i in range(k)]} for n, k in (("a", 7), ("b", 11), ("c", 13))],
  "workloads": [{"op": "allreduce", "sizes": [f"{1 << i}KiB" for i in range(6)]}, {"op": "allgather", "sizes": ["1KiB", "2KiB", "4KiB", "8KiB"]}]}))
PY
[ "$(wc -c < cap.json)" -lt 1024 ] && ok "cap.json is under 1 KiB" || bad "cap.json is too large"
md5sum cap.json >> "$META/inputs.md5"
refused "plan cap: 10010 points refused" x "cap.json: /: 10010 points (7 a x 11 b x 13 c x 10 workload sizes over 2 workloads) exceed the cap of 10000 points per plan" -- "$HCSIM" plan cap.json --dry-run -o capdir
refused "plan cap: refused without -o too" x "exceed the cap of 10000 points" -- "$HCSIM" plan cap.json --dry-run
# At the cap: 100 layouts x 100 sizes = 10000 points, accepted (a dry run).
python3 - > atcap.json <<'PY'
import json
print(json.dumps({"format": "hcsim-plan", "version": 1, "name": "atcap", "topology": "t.json",
  "sweep": [{"pointer": "/description", "name": "d", "values": [f"d{i}" for i in range(100)]}],
  "workloads": [{"op": "allreduce", "sizes": [f"{i + 1}KiB" for i in range(100)]}]}))
PY
expect "plan cap: 10000 points accepted" 0 "100 layouts x 1 workloads = 100 runs" -- "$HCSIM" plan atcap.json --dry-run -o atdir
nl=$(ls atdir/layout*.topology.json | wc -l) ns=$(ls atdir/l*-w0.scenario.json | wc -l)
[ "$nl" -eq 100 ] && [ "$ns" -eq 100 ] && ok "plan at the cap: 100 layouts, 100 scenarios" || bad "plan at the cap wrote $nl layouts, $ns scenarios"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
