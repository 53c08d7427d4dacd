#!/usr/bin/env bash
# Hermetic, recorded runs (docs/scenario-format.md#environment, docs/trace-schema.md#provenance):
# the caller's HCOMM_*/HCCL_* do not reach hcsim run, plan's points, routes SCENARIO or discover
# unless --inherit-env (one stderr line names them); a bad inherited value is exit 2 naming it;
# hcomm_env takes HCCL_* names and integers (also from --set); the trace's provenance rows; the
# build's commit outside a git checkout; hcomm_test names what it read.
# References: runs in an environment without any HCOMM_*/HCCL_*, and runs whose scenario sets the
# same knob in its hcomm_env; the topology file itself; git and `hcsim --version`.
# Usage: hermetic_test.sh HCSIM HCOMM_TEST SOURCE_DIR CMAKE
set -u
HCSIM=$(realpath "$1")
HT=$(realpath "$2")
SRC=$(realpath "$3")
CMAKE=$4
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"
# Whatever the shell running the tests exports does not count.
for v in $(compgen -e | grep -E '^(HCOMM|HCCL)_'); do unset "$v"; done

# Two servers (HCCS inside, RoCE across), one all-reduce of 4 MiB, timing only.
scen() {  # scen NAME [HCOMM_ENV_JSON]
  python3 - "$SRC/topologies/a2-2node.json" "$1" "${2:-}" > "$1.json" <<'PY'
import json, sys
s = {"format": "hcsim-scenario", "version": 1, "name": sys.argv[2], "topology": sys.argv[1], "payload": "timing",
     "workload": [{"op": "allreduce", "bytes": "4MiB", "dtype": "fp32"}]}
if sys.argv[3]: s["hcomm_env"] = json.loads(sys.argv[3])
print(json.dumps(s))
PY
}
# The all-reduce's time (summary) and its algorithm and chooser (operations) in a trace; a
# missing trace reads as its own name, so that two missing traces never compare equal.
what() {
  [ -s "$1" ] || { echo "no trace $1"; return; }
  python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
t = db.execute("select time_us from summary").fetchone()[0]
a = sorted(set(db.execute("select algorithm || ' by ' || chosen_by from operations where kind = 'allreduce'").fetchall()))
print(f"{t:.3f}", " ".join(x[0] for x in a))
PY
}
scen plain
scen envset '{"HCCL_BUFFSIZE": "1", "HCCL_ALGO": "level0:NA;level1:H-D_R"}'
scen buf1 '{"HCCL_BUFFSIZE": "1", "HCOMM_OP_RETRY": "1"}'

# ---- what makes removing HCOMM_*/HCCL_* enough: the library reads no other variable ----
# Every getenv in hcomm/ names an HCOMM_/HCCL_ literal, or is one of the table reads audited here
# (env_u64's name and resolve's k.env: the knob tables of config.cpp; the HCCL_ALGO/HCOMM_ALGO loop).
python3 - "$SRC/hcomm" > audit.txt <<'PY'
import pathlib, re, sys
bad = []
for f in pathlib.Path(sys.argv[1]).rglob("*"):
    if f.suffix not in (".c", ".cc", ".cpp", ".h", ".hpp"): continue
    if "python" in f.relative_to(sys.argv[1]).parts: continue  # the Python module reads RANK / WORLD_SIZE / LOCAL_RANK (docs/python.md), not the library
    text = f.read_text(errors="replace")
    if re.search(r"\benviron\b|secure_getenv", text): bad.append(f"{f}: environ / secure_getenv")
    for m in re.finditer(r"getenv\(\s*([^)]*)\)", text):
        arg = m.group(1).strip()
        if re.fullmatch(r'"(HCOMM|HCCL)_[A-Z0-9_]+"', arg): continue
        if (f.name, arg) in (("config.cpp", "name"), ("config.cpp", "k.env"), ("algo_knob.cpp", "env")): continue
        bad.append(f"{f}: getenv({arg})")
    if f.name == "config.cpp":  # the tables env_u64 and resolve read
        names = re.findall(r'\{\s*"([A-Za-z0-9_]+)",\s*\d', text) + re.findall(r'&hcomm_config_t::\w+,\s*"\w+",\s*"([A-Za-z0-9_]+)"', text)
        if len(names) < 20: bad.append(f"{f}: found only {len(names)} knob table entries")
        for name in names:
            if not re.match(r"(HCOMM|HCCL)_", name): bad.append(f"{f}: knob {name}")
    if f.name == "algo_knob.cpp":
        for names in re.findall(r"for \(const char\* env : \{([^}]*)\}\)", text):
            for name in re.findall(r'"([^"]+)"', names):
                if not re.match(r"(HCOMM|HCCL)_", name): bad.append(f"{f}: algo variable {name}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
if [ $? -eq 0 ]; then ok "hcomm reads only HCOMM_*/HCCL_* variables"; else bad "hcomm reads other variables" audit.txt; fi

# ---- references: no variables at all; the same knobs in the scenario's hcomm_env (HCCL_* names) ----
expect "reference run" 0 "PASS" -- "$HCSIM" run plain.json --db ref.db -q
ref=$(what ref.db)
expect "hcomm_env takes HCCL_BUFFSIZE and HCCL_ALGO" 0 "PASS" -- "$HCSIM" run envset.json --db envset.db -q
envset=$(what envset.db)
case "$envset" in
  *"mesh+H-D_R by HCCL_ALGO") ok "HCCL_ALGO in hcomm_env forces the family ($envset)" ;;
  *) bad "HCCL_ALGO in hcomm_env: $envset" ;;
esac
if [ "${envset%% *}" != "${ref%% *}" ]; then ok "HCCL_BUFFSIZE=1 in hcomm_env changes the time (${ref%% *} -> ${envset%% *} us)"
else bad "HCCL_BUFFSIZE=1 in hcomm_env: same time as without ($envset)"; fi

# ---- hcsim run: exported knobs are ignored, named once on stderr; --inherit-env takes them ----
HCCL_BUFFSIZE=1 HCCL_ALGO="level0:NA;level1:H-D_R" "$HCSIM" run plain.json --db leak.db -q > out.txt 2> err.txt
rc=$?
if [ $rc -eq 0 ] && [ "$(what leak.db)" = "$ref" ]; then ok "run: exported HCCL_BUFFSIZE/HCCL_ALGO change nothing ($ref)"
else bad "run with exported knobs: exit $rc, '$(what leak.db)' against '$ref'" err.txt; fi
if [ "$(grep -c 'from the environment' err.txt)" = 1 ] && grep -q "ignoring HCCL_ALGO, HCCL_BUFFSIZE from the environment" err.txt; then
  ok "run: one stderr line names the ignored variables"
else bad "run: the ignored variables' line" err.txt; fi
"$HCSIM" run plain.json --no-trace -q > out.txt 2> err.txt
if [ ! -s err.txt ]; then ok "run: no line when nothing is ignored"; else bad "run: stderr without variables" err.txt; fi
HCOMM_ALGO="level0:NA;level1:H-D_R" "$HCSIM" run plain.json --db leak2.db -q > out.txt 2>&1
if [ "$(what leak2.db)" = "$ref" ]; then ok "run: exported HCOMM_ALGO ignored"; else bad "run: HCOMM_ALGO leaked: $(what leak2.db)" out.txt; fi
HCCL_BUFFSIZE=1 HCCL_ALGO="level0:NA;level1:H-D_R" "$HCSIM" run plain.json --db inh.db -q --inherit-env > out.txt 2>&1
if [ "$(what inh.db)" = "$envset" ]; then ok "run --inherit-env: the exported knobs act as in hcomm_env ($envset)"
else bad "run --inherit-env: '$(what inh.db)', expected '$envset'" out.txt; fi
# The scenario's hcomm_env wins over an inherited value.
HCCL_BUFFSIZE=1 HCCL_ALGO="level0:NA;level1:ring" "$HCSIM" run envset.json --db inh2.db -q --inherit-env > out.txt 2>&1
if [ "$(what inh2.db)" = "$envset" ]; then ok "run --inherit-env: hcomm_env wins"; else bad "hcomm_env against inherited: $(what inh2.db)" out.txt; fi

# ---- bad inherited values: exit 2 naming the variable; ignored without --inherit-env ----
expect "run --inherit-env: bad HCCL_BUFFSIZE" 2 'HCCL_BUFFSIZE="abc" is not a decimal number' -- env HCCL_BUFFSIZE=abc "$HCSIM" run plain.json --no-trace -q --inherit-env
expect "run --inherit-env: HCOMM_OP_RETRY out of range" 2 'HCOMM_OP_RETRY="5" is out of range' -- env HCOMM_OP_RETRY=5 "$HCSIM" run plain.json --no-trace -q --inherit-env
expect "run --inherit-env: bad HCOMM_ALGO" 2 'HCOMM_ALGO="bogus"' -- env HCOMM_ALGO=bogus "$HCSIM" run plain.json --no-trace -q --inherit-env
expect "run: a bad value is ignored without --inherit-env" 0 "ignoring HCCL_BUFFSIZE" -- env HCCL_BUFFSIZE=abc "$HCSIM" run plain.json --no-trace -q
expect "plan --inherit-env: bad value" 2 'HCOMM_ROUTE_SPORT="x": allowed values' -- env HCOMM_ROUTE_SPORT=x "$HCSIM" plan "$SRC/tests/fixtures/plan/small.json" -o badplan -n --inherit-env
expect "routes --inherit-env: bad value" 2 'HCOMM_ROUTE_SPORT="x"' -- env HCOMM_ROUTE_SPORT=x "$HCSIM" routes plain.json --inherit-env
expect "discover --inherit-env: bad value" 2 'HCOMM_DEBUG="9" is out of range' -- env HCOMM_DEBUG=9 "$HCSIM" discover "$SRC/topologies/a2-2node.json" -q --inherit-env
expect "discover: ignored, named" 0 "ignoring HCOMM_DEBUG from the environment" -- env HCOMM_DEBUG=9 "$HCSIM" discover "$SRC/topologies/a2-2node.json" -q

# ---- --set: integers for env knobs, as their decimal strings ----
expect "--set /hcomm_env/HCOMM_OP_RETRY=1" 0 "PASS" -- "$HCSIM" run plain.json --db set.db -q --set /hcomm_env/HCOMM_OP_RETRY=1 --set /hcomm_env/HCCL_BUFFSIZE=1
"$HCSIM" run buf1.json --db buf1.db -q > out.txt 2>&1
if [ "$(what set.db)" = "$(what buf1.db)" ] && [ "$(what set.db)" != "$ref" ]; then ok "--set /hcomm_env/...=1 acts as \"1\" in the file ($(what set.db))"
else bad "--set numbers: $(what set.db) against $(what buf1.db)"; fi
expect "--set a fraction for an env knob" 2 "/hcomm_env/HCOMM_OP_RETRY: expected a string or an integer" -- "$HCSIM" run plain.json --no-trace --set /hcomm_env/HCOMM_OP_RETRY=0.5
expect "--set an integer out of range" 2 'HCOMM_OP_RETRY="2" is out of range \[0, 1\]' -- "$HCSIM" run plain.json --no-trace --set /hcomm_env/HCOMM_OP_RETRY=2
expect "hcomm_env: another prefix" 2 "only HCOMM_\* and HCCL_\* variables" -- "$HCSIM" run plain.json --no-trace --set /hcomm_env/NCCL_ALGO=ring

# ---- plan: the points' runs do not see an exported HCOMM_ALGO ----
python3 - "$SRC/topologies/clos-1024.json" > plan.json <<'PY'
import json, sys
print(json.dumps({"format": "hcsim-plan", "version": 1, "name": "herm", "topology": sys.argv[1],
                  "sweep": [{"pointer": "/server_groups/0/count", "name": "servers", "values": [2]}],
                  "workloads": [{"op": "allreduce", "sizes": ["4MiB"]}], "fidelity": "flow"}))
PY
HCOMM_ALGO="level0:NA;level1:H-D_R" "$HCSIM" plan plan.json -o p1 > out.txt 2> err.txt
rc=$?
got=$(python3 -c "import sqlite3; print(sorted(set(sqlite3.connect('p1/l0-w0.hcsim.db').execute(\"select chosen_by from operations where kind='allreduce'\").fetchall())))")
if [ $rc -eq 0 ] && [ "$got" = "[('auto',)]" ]; then ok "plan: a point's operations are chosen by auto despite an exported HCOMM_ALGO"
else bad "plan: exit $rc, chosen_by $got" err.txt; fi
if grep -q "ignoring HCOMM_ALGO from the environment" err.txt; then ok "plan: names the ignored variable"; else bad "plan: no ignored line" err.txt; fi
HCOMM_ALGO="level0:NA;level1:H-D_R" "$HCSIM" plan plan.json -o p2 --inherit-env > out.txt 2>&1
got=$(python3 -c "import sqlite3; print(sorted(set(sqlite3.connect('p2/l0-w0.hcsim.db').execute(\"select algorithm, chosen_by from operations where kind='allreduce'\").fetchall())))")
if [ "$got" = "[('mesh+H-D_R', 'HCOMM_ALGO')]" ]; then ok "plan --inherit-env: passed to the points"; else bad "plan --inherit-env: $got" out.txt; fi

# A plan's hcomm_env takes HCCL_* names too (its points are scenarios).
python3 -c "import json; p = json.load(open('plan.json')); p['hcomm_env'] = {'HCCL_ALGO': 'level0:NA;level1:H-D_R'}; print(json.dumps(p))" > plan-hccl.json
"$HCSIM" plan plan-hccl.json -o p3 > out.txt 2>&1
got=$(python3 -c "import sqlite3; print(sorted(set(sqlite3.connect('p3/l0-w0.hcsim.db').execute(\"select algorithm, chosen_by from operations where kind='allreduce'\").fetchall())))" 2>&1)
if [ "$got" = "[('mesh+H-D_R', 'HCCL_ALGO')]" ]; then ok "plan: HCCL_ALGO in the plan's hcomm_env"; else bad "plan hcomm_env HCCL_ALGO: $got" out.txt; fi

# ---- routes SCENARIO: the same routes with an exported HCOMM_ROUTE_SPORT; --inherit-env takes it ----
scen sport '{"HCOMM_ROUTE_SPORT": "hash"}'
"$HCSIM" routes plain.json > r-ref.txt 2>/dev/null && "$HCSIM" routes sport.json > r-hash.txt 2>/dev/null
HCOMM_ROUTE_SPORT=hash "$HCSIM" routes plain.json > r-leak.txt 2> err.txt
HCOMM_ROUTE_SPORT=hash "$HCSIM" routes plain.json --inherit-env > r-inh.txt 2>/dev/null
if ! cmp -s r-ref.txt r-hash.txt && cmp -s r-ref.txt r-leak.txt && cmp -s r-hash.txt r-inh.txt && grep -q "ignoring HCOMM_ROUTE_SPORT" err.txt; then
  ok "routes: exported HCOMM_ROUTE_SPORT ignored (named), taken with --inherit-env"
else bad "routes: ref/hash/leak/inherit differ unexpectedly" err.txt; fi

# ---- provenance ----
keys="command_line env_ignored env_inherited hcsim_commit hcsim_version overrides scenario_json topology_json"
prov() { [ -s "$1" ] || return; python3 -c "import sqlite3,sys; [print(k + '\t' + v) for k, v in sqlite3.connect(sys.argv[1]).execute('select key, value from provenance order by key')]" "$1"; }
# Two identical runs (the same command line, in two directories).
for run in a b; do
  mkdir $run
  (cd $run && HCCL_BUFFSIZE=7 "$HCSIM" run ../plain.json --db prov.db -q --set /workload/0/bytes=2MiB --set /hcomm_env/HCOMM_OP_RETRY=1 \
    --fault 'npu_stall npu=node0/npu0 at=1us duration=1us' > out.txt 2>&1) || bad "provenance run $run" $run/out.txt
  mv $run/prov.db prov-$run.db
done
if [ "$(prov prov-a.db | cut -f1 | tr '\n' ' ')" = "$keys " ]; then ok "provenance: every key"; else bad "provenance keys: $(prov prov-a.db | cut -f1 | tr '\n' ' ')"; fi
if [ -s prov-a.db ] && [ -s prov-b.db ] && cmp -s <(prov prov-a.db) <(prov prov-b.db); then ok "provenance: identical for identical runs"; else bad "provenance differs between identical runs"; fi
python3 - prov-a.db "$SRC/topologies/a2-2node.json" "$HCSIM" "$SRC" > check.txt 2>&1 <<'PY'
import json, sqlite3, subprocess, sys
p = dict(sqlite3.connect(sys.argv[1]).execute("select key, value from provenance"))
bad = []
sc = json.loads(p["scenario_json"])
if sc["workload"][0]["bytes"] != "2MiB": bad.append("scenario_json lacks the --set bytes: %r" % sc["workload"][0])
if sc.get("hcomm_env") != {"HCOMM_OP_RETRY": 1}: bad.append("scenario_json hcomm_env: %r" % sc.get("hcomm_env"))
if [f["type"] for f in sc.get("faults", [])] != ["npu_stall"]: bad.append("scenario_json faults: %r" % sc.get("faults"))
if json.loads(p["topology_json"]) != json.load(open(sys.argv[2])): bad.append("topology_json is not the topology file")
ov = json.loads(p["overrides"])
if ov != {"set": [{"pointer": "/workload/0/bytes", "value": "2MiB"}, {"pointer": "/hcomm_env/HCOMM_OP_RETRY", "value": "1"}],
          "fault": ["npu_stall npu=node0/npu0 at=1us duration=1us"], "chaos": None}: bad.append("overrides: %r" % ov)
want_cl = "hcsim run ../plain.json --db prov.db -q --set /workload/0/bytes=2MiB --set /hcomm_env/HCOMM_OP_RETRY=1 --fault 'npu_stall npu=node0/npu0 at=1us duration=1us'"
if p["command_line"] != want_cl: bad.append("command_line: %r" % p["command_line"])
if json.loads(p["env_ignored"]) != ["HCCL_BUFFSIZE"] or json.loads(p["env_inherited"]) != {}: bad.append("env: %r %r" % (p["env_ignored"], p["env_inherited"]))
ver = subprocess.run([sys.argv[3], "--version"], capture_output=True, text=True).stdout.split()[1]
if p["hcsim_version"] != ver: bad.append("hcsim_version %r, --version says %r" % (p["hcsim_version"], ver))
g = subprocess.run(["git", "-C", sys.argv[4], "rev-parse", "--show-toplevel"], capture_output=True, text=True)
import os
if g.returncode == 0 and os.path.realpath(g.stdout.strip()) == os.path.realpath(sys.argv[4]):
    # The commit the build was made from (HEAD may have moved since): a commit of this repository.
    c = p["hcsim_commit"].removesuffix("-dirty")
    ok_commit = len(c) == 40 and subprocess.run(["git", "-C", sys.argv[4], "cat-file", "-e", c + "^{commit}"]).returncode == 0
    if p["hcsim_commit"] not in subprocess.run([sys.argv[3], "--version"], capture_output=True, text=True).stdout: ok_commit = False
else:
    ok_commit = p["hcsim_commit"] == "unknown"
if not ok_commit: bad.append("hcsim_commit %r" % p["hcsim_commit"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
if [ $? -eq 0 ]; then ok "provenance: values (--set in scenario_json, topology file, overrides, command line, env, version, commit)"
else bad "provenance values" check.txt; fi
HCOMM_ALGO="level0:NA;level1:ring" "$HCSIM" run plain.json --db prov-i.db -q --inherit-env > out.txt 2>&1
if [ "$(prov prov-i.db | grep -E '^env_')" = "$(printf 'env_ignored\t[]\nenv_inherited\t{"HCOMM_ALGO":"level0:NA;level1:ring"}')" ]; then
  ok "provenance: env_inherited"; else bad "provenance env rows: $(prov prov-i.db | grep -E '^env_')"; fi

# ---- the build's commit: "unknown" outside a git checkout (a tarball; one unpacked inside another repository) ----
mkdir -p notgit repo/sub
git -C repo init -q 2>/dev/null && git -C repo -c user.email=t@t -c user.name=t commit -q --allow-empty -m x 2>/dev/null
for d in notgit repo/sub; do
  "$CMAKE" -DSRC="$TMP/$d" -DOUT="$TMP/bi.cpp" -DVERSION=9.9 -DGIT="$(command -v git || echo git-NOTFOUND)" -P "$SRC/cmake/build_info.cmake" > out.txt 2>&1
  if grep -q 'build_commit() { return "unknown"; }' bi.cpp && grep -q '"9.9"' bi.cpp; then ok "build info in $d: commit unknown"; else bad "build info in $d" bi.cpp out.txt; fi
  rm -f bi.cpp
done

# ---- hcomm_test keeps hccl_test's convention: reads the environment, and says what it read ----
expect "hcomm_test names the variables it read" 0 "^environment: HCCL_BUFFSIZE=64 HCOMM_ALGO=level1:ring " -- env HCCL_BUFFSIZE=64 HCOMM_ALGO=level1:ring "$HT" allreduce -b 8K -e 8K -n 1 -w 0
expect "hcomm_test: and when there are none" 0 "^environment: no HCOMM_\*/HCCL_\* variables the library reads \(its defaults\)$" -- "$HT" allreduce -b 8K -e 8K -n 1 -w 0
expect "hcomm_test: a variable hcomm does not read" 0 "^environment: HCOMM_NUM_QP=4 \(read by the library\); not read by hcomm: HCCL_CONNECT_TIMEOUT$" -- env HCCL_CONNECT_TIMEOUT=120 HCOMM_NUM_QP=4 "$HT" allreduce -b 8K -e 8K -n 1 -w 0
expect "hcomm_test: a bad value exits 2 naming it" 2 'HCCL_BUFFSIZE="0" is out of range' -- env HCCL_BUFFSIZE=0 "$HT" allreduce -b 8K -e 8K -n 1 -w 0

echo "hermetic_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
