# The seeds' performance table ("性能对比与优化效果", /work/shared/seeds/001_7700f6072fd2e7d5.txt: 4 Ascend 910
# over HCCS, 1 MB messages), re-measured with the seeds' benchmark program (benchmark_communication) and
# its variants, one configuration per run:
#   hcsim exec --topology atlas800-910 -n 4 -- /usr/bin/python3 examples/seeds/perf_table.py ROW
# ROW: sync | async | streams | buffers | hierarchical. Ranks pair up (0 -> 1, 2 -> 3) for the p2p rows;
# the hierarchical row is a 1 MiB all-reduce over the 4 ranks. Rank 0 prints one line:
#   ROW latency_ms bandwidth_utilisation overlap
# latency: per message (per all-reduce), from time.time() (the simulated clock under hcsim exec);
# bandwidth utilisation: bytes / latency over the HCCS link's bandwidth (get_topology().links), for the
# all-reduce its bus bandwidth 2 (n-1)/n bytes / latency over the sum of the rank's links; overlap: the same loop again with a device
# compute of the loop's own duration per message on a compute stream (the message's own stream for sync
# and async, which have one stream), overlap = (T_comm + T_compute - T_both) / min(T_comm, T_compute).
# docs/seeds-performance.md puts the results beside the seeds' table. Changes from the seeds' program:
#  1. the seeds' benchmark sends from every rank to rank 1 and receives from rank 0 in one process; here
#     even ranks send and odd ranks receive (dest_rank / src_rank = the partner);
#  2. device_id=0 -> LOCAL_RANK; 20 iterations (not 100) after one warm-up; np.random.randn(msg_size // 4, 1)
#     kept; the received data is checked against the sender's;
#  3. the other rows are not programs in the seeds (only names in the table): their definitions are ours,
#     written as above.
import os
import sys
import time

import hcomm
import numpy as np

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
LOCAL_RANK = int(os.environ["LOCAL_RANK"])
PEER = RANK ^ 1
MSG = 1 << 20
ITERS = 20


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


def p2p_loop(row, ctx, streams, compute_ns=0, compute_stream=None):
    """ITERS messages of MSG bytes from the even rank to the odd one; returns (seconds per message, last data)."""
    np.random.seed(7)
    send_data = np.random.randn(MSG // 4, 1).astype(np.float32)
    recv_data = np.zeros_like(send_data)
    bufs = None
    if row in ("streams", "buffers"):
        if row == "buffers":  # preallocated device buffers from a pool (no allocation per message)
            pool = hcomm.create_buffer_pool(8, MSG, hcomm.MEMORY_TYPE_DEVICE)
            bufs = [pool.acquire() for _ in range(2)]
        else:
            bufs = [hcomm.create_buffer(MSG, ctx) for _ in range(2)]
        for b in bufs:
            hcomm.update_buffer(b, send_data, streams[0])
        hcomm.stream_synchronize(streams[0])
    hcomm.barrier()
    start = time.time()
    for i in range(ITERS):
        if compute_ns:
            hcomm.launch_compute(compute_stream, compute_ns)
            if row == "sync":  # a synchronous program waits for its compute, then communicates
                hcomm.stream_synchronize(compute_stream)
        if row == "sync":
            if RANK % 2 == 0:
                hcomm.send(send_data, dest_rank=PEER, tag=0)
            else:
                hcomm.recv(recv_data, src_rank=PEER, tag=0)
        elif row == "async":
            if RANK % 2 == 0:
                hcomm.isend(send_data, dest_rank=PEER, tag=0, stream=streams[0])
            else:
                hcomm.irecv(recv_data, src_rank=PEER, tag=0, stream=streams[0])
            hcomm.stream_synchronize(streams[0])
        else:  # two streams, two messages in flight
            s = streams[i % 2]
            if RANK % 2 == 0:
                hcomm.isend(bufs[i % 2], dest_rank=PEER, tag=i % 2, stream=s)
            else:
                hcomm.irecv(bufs[i % 2], src_rank=PEER, tag=i % 2, stream=s)
            if i % 2 == 1:
                hcomm.stream_synchronize(streams[0])
                hcomm.stream_synchronize(streams[1])
    for s in streams:
        hcomm.stream_synchronize(s)
    if compute_stream is not None:
        hcomm.stream_synchronize(compute_stream)
    elapsed = (time.time() - start) / ITERS
    if RANK % 2 == 1:
        got = recv_data
        if bufs is not None:
            got = np.zeros_like(send_data)
            hcomm.memcpy_device_to_host(got, bufs[1], MSG, streams[0])
            hcomm.stream_synchronize(streams[0])
        if not np.array_equal(got, send_data):
            fail(f"{row}: received data differs from the sender's")
    return elapsed


def allreduce_loop(ctx, stream, compute_ns=0, compute_stream=None):
    data = np.full(MSG // 4, RANK + 1, dtype=np.float32)
    buf = hcomm.create_buffer(MSG, ctx)
    hcomm.update_buffer(buf, data, stream)
    hcomm.stream_synchronize(stream)
    hcomm.barrier()
    start = time.time()
    for _ in range(ITERS):
        if compute_ns:
            hcomm.launch_compute(compute_stream, compute_ns)
        hcomm.allreduce(buf, op=hcomm.REDUCE_SUM, stream=stream)
        hcomm.stream_synchronize(stream)
    if compute_stream is not None:
        hcomm.stream_synchronize(compute_stream)
    elapsed = (time.time() - start) / ITERS
    out = np.zeros_like(data)
    hcomm.memcpy_device_to_host(out, buf, MSG, stream)
    hcomm.stream_synchronize(stream)
    want = float(WORLD * (WORLD + 1) // 2) * float(WORLD) ** (ITERS - 1)  # in place: sum, then x WORLD per call
    if not np.all(out == np.float32(want)):
        fail(f"hierarchical: all-reduce result {out[0]} is not {want}")
    return elapsed


def main():
    row = sys.argv[1] if len(sys.argv) > 1 else ""
    if row not in ("sync", "async", "streams", "buffers", "hierarchical"):
        fail("usage: perf_table.py sync|async|streams|buffers|hierarchical")
    if WORLD != 4:
        fail("the seeds' table is for 4 NPUs: run with -n 4")
    if row == "buffers":
        cfg = hcomm.CommConfig()
        cfg.buffer_size = 64 * 1024 * 1024
        cfg.send_buffer_size = 64 * 1024 * 1024
        cfg.recv_buffer_size = 64 * 1024 * 1024
        cfg.buffer_pool_size = 8
        hcomm.set_config(cfg)
    ctx = hcomm.create_context(device_id=LOCAL_RANK)
    streams = [hcomm.create_stream(ctx), hcomm.create_stream(ctx)]
    compute = hcomm.create_stream(ctx)
    topo = hcomm.get_topology()
    if row == "hierarchical":
        # The all-reduce uses every link of the rank (the 4 NPUs are a full HCCS mesh): their sum.
        link_bw = sum(topo.links[r]["bandwidth_Bps"] if isinstance(topo.links[r], dict) else topo.links[r].bandwidth_Bps
                      for r in range(WORLD) if r != RANK)
        allreduce_loop(ctx, streams[0])  # warm-up: route decisions, first use
        t = allreduce_loop(ctx, streams[0])
        both = allreduce_loop(ctx, streams[0], int(t * 1e9), compute)
        util = 2 * (WORLD - 1) / WORLD * MSG / t / link_bw
    else:
        link = topo.links[PEER]
        link_bw = link["bandwidth_Bps"] if isinstance(link, dict) else link.bandwidth_Bps
        p2p_loop(row, ctx, streams)  # warm-up
        t = p2p_loop(row, ctx, streams)
        same_stream = row in ("sync", "async")
        both = p2p_loop(row, ctx, streams, int(t * 1e9), streams[0] if same_stream else compute)
        util = MSG / t / link_bw
    overlap = max(0.0, min(1.0, (2 * t - both) / t))
    if RANK == 0:
        print(f"{row} {t * 1e3:.3f} {util:.3f} {overlap:.3f}")


if __name__ == "__main__":
    main()
