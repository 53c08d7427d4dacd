#!/usr/bin/env bash
# What-if knobs of the fabric (docs/models/ethernet-switch.md#ecmp, docs/topology-format.md#as-built):
#  1. /network/ecmp_salt: salt 0 gives the routes of no salt; salt 1 moves cross-leaf flows to other
#     uplinks; in every tier the bytes the leaf uplinks carried (port_counters) match the uplinks
#     the trace's routes name (the tiers share the path choice); the same salt twice gives the same
#     trace; bad values are exit 2 naming the pointer.
#  2. /as_built cable_missing / cable_degraded on a generated 2-tier Clos (4 servers of 1 NPU,
#     2 leaves, 2 spines, 200 Gb/s): no route crosses the missing cable; two cross-leaf flows out of
#     a leaf that kept one uplink take one more serialisation of their bytes (flow tier: within 1 %
#     of S_wire / B; every tier: not below the lower bound 2 S_wire / B); one write from a NIC whose
#     cable runs at half rate takes S_wire / (B / 2) (within 1 %); bad entries are errors with their pointer.
# Usage: fabric_whatif_test.sh HCSIM_BINARY SOURCE_DIR
set -u
HCSIM=$(realpath "$1")
SRC=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
. "$SRC/tests/cli/check_lib.sh"

# ---- 1. the ECMP salt, on clos-nr-4 (8 leaves of 4 NICs, 4 spines; one QP per pair, the NIC's hash) ----
cp "$SRC/topologies/clos-nr-4.json" .
cat > salt.json <<JSON
{"format": "hcsim-scenario", "version": 1, "name": "salt", "topology": "clos-nr-4.json", "payload": "timing", "fidelity": "flow",
 "hcomm_env": {"HCOMM_ROUTE_SPORT": "hash", "HCOMM_NUM_QP": "1"},
 "workload": [{"op": "sendrecv", "pattern": "halves", "bytes": "4MiB"}]}
JSON
run() {  # run NAME ARGS...: hcsim run salt.json ARGS --db NAME.db
  local n=$1; shift
  "$HCSIM" run salt.json "$@" --db "$n.db" -q > "$n.txt" 2>&1 || bad "$n: run failed" "$n.txt"
}
run none
run s0 --set /network/ecmp_salt=0
for tier in flow chunk packet; do
  run $tier-1 --set /fidelity=$tier --set /network/ecmp_salt=1
  run $tier-0 --set /fidelity=$tier
done
routes() { sqlite3 "$1" "select sim_time_ns, comm, src, dst, qp, transport, nic, udp_sport, hops, reason from routes order by src, dst, qp, sim_time_ns"; }
ops() { sqlite3 "$1" "select rank, seq, kind, start_ns, end_ns from operations order by rank, seq"; }
if [ -n "$(routes none.db)" ] && [ "$(routes none.db)" = "$(routes s0.db)" ] && [ "$(ops none.db)" = "$(ops s0.db)" ]; then ok "salt 0: the routes and operations of no salt"
else bad "salt 0 differs from no salt"; fi
# Independent of the simulator's own summaries: each stripe's leaf uplink from its hops (the leaf
# hop followed by a spine hop), counted per uplink; the bytes each leaf->spine port sent.
cat > uplinks.py <<'PY'
import collections, sqlite3, sys
def stripes(db):
    last = {}
    for s, d, q, hops in sqlite3.connect(db).execute("select src, dst, qp, hops from routes where transport = 'roce' order by sim_time_ns"):
        last[(s, d, q)] = hops
    up = {}
    for k, hops in last.items():
        h = hops.split()
        if len(h) >= 2 and h[0].startswith("leaf") and h[1].startswith("spine"):
            leaf, ports = h[0].split(":")
            up[k] = (leaf, int(ports.split(">")[1]))
    return up
def port_bytes(db):
    q = "select node, port, tx_bytes from port_counters where node like 'leaf%' and peer like 'spine%'"
    return {(n, p): b for n, p, b in sqlite3.connect(db).execute(q)}
if sys.argv[1] == "moved":  # stripes of A that leave by another uplink in B
    a, b = stripes(sys.argv[2]), stripes(sys.argv[3])
    print(sum(1 for k in a if k in b and a[k] != b[k]), len(a))
else:  # check DB STRIPE_BYTES: distinct uplinks, max stripes per uplink, and whether the counters agree
    db, per = sys.argv[2], int(sys.argv[3])
    load = collections.Counter(stripes(db).values())
    got = port_bytes(db)
    used = {k for k, v in got.items() if v >= per // 4}  # ACKs and CNPs on an uplink are far below a stripe's bytes
    # Each uplink sent its stripes' payload with 58 B of headers per 4 KiB packet (1.4 %), and the
    # ACKs and CNPs of the flows coming the other way (the packet tier: up to 2.9 % in all here).
    agree = used == set(load) and all(per * n <= got[k] <= per * n * 1.05 for k, n in load.items())
    print(len(load), max(load.values()), "agree" if agree else "disagree", sorted(load.items())[:4], sorted(got.items())[:4])
PY
STRIPE=$((4 * 1024 * 1024))
for tier in flow chunk packet; do
  for s in 0 1; do
    read -r n mx verdict rest <<< "$(python3 uplinks.py check $tier-$s.db $STRIPE)"
    echo "$tier salt $s: $n distinct leaf uplinks, at most $mx stripes on one"
    [ "$verdict" = agree ] && ok "$tier salt $s: the uplinks' port counters carry the bytes of the stripes the routes put on them" ||
      bad "$tier salt $s: routes and port counters disagree: $n $mx $verdict $rest"
  done
  [ "$(sqlite3 $tier-1.db "select src, dst, qp, hops from routes order by 1,2,3")" = "$(sqlite3 flow-1.db "select src, dst, qp, hops from routes order by 1,2,3")" ] &&
    ok "$tier salt 1: the flow tier's paths" || bad "$tier salt 1: other paths than the flow tier"
done
read -r moved total <<< "$(python3 uplinks.py moved flow-0.db flow-1.db)"
echo "salt 1 moved $moved of $total cross-leaf stripes to another uplink"
[ "${moved:-0}" -gt 0 ] && ok "salt 1 moves cross-leaf flows to other uplinks" || bad "salt 1 moved no flow"
[ "$(python3 uplinks.py check flow-0.db $STRIPE | cut -d' ' -f1-2)" != "$(python3 uplinks.py check flow-1.db $STRIPE | cut -d' ' -f1-2)" ] ||
  [ "$(routes flow-0.db)" != "$(routes flow-1.db)" ] && ok "salt 1: another placement" || bad "salt 1: the same placement"
# The same salt twice: the same trace (a fresh directory each, so the command lines are the same).
for d in a b; do mkdir $d; cp salt.json clos-nr-4.json $d; (cd $d && "$HCSIM" run salt.json --set /network/ecmp_salt=7 --db t.db -q > /dev/null 2>&1); done
dump() { sqlite3 "$1" "update run set wall_seconds = 0" && sqlite3 "$1" .dump; }
[ -s a/t.db ] && [ "$(dump a/t.db)" = "$(dump b/t.db)" ] && ok "salt 7 twice: identical traces" || bad "salt 7 twice: traces differ"
expect "salt 2^32 - 1 accepted" 0 "" -- "$HCSIM" run salt.json --set /network/ecmp_salt=4294967295 --db max.db -q
expect "salt 2^32 rejected" 2 "/network/ecmp_salt: value 4294967296 out of range" -- "$HCSIM" run salt.json --set /network/ecmp_salt=4294967296 --db x.db
expect "negative salt rejected" 2 "/network/ecmp_salt: expected a non-negative integer" -- "$HCSIM" run salt.json --set /network/ecmp_salt=-1 --db x.db
expect "string salt rejected" 2 "/network/ecmp_salt: expected an integer, got string" -- "$HCSIM" run salt.json --set '/network/ecmp_salt="1"' --db x.db
expect "fractional salt rejected" 2 "/network/ecmp_salt: expected a non-negative integer" -- "$HCSIM" run salt.json --set /network/ecmp_salt=1.5 --db x.db
# The seed in the flow tier: nothing to draw but the payload, said once as a warning.
expect "flow tier: a seed warning" 0 "/seed: warning: the flow tier draws no ECN marks or drops" -- "$HCSIM" run salt.json --set /seed=7 --db x.db
expect "chunk tier: no seed warning" 0 "" -- "$HCSIM" run salt.json --set /seed=7 --set /fidelity=chunk --db x.db
grep -q "/seed: warning" out.txt && bad "chunk tier warned about the seed" out.txt || ok "chunk tier: the seed draws ECN marks and drops there"

# ---- 2. a generated fabric's cable missing or degraded ----
topo() {  # topo NAME AS_BUILT_JSON
  cat > "$1.json" <<JSON
{"format": "hcsim-topology", "version": 1, "name": "$1",
 "server_groups": [{"name": "node{i}", "count": 4, "type": "atlas800t-a2", "npus": {"count": 1}, "host_ip": "10.0.0.1",
                    "nic": {"bandwidth": "200Gb/s", "device_ip": "10.1.0.1"}}],
 "fabric": {"type": "clos", "tiers": 2, "switch_radix": 4, "oversubscription": "1:1", "rail_optimized": false, "link_bandwidth": "200Gb/s"},
 "as_built": $2}
JSON
}
scen() {  # scen NAME TOPOLOGY TIER WORKLOAD
  cat > "$1.json" <<JSON
{"format": "hcsim-scenario", "version": 1, "name": "$1", "topology": "$2.json", "payload": "timing", "fidelity": "$3", "workload": [$4]}
JSON
}
topo full '[]'
# leaf0 has NICs of node0, node1 on ports 0, 1 and uplinks 2 (spine0), 3 (spine1).
topo miss '[{"kind": "cable_missing", "switch": "leaf0", "port": 3}]'
topo half '[{"kind": "cable_degraded", "npu": "node1/npu0", "factor": 0.5}]'
topo slow '[{"kind": "cable_degraded", "switch": "leaf0", "port": 1, "bandwidth": "100Gb/s"}]'
SR='{"op": "sendrecv", "pattern": "halves", "bytes": "64MiB"}'          # ranks 0, 1 (leaf0) <-> 2, 3 (leaf1)
WR='{"op": "incast", "root": 0, "senders": "remote:1", "bytes": "16MiB"}'  # one write, rank 1 -> rank 0
span() { sqlite3 "$1" "select (max(end_ns) - min(start_ns)) / 1000.0 from operations where kind in ('send', 'recv')"; }
wr() { sqlite3 "$1" "select (end_ns - start_ns) / 1000.0 from operations where kind = 'rdma_write'"; }
for tier in flow chunk packet; do
  for t in full miss; do scen sr-$t-$tier $t $tier "$SR"; "$HCSIM" run sr-$t-$tier.json --db sr-$t-$tier.db -q > sr-$t-$tier.txt 2>&1 || bad "sr-$t-$tier: run failed" sr-$t-$tier.txt; done
  for t in full half slow; do scen wr-$t-$tier $t $tier "$WR"; "$HCSIM" run wr-$t-$tier.json --db wr-$t-$tier.db -q > wr-$t-$tier.txt 2>&1 || bad "wr-$t-$tier: run failed" wr-$t-$tier.txt; done
  n=$(sqlite3 sr-miss-$tier.db "select count(*) from routes where transport = 'roce' and (' ' || hops || ' ') glob '* leaf0:*>3 *' or (' ' || hops || ' ') glob '* leaf0:3>* *' or hops glob '*spine1:0>*' or hops glob '*spine1:*>0 *'")
  m=$(sqlite3 sr-miss-$tier.db "select count(*) from routes where transport = 'roce'")
  [ "$n" = 0 ] && [ "${m:-0}" -gt 0 ] && ok "$tier: none of $m RoCE routes crosses the missing leaf0/3 <-> spine1/0 cable" || bad "$tier: $n of $m routes cross the missing cable"
  # 64 MiB on the wire: 16384 packets of 4096 B with 58 B of headers each; B = 25 GB/s.
  read -r base miss lo dt <<< "$(awk -v a="$(span sr-full-$tier.db)" -v b="$(span sr-miss-$tier.db)" 'BEGIN { s = 16384 * 4154 / 25e3; printf "%.1f %.1f %.1f %.1f", a, b, 2 * s, s }')"
  echo "$tier sendrecv across the leaves: $base us with both uplinks, $miss us with one (bound $lo us; one more serialisation: $dt us)"
  awk -v b="$miss" -v lo="$lo" 'BEGIN { exit !(b >= lo) }' && ok "$tier: one uplink left: not below 2 S_wire / B" || bad "$tier: $miss us below the bound $lo us"
  if [ $tier = flow ]; then
    awk -v a="$base" -v b="$miss" -v dt="$dt" 'BEGIN { d = b - a; exit !(d > 0.99 * dt && d < 1.01 * dt) }' &&
      ok "flow: the missing uplink adds one serialisation of S at B (within 1 %)" || bad "flow: $miss - $base us, expected $dt us"
  fi
  for t in half slow; do
    read -r w want <<< "$(awk -v w="$(wr wr-$t-$tier.db)" -v f="$(wr wr-full-$tier.db)" 'BEGIN { s = 4096 * 4154 / 25e3; printf "%.2f %.2f", w, f + s }')"
    awk -v w="$w" -v x="$want" 'BEGIN { exit !(w > 0.99 * x && w < 1.01 * x) }' && ok "$tier $t: the write over the half-rate cable takes S_wire / (B/2) ($w us, expected $want us)" ||
      bad "$tier $t: the write took $w us, expected $want us"
  done
done
# hcsim topo: the description's bisection (ranks 0, 1 under leaf0: its two uplinks, 2 x 25 GB/s) and
# the bisection as built (one uplink left: 25 GB/s; a NIC cable at half rate: ranks 0, 1 send 25 +
# 12.5 GB/s at most, 37.5).
expect "topo: as built" 0 "as built +1 RoCE cable missing" -- "$HCSIM" topo miss.json
grep -qE "^  bisection +50.0 GB/s" out.txt && grep -qE "bisection as built 25.0 GB/s" out.txt && grep -q "missing  leaf0/3<->spine1/0" out.txt &&
  ok "topo: bisection 50 GB/s as described, 25 GB/s as built" || bad "topo: bisections" out.txt
expect "topo: degraded" 0 "degraded node1/npu0<->leaf0/1: 12.5 GB/s \(100 Gb/s\) of 25.0 GB/s" -- "$HCSIM" topo half.json
grep -q "bisection as built 37.5 GB/s" out.txt && ok "topo: half-rate NIC cable, bisection 37.5 GB/s" || bad "topo: degraded bisection" out.txt
# Bad entries: the pointer and the reason.
bad_ab() {  # bad_ab NAME AS_BUILT PATTERN
  topo bad "$2"
  expect "$1" 2 "$3" -- "$HCSIM" validate bad.json
}
bad_ab "unknown switch" '[{"kind": "cable_missing", "switch": "leaf9", "port": 3}]' 'bad.json: /as_built/0/switch: no Ethernet switch named "leaf9"'
bad_ab "uncabled port" '[{"kind": "cable_missing", "switch": "spine0", "port": 3}]' '/as_built/0/port: port 3 of spine0 is not cabled \(4 ports\)'
bad_ab "unknown NPU" '[{"kind": "cable_degraded", "npu": "node9/npu0", "factor": 0.5}]' '/as_built/0/npu: no NPU named "node9/npu0"'
bad_ab "both addressings" '[{"kind": "cable_missing", "switch": "leaf0", "port": 3, "npu": "node0/npu0"}]' '/as_built/0/npu: name the cable by switch \+ port or by npu, not both'
bad_ab "no cable named" '[{"kind": "cable_missing"}]' '/as_built/0: name the cable'
bad_ab "no rate" '[{"kind": "cable_degraded", "npu": "node0/npu0"}]' '/as_built/0: give the degraded cable.s rate'
bad_ab "factor 1" '[{"kind": "cable_degraded", "npu": "node0/npu0", "factor": 1}]' '/as_built/0/factor: factor must be above 0 and below 1'
bad_ab "rate not below" '[{"kind": "cable_degraded", "npu": "node0/npu0", "bandwidth": "200Gb/s"}]' '/as_built/0/bandwidth: a degraded cable runs below its rate'
bad_ab "rate key on missing" '[{"kind": "cable_missing", "npu": "node0/npu0", "factor": 0.5}]' '/as_built/0/factor: unknown key'
bad_ab "named twice" '[{"kind": "cable_missing", "switch": "leaf0", "port": 3}, {"kind": "cable_degraded", "switch": "spine1", "port": 0, "factor": 0.5}]' '/as_built/1: cable leaf0/3<->spine1/0 is already named by /as_built/0'
bad_ab "a NIC's only cable" '[{"kind": "cable_missing", "npu": "node2/npu0"}]' '/as_built/0: the NIC of node2/npu0 has no cable left: it would be unreachable over RoCE'
bad_ab "a leaf cut off" '[{"kind": "cable_missing", "switch": "leaf0", "port": 2}, {"kind": "cable_missing", "switch": "leaf0", "port": 3}]' '/as_built: without the missing cables the RoCE network is split'
bad_ab "unknown kind lists the cable kinds" '[{"kind": "cable_cut"}]' 'unknown kind "cable_cut" \(.*cable_missing, cable_degraded\)'
# A fault on a missing cable has nothing to act on.
scen flt miss flow "$SR"
sed -i 's/"workload"/"faults": [{"type": "switch_link_down", "switch": "leaf0", "port": 3, "at": "0us"}], "workload"/' flt.json
expect "a fault on a missing cable" 2 "flt.json: /faults/0/port: cable leaf0/3<->spine1/0 is missing \(/as_built in miss.json\)" -- "$HCSIM" run flt.json --db x.db
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
