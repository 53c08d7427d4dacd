#!/usr/bin/env bash
# hcomm_test: hccl_test-compatible flags and columns, every operation checked, busbw, banner, --algo, exit codes.
set -u
T=$(realpath "$1")
SRC=$(realpath "$2")
pass=0 fail=0
check() {  # check NAME CODE PATTERN -- cmd...
  local name=$1 code=$2 pat=$3; shift 4
  out=$("$@" 2>&1); rc=$?
  if [ $rc -eq "$code" ] && echo "$out" | grep -qE -- "$pat"; then echo "ok   $name"; pass=$((pass + 1));
  else echo "FAIL $name (exit $rc)"; echo "$out" | tail -12 | sed 's/^/    /'; fail=$((fail + 1)); fi
}
check allreduce 0 "^33554432 +[0-9.]+ +[0-9.]+ +success" -- "$T" allreduce -b 8K -e 32M -f 4 -n 2 -w 1
check columns 0 "data_size\(Bytes\): +aveg_time\(us\): +alg_bandwidth\(GB/s\): +check_result:" -- "$T" allreduce -b 8 -e 64 -n 1 -w 0
check int8-max 0 "^65536 .* success" -- "$T" allreduce -b 64K -e 64K -d int8 -o max -n 1 -w 0
check sendrecv-roce 0 "^4194304 .* success" -- "$T" sendrecv -b 4M -e 4M -n 2 -w 1 --topology "$SRC/topologies/a2-2node.json"
check subset 0 "^1048576 .* success" -- "$T" allreduce -b 1M -e 1M -p 4 -n 1 -w 0 --topology "$SRC/topologies/a2-2node.json"
check nocheck 0 "NULL" -- "$T" allreduce -b 1M -e 1M -c 0 -n 1 -w 0
check bad-type 2 "unknown data type fp17" -- "$T" allreduce -d fp17
check bad-op 2 "unknown operation" -- "$T" alltoal
# Every operation on two servers (16 ranks: HCCS inside, RoCE across), root 9 where there is one.
for op in allreduce allgather reducescatter broadcast reduce scatter alltoall alltoallv sendrecv; do
  check "$op-2node" 0 "^65536 +[0-9.]+ +[0-9.]+ +success +[0-9.]+ +[A-Za-z]" -- \
    "$T" $op -b 64K -e 64K -n 1 -w 0 -r 9 -d int32 --topology "$SRC/topologies/a2-2node.json"
done
# Half-precision reductions across servers with each level-1 family (the in-memory tests cover the
# other dtypes; fp16/bf16 are reduced by the SDMA model only).
for fam in ring H-D_R NHR NB DOUBLE_TREE; do
  check "fp16-sum-$fam" 0 "^262144 .* success .* mesh\\+$fam$" -- "$T" allreduce -b 256K -e 256K -d fp16 -n 1 -w 0 --algo "$fam" --topology "$SRC/topologies/a2-2node.json"
done
check bf16-reduce 0 "^262144 .* success" -- "$T" reduce -b 256K -e 256K -d bf16 -o min -r 11 -n 1 -w 0 --topology "$SRC/topologies/a2-2node.json"
check bf16-reducescatter 0 "^262144 .* success .* mesh\\+" -- "$T" reducescatter -b 256K -e 256K -d bf16 -n 1 -w 0 --topology "$SRC/topologies/a2-2node.json"
check fp16-reducescatter 0 "^1048576 .* success" -- "$T" reducescatter -b 1M -e 1M -d fp16 -o max -n 1 -w 0
check uneven-alltoallv 0 "^8 .* success" -- "$T" alltoallv -b 8 -e 8 -d int8 -n 1 -w 0
check banner 0 "collective buffer: 512 MiB per rank" -- "$T" broadcast -b 8K -e 8K -n 1 -w 0 -r 7
check banner-ranks 0 "ranks: 2 server\(s\) x 8 NPU\(s\) = 16" -- "$T" allgather -b 8K -e 8K -n 1 -w 0 --topology "$SRC/topologies/a2-2node.json"
check hccl-buffsize 0 "collective buffer: 64 MiB per rank \(HCCL_BUFFSIZE\)" -- env HCCL_BUFFSIZE=64 "$T" allreduce -b 8K -e 8K -n 1 -w 0
# The library's own knob too (the banner states the buffer in use and where it came from).
check hcomm-buffsize 0 "collective buffer: 64 MiB per rank \(HCOMM_BUFFSIZE_MB\)" -- env HCOMM_BUFFSIZE_MB=64 "$T" allreduce -b 8K -e 8K -n 1 -w 0
# A scenario given as the topology is named as the wrong kind of file (exit 2).
check topology-is-scenario 2 "quickstart.json: /: is a scenario, not a topology: pass it to hcsim run / hcsim validate" -- \
  "$T" allreduce -b 8K -e 8K -n 1 -w 0 --topology "$SRC/scenarios/quickstart.json"
check root-range 2 "-r 8 is out of range: the run has 8 ranks" -- "$T" broadcast -r 8
check algo-bogus 2 "bad --algo \"bogus\".*allowed: NA, ring" -- "$T" allgather --algo bogus
check algo-level 2 "unknown level" -- "$T" allgather --algo "level7:ring"
check algo-forced 0 "chosen by config = --algo level0:NHR;level1:NHR" -- "$T" allgather -b 64K -e 64K -n 1 -w 0 --algo NHR --topology "$SRC/topologies/a2-2node.json"
check algo-spec 0 "^65536 .* success .* mesh\\+NB$" -- "$T" allgather -b 64K -e 64K -n 1 -w 0 --algo "allgather=level0:NA;level1:NB" --topology "$SRC/topologies/a2-2node.json"
check help 0 "--algo SPEC.*" -- "$T" --help
check help-flags 0 "-r N .*" -- "$T" allreduce -b 8K --help
# busbw = algbw x (n-1)/n for all-gather, from the printed columns (8 ranks; 5 decimals printed).
out=$("$T" allgather -b 8K -e 1M -f 8 -n 2 -w 1 2>&1)
if echo "$out" | awk '/^[0-9]+ /{ n++; want = $3 * 7 / 8; d = $5 - want; if (d < 0) d = -d; if (d > 1e-4 + 1e-6 * want) bad++ }
                       END { exit (n >= 3 && !bad) ? 0 : 1 }'; then echo "ok   allgather-busbw"; pass=$((pass + 1))
else echo "FAIL allgather-busbw"; echo "$out" | tail -6 | sed 's/^/    /'; fail=$((fail + 1)); fi
# allreduce's busbw is algbw x 2(n-1)/n.
out=$("$T" allreduce -b 64K -e 64K -n 1 -w 0 2>&1)
if echo "$out" | awk '/^[0-9]+ /{ n++; want = $3 * 14 / 8; d = $5 - want; if (d < 0) d = -d; if (d > 1e-4 + 1e-6 * want) bad++ }
                       END { exit (n == 1 && !bad) ? 0 : 1 }'; then echo "ok   allreduce-busbw"; pass=$((pass + 1))
else echo "FAIL allreduce-busbw"; echo "$out" | tail -6 | sed 's/^/    /'; fail=$((fail + 1)); fi
# The pipeline (docs/algorithms/pipeline.md#where-the-time-goes): real bytes checked on two servers,
# and its time on a2-pod-16 (flow tier, 64 MiB, S = 16 steps of b = 512 KiB) between the closed form
# plus the copies and that plus 17.2 us per step (six one-way RoCE trips of <= 2.7 us + 1 us of
# dispatches, the allowance of every family's timing test):
#   all-gather      15 RoCE blocks in wire bytes at 25 GB/s + one HCCS block at 28 GB/s = 337.8 us,
#                   + the 64 MiB copied out at 400 GB/s (167.8 us)              -> [505.6, 780.8] us
#   reduce-scatter  the same + 16 steps of 8 blocks reduced at 400 GB/s (167.8 us), + the 64 MiB
#                   input copied in (167.8 us) and the own block out (1.3 us)   -> [674.7, 949.9] us
for op in allreduce allgather reducescatter; do
  check "pipeline-$op" 0 "^1048576 .* success .* pipeline$" -- "$T" $op -b 1M -e 1M -n 1 -w 0 -d int32 --algo pipeline --topology "$SRC/topologies/a2-2node.json"
done
pipe_time() {  # pipe_time OP LOW HIGH
  local out
  out=$("$T" "$1" -b 64M -e 64M -n 1 -w 0 -c 0 --algo pipeline --fidelity flow --topology "$SRC/topologies/a2-pod-16.json" 2>&1)
  if echo "$out" | awk -v lo="$2" -v hi="$3" '/^67108864 /{ n++; if ($2 < lo || $2 > hi || $NF != "pipeline") bad++ } END { exit (n == 1 && !bad) ? 0 : 1 }'
  then echo "ok   pipeline-$1-time"; pass=$((pass + 1))
  else echo "FAIL pipeline-$1-time (want [$2, $3] us)"; echo "$out" | tail -3 | sed 's/^/    /'; fail=$((fail + 1)); fi
}
pipe_time allgather 505.6 780.8
pipe_time reducescatter 674.7 949.9
check bad-topology 2 "cannot open file" -- "$T" allreduce --topology /nonexistent.json
# --db: the run's trace, one operations row per rank and iteration (8 ranks x (2 + 1)), its tasks;
# a file that is not an hcsim trace is refused (exit 2) and left as it was.
tmp=$(mktemp -d)
check db-written 0 "^1048576 .* success" -- "$T" allreduce -b 1M -e 1M -n 2 -w 1 --db "$tmp/t.db"
rows=$(sqlite3 "$tmp/t.db" "select count(*) from operations where kind = 'allreduce' and bytes = 1048576" 2>&1)
tasks=$(sqlite3 "$tmp/t.db" "select count(*) from tasks" 2>&1)
if [ "$rows" = 24 ] && [ "${tasks:-0}" -gt 0 ] 2>/dev/null; then echo "ok   db-rows"; pass=$((pass + 1))
else echo "FAIL db-rows (operations $rows, tasks $tasks)"; fail=$((fail + 1)); fi
echo "not a trace" > "$tmp/keep.txt"
check db-refused 2 "not an hcsim trace \(not an SQLite database\); refusing to replace it \(--force replaces it\)$" -- "$T" allreduce -b 8K -e 8K -n 1 -w 0 --db "$tmp/keep.txt"
if [ "$(cat "$tmp/keep.txt")" = "not a trace" ]; then echo "ok   db-kept"; pass=$((pass + 1)); else echo "FAIL db-kept"; fail=$((fail + 1)); fi
check db-no-dir 2 "cannot create trace database" -- "$T" allreduce -b 8K -e 8K -n 1 -w 0 --db "$tmp/no/such/dir/t.db"
rm -rf "$tmp"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
