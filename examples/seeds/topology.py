# Seed sample 8 of /work/shared/seeds/001_7700f6072fd2e7d5.txt (topology_aware_communication): the
# topology query and the grouping of ranks by distance.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/topology.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK.
#  2. Added: the function is called and returns the distances; every rank's distances are gathered with
#     hcomm.allgather and checked: each row has WORLD_SIZE entries, 0 on the diagonal, the matrix is
#     symmetric and "same server" (distance 0) is transitive, so local groups are a partition; exit 1 otherwise.
import os
import sys

import hcomm
import numpy as np

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


def topology_aware_communication():
    """感知通信拓扑以优化通信模式"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)

    # 查询通信拓扑
    topology = hcomm.get_topology()
    print(f"本节点rank: {topology.my_rank}")
    print(f"总节点数: {topology.num_nodes}")
    print(f"本节点到其他节点的距离:")

    # 距离信息：0表示同一主机，>0表示需要经过交换机
    for rank, distance in enumerate(topology.distances):
        if distance == 0:
            print(f"  节点{rank}: 同一主机（HCCS直连）")
        else:
            print(f"  节点{rank}: 跨主机距离{distance}")

    # 根据拓扑信息分组
    # 同一主机内的节点分为一组，跨主机通信作为更高层的通信
    local_group = []
    remote_group = []
    for rank, distance in enumerate(topology.distances):
        if distance == 0:
            local_group.append(rank)
        else:
            remote_group.append(rank)

    print(f"本机组成员: {local_group}")
    print(f"远程组成员: {remote_group}")
    return topology


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    topology = topology_aware_communication()
    n, me = topology.num_nodes, topology.my_rank
    if n != int(os.environ.get("WORLD_SIZE", 1)) or me != int(os.environ.get("RANK", 0)):
        fail(f"my_rank {me} / num_nodes {n} are not RANK / WORLD_SIZE")
    row = np.array(topology.distances, dtype=np.int32)
    if row.shape != (n,) or row[me] != 0:
        fail(f"distances {topology.distances}: want {n} entries and 0 for myself")
    d = hcomm.allgather(row).reshape(n, n)
    if not np.array_equal(d, d.T):
        fail(f"distance matrix is not symmetric:\n{d}")
    same = d == 0
    if not np.array_equal((same.astype(np.int32) @ same.astype(np.int32)) > 0, same):
        fail(f"'same server' is not transitive:\n{d}")
    print(f"OK rank {me}: distance matrix\n{d}")
