#!/usr/bin/python3
"""One rank of the Python module's end-to-end test under `hcsim exec` (tests/CMakeLists.txt runs it
on a2-2node, 4 ranks over 2 servers): every collective on numpy arrays and on device buffers, the
awaitable isend/irecv in a ring, blocking send/recv, a split communicator and the topology, each
result compared with the value computed on the host from the ranks' known inputs. Exits 1 with a
message on the first mismatch."""
import asyncio
import os
import sys

import numpy as np

import hcomm

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


def same(got, want, what):
    if os.environ.get("EXEC_TRACE"):
        print(f"rank {RANK}: {what}", flush=True)
    if got is None or got.shape != want.shape or not np.array_equal(got, want):
        fail(f"{what}: got {got}, want {want}")


def data(r, count, dtype=np.float32):  # rank r's input: known to every rank
    return ((np.arange(count) * 7 + r * 13) % 31).astype(dtype)


cfg = hcomm.CommConfig(timeout_ms=20000)
hcomm.set_config(cfg)
ctx = hcomm.create_context(int(os.environ["LOCAL_RANK"]))
w = hcomm.world()
if (w.rank, w.size) != (RANK, N):
    fail(f"world is rank {w.rank} of {w.size}")
if hcomm.get_config().timeout_ms != 20000:
    fail("set_config's timeout_ms is not in effect")

C = 1000
inputs = [data(r, C) for r in range(N)]
x = inputs[RANK]

# numpy collectives
same(hcomm.allreduce(x), sum(inputs), "allreduce sum")
same(hcomm.allreduce(x, op=hcomm.REDUCE_MAX), np.max(inputs, axis=0), "allreduce max")
same(hcomm.allreduce(x, op=hcomm.REDUCE_MIN), np.min(inputs, axis=0), "allreduce min")
same(hcomm.allreduce(x.astype(np.int64) + 1, op=hcomm.REDUCE_PROD), np.prod([i.astype(np.int64) + 1 for i in inputs], axis=0),
     "allreduce prod int64")
for t in (np.int8, np.int16, np.int32, np.float16, np.float64):
    same(hcomm.allreduce(data(RANK, 64, t)), sum(data(r, 64, t) for r in range(N)), f"allreduce {np.dtype(t).name}")
same(hcomm.allgather(x), np.concatenate(inputs), "allgather")
big = [data(r, C * N) for r in range(N)]
same(hcomm.reduce_scatter(big[RANK]), sum(big)[RANK * C:(RANK + 1) * C], "reduce_scatter")
got = hcomm.alltoall(big[RANK])
same(got, np.concatenate([big[j][RANK * C:(RANK + 1) * C] for j in range(N)]), "alltoall")
root = N - 1
b = x.copy()
hcomm.broadcast(b, root=root)
same(b, inputs[root], "broadcast")
r = hcomm.reduce(x, root=1)
if RANK == 1:
    same(r, sum(inputs), "reduce at root")
recv = np.zeros(C, np.float32)
hcomm.scatter(big[RANK], recv, root=2 % N)
same(recv, big[2 % N][RANK * C:(RANK + 1) * C], "scatter")
hcomm.barrier()

# device buffers, stream-ordered
s = hcomm.create_stream(ctx)
src, dst = hcomm.create_buffer(x.nbytes), hcomm.create_buffer(x.nbytes * N)
hcomm.memcpy_host_to_device(src, x, stream=s)
hcomm.allreduce(src, stream=s)  # in place
hcomm.allgather(src, dst, stream=s)
out = np.zeros(C * N, np.float32)
hcomm.memcpy_device_to_host(out, dst, stream=s)
hcomm.barrier(stream=s)
hcomm.stream_synchronize(s)
same(out, np.tile(sum(inputs), N), "device allreduce + allgather")


# awaitable ring: send to the right, receive from the left
async def ring():
    right, left = (RANK + 1) % N, (RANK - 1) % N
    got = np.zeros(C, np.float32)
    rq = hcomm.irecv(got, src_rank=left, tag=7)
    sq = hcomm.isend(x, dest_rank=right, tag=7)
    res, _ = await asyncio.gather(rq, sq)
    return res


same(asyncio.run(ring()), inputs[(RANK - 1) % N], "ring isend/irecv (await)")
req = hcomm.irecv(np.zeros(C, np.float32), src_rank=(RANK - 1) % N, tag=8)
hcomm.isend(x * 2, dest_rank=(RANK + 1) % N, tag=8).wait()
same(req.wait(), inputs[(RANK - 1) % N] * 2, "irecv.wait")

# blocking pairs, then a device buffer send
peer = RANK ^ 1
if peer < N:
    if RANK % 2 == 0:
        hcomm.send(x, dest_rank=peer, tag=9)
    else:
        same(hcomm.recv(np.zeros(C, np.float32), src_rank=peer, tag=9), inputs[peer], "blocking send/recv")
    buf = hcomm.create_buffer(x.nbytes)
    if RANK % 2 == 0:
        hcomm.update_buffer(buf, x)
        hcomm.send(buf, dest_rank=peer, tag=10)
    else:
        buf.dtype = hcomm.DATA_TYPE_FP32
        hcomm.recv(buf, src_rank=peer, tag=10)
        back = np.zeros(C, np.float32)
        hcomm.memcpy_device_to_host(back, buf, stream=ctx.default_stream)
        hcomm.stream_synchronize(ctx.default_stream)
        same(back, inputs[peer], "device buffer send/recv")

# a sub-communicator: even and odd ranks
sub = w.split(RANK % 2, RANK)
members = [r for r in range(N) if r % 2 == RANK % 2]
if (sub.rank, sub.size) != (members.index(RANK), len(members)):
    fail(f"split: rank {sub.rank} of {sub.size}")
same(hcomm.allreduce(x, comm=sub), sum(inputs[r] for r in members), "allreduce on the split communicator")

# errors carry the library's code
try:
    hcomm.broadcast(x.copy(), root=N)
    fail("broadcast with root N did not raise")
except hcomm.HcommError as e:
    if e.code != hcomm.E_PARA:
        fail(f"broadcast root N: code {e.code}")

t = hcomm.get_topology()
if t.distances[RANK] != 0 or len(t.distances) != N:
    fail(f"topology distances {t.distances}")
if not hcomm.wtime() > 0:
    fail("wtime is not positive under hcsim exec")
hcomm.barrier()
print(f"OK rank {RANK}")
