# Seed sample 1 of /work/shared/seeds/000_74db84cc06cc32e0.txt (2.1 "拓扑关系层"): the N x N adjacency
# matrix entry topology[0][1] with link type, bandwidth and latency.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/topology_matrix.py
# Changes from the seeds' text (a fragment, not a program):
#  1. imports hcomm, os, sys; a context for LOCAL_RANK; `topology` is built from hcomm.get_topology() on
#     every rank (its own row: topology[my_rank][j]), the seeds' literal values (HCCS | RDMA, 200GBps,
#     800ns: not Python) are replaced by what discovery found: link_types (hcomm.LINK_* bits: RDMA is
#     LINK_ROCE), bandwidth in bytes/s, latency in ns (one way).
#  2. Added: rank 0 prints topology[0][1]; every rank checks its row: the link used is among the link
#     types, a link to another rank has a bandwidth and a latency, to itself LINK_LOCAL; exit 1 otherwise.
import os
import sys

import hcomm

ctx = hcomm.create_context(device_id=int(os.environ.get("LOCAL_RANK", 0)))
topo = hcomm.get_topology()
me = topo.my_rank
topology = {me: {}}
for j, link in enumerate(topo.links):
    topology[me][j] = {
        'link_type': link["link_types"],  # 同时具备芯片直连和网络链路 (bits of hcomm.LINK_*)
        'bandwidth': link["bandwidth_Bps"],  # 链路带宽 (B/s)
        'latency': link["latency_ns"],  # 延迟 (ns)
        'used': link["link_type"],
    }

NAMES = {hcomm.LINK_LOCAL: "LOCAL", hcomm.LINK_HCCS: "HCCS", hcomm.LINK_PCIE: "PCIE", hcomm.LINK_ROCE: "RDMA"}


def names(bits):
    return " | ".join(v for k, v in NAMES.items() if bits & k) or "NONE"


# 节点0与节点1的拓扑关系示例
if me == 0 and topo.num_nodes > 1:
    e = topology[0][1]
    print(f"topology[0][1] = {{'link_type': {names(e['link_type'])}, 'bandwidth': {e['bandwidth'] / 1e9:.1f}GBps, "
          f"'latency': {e['latency']}ns}}")

for j, e in topology[me].items():
    if not (e['used'] & e['link_type']):
        print(f"FAIL rank {me}: link to {j}: the link used ({e['used']}) is not among {e['link_type']}", file=sys.stderr)
        sys.exit(1)
    if j == me and e['used'] != hcomm.LINK_LOCAL:
        print(f"FAIL rank {me}: link to itself is {names(e['used'])}", file=sys.stderr)
        sys.exit(1)
    if j != me and not (e['bandwidth'] > 0 and e['latency'] > 0):
        print(f"FAIL rank {me}: link to {j} has bandwidth {e['bandwidth']}, latency {e['latency']}", file=sys.stderr)
        sys.exit(1)
print(f"OK rank {me}: " + ", ".join(f"{j}:{names(e['used'])}" for j, e in topology[me].items()))
