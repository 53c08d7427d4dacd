# Seed sample 6 of /work/shared/seeds/001_7700f6072fd2e7d5.txt ("通信性能调优"): configure_communication
# and benchmark_communication.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/config_benchmark.py
# Changes from the seeds' text:
#  1. imports os, sys; device_id=0 -> device_id=LOCAL_RANK.
#  2. configure_communication runs before any communication: the world communicator is created at the
#     first communication call and takes set_config's configuration (docs/python.md#world-communicator).
#  3. benchmark_communication: every rank did isend to rank 1 and irecv from rank 0 on one stream (rank 0
#     would receive from itself, rank 1 send to itself); ranks pair up (0,1), (2,3), ...: the even rank
#     sends (dest_rank=1 -> PEER), the odd rank receives (src_rank=0 -> PEER); an odd last rank idles (it
#     only joins the world communicator's creation). num_iterations 100 -> 20; the sizes 4 KiB, 64 KiB, 1 MiB.
#  4. (none: time.time() is kept; under hcsim exec it reads the simulated clock, docs/exec.md#time)
#  5. bandwidth = msg_size / avg_latency / 1e6 with avg_latency in ms is not MB/s; -> msg_size / (avg_latency / 1e3) / 1e6.
#  6. np.random.seed before the data; added checks: the configuration in effect (hcomm.get_config()) has
#     the values set, the receiver's last message equals the sender's data, latencies are positive; exit 1 otherwise.
import os
import sys

import hcomm
import numpy as np

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
PEER = RANK ^ 1


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


# 通信配置示例
def configure_communication():
    """配置通信参数以优化性能"""

    # 获取默认配置
    config = hcomm.CommConfig()

    # 设置通信模式
    # AUTO模式根据数据量自动选择最优模式
    # SMALL_MSG模式优化小消息传输，减少延迟
    # LARGE_MSG模式优化大消息传输，提高带宽利用率
    config.mode = hcomm.COMM_MODE_AUTO

    # 设置缓冲区相关参数
    # 较大的缓冲区可以减少缓冲区分配的频率，提高高频通信效率
    # 但过大的缓冲区会占用过多内存，需要根据可用内存调整
    config.send_buffer_size = 16 * 1024 * 1024   # 16MB发送缓冲区
    config.recv_buffer_size = 16 * 1024 * 1024   # 16MB接收缓冲区
    config.buffer_pool_size = 8                   # 缓冲区池大小

    # 设置超时时间
    # 对于大集群或网络拥塞场景，可能需要增加超时时间
    config.timeout_ms = 60000  # 60秒超时

    # 设置重试次数
    # 网络不稳定时，增加重试次数可以提高通信成功率
    config.max_retries = 3

    # 应用配置
    hcomm.set_config(config)
    print("通信配置已应用")


# 性能测试函数
def benchmark_communication(msg_size, num_iterations=20):
    """测试不同消息大小下的通信性能"""

    ctx = hcomm.create_context(device_id=LOCAL_RANK)

    np.random.seed(msg_size)
    send_data = np.random.randn(msg_size // 4, 1).astype(np.float32)
    recv_data = np.zeros_like(send_data)

    stream = hcomm.create_stream(ctx)

    import time
    start_time = time.time()

    for i in range(num_iterations):
        if RANK % 2 == 0:
            hcomm.isend(send_data, dest_rank=PEER, tag=0, stream=stream)
        else:
            hcomm.irecv(recv_data, src_rank=PEER, tag=0, stream=stream)
        hcomm.stream_synchronize(stream)

    end_time = time.time()

    avg_latency = (end_time - start_time) / num_iterations * 1000  # ms
    bandwidth = msg_size / (avg_latency / 1e3) / 1e6  # MB/s

    print(f"消息大小: {msg_size / 1024:.1f}KB, 平均延迟: {avg_latency:.2f}ms, 带宽: {bandwidth:.1f}MB/s")
    if RANK % 2 == 1 and not np.array_equal(recv_data, send_data):
        fail(f"{msg_size} bytes: received data differs from the sender's")
    if not avg_latency > 0:
        fail(f"{msg_size} bytes: latency {avg_latency} ms is not positive")
    return avg_latency, bandwidth


if __name__ == "__main__":
    configure_communication()
    if WORLD_SIZE < 2:
        fail("needs at least 2 ranks")
    if PEER >= WORLD_SIZE:
        hcomm.world()
        print(f"rank {RANK}: no peer, idle")
        sys.exit(0)
    cfg = hcomm.get_config()  # creates the world communicator with the configuration
    got = (cfg.mode, cfg.send_buffer_size, cfg.recv_buffer_size, cfg.buffer_pool_size, cfg.timeout_ms, cfg.retry_count)
    if got != (hcomm.COMM_MODE_AUTO, 16 << 20, 16 << 20, 8, 60000, 3):
        fail(f"configuration in effect {got} is not the one set")
    for size in (4 * 1024, 64 * 1024, 1024 * 1024):
        benchmark_communication(size)
    print(f"OK rank {RANK}")
