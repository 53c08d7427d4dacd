#!/usr/bin/env bash
# examples/python/elastic.py (the Python port of examples/c/elastic.c) under hcsim exec on
# a2-2node, 8 ranks, with the checks exec_examples_test.sh makes of the C example:
#   fault-free: every rank finishes 10 iterations on 8 ranks;
#   rank_crash rank=3 at=500us: the crashed rank's code is 137 (killed), hcsim exec's too; the 7
#     survivors each say the iteration failed with the rank lost, that they continued on 7 ranks
#     from one and the same iteration, and finished with correct sums (checked by the program
#     against host sums over the remaining members), exit 0;
#   rank 5 asked to os.abort() at iteration 4: its code 134, the survivors continue from iteration 4;
#   a bad argument: exit 2 on every rank.
# Usage: exec_elastic_test.sh HCSIM PYTHON ELASTIC_PY   (PYTHONPATH must reach the hcomm module)
set -u
HERE=$(dirname "$(realpath "$0")")
HCSIM=$(realpath "$1"); PY=$2; ELASTIC=$(realpath "$3")
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
. "$HERE/../cli/check_lib.sh"  # ok, bad, count
run() { # name want-exit out args... (stdout and stderr both to out)
  local name=$1 want=$2 out=$3; shift 3
  timeout 120 "$HCSIM" exec --topology a2-2node --no-trace "$@" > "$out" 2>&1
  local rc=$?
  [ "$rc" -eq "$want" ] && ok "$name: exit $rc" || bad "$name: exit $rc, want $want" "$out"
}

run "elastic.py fault-free" 0 el0.txt -n 8 -- "$PY" "$ELASTIC"
count "elastic.py fault-free" el0.txt '^rank [0-7]: done: 10 iterations, the last ones on 8 ranks \(0 shrinks\), all sums correct' 8
run "elastic.py rank_crash" 137 el1.txt -n 8 --fault 'rank_crash rank=3 at=500us' -- "$PY" "$ELASTIC"
count "elastic.py rank_crash: codes" el1.txt "ranks' exit codes: 0 0 0 137 0 0 0 0$" 1
count "elastic.py rank_crash: failed" el1.txt '^rank [0124567]: iteration [0-9]+ failed \(rank lost; async error rank lost: comm rank 3 \(rank 3\) LOST' 7
count "elastic.py rank_crash: callback" el1.txt '^rank [0124567]: error callback: rank lost: comm rank 3 \(rank 3\) LOST' 7
count "elastic.py rank_crash: continued" el1.txt '^rank [0124567]: lost world rank\(s\) 3; continued on 7 ranks from iteration [1-8]$' 7
k=$(grep -oE 'continued on 7 ranks from iteration [0-9]+' el1.txt | sort -u | wc -l)
[ "$k" -eq 1 ] && ok "elastic.py rank_crash: every survivor resumed at the same iteration" || bad "elastic.py rank_crash: $k different resume iterations" el1.txt
count "elastic.py rank_crash: done" el1.txt '^rank [0124567]: done: 10 iterations, the last ones on 7 ranks \(1 shrink\), all sums correct' 7
count "elastic.py rank_crash: rank 3 says nothing" el1.txt '^rank 3: ' 0
count "elastic.py rank_crash: no traceback" el1.txt 'Traceback' 0
run "elastic.py abort" 134 el2.txt -n 8 -- "$PY" "$ELASTIC" 10 262144 5 4
count "elastic.py abort: codes" el2.txt "ranks' exit codes: 0 0 0 0 0 134 0 0$" 1
count "elastic.py abort: continued" el2.txt '^rank [0-46-7]: lost world rank\(s\) 5; continued on 7 ranks from iteration 4$' 7
count "elastic.py abort: done" el2.txt '^rank [0-46-7]: done: 10 iterations, the last ones on 7 ranks \(1 shrink\), all sums correct' 7
run "elastic.py bad argument" 2 elbad.txt -n 2 -- "$PY" "$ELASTIC" 0
count "elastic.py bad argument" elbad.txt '^usage: elastic.py' 2

echo "exec_elastic_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
