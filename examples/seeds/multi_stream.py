# Seed sample 7 of /work/shared/seeds/001_7700f6072fd2e7d5.txt (multi_stream_optimization): a copy on a
# communication stream overlapped with host computation.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/multi_stream.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK; np.random.seed(RANK) before the data.
#  2. 10000x10000 -> 300x300 (the seeds' 400 MB array and ten 10000^3 products take minutes on a host).
#  3. Added: the function is called; comm_buffer is copied back and compared with data, exit 1 on mismatch.
import os
import sys

import hcomm
import numpy as np

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
np.random.seed(int(os.environ.get("RANK", 0)))


def multi_stream_optimization():
    """使用多流实现通信与计算重叠"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)

    # 创建计算流和通信流
    compute_stream = hcomm.create_stream(ctx)
    comm_stream = hcomm.create_stream(ctx)

    data = np.random.randn(300, 300).astype(np.float32)

    # 在计算流上执行计算
    # 同时在通信流上执行通信
    # 两个流上的操作可以并行执行

    # 通信流：准备发送数据
    comm_buffer = hcomm.create_buffer(data.nbytes)
    hcomm.memcpy_host_to_device(comm_buffer, data, data.nbytes, comm_stream)

    # 计算流：执行本地计算（与通信并行）
    # 这里使用多个小矩阵乘法模拟计算过程
    result = data
    for i in range(10):
        result = np.matmul(result, data)

    # 等待两个流都完成
    hcomm.stream_synchronize(compute_stream)
    hcomm.stream_synchronize(comm_stream)

    print("计算和通信都已完成")
    return data, comm_buffer, comm_stream


if __name__ == "__main__":
    data, comm_buffer, stream = multi_stream_optimization()
    back = np.zeros_like(data)
    hcomm.memcpy_device_to_host(back, comm_buffer, data.nbytes, stream)
    hcomm.stream_synchronize(stream)
    if not np.array_equal(back, data):
        print("FAIL: comm_buffer does not hold data", file=sys.stderr)
        sys.exit(1)
    print("OK: comm_buffer holds data")
