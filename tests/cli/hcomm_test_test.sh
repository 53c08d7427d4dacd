#!/usr/bin/env bash
# hcomm_test: hccl_test-compatible flags and columns, results checked, exit codes.
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
check bad-op 2 "unknown operation" -- "$T" alltoall
check bad-topology 2 "cannot open file" -- "$T" allreduce --topology /nonexistent.json
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
