# Seed sample 5 of /work/shared/seeds/001_7700f6072fd2e7d5.txt ("事件同步"): event_sync_example and
# stream_wait_another_stream.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/events.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK; np.random.seed(RANK) before the data.
#  2. 2000x2000 -> 300x300 and 1000x1000 -> 300x300 (run time of the host matrix products).
#  3. np.matmul(result, ctx.device_buffer): device memory is not a numpy array (docs/python.md), so after
#     wait_event the device buffer is first copied to a host array on the waiting stream, which is
#     synchronized, and that array is used.
#  4. Added: the functions are called; the copied-back arrays are compared with the data and the products
#     with host products of the original data; exit 1 on mismatch.
import os
import sys

import hcomm
import numpy as np

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
np.random.seed(int(os.environ.get("RANK", 0)))
N = 300


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def event_sync_example():
    """使用事件进行精确的同步控制"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)

    # 创建两个流：计算流和通信流
    compute_stream = hcomm.create_stream(ctx)
    comm_stream = hcomm.create_stream(ctx)

    # 创建事件用于跨流同步
    # 当一个流上的某个操作完成后，可以通过事件通知其他流
    comm_done_event = hcomm.create_event(ctx)

    data = np.random.randn(N, N).astype(np.float32)

    # 在通信流上开始数据传输
    hcomm.memcpy_host_to_device(ctx.device_buffer, data, data.nbytes, comm_stream)
    hcomm.record_event(comm_done_event, comm_stream)

    # 在计算流上开始计算
    # 计算可以立即开始，不需要等待通信完成
    result = data
    for i in range(3):
        result = np.matmul(result, data)

    # 等待通信完成后再执行依赖通信数据的计算
    # 这里使用事件同步，只等待通信完成而不是整个流
    hcomm.wait_event(comm_done_event, stream=compute_stream)
    print("事件等待完成，通信数据已就绪")

    # 现在可以安全地使用通信数据
    device_data = np.zeros_like(data)
    hcomm.memcpy_device_to_host(device_data, ctx.device_buffer, data.nbytes, compute_stream)
    hcomm.stream_synchronize(compute_stream)
    final_result = np.matmul(result, device_data)

    hcomm.stream_synchronize(compute_stream)
    print("所有计算完成")
    if not np.array_equal(device_data, data):
        fail("event_sync_example: the device buffer does not hold data")
    expect = data @ data @ data @ data @ data
    if not np.allclose(final_result, expect, rtol=1e-3, atol=1e-2 * np.abs(expect).max()):
        fail("event_sync_example: final_result differs from data^5")


def stream_wait_another_stream():
    """等待另一个流的特定操作完成"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)
    stream1 = hcomm.create_stream(ctx)
    stream2 = hcomm.create_stream(ctx)

    event = hcomm.create_event(ctx)

    # 在stream1上执行操作
    data1 = np.random.randn(N, N).astype(np.float32)
    hcomm.memcpy_host_to_device(ctx.device_buffer, data1, data1.nbytes, stream1)
    hcomm.record_event(event, stream1)

    # 在stream2上执行其他操作
    data2 = np.random.randn(N, N).astype(np.float32)
    result = np.matmul(data2, data2.T)

    # stream2等待stream1的event完成后才继续执行某些操作
    hcomm.wait_event(event, stream=stream2)

    # 等待stream2上依赖event的操作完成后才执行
    device_data = np.zeros_like(data1)
    hcomm.memcpy_device_to_host(device_data, ctx.device_buffer, data1.nbytes, stream2)
    hcomm.stream_synchronize(stream2)
    dependent_data = np.matmul(result, device_data)
    if not event.query() or not np.array_equal(device_data, data1):
        fail("stream_wait_another_stream: stream2 did not see stream1's copy")
    if not np.allclose(dependent_data, (data2 @ data2.T) @ data1, rtol=1e-4, atol=1e-3):
        fail("stream_wait_another_stream: dependent_data differs")


if __name__ == "__main__":
    event_sync_example()
    stream_wait_another_stream()
    print("OK")
