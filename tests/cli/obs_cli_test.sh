#!/usr/bin/env bash
# The CLI that helps (observability): one-server pictures, wrong kinds of file, errors in one pass,
# the library's per-operation decision line (HCOMM_DEBUG=3), `hcsim run` progress and --top.
# Usage: obs_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
FX=$SRC/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

# ---- hcsim topo --dot on one server: a node per NPU, an edge per HCCS (and PCIe) link ----
# The expected counts come from the topology file itself (its servers' npus.count, hccs.topology
# and pcie.switch, and any explicit links), not from hcsim.
expected_counts() {  # FILE -> "NPUS HCCS PCIE"
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
npus = hccs = pcie = 0
for s in t["servers"]:
    n = s["npus"]["count"]
    npus += n
    topo = s.get("hccs", {}).get("topology", "full-mesh")
    hccs += {"full-mesh": n * (n - 1) // 2, "groups-of-4": n // 4 * 6, "none": 0}[topo]
    if s.get("pcie", {}).get("switch", False):
        pcie += n
for l in t.get("links", []):
    hccs += l["type"] == "hccs"
print(npus, hccs, pcie)
PY
}
for topo in atlas800t-a2 atlas800-910; do
  f=$SRC/topologies/$topo.json
  read -r npus hccs pcie <<< "$(expected_counts "$f")"
  "$HCSIM" topo "$f" --dot > "$topo.dot" 2> "$topo.err"
  rc=$?
  got_npus=$(grep -cE '^  n[0-9]+ \[label="server0/npu[0-9]+", shape=box\];$' "$topo.dot")
  # Edge lines: "nA -- nB [label="hccs, ..."]"; NPU nodes are n0..n(npus-1).
  got_hccs=$(grep -cE '^  n[0-9]+ -- n[0-9]+ \[label="hccs, ' "$topo.dot")
  got_pcie=$(grep -cE '^  n[0-9]+ -- n[0-9]+ \[label="pcie, ' "$topo.dot")
  boxes=$(grep -c 'shape=box' "$topo.dot")
  if [ "$rc" -eq 0 ] && [ "$npus" -gt 1 ] && [ "$got_npus" -eq "$npus" ] && [ "$boxes" -eq "$npus" ] && [ "$got_hccs" -eq "$hccs" ] &&
     [ "$got_pcie" -eq "$pcie" ]; then
    ok "topo-dot-one-server-$topo ($npus NPUs, $hccs HCCS, $pcie PCIe)"
  else
    bad "topo-dot-one-server-$topo: exit $rc, NPU nodes $got_npus/$npus, HCCS edges $got_hccs/$hccs, PCIe edges $got_pcie/$pcie" "$topo.dot" "$topo.err"
  fi
done
# Each HCCS edge joins two distinct NPU nodes, no pair twice.
pairs=$(grep -E 'label="hccs, ' atlas800t-a2.dot | awk '{print $1, $3}' | sort -u | wc -l)
[ "$pairs" -eq 28 ] && ok "topo-dot-hccs-pairs-distinct" || bad "topo-dot-hccs-pairs-distinct: $pairs distinct pairs" atlas800t-a2.dot
"$HCSIM" topo "$SRC/topologies/atlas800-910.json" --svg > a910.svg
n=$(grep -c '<rect x=' a910.svg)
[ "$n" -eq 9 ] && grep -q 'server0/npu7' a910.svg && ok "topo-svg-one-server" || bad "topo-svg-one-server: $n device boxes" a910.svg
# Several servers keep the aggregated view: one node per server.
expect topo-dot-two-servers 0 'n0 -- n2 \[label="8 x roce' -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --dot

# ---- the wrong kind of file: named as such, exit 2, nothing else reported ----
wrong() {  # wrong NAME PATTERN -- command...
  local name=$1 pattern=$2
  shift 3
  "$@" > wk.out 2> wk.err
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -qE -- "$pattern" wk.err && [ "$(wc -l < wk.err)" -eq 1 ] && ! grep -q "unknown key" wk.err; then ok "$name"
  else bad "$name: exit $rc" wk.out wk.err; fi
}
wrong run-topology "atlas800t-a2.json: /: is a topology, not a scenario: pass it to hcsim topo / hcsim validate" -- \
  "$HCSIM" run "$SRC/topologies/atlas800t-a2.json" --no-trace
wrong topo-scenario "quickstart.json: /: is a scenario, not a topology: pass it to hcsim run / hcsim validate" -- \
  "$HCSIM" topo "$SRC/scenarios/quickstart.json"
wrong topo-ranktable "ranktable-2node.json: /: is an Ascend rank table, not a topology" -- "$HCSIM" topo "$FX/ranktable-2node.json"
wrong validate-ranktable "ranktable-2node.json: /: is an Ascend rank table, not a topology" -- "$HCSIM" validate "$FX/ranktable-2node.json"
# A scenario named in a scenario's topology slot; a scenario with a mistyped format is still a scenario.
printf '{"format":"hcsim-scenario","version":1,"name":"s","topology":"%s","workload":[{"op":"barrier"}]}' "$SRC/scenarios/quickstart.json" > slot.json
expect topology-slot-scenario 2 "quickstart.json: /: is a scenario, not a topology" -- "$HCSIM" validate slot.json
printf '{"format":"hcsim-scenari","version":1,"name":"s","topology":"%s","workload":[{"op":"barrier"}]}' "$SRC/topologies/atlas800t-a2.json" > typo.json
expect validate-format-typo 2 'typo.json: /format: expected "hcsim-scenario"' -- "$HCSIM" validate typo.json

# ---- every problem in one pass: fields and references together, each with file and pointer ----
cat > onepass.json <<JSON
{"format":"hcsim-scenario","version":1,"name":"p","topology":"$SRC/topologies/atlas800t-a2.json",
 "workload":[{"op":"allreduce","bytes":"1MiB","dtype":"fp33"},{"op":"incast","bytes":"1MiB","root":8}],
 "faults":[{"type":"lane_degrade","at":"1us","a":"server0/npu0","b":"server0/npu9","lanes":9},
           {"type":"rank_crash","at":"1us","rank":8}]}
JSON
"$HCSIM" validate onepass.json > op.out 2> op.err
rc=$? missing=""
for w in '/workload/0/dtype: unknown dtype "fp33"' '/workload/1/root: rank 8 does not exist' \
         '/faults/0/lanes: lanes 9 out of range \[1, 8\]' '/faults/0/b: no NPU named "server0/npu9"' '/faults/1/rank: rank 8 does not exist'; do
  grep -qE "^onepass.json: $w" op.err || missing="$missing /$w/"
done
[ "$rc" -eq 2 ] && [ -z "$missing" ] && ok "validate-one-pass" || bad "validate-one-pass: exit $rc, lacks$missing" op.err
for lanes in 0 9 64; do
  printf '{"format":"hcsim-scenario","version":1,"name":"l","topology":"%s","workload":[{"op":"allreduce","bytes":"1MiB"}],"faults":[{"type":"lane_degrade","at":"1us","a":"server0/npu0","b":"server0/npu1","lanes":%s}]}' \
    "$SRC/topologies/atlas800t-a2.json" "$lanes" > lanes.json
  expect "lane-degrade-$lanes" 2 "lanes.json: /faults/0/lanes: lanes $lanes out of range \[1, 8\]" -- "$HCSIM" run lanes.json --no-trace
done

# ---- HCOMM_DEBUG=3: one decision line per collective, naming what the operations table records ----
# Two layouts and both ways of choosing: automatic across two servers (mesh+<family>), forced by
# HCOMM_ALGO on one server (flat ring).
decision_run() {  # NAME TOPOLOGY ENV_JSON
  printf '{"format":"hcsim-scenario","version":1,"name":"%s","topology":"%s","payload":"timing","hcomm_env":%s,"workload":[{"op":"allreduce","bytes":"64MiB","repeat":2},{"op":"allreduce","bytes":"4KiB","dtype":"int32","reduce":"max"}]}' \
    "$1" "$SRC/topologies/$2.json" "$3" > "$1.json"
  "$HCSIM" run "$1.json" --db "$1.db" > "$1.out" 2> "$1.err"
}
for c in "dbg-auto a2-2node auto 48" "dbg-forced atlas800t-a2 HCOMM_ALGO 24"; do
  read -r name topo by ops <<< "$c"
  env='{"HCOMM_DEBUG":"3"}'
  [ "$by" = HCOMM_ALGO ] && env='{"HCOMM_DEBUG":"3","HCOMM_ALGO":"level0:ring;level1:ring"}'
  decision_run "$name" "$topo" "$env"
  rc=$?
  lines=$(grep -cE '\[HCOMM_DBG\] HCOMM\(rank [0-9]+\) allreduce seq=[0-9]+ count=[0-9]+ dtype=(fp32|int32) op=(sum|max): algorithm [^ ]+ \(level[01]:[^;]+; chosen by '"$by"', est [0-9.]+ us(; runner-up [^ ]+ [0-9.]+ us)?\), chunks=[0-9]+ of [0-9]+ MiB, staging slots=[0-9]+$' "$name.err")
  [ "$rc" -eq 0 ] && [ "$lines" -eq "$ops" ] && ok "decision-lines-stderr-$name ($lines)" || bad "decision-lines-stderr-$name: exit $rc, $lines of $ops lines" "$name.err"
  if command -v sqlite3 > /dev/null; then
    # Every operation row has exactly one decision line of its rank and seq naming its algorithm,
    # and there are no other decision lines.
    q="SELECT (SELECT COUNT(*) FROM operations),
              (SELECT COUNT(*) FROM operations o WHERE (SELECT COUNT(*) FROM logs l WHERE l.rank = o.rank AND l.level = 3 AND
                 l.message LIKE '[HCOMM_DBG] HCOMM(rank ' || o.rank || ') ' || o.kind || ' seq=' || o.seq || ' %: algorithm ' || o.algorithm || ' (%chosen by ' || o.chosen_by || ',%') = 1),
              (SELECT COUNT(*) FROM logs WHERE message LIKE '%] HCOMM(rank %'),
              (SELECT GROUP_CONCAT(DISTINCT algorithm) FROM operations)"
    IFS='|' read -r total matched all algos <<< "$(sqlite3 "$name.db" "$q")"
    [ "$total" -eq "$ops" ] && [ "$matched" -eq "$ops" ] && [ "$all" -eq "$ops" ] && ok "decision-lines-trace-$name ($algos)" ||
      bad "decision-lines-trace-$name: operations $total, matched $matched, decision lines $all (algorithms $algos)" "$name.err"
  fi
done
grep -q 'algorithm ring (level0:ring over all 8 ranks; chosen by HCOMM_ALGO' dbg-forced.err && ok "decision-forced-ring" || bad "decision-forced-ring" dbg-forced.err
# HCOMM_DEBUG=2 keeps its one-line summary and has no decision lines.
decision_run dbg2 atlas800t-a2 '{"HCOMM_DEBUG":"2"}'
if ! grep -q 'HCOMM(rank' dbg2.err && [ "$(grep -c '\[HCOMM_INFO\] Rank[0-9]* allreduce seq' dbg2.err)" -eq 24 ]; then ok "decision-level-2"
else bad "decision-level-2" dbg2.err; fi

# ---- hcsim run: progress on stderr and --top; stdout and the trace are the same run ----
SC=$SRC/scenarios/dcqcn-incast.json  # about 33k fabric events per 0.3 s of wall time here: several reports at --refresh 0.01
strip_wall() { grep -vE ' s wall$|^hcsim: trace database ' "$1"; }  # what differs: the wall time, the file name
"$HCSIM" run "$SC" --db plain.db -q > plain.out 2> plain.err; rc0=$?
"$HCSIM" run "$SC" --db prog.db --progress --refresh 0.01 > prog.out 2> prog.err; rc1=$?
"$HCSIM" run "$SC" --db top.db --top --refresh 0.01 -q > top.out 2> top.err; rc2=$?
n=$(grep -cE '^hcsim: [0-9]+\.[0-9] s \| sim [0-9.]+ (us|ms|s) \| ops [0-9]+/1 \(slowest rank; fastest [0-9]+\) \| [0-9.]+ (k|M)?( )?events/s$' prog.err)
[ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] && [ "$n" -ge 2 ] && ok "progress-lines ($n)" || bad "progress-lines: exit $rc0/$rc1, $n lines" prog.err
# -q prints no progress (warnings, such as the chunk tier's congestion note on this incast, stay)
! grep -qvE '^hcsim: warning: ' plain.err && ok "progress-quiet-not-a-terminal" || bad "progress-quiet-not-a-terminal: -q without a terminal printed" plain.err
"$HCSIM" run "$SC" --no-trace -q --progress --refresh 0.01 > /dev/null 2> qp.err
! grep -qvE '^hcsim: warning: ' qp.err && ok "progress-q-silences" || bad "progress-q-silences" qp.err
"$HCSIM" run "$SC" --no-trace --refresh 0.01 > /dev/null 2> np.err
! grep -q ' events/s$' np.err && ok "progress-off-without-terminal" || bad "progress-off-without-terminal" np.err
blocks=$(grep -c '^hcsim top: dcqcn-incast | wall ' top.err)
if [ "$rc2" -eq 0 ] && [ "$blocks" -ge 2 ] && grep -qE '^ops done per rank \(of 1\): min [0-9]+  median [0-9]+  max [0-9]+  \(16 ranks\)$' top.err &&
   grep -q '^busiest links so far' top.err && grep -qE '^  leaf0/[0-9]+ +[0-9.]+ ' top.err &&
   grep -qE '^errors: drops [0-9]+  ECN marks [0-9]+  PFC pauses 0  retransmits [0-9]+  \(RDMA timeouts [0-9]+, HCCS CRC replays [0-9]+\)$' top.err && ! grep -q $'\033' top.err; then
  ok "top-plain-blocks ($blocks)"
else bad "top-plain-blocks: exit $rc2, $blocks blocks" top.err; fi
same=1
for o in prog.out top.out; do [ "$(strip_wall plain.out)" = "$(strip_wall $o)" ] || same=0; done
[ "$same" -eq 1 ] && ok "live-view-stdout-unchanged" || { diff plain.out prog.out > d.txt; diff plain.out top.out >> d.txt; bad "live-view-stdout-unchanged" d.txt; }
if command -v sqlite3 > /dev/null; then
  q="SELECT * FROM operations; SELECT * FROM link_counters; SELECT * FROM port_counters; SELECT * FROM logs; SELECT * FROM counters; SELECT * FROM summary; SELECT sim_end_ns FROM run;"
  a=$(sqlite3 plain.db "$q"); b=$(sqlite3 prog.db "$q"); c=$(sqlite3 top.db "$q")
  [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && ok "live-view-trace-unchanged" || bad "live-view-trace-unchanged"
fi
# On a terminal (script(1) gives the run a pseudo-terminal): the progress line is rewritten in
# place and erased at the end; --top clears the screen before each view.
if command -v script > /dev/null; then
  script -qec "$HCSIM run $SC --no-trace --refresh 0.01" /dev/null > tty.txt 2>&1
  if grep -q $'\r\033\[Khcsim: [0-9.]* s | sim' tty.txt && [ "$(grep -c ' events/s' tty.txt)" -le 1 ] && grep -q 'PASS' tty.txt; then ok "progress-terminal"
  else bad "progress-terminal" tty.txt; fi
  script -qec "$HCSIM run $SC --no-trace --top --refresh 0.01 -q" /dev/null > ttytop.txt 2>&1
  grep -q $'\033\[H\033\[2Jhcsim top: ' ttytop.txt && ok "top-terminal" || bad "top-terminal" ttytop.txt
fi
expect run-help-live 0 "--refresh SECONDS +wall time between progress / --top reports" -- "$HCSIM" run --help
expect run-help-top 0 "--top +a live view on stderr" -- "$HCSIM" run --help
expect refresh-bad 2 '--refresh: expected seconds from 0.01 to 3600, got "0"' -- "$HCSIM" run "$SC" --refresh 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
