#!/usr/bin/python3
"""One rank of the Python module's test of the -v collectives, batch send/recv, the failover calls on
a healthy communicator, RDMA and bandwidth reservation under `hcsim exec` (tests/CMakeLists.txt runs
it on a2-2node, 4 ranks over 2 servers). Every result is compared with the value computed here on
the host from the ranks' known inputs; bad arguments must raise HcommError(E_PARA) or TypeError.
Exits 1 with a message on the first mismatch."""
import os
import sys

import numpy as np

import hcomm

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


def same(got, want, what):
    if got is None or got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        fail(f"{what}: got {got}, want {want}")


def data(r, count, dtype=np.float32, salt=0):  # rank r's input: known to every rank
    return ((np.arange(count) * 7 + r * 13 + salt * 5) % 31).astype(dtype)


def raises(code, fn, what):
    """fn() must raise HcommError(code), or TypeError when code is TypeError."""
    try:
        fn()
    except hcomm.HcommError as e:
        if code is TypeError or e.code != code:
            fail(f"{what}: HcommError {e.code} ({e}), want {code}")
        return
    except TypeError as e:
        if code is not TypeError:
            fail(f"{what}: TypeError ({e}), want HcommError {code}")
        return
    fail(f"{what}: no error")


hcomm.set_config(hcomm.CommConfig(timeout_ms=20000))
ctx = hcomm.create_context(int(os.environ["LOCAL_RANK"]))
w = hcomm.world()
s = hcomm.create_stream(ctx)

# ---- allgatherv: rank r contributes counts[r] = 3r + 2 elements
counts = [3 * r + 2 for r in range(N)]
inputs = [data(r, counts[r]) for r in range(N)]
same(hcomm.allgatherv(inputs[RANK], counts), np.concatenate(inputs), "allgatherv packed")
# blocks in reverse order with gaps of 16 elements each: a given recv keeps its values in the gaps
displs = [(N - 1 - r) * 16 for r in range(N)]
want = np.full(N * 16, -1, np.float32)
for r in range(N):
    want[displs[r]:displs[r] + counts[r]] = inputs[r]
got = hcomm.allgatherv(inputs[RANK], counts, displs, recv=np.full(N * 16, -1, np.float32))
same(got, want, "allgatherv with displacements and gaps")
# int64 on device buffers, stream-ordered
x64 = [data(r, counts[r], np.int64, 1) for r in range(N)]
sb, rb = hcomm.create_buffer(x64[RANK].nbytes), hcomm.create_buffer(8 * sum(counts))
hcomm.memcpy_host_to_device(sb, x64[RANK], stream=s)
hcomm.allgatherv(sb, counts, recv=rb, stream=s, dtype=hcomm.DATA_TYPE_INT64)
out = np.zeros(sum(counts), np.int64)
hcomm.memcpy_device_to_host(out, rb, stream=s)
hcomm.stream_synchronize(s)
same(out, np.concatenate(x64), "allgatherv device int64")

# ---- reduce_scatterv: block r is rcounts[r] elements; rank 1's block is empty
rcounts = [(4, 0, 7, 5)[r % 4] for r in range(N)]
total = sum(rcounts)
sends = [data(r, total, np.int32, 2) for r in range(N)]
off = [sum(rcounts[:r]) for r in range(N)]
mine = slice(off[RANK], off[RANK] + rcounts[RANK])
same(hcomm.reduce_scatterv(sends[RANK], rcounts), sum(sends)[mine], "reduce_scatterv sum (packed)")
same(hcomm.reduce_scatterv(sends[RANK], rcounts, op=hcomm.REDUCE_MAX), np.max(sends, axis=0)[mine], "reduce_scatterv max")
# displacements: block r at 10 * (N - 1 - r) of a 10 * N send
sdispl = [10 * (N - 1 - r) for r in range(N)]
wide = [data(r, 10 * N, np.float64, 3) for r in range(N)]
blk = slice(sdispl[RANK], sdispl[RANK] + rcounts[RANK])
same(hcomm.reduce_scatterv(wide[RANK], rcounts, sdispl), sum(wide)[blk], "reduce_scatterv with displacements")
# device
sb, rb = hcomm.create_buffer(wide[RANK].nbytes), hcomm.create_buffer(max(1, 8 * rcounts[RANK]))
hcomm.update_buffer(sb, wide[RANK], stream=s)
hcomm.reduce_scatterv(sb, rcounts, sdispl, recv=rb, stream=s)
out = np.zeros(rcounts[RANK], np.float64)
hcomm.memcpy_device_to_host(out, rb, size=out.nbytes, stream=s)
hcomm.stream_synchronize(s)
same(out, sum(wide)[blk], "reduce_scatterv device float64")


# ---- alltoallv: rank i sends c(i, j) elements to rank j, taken at its packed offsets
def c(i, j):
    return (i + 2 * j) % 4 + 1


def a2a_send(i):
    return data(i, sum(c(i, j) for j in range(N)), np.int16, 4)


sc = [c(RANK, j) for j in range(N)]
rc = [c(j, RANK) for j in range(N)]
want = np.concatenate([a2a_send(j)[sum(c(j, q) for q in range(RANK)):][:c(j, RANK)] for j in range(N)])
same(hcomm.alltoallv(a2a_send(RANK), sc, rc), want, "alltoallv packed")
# receive blocks in reverse order, 8 apart, into a given array (gaps keep 99)
rd = [8 * (N - 1 - j) for j in range(N)]
want2 = np.full(8 * N, 99, np.int16)
for j in range(N):
    want2[rd[j]:rd[j] + rc[j]] = want[sum(rc[:j]):sum(rc[:j]) + rc[j]]
same(hcomm.alltoallv(a2a_send(RANK), sc, rc, recv_displs=rd, recv=np.full(8 * N, 99, np.int16)), want2, "alltoallv displacements")
sb, rb = hcomm.create_buffer(2 * sum(sc)), hcomm.create_buffer(2 * 8 * N)
hcomm.update_buffer(sb, a2a_send(RANK), stream=s)
hcomm.update_buffer(rb, np.full(8 * N, 99, np.int16), stream=s)
hcomm.alltoallv(sb, sc, rc, recv_displs=rd, recv=rb, stream=s)
out = np.zeros(8 * N, np.int16)
hcomm.memcpy_device_to_host(out, rb, stream=s)
hcomm.stream_synchronize(s)
same(out, want2, "alltoallv device")


# ---- batch send/recv: every rank sends a distinct message to every other rank and receives from each
def msg(src, dst):
    return data(src, 16 + 4 * dst, np.float32, 10 + dst)


peers = [p for p in range(N) if p != RANK]
items = []
for p in reversed(peers):  # any order: the library orders sends and receives
    items.append((hcomm.RECV, np.zeros(16 + 4 * RANK, np.float32), p))
    items.append((hcomm.SEND, msg(RANK, p), p))
got = hcomm.batch_send_recv(items)
if len(got) != len(peers):
    fail(f"batch_send_recv returned {len(got)} arrays")
for arr, p in zip(got, reversed(peers)):
    same(arr, msg(p, RANK), f"batch_send_recv from {p}")
# device buffers: a pair exchange with the rank across the servers
q = (RANK + N // 2) % N
out_b, in_b = hcomm.create_buffer(4 * 64), hcomm.create_buffer(4 * 64)
hcomm.update_buffer(out_b, data(RANK, 64, np.int32, 20), stream=s)
in_b.dtype = hcomm.DATA_TYPE_INT32
if hcomm.batch_send_recv([(hcomm.SEND, out_b, q), (hcomm.RECV, in_b, q)], stream=s) is not None:
    fail("batch_send_recv on device buffers returned something")
back = np.zeros(64, np.int32)
hcomm.memcpy_device_to_host(back, in_b, stream=s)
hcomm.stream_synchronize(s)
same(back, data(q, 64, np.int32, 20), "batch_send_recv device")

# ---- bad arguments: raised before anything is posted (no rank waits for the others)
x = inputs[RANK]
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(x, counts[:-1]), "allgatherv: counts of the wrong length")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(x, [-1] + counts[1:]), "allgatherv: a negative count")
raises(TypeError, lambda: hcomm.allgatherv(x, ["a"] * N), "allgatherv: counts not integers")
raises(TypeError, lambda: hcomm.allgatherv(x, 5), "allgatherv: counts not a sequence")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(np.zeros(counts[RANK] + 1, np.float32), counts), "allgatherv: send of the wrong size")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(x, counts, recv=np.zeros(sum(counts) - 1, np.float32)), "allgatherv: recv too small")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(x, counts, recv=np.zeros(sum(counts), np.int32)), "allgatherv: recv of another dtype")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(sb, counts), "allgatherv: device send without recv")
raises(hcomm.E_PARA, lambda: hcomm.allgatherv(x, counts, [2**64 - 1] * N), "allgatherv: displacement overflow")
raises(hcomm.E_PARA, lambda: hcomm.reduce_scatterv(sends[RANK][:-1], rcounts), "reduce_scatterv: send too small")
raises(hcomm.E_PARA, lambda: hcomm.alltoallv(a2a_send(RANK), sc, rc, recv=np.zeros(1, np.int16)), "alltoallv: recv too small")
raises(TypeError, lambda: hcomm.allgatherv(x, counts, comm=5), "allgatherv: comm not a Comm")
raises(TypeError, lambda: hcomm.allgatherv(x, counts, stream="s"), "allgatherv: stream not a Stream")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.SEND, x, RANK)]), "batch: send to self")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(2, x, peers[0])]), "batch: type neither SEND nor RECV")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.SEND, x)]), "batch: two fields")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.SEND, x, -1)]), "batch: negative rank")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.SEND, x, peers[0]), (hcomm.SEND, out_b, peers[0])]), "batch: host and device")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.SEND, x, N)]), "batch: rank out of range")
raises(TypeError, lambda: hcomm.batch_send_recv([5]), "batch: item not a tuple")
raises(TypeError, lambda: hcomm.batch_send_recv(5), "batch: items not iterable")
raises(hcomm.E_PARA, lambda: hcomm.batch_send_recv([(hcomm.RECV, x.copy(), peers[0], 1)]), "batch: four fields")

# ---- failover calls on a healthy communicator; shrink with nobody lost; destroy
if hcomm.get_async_error() != hcomm.SUCCESS or hcomm.get_async_error_string() != "" or hcomm.lost_ranks() != []:
    fail("a healthy world reports an error or lost ranks")
raises(TypeError, lambda: hcomm.set_error_callback(5), "set_error_callback: not callable")
hcomm.set_error_callback(lambda code, msg: None)
hcomm.set_error_callback(None)
raises(hcomm.E_PARA, lambda: w.shrink([RANK]), "shrink: the caller itself")
raises(hcomm.E_PARA, lambda: w.shrink([N]), "shrink: rank out of range")
raises(hcomm.E_PARA, lambda: w.shrink([-1]), "shrink: negative rank")
raises(TypeError, lambda: w.shrink(3), "shrink: not a list")
same_size = w.shrink([])
if (same_size.rank, same_size.size) != (RANK, N):
    fail(f"shrink([]) gave rank {same_size.rank} of {same_size.size}")
same(hcomm.allreduce(x[:2].copy(), comm=same_size), sum(i[:2] for i in inputs), "allreduce on shrink([])")
same_size.destroy()
if not same_size.destroyed:
    fail("destroyed is False after destroy()")
raises(hcomm.E_UNAVAIL, lambda: hcomm.allreduce(x, comm=same_size), "allreduce on a destroyed communicator")
raises(hcomm.E_UNAVAIL, lambda: hcomm.get_async_error(same_size), "get_async_error on a destroyed communicator")
raises(hcomm.E_UNAVAIL, same_size.destroy, "destroy twice")

# ---- RDMA: rank r writes its pattern into the symmetric buffer of the rank across the servers
sym = hcomm.buffer_alloc(1 << 20)
mr = hcomm.reg_mr(sym, hcomm.ACCESS_LOCAL_WRITE | hcomm.ACCESS_REMOTE_WRITE)
if (mr.address, mr.size) != (sym.address, 1 << 20):
    fail(f"reg_mr: {mr}")
raises(hcomm.E_PARA, lambda: hcomm.reg_mr(sym, 0x80), "reg_mr: bad access flags")
raises(hcomm.E_PARA, lambda: hcomm.reg_mr(sym, size=(1 << 20) + 1), "reg_mr: beyond the buffer")
raises(hcomm.E_PARA, lambda: hcomm.remote_addr(sym, N), "remote_addr: peer out of range")
raises(hcomm.E_PARA, lambda: hcomm.reg_mr(x), "reg_mr: a numpy array")
pattern = (np.arange(4096) * 7 + RANK * 3).astype(np.uint8).view(np.int8)
src = hcomm.create_buffer(4096)
hcomm.update_buffer(src, pattern, stream=s)
target = (RANK + N // 2) % N
remote = hcomm.remote_addr(sym, target)
hcomm.barrier()  # every rank registered its region
hcomm.rdma_write(src, target, remote + 8192, mr.rkey, stream=s)  # keys follow registration order: the target's key is ours
hcomm.stream_synchronize(s)
hcomm.barrier()  # every write is done
got = np.zeros(4096, np.int8)
hcomm.memcpy_device_to_host(got, sym.view(8192, 4096), stream=s)
hcomm.stream_synchronize(s)
src_rank = (RANK - N // 2) % N
same(got, (np.arange(4096) * 7 + src_rank * 3).astype(np.uint8).view(np.int8), "rdma_write into the symmetric buffer")
hcomm.dereg_mr(mr)
raises(hcomm.E_NOT_FOUND, lambda: hcomm.dereg_mr(mr), "dereg_mr twice")
sym.free()

# ---- bandwidth reservation on the world communicator, seen from a second one on the same NIC
line = max(link["bandwidth_Bps"] for link in hcomm.get_topology().links if link["link_type"] == hcomm.LINK_ROCE)
other = w.split(0, RANK)
raises(hcomm.E_PARA, lambda: hcomm.reserve_bandwidth(0), "reserve_bandwidth: min 0")
raises(hcomm.E_PARA, lambda: hcomm.reserve_bandwidth(10, 5), "reserve_bandwidth: max below min")
raises(hcomm.E_PARA, lambda: hcomm.reserve_bandwidth(line), "reserve_bandwidth: the whole line rate")
raises(hcomm.E_NOT_FOUND, lambda: hcomm.release_bandwidth(), "release_bandwidth: none reserved")
raises(TypeError, lambda: hcomm.reserve_bandwidth(-1), "reserve_bandwidth: negative")
if hcomm.get_reserved_bandwidth()[0] != 0:
    fail("a reservation before any")
hcomm.reserve_bandwidth(5_000_000_000)
mine_min, mine_share = hcomm.get_reserved_bandwidth()
other_min, other_share = hcomm.get_reserved_bandwidth(other)
if mine_min != 5_000_000_000 or other_min != 0 or other_share != line - 5_000_000_000:
    fail(f"reserved 5 GB/s of {line}: world ({mine_min}, {mine_share}), other ({other_min}, {other_share})")
hcomm.release_bandwidth()
if hcomm.get_reserved_bandwidth(other) != (0, line):
    fail(f"after release the other communicator may use {hcomm.get_reserved_bandwidth(other)}, not the line rate {line}")

hcomm.barrier()
print(f"OK rank {RANK}")
