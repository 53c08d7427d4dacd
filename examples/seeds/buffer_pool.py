# Seed sample 4 of /work/shared/seeds/001_7700f6072fd2e7d5.txt ("通信资源管理"): a buffer pool
# (manual_buffer_management) and buffers reused in a send loop (buffer_reuse_pattern).
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/buffer_pool.py
# Changes from the seeds' text:
#  1. imports os, sys; the pools live on the process's context (create_context(LOCAL_RANK) first).
#  2. manual_buffer_management: "# ... 通信操作 ..." is one update_buffer of a known array, read back and checked.
#  3. buffer_reuse_pattern: 10000 iterations -> 20, buffer_size 8MB -> 1MB (run time); the undefined
#     gradient_data is defined (iteration i: 1MB of float32 equal to i); ranks pair up (0,1), (2,3), ...: the
#     even rank runs the seeds' loop with dest_rank=1 -> dest_rank=PEER, the odd rank (added) receives each
#     message and checks it; an odd last rank idles (it only joins the world communicator's creation);
#     the pool is destroyed at the end (the seeds leave it; destroy waits for the sends of released buffers).
#  4. Added: the functions are called; exit 1 on a mismatch.
import os
import sys

import hcomm
import numpy as np

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
PEER = RANK ^ 1
ctx = hcomm.create_context(device_id=int(os.environ.get("LOCAL_RANK", 0)))
ITERATIONS = 20
BUFFER_SIZE = 1 * 1024 * 1024
gradient_data = [np.full(BUFFER_SIZE // 4, i, dtype=np.float32) for i in range(ITERATIONS)]


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


# 手动缓冲区管理示例
def manual_buffer_management():
    """手动管理通信缓冲区以优化高频通信场景"""

    # 预分配缓冲区池，大小为10个缓冲区
    # 每个缓冲区大小为4MB，足以容纳常见的通信数据
    # 对于梯度同步场景，通常需要较大的缓冲区来容纳梯度张量
    buffer_size = 4 * 1024 * 1024  # 4MB
    buffer_pool = hcomm.create_buffer_pool(
        num_buffers=10,
        buffer_size=buffer_size,
        memory_type=hcomm.MEMORY_TYPE_DEVICE  # 在设备内存中分配以提高传输效率
    )
    print(f"缓冲区池创建成功: {buffer_pool.num_buffers}个缓冲区")

    # 从缓冲区池申请一个缓冲区
    buffer = buffer_pool.acquire()
    print(f"已申请缓冲区，地址: {buffer.address}, 大小: {buffer.size / 1024:.1f}KB")

    # 使用缓冲区进行通信
    data = np.arange(buffer_size // 4, dtype=np.int32)
    hcomm.update_buffer(buffer, data)
    back = np.zeros_like(data)
    hcomm.memcpy_device_to_host(back, buffer, data.nbytes, ctx.default_stream)
    hcomm.stream_synchronize(ctx.default_stream)
    if not np.array_equal(back, data) or buffer.size != buffer_size:
        fail("pool buffer does not hold the data written")

    # 使用完毕后归还缓冲区
    # 及时归还是保证缓冲区池高效运作的关键
    buffer_pool.release(buffer)
    print("缓冲区已归还到池中")

    # 销毁缓冲区池（通常在程序退出时）
    # 不正确的销毁可能导致内存泄漏
    buffer_pool.destroy()


# 连续通信场景下的缓冲区重用
def buffer_reuse_pattern():
    """高频通信场景下复用缓冲区以减少分配开销"""

    buffer_pool = hcomm.create_buffer_pool(
        num_buffers=4,
        buffer_size=BUFFER_SIZE,  # 1MB
        memory_type=hcomm.MEMORY_TYPE_DEVICE
    )

    # 在训练循环中复用同一个缓冲区
    for iteration in range(ITERATIONS):
        # 获取缓冲区
        buffer = buffer_pool.acquire()

        # 填充要发送的数据
        hcomm.update_buffer(buffer, gradient_data[iteration])

        # 执行通信
        hcomm.isend(buffer, dest_rank=PEER, tag=0)

        # 立即归还以便下次使用
        # 即使通信操作尚未完成，缓冲区也可以被复用
        # hcomm会保证操作的正确性
        buffer_pool.release(buffer)

    buffer_pool.destroy()


def receive_gradients():  # added: the peer of buffer_reuse_pattern
    for iteration in range(ITERATIONS):
        got = np.zeros(BUFFER_SIZE // 4, dtype=np.float32)
        hcomm.recv(got, src_rank=PEER, tag=0)
        if not np.array_equal(got, gradient_data[iteration]):
            fail(f"iteration {iteration}: received data differs from gradient_data[{iteration}]")


if __name__ == "__main__":
    manual_buffer_management()
    if WORLD_SIZE < 2:
        fail("needs at least 2 ranks")
    if PEER >= WORLD_SIZE:
        hcomm.world()
        print(f"rank {RANK}: no peer, idle")
        sys.exit(0)
    if RANK % 2 == 0:
        buffer_reuse_pattern()
    else:
        receive_gradients()
    print(f"OK rank {RANK}")
