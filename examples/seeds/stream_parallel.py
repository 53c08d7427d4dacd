# Seed sample 3 of /work/shared/seeds/001_7700f6072fd2e7d5.txt (stream_parallel_example): a copy on a
# communication stream while the host computes, two streams synchronized.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/stream_parallel.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK.
#  2. 5000x5000 -> 500x500 (run time of the five host matrix products), np.random.seed(RANK) before the data.
#  3. Added: the function is called; comm_buffer is copied back and compared with data, exit 1 on mismatch.
import os
import sys

import hcomm
import numpy as np

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
np.random.seed(int(os.environ.get("RANK", 0)))


def stream_parallel_example():
    """使用多流实现通信与计算并行"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)

    # 创建计算流和通信流
    # 分离计算和通信到不同的流可以实现更好的并行性
    compute_stream = hcomm.create_stream(ctx)
    comm_stream = hcomm.create_stream(ctx)

    # 准备数据
    data = np.random.randn(500, 500).astype(np.float32)

    # 在通信流上准备通信数据
    comm_buffer = hcomm.create_buffer(data.nbytes)
    hcomm.memcpy_host_to_device(comm_buffer, data, data.nbytes, comm_stream)

    # 同时在计算流上执行本地计算
    # 计算和通信使用不同的流，可以并行执行
    result = data
    for i in range(5):
        # 每次矩阵乘法都在计算流上异步执行
        result = np.matmul(result, data)

    # 等待两个流都完成
    hcomm.stream_synchronize(compute_stream)
    print("计算流执行完成")

    hcomm.stream_synchronize(comm_stream)
    print("通信流执行完成")
    return data, comm_buffer, comm_stream


if __name__ == "__main__":
    data, comm_buffer, stream = stream_parallel_example()
    back = np.zeros_like(data)
    hcomm.memcpy_device_to_host(back, comm_buffer, data.nbytes, stream)
    hcomm.stream_synchronize(stream)
    if not np.array_equal(back, data):
        print("FAIL: comm_buffer does not hold data", file=sys.stderr)
        sys.exit(1)
    print("OK: comm_buffer holds data")
