#!/usr/bin/env bash
# Result checks end to end (docs/algorithms/mesh.md#result-checks): one flipped bit of one rank's
# result fails the run whatever the bit, every dtype, in `hcsim run` and `hcomm_test -c 1`; the
# checks rows record the mode and tolerance. Usage: checks_cli_test.sh HCSIM HCOMM_TEST SRC
set -u
HCSIM=$(realpath "$1"); HT=$(realpath "$2"); SRC=$(realpath "$3")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
. "$SRC/tests/cli/check_lib.sh"
expect_exit() { local name=$1 want=$2; shift 2; expect "$name" "$want" "" -- "$@"; }
q() { sqlite3 "$1" "$2"; }

# 1. The quickstart at 4 MiB with the lowest mantissa bit of one element of rank 3's second
#    result flipped: a wrong answer, so FAIL (exit 1), with the flipped element named.
expect_exit "fp32 sum, bit 0 flipped" 1 "$HCSIM" run "$SRC/scenarios/quickstart.json" -q --db "$TMP/q.db" \
  --set /workload/0/bytes=4MiB --fault 'hbm_bitflip rank=3 step=0 rep=1 byte=4096 bit=0'
bad_rows=$(q "$TMP/q.db" "SELECT rank||':'||rep||':'||mismatches||':'||mode||':'||tolerance FROM checks WHERE ok = 0")
[ "$bad_rows" = "3:1:1:exact:0.0" ] && ok "the one bad check row: $bad_rows" || bad "bad check rows: '$bad_rows'"
q "$TMP/q.db" "SELECT detail FROM checks WHERE ok = 0" | grep -q "element 1024: got .* (bits 0x" && ok "detail names element 1024 and its bits" \
  || bad "detail: $(q "$TMP/q.db" "SELECT detail FROM checks WHERE ok = 0")"
[ "$(q "$TMP/q.db" "SELECT count(*) FROM checks WHERE ok = 1 AND mode = 'exact' AND tolerance = 0")" = 31 ] && ok "31 exact passing rows" \
  || bad "passing rows: $(q "$TMP/q.db" "SELECT ok, mode, tolerance, count(*) FROM checks GROUP BY 1, 2, 3")"

# 2. Every dtype and reduction on 16 ranks (two servers), the sign bit and bit 0 of one element:
#    each flip fails the run; without a flip each passes with the mode the docs state.
for spec in "fp32 sum" "fp16 sum" "bf16 sum" "bf16 prod" "fp16 max" "fp32 min" "int8 sum" "int32 prod" "fp64 sum"; do
  set -- $spec; dt=$1 op=$2
  case $dt in fp64|int64) esz=8;; fp32|int32) esz=4;; int8) esz=1;; *) esz=2;; esac
  args=(run "$SRC/scenarios/collectives-2node.json" -q --set "/workload=[{\"op\":\"allreduce\",\"bytes\":\"$((64 * esz))B\",\"dtype\":\"$dt\",\"reduce\":\"$op\",\"repeat\":2}]")
  expect_exit "$dt $op on 16 ranks, no fault" 0 "$HCSIM" "${args[@]}" --db "$TMP/clean.db"
  modes=$(q "$TMP/clean.db" "SELECT DISTINCT mode FROM checks")
  [ "$modes" = exact ] && ok "$dt $op: mode exact" || bad "$dt $op: modes '$modes'"
  for bit in 0 $((8 * esz - 1)); do
    expect_exit "$dt $op on 16 ranks, bit $bit of element 5 of rank 9 flipped" 1 "$HCSIM" "${args[@]}" --no-trace \
      --fault "hbm_bitflip rank=9 step=0 rep=1 byte=$((5 * esz + bit / 8)) bit=$((bit % 8))"
  done
done

# 3. bf16 sums above 16 ranks are compared within their bound, recorded as such.
expect_exit "bf16 sum on 32 ranks (bound mode), no fault" 0 "$HCSIM" run "$SRC/scenarios/collectives-2node.json" -q --db "$TMP/b.db" \
  --set /topology='"'"$SRC/topologies/a2-pod-16.json"'"' \
  --set '/workload=[{"op":"allreduce","bytes":"8KiB","dtype":"bf16","reduce":"sum"}]'
[ "$(q "$TMP/b.db" "SELECT DISTINCT mode FROM checks")" = bound ] && ok "bf16 on 32 ranks: mode bound" \
  || bad "bf16 on 32 ranks: modes $(q "$TMP/b.db" "SELECT DISTINCT mode, max(tolerance) FROM checks")"

# 4. hcomm_test -c 1 shares the comparison: clean runs of every reduction pass on 16 ranks.
for dt in fp32 fp16 bf16 int8; do
  for op in sum prod max min; do
    expect_exit "hcomm_test allreduce $dt $op -c 1" 0 "$HT" allreduce --topology "$SRC/topologies/a2-2node.json" -b 4K -e 64K -f 4 -d "$dt" -o "$op" -c 1 -n 2 -w 1
  done
done

echo "checks_cli_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
