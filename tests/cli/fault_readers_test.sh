#!/usr/bin/env bash
# The trace readers see faults (docs/tools.md): health fails a run whose operations failed, one
# that hit an RDMA retransmit timeout, drops or an outlier repetition, a failover that never
# resumed or resumed late, a fault that never fired; top has a FAULTS section; trace exports failed
# operations with their real span and status; diff compares run status, provenance, failed
# operations, faults and failovers before times and routes. The expected values come from the
# trace's own tables (sqlite3 / python3), not from the readers.
# Usage: fault_readers_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
source "$SRC/tests/cli/check_lib.sh"
q() { sqlite3 "$1" "$2"; }
eq() {  # eq NAME GOT WANT [FILE...]
  if [ "$2" = "$3" ]; then ok "$1"; else echo "    got:  $2"; echo "    want: $3"; shift 3; bad "$1" "$@"; fi
}
has() {  # has NAME PATTERN FILE: FILE matches the extended regex
  if grep -qE -- "$2" "$3"; then ok "$1"; else bad "$1: lacks /$2/" "$3"; fi
}
hasnt() {
  if grep -qE -- "$2" "$3"; then bad "$1: has /$2/" "$3"; else ok "$1"; fi
}

# --- 1. All 16 ranks failed: rank 9 crashes mid all-reduce, op retry off. -------------------------
"$HCSIM" run "$SRC/scenarios/rank-crash.json" --db crash.db -q --set '/hcomm_env/HCOMM_OP_RETRY="0"' > run1.txt 2>&1
nbad=$(q crash.db "SELECT COUNT(DISTINCT rank) FROM operations WHERE status != 'ok'")
eq "rank-crash: every rank has an operation that is not ok (precondition)" "$nbad" 16 run1.txt
expect "health fails a run whose ranks all failed" 1 "failed_operations +FAIL" -- "$HCSIM" health crash.db -n 100
cp out.txt h1.txt
hasnt "health: not '0 of N rules failed'" "0 of [0-9]+ rules failed" h1.txt
eq "health: one failed_operations finding per rank that failed" "$(grep -c '^  FAIL failed_operations: rank ' h1.txt)" "$nbad" h1.txt
want=$(q crash.db "SELECT COUNT(*) FROM operations WHERE status != 'ok'")
has "health: counts per status" "$want of [0-9]+ operations not ok on 16 of 16 ranks: failed $want" h1.txt
never=$(q crash.db "SELECT COUNT(*) FROM (SELECT detected_by, COALESCE(fault_at_ns, detected_at_ns) AS k FROM failovers
  WHERE action != 'warn' GROUP BY detected_by, k HAVING MAX(resumed_at_ns) IS NULL)")
if [ "$never" -gt 0 ]; then
  eq "health: every rank whose failover never resumed is a slow_failover finding" "$(grep -c '^  FAIL slow_failover: .*never resumed' h1.txt)" "$never" h1.txt
else bad "rank-crash: no failover that never resumed (precondition)" h1.txt; fi
# A rank that aborted and then shrank (a later row of the same fault resumed) recovered: judged by
# its resume time, not as never resumed.
cp crash.db shrunk.db
q shrunk.db "INSERT INTO failovers(comm, fault, fault_at_ns, detected_at_ns, detected_by, origin, op_seq, action, path_before, path_after,
  bytes_resent, resumed_at_ns, code) SELECT comm, fault, fault_at_ns, detected_at_ns, detected_by, origin, op_seq, 'shrink', '', '', 0,
  fault_at_ns + 1500000, 0 FROM failovers WHERE detected_by = 0"
"$HCSIM" health shrunk.db -n 100 > h1s.txt 2>&1
hasnt "health: an abort then a shrink is not 'never resumed'" "FAIL slow_failover: rank 0 " h1s.txt
eq "health: the other ranks still never resumed" "$(grep -c '^  FAIL slow_failover: .*never resumed' h1s.txt)" "$((never - 1))" h1s.txt
expect "top: an abort then a shrink is one recovery" 0 "^  ranks' recoveries $never, never resumed $((never - 1))   slowest resume 1500\.000 us after its fault \(rank 0\)$" -- "$HCSIM" top shrunk.db
echo '{"rules": {"slow_failover": {"threshold": 1000}}}' > sf.json
"$HCSIM" health shrunk.db -n 100 --rules sf.json > h1t.txt 2>&1
has "health: the shrink's resume time against the bound" "FAIL slow_failover: rank 0 \(comm [0-9]+, op seq 0, abort, shrink\), fault at [0-9.]+ us: resumed 1500 us after the fault > 1000" h1t.txt

# trace: failed operations span from their start to their rank's first error at or after it.
expect "trace exports the failed run" 0 "" -- "$HCSIM" trace crash.db -o crash.json
python3 - crash.db crash.json > py1.txt 2>&1 <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ev = {e["args"]["id"]: e for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "op"}
bad = 0
rows = db.execute("SELECT id, rank, start_ns, end_ns, status, error FROM operations WHERE status != 'ok'").fetchall()
for oid, rank, s, e, st, err in rows:
    x = ev.get(oid)
    if x is None: print("missing", oid); bad += 1; continue
    if x["args"].get("status") != st or x["args"].get("error") != err: print("status/error", oid, x["args"]); bad += 1
    if s is None: continue
    # independent reference: the rank's first error log line or failover detection at or after the start
    t = db.execute("SELECT MIN(t) FROM (SELECT sim_time_ns AS t FROM logs WHERE level = 0 AND rank = ? AND sim_time_ns >= ? "
                   "UNION ALL SELECT detected_at_ns FROM failovers WHERE detected_by = ? AND detected_at_ns >= ?)", (rank, s, rank, s)).fetchone()[0]
    if t is None: print("no error time for", oid); bad += 1; continue
    if x["ph"] != "X" or abs(x["ts"] - s / 1e3) > 0.0015 or abs(x["dur"] - (t - s) / 1e3) > 0.0015 or x["dur"] <= 0:
        print("span", oid, x["ts"], x.get("dur"), "want", s / 1e3, (t - s) / 1e3); bad += 1
print("checked", len(rows), "bad", bad)
sys.exit(1 if bad or not rows else 0)
EOF
[ $? -eq 0 ] && ok "trace: failed operations with their real span, status and error" || bad "trace: failed operations" py1.txt

# A failed row that never started (a step failed before it announced an operation): an instant on
# its rank's track at the time of the error, with its status.
cp crash.db ns.db
q ns.db "UPDATE operations SET start_ns=NULL, end_ns=1234567.0, seq=0, algorithm='' WHERE rank=5"
expect "trace: a failed row that never started" 0 "" -- "$HCSIM" trace ns.db -o ns.json
python3 - ns.json > py2.txt 2>&1 <<'EOF'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "op" and e["tid"] == 5 * 1024]
ok = len(ev) == 1 and ev[0]["ph"] == "i" and ev[0]["s"] == "t" and ev[0]["ts"] == 1234.567 and ev[0]["args"]["status"] == "failed"
print(ev); sys.exit(0 if ok else 1)
EOF
[ $? -eq 0 ] && ok "trace: a failed row that never started is an instant at its error, with its status" || bad "trace: never-started row" py2.txt

# diff: the same trace with one rank's operation turned ok and the run ok: status and failed
# operations differ (exit 1), listed before times and routes; the trace against itself: none.
expect "diff: a failed trace against itself" 0 "hcsim diff: no differences" -- "$HCSIM" diff crash.db crash.db
cp crash.db ok1.db
q ok1.db "UPDATE operations SET status='ok', error=NULL, end_ns=start_ns+1000 WHERE rank=3; UPDATE run SET status='ok', exit_code=0"
expect "diff: run status and failed operations count as differences" 1 "^run: status failed \(exit [01]\) -> ok \(exit 0\)" -- \
  "$HCSIM" diff crash.db ok1.db --junit j.xml
cp out.txt d1.txt
has "diff: the removed failed operation, by rank/step/rep" "^  removed rank 3 step 0 rep 0 allreduce seq 0: failed: .* \(ok in B\)" d1.txt
has "diff: counts per status" "failed operations: $want vs $((want - 1)) not ok \(A: failed $want; B: failed $((want - 1))\), 1 differ" d1.txt
order=$(grep -nE '^(run|provenance|failed operations|faults and failovers|summary|routes):' d1.txt | cut -d: -f2 | tr '\n' ',')
eq "diff: sections in order" "$order" "run,provenance,failed operations,faults and failovers,summary,routes," d1.txt
has "diff --junit: run and failed_operations fail" 'name="failed_operations"><failure' j.xml

# --- 2. A 20 us NIC flap costs one all-reduce the RDMA retransmit timeout. ------------------------
cat > flap.json <<EOF
{ "format": "hcsim-scenario", "version": 1, "name": "flap20", "topology": "$SRC/topologies/a2-2node.json",
  "workload": [ { "op": "allreduce", "bytes": "16MiB", "repeat": 4 } ], "expect": { "checks_pass": true } }
EOF
# A second fault, timed after the run's end (10 s), never fires.
"$HCSIM" run flap.json --db flap.db -q --fault 'nic_flap npu=node0/npu3 at.step=0 at.rep=1 at.after=60% duration=20us count=1 period=100us' \
  --fault 'link_down a=node0/npu0 b=node0/npu1 at=10s' > run2.txt 2>&1
timeouts=$(q flap.db "SELECT CAST(value AS INTEGER) FROM counters WHERE name = 'rdma_timeouts'")
[ "${timeouts:-0}" -gt 0 ] && ok "flap: the run hit an RDMA retransmit timeout (precondition)" || bad "flap: no rdma_timeouts" run2.txt
expect "health fails the flap" 1 "rdma_timeouts +FAIL" -- "$HCSIM" health flap.db
cp out.txt h2.txt
has "health: rdma_timeouts = the counter" "FAIL rdma_timeouts: cluster \(all NICs\), .*: $timeouts retransmit timeouts > 0" h2.txt
has "health: rdma_retransmits fails" "rdma_retransmits +FAIL" h2.txt
# Outlier repetitions: each summary row against the median of its step's other repetitions.
want=$(python3 - flap.db <<'EOF'
import sqlite3, statistics, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT step, rep, time_us FROM summary").fetchall()
out = []
for s, r, t in rows:
    others = [x[2] for x in rows if x[0] == s and x[1] != r]
    if len(others) >= 3 and t > 10 * statistics.median(others): out.append("step %d rep %d" % (s, r))
print(" ".join(out))
EOF
)
got=$(grep '^  FAIL outlier_repetition: ' h2.txt | sed -E 's/^  FAIL outlier_repetition: (step [0-9]+ rep [0-9]+).*/\1/' | tr '\n' ' ' | sed 's/ $//')
if [ -n "$want" ]; then eq "health: outlier repetitions = the summary's (>10x the others' median)" "$got" "$want" h2.txt
else bad "flap: no outlier repetition (precondition)" run2.txt; fi
ports=$(q flap.db "SELECT node || ':' || port || ' ' || drops FROM port_counters WHERE drops > 0 ORDER BY node, port" | tr '\n' ',')
got=$(grep '^  FAIL drops: port ' h2.txt | sed -E 's/^  FAIL drops: port ([^,]+), .*: ([0-9]+) packets dropped.*/\1 \2/' | tr '\n' ',')
eq "health: drops per port = port_counters" "$got" "$ports" h2.txt
unfired=$(q flap.db "SELECT group_concat('fault ' || id, ',') FROM faults WHERE fired = 0")
if [ -n "$unfired" ]; then
  got=$(grep '^  FAIL unfired_faults: ' h2.txt | sed -E 's/^  FAIL unfired_faults: (fault [0-9]+) .*/\1/' | tr '\n' ',' | sed 's/,$//')
  eq "health: unfired_faults = the faults rows with fired 0" "$got" "$unfired" h2.txt
  expect "top: the fault that never fired" 0 "NOT FIRED" -- "$HCSIM" top flap.db
  expect "trace: the flap" 0 "" -- "$HCSIM" trace flap.db -o flap-trace.json
  python3 - flap.db flap-trace.json > py3.txt 2>&1 <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); j = json.load(open(sys.argv[2]))
fired = db.execute("SELECT id, injected_at_ns FROM faults WHERE fired = 1 ORDER BY id").fetchall()
f = sorted((e["args"]["id"], e["ts"]) for e in j["traceEvents"] if e["ph"] == "i" and e.get("cat") == "fault" and "fired" in e["args"])
want = [(i, round(t / 1e3, 3)) for i, t in fired]
print(f, want, j["otherData"])
sys.exit(0 if f == want and j["otherData"]["faults_not_fired"] == len(db.execute("SELECT id FROM faults WHERE fired = 0").fetchall()) else 1)
EOF
  [ $? -eq 0 ] && ok "trace: one instant per fired faults row, at its injection" || bad "trace: the flap's fault instants" py3.txt
else
  bad "flap: the fault at 10 s has no faults row with fired 0 (precondition)" run2.txt
fi
# Fewer than 3 other repetitions: not judged.
cp flap.db flap3.db
q flap3.db "DELETE FROM summary WHERE rep = 3"
expect "health: a step with 3 repetitions has no outlier" 1 "outlier_repetition +- .*no step with 4 or more repetitions" -- "$HCSIM" health flap3.db
# Thresholds from the rules file, as for the other rules.
echo '{"rules": {"rdma_timeouts": {"threshold": 1000}, "rdma_retransmits": {"enabled": false}, "drops": {"threshold": 1e9}, "outlier_repetition": {"threshold": 1e9}, "unfired_faults": {"threshold": 1}}}' > r.json
expect "health: the new rules take thresholds from --rules" 0 "0 of 13 rules failed" -- "$HCSIM" health flap.db --rules r.json
echo '{"rules": {"drops": {"min_bytes": 1}}}' > r2.json
expect "health: a key the rule does not take is exit 2" 2 "r2.json: /rules/drops/min_bytes: unknown key \(allowed: enabled, threshold\)" -- "$HCSIM" health flap.db --rules r2.json

# --- 3. incast-no-cc: drops and go-back-N. --------------------------------------------------------
"$HCSIM" run "$SRC/scenarios/incast-no-cc.json" --db incast.db -q > run3.txt 2>&1
drops=$(q incast.db "SELECT CAST(SUM(drops) AS INTEGER) FROM port_counters")
expect "health fails incast-no-cc" 1 "drops +FAIL" -- "$HCSIM" health incast.db
has "health: incast drops at the leaf port" "FAIL drops: port leaf0:[0-9]+, .*: [0-9.e+]+ packets dropped > 0" out.txt
[ "${drops:-0}" -gt 0 ] && ok "incast: drops in port_counters (precondition)" || bad "incast: no drops" run3.txt

# --- 4. Faults and failovers (faults table, schema 9): a fired fault and one that never fired. -----
cp crash.db faults.db
q faults.db "DELETE FROM faults; DELETE FROM provenance;
  INSERT INTO faults VALUES(0,'rank_crash','rank 9',1,1400000.0,1,1400272.0,1412096.0,'abort: ranks 0-15',NULL,0,0,0,NULL,NULL);
  INSERT INTO faults VALUES(1,'link_down','node0/npu0-node0/npu1',0,NULL,0,NULL,NULL,'',NULL,0,NULL,NULL,NULL,NULL);"
expect "health: a fault that never fired fails" 1 "unfired_faults +FAIL" -- "$HCSIM" health faults.db
has "health: the unfired fault named" "FAIL unfired_faults: fault 1 \(link_down node0/npu0-node0/npu1\)" out.txt
hasnt "health: the fired fault not named" "FAIL unfired_faults: fault 0" out.txt
expect "top: a FAULTS section" 0 "^FAULTS \(2 injected, 1 fired\)" -- "$HCSIM" top faults.db
cp out.txt t4.txt
has "top: the fired fault" "^ +0 rank_crash +rank 9$" t4.txt
has "top: its times" "^ +fired 1400\.000 us, detected 1400\.272 us to 1412\.096 us, not resumed$" t4.txt
has "top: its actions" "abort: ranks 0-15" t4.txt
has "top: the unfired fault" "^ +1 link_down +node0/npu0-node0/npu1$" t4.txt
has "top: not fired" "^ +NOT FIRED" t4.txt
nfo=$(q faults.db "SELECT COUNT(*) FROM failovers"); nab=$(q faults.db "SELECT COUNT(*) FROM failovers WHERE action='abort'")
has "top: failovers per action" "^FAILOVERS \($nfo rows\): abort $nab$" t4.txt
awk 'length > 100 { exit 1 }' t4.txt && ok "top: lines of at most 100 characters" || bad "top: a line over 100 characters" t4.txt
expect "trace: the fired fault as an instant" 0 "" -- "$HCSIM" trace faults.db -o faults.json
python3 - faults.json > py4.txt 2>&1 <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
f = [e for e in j["traceEvents"] if e["ph"] == "i" and e.get("cat") == "fault"]
ok = len(f) == 1 and f[0]["ts"] == 1400.0 and f[0]["s"] == "g" and f[0]["args"]["type"] == "rank_crash" \
     and "rank 9 crashed" in f[0]["name"] and j["otherData"]["faults_not_fired"] == 1
print(f, j["otherData"]); sys.exit(0 if ok else 1)
EOF
[ $? -eq 0 ] && ok "trace: one instant per fired fault, named by its log line" || bad "trace: fault instants" py4.txt
# diff: a fault that fired in A and not in B, a failover that resumed late.
cp faults.db faults2.db
q faults2.db "UPDATE faults SET fired=1, injected_at_ns=2000000, transitions=1 WHERE id=1;
  UPDATE failovers SET action='retry', resumed_at_ns=fault_at_ns+20000000, code=0 WHERE id=1"
expect "diff: faults and failovers differ" 1 "faults and failovers: 2 vs 2 faults, $nfo vs $nfo failovers rows, 3 differ" -- "$HCSIM" diff faults.db faults2.db
cp out.txt d4.txt
has "diff: the fault that fired" "changed fault 1 \(link_down node0/npu0-node0/npu1\): fired no -> yes; transitions 0 -> 1" d4.txt
has "diff: the failover row moved" "removed failover rank 15 comm 1 op seq 0 abort code 15" d4.txt
has "diff: the failover row added" "added   failover rank 15 comm 1 op seq 0 retry code 0" d4.txt
expect "health: a failover resumed late" 1 "FAIL slow_failover: rank 15 \(comm 1, op seq 0, retry\), fault at 1400\.000 us: resumed 2e\+04 us after the fault > 1e\+04" -- "$HCSIM" health faults2.db -n 100

# --- 5. Provenance: keys that differ; scenario_json as its first differing line. -------------------
cp faults.db p1.db && cp faults.db p2.db
q p1.db "INSERT INTO provenance VALUES('hcsim_version','1.0'),('command_line','hcsim run a.json'),('scenario_json','{
  \"name\": \"x\",
  \"workload\": [{\"op\": \"allreduce\", \"repeat\": 4}]
}'),('topology_json','{\"a\": 1}')"
q p2.db "INSERT INTO provenance VALUES('hcsim_version','1.0'),('command_line','hcsim run a.json --set /x=1'),('scenario_json','{
  \"name\": \"x\",
  \"workload\": [{\"op\": \"allreduce\", \"repeat\": 2}]
}'),('topology_json','{\"a\": 1}'),('env_ignored','HCCL_BUFFSIZE')"
expect "diff: provenance alone is shown, not a difference" 0 "^provenance: 3 of 5 keys differ" -- "$HCSIM" diff p1.db p2.db
cp out.txt d5.txt
has "diff: a short value" "^  command_line: \`hcsim run a.json\` -> \`hcsim run a.json --set /x=1\`" d5.txt
has "diff: scenario_json's first differing line" "^  scenario_json: changed at line 3, column [0-9]+: .*\"repeat\": 4\}\]\` -> .*\"repeat\": 2\}\]\`" d5.txt
has "diff: topology_json unchanged" "^  topology_json: unchanged" d5.txt
has "diff: a key only in B" "^  env_ignored: only in B" d5.txt
hasnt "diff: an equal short value not listed" "hcsim_version" d5.txt

echo "fault_readers_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
