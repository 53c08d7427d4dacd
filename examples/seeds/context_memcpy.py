# Seed sample 1 of /work/shared/seeds/001_7700f6072fd2e7d5.txt ("使用后…" section): context, stream,
# asynchronous host-to-device copy, stream synchronize.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/context_memcpy.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK (each rank process drives its own NPU under hcsim exec).
#  2. np.random.seed(RANK) before the data, so the check below is reproducible.
#  3. Added at the end: copy ctx.device_buffer back to the host, compare with send_data, exit 1 on mismatch.
import os
import sys

import hcomm
import numpy as np

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
np.random.seed(int(os.environ.get("RANK", 0)))

# 初始化hcomm上下文
# 每个NPU进程需要独立初始化自己的hcomm上下文
# device_id指定当前进程使用的NPU设备编号
# 在单机多卡场景下，不同进程使用不同的device_id
# 在多机场景下，每个节点上的进程也需要正确配置device_id
ctx = hcomm.create_context(device_id=LOCAL_RANK)
print(f"hcomm上下文创建成功，设备ID: {ctx.device_id}")
print(f"可用通信缓冲区大小: {ctx.max_buffer_size / 1024 / 1024:.1f}MB")

# 准备要发送的数据
# 使用float32类型以保证通信精度
send_data = np.random.randn(1024, 1024).astype(np.float32)
print(f"发送数据shape: {send_data.shape}, 内存占用: {send_data.nbytes / 1024:.1f}KB")

# 创建通信流（Stream）
# Stream是异步执行的载体，可以在不等待操作完成的情况下提交新的操作
# 不同的Stream上的操作可以并行执行
stream = hcomm.create_stream(ctx)
print(f"通信流创建成功")

# 执行异步内存拷贝（将数据从主机拷贝到设备）
# 异步拷贝操作立即返回，不等待数据实际传输完成
# 这样可以在数据传输的同时执行其他计算任务
hcomm.memcpy_host_to_device(
    dst=ctx.device_buffer,
    src=send_data,
    size=send_data.nbytes,
    stream=stream
)
print("数据已异步拷贝到设备")

# 等待所有操作完成
# 同步调用会阻塞直到Stream上的所有操作完成
hcomm.stream_synchronize(stream)
print("所有操作已完成")

# --- check (added) ---
back = np.zeros_like(send_data)
hcomm.memcpy_device_to_host(back, ctx.device_buffer, send_data.nbytes, stream)
hcomm.stream_synchronize(stream)
if not np.array_equal(back, send_data):
    print("FAIL: device_buffer does not hold send_data", file=sys.stderr)
    sys.exit(1)
print("OK: device_buffer holds send_data")
