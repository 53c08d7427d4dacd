#!/usr/bin/env bash
# The C examples (examples/c, docs/examples.md) under hcsim exec on a2-2node, built by CMake
# (targets exec_example_*; this script builds nothing):
#   1. pipeline: 4 stages, two per server (hops HCCS, RoCE, HCCS): every stage's bytes right; the
#      closed form it prints is recomputed here from its per-hop times (S t_c + sum t_h +
#      (M - 1) max(t_c, t_h)); the simulated iteration is within [1.00, 1.10] of it, and within
#      [1.00, 1.02] when compute dominates (t_c = 300 us > every t_h); a second run prints the same;
#   2. hier_allreduce: 8 ranks, 4 per server: leaders 0 and 4, every rank's result equal to the
#      host sum and to hcomm_allreduce's, bit for bit;
#   3. elastic: fault-free, 8 ranks finish 10 iterations on 8; with rank_crash rank=3 at=500us the
#      crashed rank's code is 137 (killed), hcsim exec's too, and the 7 survivors each say they
#      continued on 7 ranks from one and the same iteration and finished with correct sums, exit 0;
#      with argv asking rank 5 to abort() at iteration 4: its code 134, the survivors continue from
#      iteration 4.
# Usage: exec_examples_test.sh HCSIM PIPELINE HIER_ALLREDUCE ELASTIC
set -u
HERE=$(dirname "$(realpath "$0")")
HCSIM=$(realpath "$1"); PIPE=$(realpath "$2"); HIER=$(realpath "$3"); ELASTIC=$(realpath "$4")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
. "$HERE/check_lib.sh"  # ok, bad, count
run() { # name want-exit out args... (stdout and stderr both to out)
  local name=$1 want=$2 out=$3; shift 3
  timeout 30 "$HCSIM" exec --topology a2-2node --no-trace "$@" > "$out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] && ok "$name: exit $rc" || bad "$name: exit $rc, want $want" "$out"
}

# 1. pipeline
pipeline_check() { # name out lo hi
  local name=$1 out=$2 lo=$3 hi=$4
  count "$name" "$out" '^rank [0-3]: stage [0-3] (sent|received) 8 micro-batches, 0 wrong elements$' 4
  count "$name: hops" "$out" '^hop [0-2] -> [1-3]: ' 3
  grep -q '^hop 1 -> 2: RoCE, 25.0 GB/s' "$out" && ok "$name: hop 1 over RoCE at 200 Gb/s" || bad "$name: hop 1 not RoCE 25.0 GB/s" "$out"
  awk -v lo="$lo" -v hi="$hi" '
    /^hop / { t = $(NF - 4); sum += t; if (t > slow) slow = t }
    /micro-batches of/ { split($0, a, "compute "); tc = a[2] + 0 }
    /^pipeline: iteration/ { it = $3; cf = $8 }
    END {
      if (tc > slow) slow = tc
      want = 4 * tc + sum + 7 * slow
      if (tc <= 0 || want <= 0 || (cf - want) > 0.01 || (want - cf) > 0.01) { printf "closed form %s printed, %.3f recomputed\n", cf, want; exit 1 }
      r = it / want
      if (r < lo || r > hi) { printf "iteration %s us / closed form %.3f us = %.4f outside [%s, %s]\n", it, want, r, lo, hi; exit 1 }
      printf "iteration %s us, closed form %.3f us, ratio %.4f\n", it, want, r
    }' "$out" > ratio.txt
  if [ $? -eq 0 ]; then ok "$name: $(cat ratio.txt)"; else bad "$name: $(cat ratio.txt)" "$out"; fi
}
run "pipeline" 0 pipe.txt -n 4 --ranks-per-server 2 -- "$PIPE"
pipeline_check "pipeline" pipe.txt 1.00 1.10
run "pipeline again" 0 pipe2.txt -n 4 --ranks-per-server 2 -- "$PIPE"
if diff <(sed 's/, [0-9.]* s wall//' pipe.txt | sort) <(sed 's/, [0-9.]* s wall//' pipe2.txt | sort) > pipediff.txt; then
  ok "pipeline: a second run prints the same simulated times"
else bad "pipeline: a second run differs" pipediff.txt; fi
run "pipeline compute-bound" 0 pipe300.txt -n 4 --ranks-per-server 2 -- "$PIPE" 8 4194304 300
pipeline_check "pipeline compute-bound" pipe300.txt 1.00 1.02
run "pipeline bad argument" 2 pipebad.txt -n 2 -- "$PIPE" 0
count "pipeline bad argument" pipebad.txt '^usage: pipeline' 2

# 2. hierarchical all-reduce
run "hier_allreduce" 0 hier.txt -n 8 --ranks-per-server 4 -- "$HIER"
count "hier_allreduce: leaders" hier.txt '^leaders: 0 \(server 0\) 4 \(server 1\)$' 1
count "hier_allreduce" hier.txt '^rank [0-7]: hierarchical \(p2p, host sums\) [0-9.]+ us, hcomm_allreduce [0-9.]+ us \(simulated\); 0 wrong vs host sum, 0 differ from hcomm_allreduce$' 8

# 3. elastic
run "elastic fault-free" 0 el0.txt -n 8 -- "$ELASTIC"
count "elastic fault-free" el0.txt '^rank [0-7]: done: 10 iterations, the last ones on 8 ranks \(0 shrinks\), all sums correct' 8
run "elastic rank_crash" 137 el1.txt -n 8 --fault 'rank_crash rank=3 at=500us' -- "$ELASTIC"
count "elastic rank_crash: codes" el1.txt "ranks' exit codes: 0 0 0 137 0 0 0 0$" 1
count "elastic rank_crash: failed" el1.txt '^rank [0124567]: iteration [0-9]+ failed \(rank lost; async error rank lost: comm rank 3 \(rank 3\) LOST' 7
count "elastic rank_crash: continued" el1.txt '^rank [0124567]: lost world rank\(s\) 3; continued on 7 ranks from iteration [1-8]$' 7
k=$(grep -oE 'continued on 7 ranks from iteration [0-9]+' el1.txt | sort -u | wc -l)
[ "$k" -eq 1 ] && ok "elastic rank_crash: every survivor resumed at the same iteration" || bad "elastic rank_crash: $k different resume iterations" el1.txt
count "elastic rank_crash: done" el1.txt '^rank [0124567]: done: 10 iterations, the last ones on 7 ranks \(1 shrink\), all sums correct' 7
count "elastic rank_crash: rank 3 says nothing" el1.txt '^rank 3: ' 0
run "elastic abort" 134 el2.txt -n 8 -- "$ELASTIC" 10 262144 5 4
count "elastic abort: codes" el2.txt "ranks' exit codes: 0 0 0 0 0 134 0 0$" 1
count "elastic abort: continued" el2.txt '^rank [0-46-7]: lost world rank\(s\) 5; continued on 7 ranks from iteration 4$' 7
count "elastic abort: done" el2.txt '^rank [0-46-7]: done: 10 iterations, the last ones on 7 ranks \(1 shrink\), all sums correct' 7

echo "exec_examples_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
