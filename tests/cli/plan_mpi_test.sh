#!/usr/bin/env bash
# hcsim plan under mpirun (docs/plan-format.md#mpi): a two-layout x two-workload plan run with
# `mpirun -n 2 --oversubscribe` (-j 1 and -j 2 per rank, DIR shared, and DIR not shared: each rank
# in its own working directory) gives the bytes of a `-j 1` run apart from the per-run columns
# wall_s and peak_MiB: plan.csv and plan.db's points without them, the stdout table without them,
# plan.db's layouts and the SVGs byte for byte. Both ranks simulate points (plan.db meta
# points_by_rank, a progress line per rank), progress has an ETA, and a bad plan ends every rank
# with exit 2 and one message.
# Usage: plan_mpi_test.sh HCSIM_BINARY SOURCE_DIR MPIRUN
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
MPIRUN=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
# CI runs as root; Open MPI refuses that without these. No MPI transport over the network is needed.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=false
mpi() { timeout 60 "$MPIRUN" --oversubscribe "$@"; }
# Under AddressSanitizer (HCSIM_SANITIZE): Open MPI keeps some allocations until exit. Keep its
# components loaded (so the leak stacks name them) and suppress leaks inside Open MPI's libraries
# only; hcsim's own allocations stay checked. No effect on a normal build.
printf 'leak:%s\n' libmpi.so libopen-pal.so libopen-rte.so libpmix.so libhwloc.so libevent mca_ > lsan.supp
export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TMP/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"

python3 - "$SRC/tests/fixtures/plan/small.json" "$SRC/topologies/clos-1024.json" > plan.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["topology"] = sys.argv[2]
p["target"]["max_time_us"] = 1000000.0
print(json.dumps(p, indent=1))
PY
"$HCSIM" plan "$TMP/plan.json" -o j1 -j 1 > j1.txt 2> j1.err || bad "-j 1 run failed" j1.err

# same DIR ...: the per-run columns removed from the CSV, plan.db's points and the stdout table
# (the table's last four fields are wall(s), peak(MiB), tier and status: one word in this plan).
same() {  # same NAME DIR STDOUT
  if python3 - j1 "$2" j1.txt "$3" <<'PY'
import csv, sqlite3, sys
a, b, ta, tb = sys.argv[1:5]
def rows(d): return [{k: v for k, v in r.items() if k not in ("wall_s", "cpu_s", "peak_MiB")} for r in csv.DictReader(open(d + "/plan.csv"))]
def db(d):
    c = sqlite3.connect(d + "/plan.db")
    return (c.execute("SELECT layout, workload, op, algo_requested, fidelity, bytes, algorithm, time_us, algbw_GBps, busbw_GBps,"
                      " status, trace FROM points ORDER BY rowid").fetchall(), c.execute("SELECT * FROM layouts").fetchall())
def table(f):
    out = []
    for l in open(f):
        w = l.split()
        out.append(w[:-4] + w[-2:] if len(w) > 8 and l[0].isdigit() else w)
    return out
bad = [n for n, x, y in (("plan.csv", rows(a), rows(b)), ("plan.db", db(a), db(b)), ("stdout", table(ta), table(tb))) if x != y]
for n in bad: print("differs:", n)
sys.exit(1 if bad else 0)
PY
  then ok "$1: plan.csv, plan.db points and layouts, table = -j 1 (wall_s, peak_MiB aside)"
  else bad "$1: differs from -j 1" "$2/plan.csv" j1/plan.csv; fi
  for f in busbw.svg time-vs-servers.svg cost.svg; do
    if cmp -s "j1/$f" "$2/$f"; then ok "$1: $f byte-identical"; else bad "$1: $f differs"; fi
  done
}
by_rank() { python3 -c "import sqlite3; print(dict(sqlite3.connect('$1/plan.db').execute('SELECT key, value FROM meta').fetchall()).get('points_by_rank', ''))"; }

# ---- one DIR shared by both ranks, -j 1 per rank ----
start=$(date +%s.%N)
mpi -n 2 "$HCSIM" plan "$TMP/plan.json" -o m2 > m2.txt 2> m2.err
rc=$?
echo "mpirun -n 2: $(python3 -c "import time; print(round(time.time() - $start, 2))") s"
if [ "$rc" -eq 0 ]; then ok "mpirun -n 2: exit 0"; else bad "mpirun -n 2: exit $rc" m2.err; fi
same "mpirun -n 2" m2 m2.txt
n=$(by_rank m2)
case "$n" in [1-9],[1-9]) ok "both ranks simulated points (points_by_rank $n)";; *) bad "points_by_rank \"$n\"" m2.err;; esac
if grep -q "rank 0: layout" m2.err && grep -q "rank 1: layout" m2.err; then ok "a progress line per rank's point"; else bad "progress lines" m2.err; fi
if grep -qE "^hcsim plan: \[4/4\] .*ETA [0-9]+ s$" m2.err && grep -qE "^hcsim plan: \[4/4\] .*ETA" j1.err; then ok "progress: points done and ETA (-j and MPI)"
else bad "no [4/4] ... ETA line" m2.err j1.err; fi
if [ "$(grep -c "2 MPI ranks" m2.err)" -eq 1 ] && [ ! -e m2/.hcsim-plan-mpi ]; then ok "one header line from rank 0; the probe file removed"; else bad "header" m2.err; fi

# ---- -j 2 per rank ----
mpi -n 2 "$HCSIM" plan "$TMP/plan.json" -o m2j2 -j 2 > m2j2.txt 2> m2j2.err || bad "mpirun -n 2 -j 2 failed" m2j2.err
same "mpirun -n 2, -j 2" m2j2 m2j2.txt

# ---- DIR not shared: each rank in its own working directory (as on two machines) ----
mkdir a b
mpi -n 1 --wdir "$TMP/a" "$HCSIM" plan "$TMP/plan.json" -o out : -n 1 --wdir "$TMP/b" "$HCSIM" plan "$TMP/plan.json" -o out \
  > sep.txt 2> sep.err || bad "mpirun with separate DIRs failed" sep.err
same "separate DIRs" a/out sep.txt
if grep -q "1 with their own copy of DIR" sep.err && ls b/out/l*-w*.hcsim.db > /dev/null 2>&1 && [ ! -e b/out/plan.csv ]; then
  ok "rank 1 wrote its own copy of DIR, traces there; only rank 0 reports"
else bad "separate DIRs" sep.err; fi

# ---- bad input: every rank ends, exit 2, the message once ----
echo '{"format": "hcsim-plan", "version": 1, "name": "x", "colour": 1}' > bad.json
mpi -n 2 "$HCSIM" plan bad.json -o bad > bad.txt 2>&1
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c "bad.json: /colour" bad.txt)" -eq 1 ]; then ok "bad plan under mpirun: exit 2, said once"
else bad "bad plan under mpirun: exit $rc" bad.txt; fi
mpi -n 2 "$HCSIM" plan plan.json -j 0 > badj.txt 2>&1
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c "\-j needs a number" badj.txt)" -eq 1 ]; then ok "-j 0 under mpirun: exit 2, said once"
else bad "-j 0 under mpirun: exit $rc" badj.txt; fi
mkdir mine
mpi -n 2 "$HCSIM" plan plan.json -o mine > mine.txt 2>&1
rc=$?
if [ "$rc" -eq 2 ] && [ "$(grep -c "not made by hcsim plan" mine.txt)" -eq 1 ]; then ok "foreign DIR under mpirun: exit 2, said once"
else bad "foreign DIR under mpirun: exit $rc" mine.txt; fi

echo "plan_mpi_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
