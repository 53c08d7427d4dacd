#!/usr/bin/env bash
# The CLI that helps (observability): one-server pictures, wrong kinds of file, errors in one pass,
# the library's per-operation decision line (HCOMM_DEBUG=3), `hcsim run` progress and --top.
# Usage: obs_cli_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
FX=$SRC/tests/fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; shift; for f in "$@"; do sed 's/^/    /' "$f" | tail -20; done; fail=$((fail + 1)); }

expect() {  # expect NAME CODE PATTERN -- command...
  local name=$1 code=$2 pattern=$3
  shift 4
  "$@" > out.txt 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, expected $code" out.txt; return; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" out.txt; then bad "$name: output lacks /$pattern/" out.txt; return; fi
  ok "$name"
}

# ---- hcsim topo --dot on one server: a node per NPU, an edge per HCCS (and PCIe) link ----
# The expected counts come from the topology file itself (its servers' npus.count, hccs.topology
# and pcie.switch, and any explicit links), not from hcsim.
expected_counts() {  # FILE -> "NPUS HCCS PCIE"
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
npus = hccs = pcie = 0
for s in t["servers"]:
    n = s["npus"]["count"]
    npus += n
    topo = s.get("hccs", {}).get("topology", "full-mesh")
    hccs += {"full-mesh": n * (n - 1) // 2, "groups-of-4": n // 4 * 6, "none": 0}[topo]
    if s.get("pcie", {}).get("switch", False):
        pcie += n
for l in t.get("links", []):
    hccs += l["type"] == "hccs"
print(npus, hccs, pcie)
PY
}
for topo in atlas800t-a2 atlas800-910; do
  f=$SRC/topologies/$topo.json
  read -r npus hccs pcie <<< "$(expected_counts "$f")"
  "$HCSIM" topo "$f" --dot > "$topo.dot" 2> "$topo.err"
  rc=$?
  got_npus=$(grep -cE '^  n[0-9]+ \[label="server0/npu[0-9]+", shape=box\];$' "$topo.dot")
  # Edge lines: "nA -- nB [label="hccs, ..."]"; NPU nodes are n0..n(npus-1).
  got_hccs=$(grep -cE '^  n[0-9]+ -- n[0-9]+ \[label="hccs, ' "$topo.dot")
  got_pcie=$(grep -cE '^  n[0-9]+ -- n[0-9]+ \[label="pcie, ' "$topo.dot")
  boxes=$(grep -c 'shape=box' "$topo.dot")
  if [ "$rc" -eq 0 ] && [ "$npus" -gt 1 ] && [ "$got_npus" -eq "$npus" ] && [ "$boxes" -eq "$npus" ] && [ "$got_hccs" -eq "$hccs" ] &&
     [ "$got_pcie" -eq "$pcie" ]; then
    ok "topo-dot-one-server-$topo ($npus NPUs, $hccs HCCS, $pcie PCIe)"
  else
    bad "topo-dot-one-server-$topo: exit $rc, NPU nodes $got_npus/$npus, HCCS edges $got_hccs/$hccs, PCIe edges $got_pcie/$pcie" "$topo.dot" "$topo.err"
  fi
done
# Each HCCS edge joins two distinct NPU nodes, no pair twice.
pairs=$(grep -E 'label="hccs, ' atlas800t-a2.dot | awk '{print $1, $3}' | sort -u | wc -l)
[ "$pairs" -eq 28 ] && ok "topo-dot-hccs-pairs-distinct" || bad "topo-dot-hccs-pairs-distinct: $pairs distinct pairs" atlas800t-a2.dot
"$HCSIM" topo "$SRC/topologies/atlas800-910.json" --svg > a910.svg
n=$(grep -c '<rect x=' a910.svg)
[ "$n" -eq 9 ] && grep -q 'server0/npu7' a910.svg && ok "topo-svg-one-server" || bad "topo-svg-one-server: $n device boxes" a910.svg
# Several servers keep the aggregated view: one node per server.
expect topo-dot-two-servers 0 'n0 -- n2 \[label="8 x roce' -- "$HCSIM" topo "$SRC/topologies/a2-2node.json" --dot

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
