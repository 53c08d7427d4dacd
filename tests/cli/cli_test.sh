#!/usr/bin/env bash
# CLI contract of hcsim: exit codes (0 ok, 1 expectation failed, 2 bad input/usage) and messages
# that name the file and the JSON pointer. Usage: cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
FX=$SRC/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

expect help 0 "usage: hcsim" -- "$HCSIM" --help
expect no-command 2 "no command given" -- "$HCSIM"
# The heap on huge pages: hcsim re-executes itself with glibc.malloc.hugetlb=1 added to the
# user's tunables, leaves a user's own hugetlb setting alone, and HCSIM_HUGEPAGES=0 turns it off.
expect version-heap-huge 0 "^heap: transparent huge pages \(GLIBC_TUNABLES=glibc.malloc.hugetlb=1\)$" -- env -u GLIBC_TUNABLES "$HCSIM" --version
expect version-heap-keeps-tunables 0 "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1\)$" -- env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 "$HCSIM" --version
expect version-heap-user-setting 0 "^heap: base pages \(GLIBC_TUNABLES=glibc.malloc.hugetlb=0\)$" -- env GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$HCSIM" --version
expect version-heap-off 0 "^heap: base pages \(GLIBC_TUNABLES=\)$" -- env -u GLIBC_TUNABLES HCSIM_HUGEPAGES=0 "$HCSIM" --version
expect unknown-command 2 "unknown command" -- "$HCSIM" frobnicate
expect unknown-option 2 "unknown option --fast" -- "$HCSIM" run --fast
# Every command answers --help / -h on stdout (exit 0, its options listed); an unknown option is exit
# 2 with that command's usage on stderr.
for c in "run:--db FILE:--force:--no-trace:-q, --quiet" "validate:FILE\\.\\.\\." \
         "topo:--summary:--dot:--svg:--ranktable 1\\.0[|]1\\.2:--full:-o OUT" \
         "trace:DB:-o OUT:--ranks LIST:--from T:--to T:--detail ops[|]tasks[|]all" "top:DB:-n N" \
         "health:DB:--rules FILE:-n N" "plot:DB:-o OUT:--title TEXT" \
         "discover:SCENARIO[|]TOPOLOGY:--cross-check:--timeout-ms MS:-q, --quiet"; do
  cmd=${c%%:*}
  for h in --help -h; do
    "$HCSIM" "$cmd" "$h" > help.out 2> help.err
    rc=$? missing=""
    IFS=: read -ra want <<< "${c#*:}"
    for w in "usage: hcsim $cmd " "${want[@]}" "-h, --help"; do grep -qE -- "$w" help.out || missing="$missing /$w/"; done
    if [ "$rc" -eq 0 ] && [ -z "$missing" ] && [ ! -s help.err ]; then echo "ok   help-$cmd$h"; pass=$((pass + 1));
    else echo "FAIL help-$cmd$h: exit $rc, stdout lacks$missing"; sed 's/^/    /' help.out help.err | head; fail=$((fail + 1)); fi
  done
  "$HCSIM" "$cmd" --frobnicate > bad.out 2> bad.err
  rc=$?
  if [ "$rc" -eq 2 ] && grep -q "unknown option --frobnicate" bad.err && grep -q "^usage: hcsim $cmd " bad.err && [ ! -s bad.out ]; then
    echo "ok   unknown-option-$cmd"; pass=$((pass + 1))
  else echo "FAIL unknown-option-$cmd: exit $rc"; sed 's/^/    /' bad.out bad.err | head; fail=$((fail + 1)); fi
done
expect run-db-equals 0 "trace database eq.db" -- "$HCSIM" run "$FX/small.json" --db=eq.db -q
expect run-db-empty 2 "--db needs a file name" -- "$HCSIM" run "$FX/small.json" --db=
expect topo-o-missing 2 "-o needs a file name" -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" -o
expect validate-dashdash 0 "atlas800t-a2.json: ok" -- "$HCSIM" validate -- "$SRC/topologies/atlas800t-a2.json"
expect missing-file 2 "nope.json: /: cannot open file" -- "$HCSIM" run nope.json
expect not-json 2 "not-json.json: /: not valid JSON at byte" -- "$HCSIM" run "$FX/not-json.json"
expect unknown-key 2 "unknown-key.json: /workload/0/repaet: unknown key" -- "$HCSIM" run "$FX/unknown-key.json"
# Observation options: the scenario's /trace (unknown keys rejected with their pointer) and run's flags.
printf '{"format":"hcsim-scenario","version":1,"name":"t","topology":"%s","workload":[{"op":"barrier"}],"trace":{"sample_intreval":"1us"}}' \
  "$SRC/topologies/atlas800t-a2.json" > trace-key.json
expect trace-unknown-key 2 "trace-key.json: /trace/sample_intreval: unknown key \(allowed: sample_interval, tasks, routes\)" -- "$HCSIM" validate trace-key.json
printf '{"format":"hcsim-scenario","version":1,"name":"t","topology":"%s","workload":[{"op":"barrier"}],"trace":{"sample_interval":"10ns","tasks":1}}' \
  "$SRC/topologies/atlas800t-a2.json" > trace-bad.json
expect trace-short-interval 2 "trace-bad.json: /trace/sample_interval: a sampling interval must be 0" -- "$HCSIM" validate trace-bad.json
expect trace-tasks-type 2 "trace-bad.json: /trace/tasks: expected true or false" -- "$HCSIM" validate trace-bad.json
expect sample-interval-unit 2 "--sample-interval: unknown time unit" -- "$HCSIM" run "$FX/small.json" --sample-interval 5parsecs
expect sample-interval-missing 2 "--sample-interval needs a duration" -- "$HCSIM" run "$FX/small.json" --sample-interval
expect run-help-observe 0 "--trace-tasks" -- "$HCSIM" run --help
expect bad-topology 2 "bad-topology.json: /servers/0/hccs/bandwidth: bandwidth needs a unit" -- "$HCSIM" validate "$FX/bad-topology.json"
expect bad-topology-ip 2 "bad-topology.json: /servers/0/host_ip: not an IPv4 address" -- "$HCSIM" validate "$FX/bad-topology.json"
expect bad-topology-ref 2 "bad-topology-ref.json: /topology: topology file is invalid" -- "$HCSIM" run "$FX/bad-topology-ref.json"
# Chunk size: only in the chunk tier, 64 KiB .. 1 MiB.
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","fidelity":"packet","network":{"chunk":"128KiB"},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > chunk-packet.json
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","network":{"chunk":"2MiB"},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > chunk-big.json
expect chunk-needs-tier 2 "chunk-packet.json: /network/chunk: a chunk size needs" -- "$HCSIM" validate chunk-packet.json
printf '{"format":"hcsim-scenario","version":1,"name":"c","topology":"%s","network":{"ecmp_hash":"random","ecn":{"mode":"pi"}},"workload":[{"op":"barrier"}]}' "$SRC/topologies/a2-2node.json" > policy-bad.json
expect ecmp-policy 2 "policy-bad.json: /network/ecmp_hash: expected \"5-tuple\" or \"src-dst\"" -- "$HCSIM" validate policy-bad.json
expect ecn-policy 2 "policy-bad.json: /network/ecn/mode: expected \"red\" or \"step\"" -- "$HCSIM" validate policy-bad.json
expect chunk-range 2 "chunk-big.json: /network/chunk: chunk must be 64 KiB .. 1 MiB" -- "$HCSIM" validate chunk-big.json
# Memory follows the work in flight: the fabric's pending events do not grow with the number of
# operations run (each host wait keeps at most one deadline record per stream, however many waits).
pending() { "$HCSIM" run "$SRC/scenarios/quickstart.json" --no-trace --set /payload=timing --set "/workload/0/repeat=$1" |
            sed -n 's/.*fabric events (at most \([0-9]*\) pending).*/\1/p'; }
p4=$(pending 4) p400=$(pending 400)
if [ -n "$p4" ] && [ -n "$p400" ] && [ "$p400" -le "$p4" ]; then ok "run-pending-bounded ($p4 at 4 repetitions, $p400 at 400)";
else echo "FAIL run-pending-bounded: at most '$p4' events pending at 4 repetitions, '$p400' at 400"; fail=$((fail + 1)); fi
expect validate-ok 0 "atlas800t-a2.json: ok" -- "$HCSIM" validate "$SRC/topologies/atlas800t-a2.json" "$SRC/scenarios/quickstart.json"
expect unwritable-db 2 "cannot create trace database" -- "$HCSIM" run "$FX/small.json" --db /nonexistent-dir/x.db
expect small-run 0 "PASS: all expectations held" -- "$HCSIM" run "$FX/small.json" --db small.db --sample-interval 2us --trace-tasks
expect default-db 0 "trace database small.hcsim.db" -- "$HCSIM" run "$FX/small.json" -q
expect corrupt 1 "rank 3 step 0 rep 1: result check failed: 1 wrong elements, first element 1024" -- "$HCSIM" run "$FX/corrupt.json" --no-trace
expect corrupt-expected 0 "PASS" -- "$HCSIM" run "$FX/corrupt-expected.json" --no-trace

# A timed-out wait (a stalled NPU: nothing fails, nobody reports) names what the stream is blocked
# on, read from the NPU's registers by MMIO.
expect timeout-diagnostic 0 "synchronize timed out after 2000 ms: stream [0-9]+ of node[0-9]+/npu[0-9]+: SQ tail [0-9]+, SQ head [0-9]+, CQ tail [0-9]+; blocked in notify_wait on notify register [0-9]+ \(MMIO 0x1[0-9a-f]{7}\) = 0" -- "$HCSIM" run "$FX/stall-timeout.json" --no-trace

expect topo-summary 0 "bisection +102400.0 GB/s" -- "$HCSIM" topo "$SRC/topologies/clos-1024.json"
expect topo-dot 0 "node0 .. node63 \(64 servers\)" -- "$HCSIM" topo "$SRC/topologies/clos-1024.json" --dot
expect topo-svg 0 "</svg>" -- "$HCSIM" topo "$SRC/topologies/a2-pod-16.json" --svg
expect topo-ranktable 0 '"rank_id": "15"' -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --ranktable 1.2
expect topo-ranktable-version 2 "needs a version" -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --ranktable 3
expect topo-ranked 0 '"device_id": "7",\s*$' -- "$HCSIM" topo "$FX/ranked-2node.json" --ranktable 1.0
expect topo-ranked-bad 2 "ranktable-interleaved.json: /server_list/0/device: rank ids of a server must be contiguous" -- "$HCSIM" validate "$FX/ranked-bad.json"
expect run-pcie 0 "PASS" -- "$HCSIM" run "$FX/pcie.json" --no-trace
expect run-network 0 "PASS" -- "$HCSIM" run "$FX/network.json" --no-trace
expect topo-unwritable 2 "cannot write" -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --svg -o /nonexistent-dir/x.svg

# ---- bad input never reaches the run: file, pointer, reason, exit 2 ----
# A generated 3-tier Clos whose pods outnumber a core's ports: the generator fits it, and it runs.
expect clos3-validate 0 "clos3-small.json: ok" -- "$HCSIM" validate "$FX/clos3-small.json"
expect clos3-run 0 "PASS" -- "$HCSIM" run "$FX/clos3-barrier.json" --no-trace -q
# Bandwidths that cannot be represented (below 1 KB/s, not whole bytes/s, overflow); durations in whole ps.
expect bw-1bps 2 'bad-bandwidth.json: /servers/0/hccs/bandwidth: bandwidth "1b/s" is out of range' -- "$HCSIM" validate "$FX/bad-bandwidth.json"
expect bw-7Bps 2 'bad-bandwidth.json: /servers/0/npus/hbm_bandwidth: bandwidth "7B/s" is out of range' -- "$HCSIM" validate "$FX/bad-bandwidth.json"
expect bw-fraction 2 'bad-bandwidth.json: /servers/0/pcie/bandwidth: bandwidth "1.5B/s" is out of range' -- "$HCSIM" validate "$FX/bad-bandwidth.json"
expect duration-fraction 2 'bad-bandwidth.json: /servers/0/pcie/latency: "0.1ps" is 0.1.* ps, not a whole number of ps' -- "$HCSIM" validate "$FX/bad-bandwidth.json"
expect bw-huge 2 'bad-bandwidth.json: /servers/0/nic/bandwidth: .*out of range' -- "$HCSIM" validate "$FX/bad-bandwidth.json"
# hcomm_env: the library's own ranges and parser; unknown names are a warning.
for case in 'HCOMM_TIMEOUT_MS: HCOMM_TIMEOUT_MS="0" is out of range \[1000, 300000\]' \
            'HCOMM_NUM_QP: HCOMM_NUM_QP="100000" is out of range \[1, 32\]' \
            'HCOMM_BUFFSIZE_MB: HCOMM_BUFFSIZE_MB="1 " is not a decimal number' \
            'HCOMM_DEBUG: HCOMM_DEBUG="abc" is not a decimal number' \
            'HCOMM_RETRY_COUNT: HCOMM_RETRY_COUNT="-1" is out of range' \
            'HCOMM_PROTOCOL: HCOMM_PROTOCOL="UDP" is not a number or one of TCP, RDMA, SHM' \
            'HCOMM_MULTI_QP_THRESHOLD: HCOMM_MULTI_QP_THRESHOLD="0" is out of range \[1, 8192\]' \
            'HCOMM_FROBNICATE: warning: hcomm reads no variable HCOMM_FROBNICATE'; do
  expect "hcomm-env-${case%%:*}" 2 "bad-hcomm-env.json: /hcomm_env/$case" -- "$HCSIM" validate "$FX/bad-hcomm-env.json"
done
expect hcomm-env-run 2 'bad-hcomm-env.json: /hcomm_env/HCOMM_TIMEOUT_MS: HCOMM_TIMEOUT_MS="0" is out of range' -- "$HCSIM" run "$FX/bad-hcomm-env.json" --no-trace
printf '{"format":"hcsim-scenario","version":1,"name":"w","topology":"%s","hcomm_env":{"HCOMM_FROBNICATE":"1","HCOMM_NUM_QP":"4"},"workload":[{"op":"barrier"}]}' "$SRC/topologies/atlas800t-a2.json" > env-warn.json
expect hcomm-env-warning-only 0 "env-warn.json: ok" -- "$HCSIM" validate env-warn.json
# run prints the same load warnings to stderr, and runs.
expect hcomm-env-warning-run 0 "env-warn.json: /hcomm_env/HCOMM_FROBNICATE: warning: hcomm reads no variable HCOMM_FROBNICATE" -- "$HCSIM" run env-warn.json --no-trace -q
# Workloads the layout cannot run.
expect incast-one-npu 2 "bad-layout.json: /workload/0/op: incast needs at least 2 ranks" -- "$HCSIM" validate "$FX/bad-layout.json"
expect sendrecv-one-npu 2 "bad-layout.json: /workload/1/op: sendrecv pairs ranks and needs an even number of ranks, the topology has 1" -- "$HCSIM" validate "$FX/bad-layout.json"
expect incast-one-npu-run 2 "bad-layout.json: /workload/0/op: incast needs at least 2 ranks" -- "$HCSIM" run "$FX/bad-layout.json" --no-trace
for k in 0:incast 1:sendrecv 2:h2d 3:allreduce; do
  expect "zero-bytes-${k#*:}" 2 "bad-workload.json: /workload/${k%%:*}/bytes: must be at least one element" -- "$HCSIM" validate "$FX/bad-workload.json"
done
expect zero-bytes-run 2 "bad-workload.json: /workload/2/bytes" -- "$HCSIM" run "$FX/bad-workload.json" --no-trace
expect broadcast-root 2 "bad-collectives.json: /workload/0/root: rank 8 does not exist \\(8 ranks\\)" -- "$HCSIM" validate "$FX/bad-collectives.json"
expect alltoall-blocks 2 "bad-collectives.json: /workload/2/bytes: alltoall splits bytes into one block per rank: 1000 is not a multiple of 8 ranks x 2 B" -- "$HCSIM" validate "$FX/bad-collectives.json"
expect reducescatter-blocks 2 "bad-collectives.json: /workload/1/bytes: reducescatter splits bytes into one block per rank: 100 is not a multiple of 8 ranks x 4 B" -- "$HCSIM" validate "$FX/bad-collectives.json"
printf '%s' '{"format":"hcsim-scenario","version":1,"name":"x","topology":"'"$SRC"'/topologies/atlas800t-a2.json","workload":[{"op":"allgather","bytes":"1KiB","root":1}]}' > root-allgather.json
expect root-allgather 2 "root-allgather.json: /workload/0/root: root applies to incast and broadcast only" -- "$HCSIM" validate root-allgather.json
# What one NPU can run, runs.
printf '{"format":"hcsim-scenario","version":1,"name":"solo","topology":"%s","workload":[{"op":"barrier"},{"op":"allreduce","bytes":"4KiB"},{"op":"h2d","bytes":"4KiB"},{"op":"d2h","bytes":"4KiB"}]}' "$FX/one-npu.json" > solo.json
expect one-npu-runs 0 "PASS" -- "$HCSIM" run solo.json --no-trace
printf '{"format":"hcsim-scenario","version":1,"name":"w","topology":"%s","workload":[{"op":"incast","bytes":"512MiB","senders":"remote"}]}' "$SRC/topologies/atlas800t-a2.json" > incast-bad.json
expect incast-remote-none 2 'incast-bad.json: /workload/0/senders: "remote" senders: no rank is on another server' -- "$HCSIM" validate incast-bad.json
expect incast-sym-region 2 "incast-bad.json: /workload/0/bytes: incast writes bytes x ranks = 4 GiB into the root's symmetric region of 1 GiB" -- "$HCSIM" validate incast-bad.json
# Names, ratios, directories.
expect name-empty 2 "bad-names.json: /servers/0/name: a device name must not be empty" -- "$HCSIM" validate "$FX/bad-names.json"
expect name-nul 2 "bad-names.json: /servers/1/name: device name contains the non-printable byte 0x00" -- "$HCSIM" validate "$FX/bad-names.json"
expect name-tab 2 "bad-names.json: /switches/0/name: device name contains the non-printable byte 0x09" -- "$HCSIM" validate "$FX/bad-names.json"
expect oversub-overflow 2 'bad-names.json: /fabric/oversubscription: expected "k:1" with k in 1..16, got "4294967297:1"' -- "$HCSIM" validate "$FX/bad-names.json"
expect directory 2 "fixtures: /: is a directory, not a JSON file" -- "$HCSIM" validate "$FX"
"$HCSIM" validate "$FX/bad-group.json" > group.txt 2>&1
if [ "$(grep -c 'bad-group.json: /server_groups/0' group.txt)" -eq 1 ]; then echo "ok   group-error-once"; pass=$((pass + 1));
else echo "FAIL group-error-once"; sed 's/^/    /' group.txt | head; fail=$((fail + 1)); fi
# DOT escapes quotes and backslashes in names.
"$HCSIM" topo "$FX/quote-names.json" --dot > q.dot 2>&1
if grep -qF 'graph "say \"hi\"" {' q.dot && grep -qF 'label="rack\"1\"\\a/npu0"' q.dot; then echo "ok   dot-escape"; pass=$((pass + 1));
else echo "FAIL dot-escape"; sed 's/^/    /' q.dot | head; fail=$((fail + 1)); fi
# Nesting is limited before parsing; a wide file parses in linear time (200k objects: was 6.8 s).
{ printf '{"format":"hcsim-topology","version":1,"name":"d","servers":'; printf '[%.0s' $(seq 65); printf ']%.0s' $(seq 65); printf '}'; } > deep.json
expect too-deep 2 "deep.json: /: nesting deeper than 64 levels" -- "$HCSIM" validate deep.json
{ printf '{"format":"hcsim-topology","version":1,"name":"w","servers":['; yes '{},' | head -n 199999 | tr -d '\n'; printf '{}]}'; } > wide.json
expect wide-parse 2 "wide.json: /servers/0/name: missing required key" -- timeout 20 "$HCSIM" validate wide.json
# 65,536 NPUs: the summary (max flow + exact diameter) in seconds, not minutes.
printf '{"format":"hcsim-topology","version":1,"name":"big","server_groups":[{"name":"n{i}","count":8192,"type":"atlas800t-a2","host_ip":"10.0.0.1"}],"fabric":{"type":"clos","tiers":3,"switch_radix":64,"link_bandwidth":"200Gb/s"}}' > big.json
start=$(date +%s.%N)
expect topo-65536 0 "diameter +6 hops" -- timeout 60 "$HCSIM" topo big.json --summary
echo "     (topo --summary on 65,536 NPUs: $(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo '?') s)"

# The trace has rows in every table, and one operation row per rank per op (8 ranks x 2 all-reduce + 16 p2p).
if command -v sqlite3 > /dev/null; then
  empty=""
  for t in meta run npus links operations link_counters logs checks summary counter_samples tasks; do
    n=$(sqlite3 small.db "SELECT COUNT(*) FROM $t" 2>/dev/null || echo 0)
    [ "$n" -gt 0 ] || empty="$empty $t"
  done
  ops=$(sqlite3 small.db "SELECT COUNT(*) FROM operations" 2>/dev/null || echo 0)
  if [ -z "$empty" ] && [ "$ops" -eq 32 ]; then echo "ok   trace-tables"; pass=$((pass + 1));
  else echo "FAIL trace-tables: empty:$empty operations=$ops"; fail=$((fail + 1)); fi
  # Determinism: a second run gives the same rows (wall-clock column aside).
  "$HCSIM" run "$FX/small.json" --db small2.db -q --sample-interval 2us --trace-tasks > /dev/null 2>&1
  q="SELECT * FROM operations; SELECT * FROM link_counters; SELECT * FROM logs; SELECT * FROM summary; SELECT sim_end_ns FROM run;
     SELECT * FROM counter_samples; SELECT * FROM tasks;"
  a=$(sqlite3 small.db "$q" 2>&1); b=$(sqlite3 small2.db "$q" 2>&1)
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   deterministic-trace"; pass=$((pass + 1));
  else echo "FAIL deterministic-trace"; fail=$((fail + 1)); fi
fi

# Sampling and task rows are opt-in: a plain run writes the tables empty.
if command -v sqlite3 > /dev/null; then
  "$HCSIM" run "$FX/small.json" --db plain.db -q > /dev/null 2>&1
  n=$(sqlite3 plain.db "SELECT (SELECT COUNT(*) FROM counter_samples) + (SELECT COUNT(*) FROM tasks)" 2>&1)
  if [ "$n" = "0" ]; then echo "ok   observe-opt-in"; pass=$((pass + 1));
  else echo "FAIL observe-opt-in: $n rows"; fail=$((fail + 1)); fi
fi

# /trace/routes false: the library still decides (and uses) its routes, the trace has no rows of them.
if command -v sqlite3 > /dev/null; then
  printf '{"format":"hcsim-scenario","version":1,"name":"t","topology":"%s","payload":"timing","workload":[{"op":"allreduce","bytes":"1MiB"}],"trace":{"routes":false}}' \
    "$SRC/topologies/a2-2node.json" > no-routes.json
  "$HCSIM" run no-routes.json --db no-routes.db -q > /dev/null 2>&1
  "$HCSIM" run no-routes.json --db with-routes.db -q --set /trace/routes=true > /dev/null 2>&1
  n0=$(sqlite3 no-routes.db "SELECT COUNT(*) FROM routes" 2>&1)
  n1=$(sqlite3 with-routes.db "SELECT COUNT(*) FROM routes WHERE transport = 'roce'" 2>&1)
  t0=$(sqlite3 no-routes.db "SELECT time_us FROM summary" 2>&1)
  t1=$(sqlite3 with-routes.db "SELECT time_us FROM summary" 2>&1)
  if [ "$n0" = "0" ] && [ "${n1:-0}" -gt 0 ] 2>/dev/null && [ "$t0" = "$t1" ]; then echo "ok   trace-routes-off"; pass=$((pass + 1));
  else echo "FAIL trace-routes-off: $n0 rows without, $n1 with; times $t0 / $t1"; fail=$((fail + 1)); fi
fi

# The multi-QP threshold (docs/config.md, HCCL_MULTI_QP_THRESHOLD's rule), end to end: a2-2node,
# 1 MiB sendrecv between the two servers' halves (8 pairs, 16 directed, one 1 MiB write each; the
# receivers' ready notifies go on the reverse pair's QP 0), HCOMM_NUM_QP=4. QPs made per directed
# pair = min(4, 1024 KiB / threshold), at least 1: threshold 512 -> 2 (HCCL's own example), 256 ->
# 4, 8192 -> 1, 100 -> 4 (capped by num_qp).
if command -v sqlite3 > /dev/null; then
  printf '{"format":"hcsim-scenario","version":1,"name":"q","topology":"%s","payload":"real","workload":[{"op":"sendrecv","pattern":"halves","bytes":"1MiB"}],"hcomm_env":{"HCOMM_NUM_QP":"4"}}' \
    "$SRC/topologies/a2-2node.json" > qps.json
  for tq in 512:32 256:64 8192:16 100:64; do
    t=${tq%%:*}; want=${tq##*:}
    rm -f qps.db
    "$HCSIM" run qps.json --db qps.db -q --set "/hcomm_env/HCOMM_MULTI_QP_THRESHOLD=\"$t\"" > qps.txt 2>&1
    got=$(sqlite3 qps.db "SELECT CAST(value AS INTEGER) || '|' || (SELECT SUM(ok) FROM checks) FROM counters WHERE name = 'rdma_qps'" 2>&1)
    if [ "$got" = "$want|16" ]; then echo "ok   multi-qp threshold $t KiB: $want QPs, 16 results checked"; pass=$((pass + 1));
    else echo "FAIL multi-qp threshold $t KiB: got '$got', expected '$want|16'"; cat qps.txt; fail=$((fail + 1)); fi
  done
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
