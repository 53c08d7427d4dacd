#!/usr/bin/env bash
# docs/plan.schema.json (the plan format's JSON Schema, for editors and CI): it is a valid draft-07
# schema; the shipped plans and the good fixtures pass it; the bad fixture fails it at the keys
# hcsim plan names too (an unknown key, an unknown op, a malformed size, an empty sweep, a
# workload's non-string hcomm_env value).
# Usage: plan_schema_test.sh SOURCE_DIR
set -u
SRC=$(realpath "$1")
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c "import jsonschema" 2> /dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then echo "FAIL no python3 with jsonschema (tools/setup.sh test installs python3-jsonschema)"; exit 1; fi
"$PY" - "$SRC" <<'PY'
import glob, json, sys
import jsonschema
src = sys.argv[1]
schema = json.load(open(f"{src}/docs/plan.schema.json"))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
fail = 0
good = sorted(glob.glob(f"{src}/plans/*.json")) + [f"{src}/tests/fixtures/plan/{n}.json" for n in ("small", "impossible")]
for f in good:
    errs = list(v.iter_errors(json.load(open(f))))
    if errs:
        fail += 1
        print(f"FAIL {f}: " + "; ".join(f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errs))
    else:
        print(f"ok   {f.replace(src + '/', '')} passes the schema")
bad = json.load(open(f"{src}/tests/fixtures/plan/bad.json"))
paths = {"/" + "/".join(map(str, e.absolute_path)) for e in v.iter_errors(bad)}
for want in ("/", "/workloads/0/op", "/workloads/0/sizes/0", "/sweep/1/values", "/workloads/0/hcomm_env/HCOMM_NUM_QP"):
    if want in paths: print(f"ok   bad.json fails at {want}")
    else: fail += 1; print(f"FAIL bad.json passes at {want} (errors at {sorted(paths)})")
print(f"plan_schema_test: {'failed' if fail else 'passed'}")
sys.exit(1 if fail else 0)
PY
