# Seed sample 2 of /work/shared/seeds/001_7700f6072fd2e7d5.txt ("点对点通信与流处理"): asynchronous
# send/recv with await (send_recv_example) and blocking send/recv (blocking_send_recv).
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/p2p_async.py
# Changes from the seeds' text:
#  1. imports os, sys; the undefined send_ctx / recv_ctx are one context, ctx = create_context(LOCAL_RANK).
#  2. Ranks pair up (0,1), (2,3), ...: the even rank of a pair runs the seeds' sender part (dest_rank=1 ->
#     dest_rank=PEER), the odd rank the receiver part (src_rank=0 -> src_rank=PEER); the seeds run both
#     halves in one process, which would send to and receive from the wrong ranks. An odd last rank idles
#     (it only joins the world communicator's creation).
#  3. np.random.seed(SEED) before each random array so the receiver can compute what it expects.
#  4. blocking_send_recv: 5000x5000 -> 500x500 (run time), and tag 1 (the async part uses tag 0).
#  5. Added: the functions are called (asyncio.run for the coroutine), the received arrays are compared with
#     the expected ones, exit 1 on mismatch.
import asyncio
import os
import sys

import hcomm
import numpy as np

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
PEER = RANK ^ 1
SENDER = RANK % 2 == 0
SEED = 1000 + (RANK & ~1)  # the same on both ranks of a pair
ctx = send_ctx = recv_ctx = hcomm.create_context(device_id=LOCAL_RANK)


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


# 点对点通信示例
async def send_recv_example():
    """发送方和接收方之间的点对点通信"""

    if SENDER:
        # 发送方准备数据
        # 使用较大的矩阵来模拟真实的数据传输场景
        np.random.seed(SEED)
        send_data = np.random.randn(1000, 1000).astype(np.float32)

        # 创建发送流
        # Stream是异步操作的载体，不同Stream上的操作可以并行
        send_stream = hcomm.create_stream(send_ctx)

        # 异步发送数据
        # 发送操作立即返回，不等待接收方确认
        # dest_rank指定目标进程的rank编号
        # tag用于区分不同类型的消息，接收方可以通过tag选择性接收
        send_future = hcomm.isend(
            send_data,
            dest_rank=PEER,
            tag=0,
            stream=send_stream
        )
        print("发送操作已提交")

        # 在发送的同时可以进行其他计算
        # 这里模拟一些计算操作
        computation_result = np.matmul(send_data, send_data.T)
        print("本地计算完成")

        # 等待发送操作完成
        # 使用await可以异步等待，不阻塞其他任务
        await send_future
        print("数据发送完成")
        return None

    # 接收方准备接收缓冲区
    recv_data = np.zeros((1000, 1000), dtype=np.float32)

    # 创建接收流
    recv_stream = hcomm.create_stream(recv_ctx)

    # 异步接收数据
    recv_future = hcomm.irecv(
        recv_data,
        src_rank=PEER,
        tag=0,
        stream=recv_stream
    )
    print("接收操作已提交")

    # 等待接收完成
    await recv_future
    print(f"接收到数据，数据形状: {recv_data.shape}")
    return recv_data


def blocking_send_recv():
    """同步阻塞模式的点对点通信"""

    np.random.seed(SEED + 1)
    send_data = np.random.randn(500, 500).astype(np.float32)
    recv_data = np.zeros((500, 500), dtype=np.float32)

    if SENDER:
        # 同步发送：会阻塞直到数据发送完成
        hcomm.send(
            send_data,
            dest_rank=PEER,
            tag=1
        )
        print("同步发送完成")
    else:
        # 同步接收：会阻塞直到数据接收完成
        hcomm.recv(
            recv_data,
            src_rank=PEER,
            tag=1
        )
        print("同步接收完成")
        if not np.array_equal(recv_data, send_data):
            fail("blocking recv: data differs from what the peer sent")


if __name__ == "__main__":
    if WORLD_SIZE < 2:
        fail("needs at least 2 ranks")
    if PEER >= WORLD_SIZE:
        hcomm.world()  # the world communicator's creation involves every rank
        print(f"rank {RANK}: no peer, idle")
        sys.exit(0)
    got = asyncio.run(send_recv_example())
    if not SENDER:
        np.random.seed(SEED)
        expect = np.random.randn(1000, 1000).astype(np.float32)
        if not np.array_equal(got, expect):
            fail("irecv: data differs from what the peer sent")
    blocking_send_recv()
    print(f"OK rank {RANK}")
