#!/usr/bin/python3
"""The Python module hcomm against a one-rank in-memory driver (tests/python/fake_driver_lib.cpp,
loaded through HCOMM_DRIVER; ctest sets the environment): the module's data paths — numpy staging
through device memory and back, device buffers and views, buffer pools, events, the world
communicator and its configuration, collectives over one rank (whose results are closed forms:
the input itself) — and its argument checks. Point-to-point needs two ranks: examples/seeds under
`hcsim exec`."""
import asyncio
import os
import sys
import unittest

import numpy as np

import hcomm

if not os.environ.get("HCOMM_DRIVER"):
    sys.exit("test_module_fake.py: set HCOMM_DRIVER to the fake driver library (ctest does)")

CFG = hcomm.CommConfig(timeout_ms=45000, max_retries=5, num_qp=4)
hcomm.set_config(CFG)  # before the first communication call: the world communicator takes it
CTX = hcomm.create_context(device_id=0)


class Context(unittest.TestCase):
    def test_properties(self):
        self.assertEqual(CTX.device_id, 0)
        self.assertEqual(CTX.max_buffer_size, 1 << 20)  # HCOMM_BUFFSIZE_MB=1
        self.assertEqual(CTX.device_buffer.size, CTX.max_buffer_size)
        self.assertIs(hcomm.create_context(0), CTX)  # one context per device and process

    def test_memcpy_round_trip(self):
        s = hcomm.create_stream(CTX)
        a = np.arange(1024 * 64, dtype=np.float32).reshape(256, 256)
        hcomm.memcpy_host_to_device(dst=CTX.device_buffer, src=a, size=a.nbytes, stream=s)
        b = np.zeros_like(a)
        hcomm.memcpy_device_to_host(b, CTX.device_buffer, a.nbytes, s)
        hcomm.stream_synchronize(s)
        np.testing.assert_array_equal(a, b)

    def test_memcpy_checks(self):
        s = hcomm.create_stream(CTX)
        small = hcomm.create_buffer(16)
        with self.assertRaises(hcomm.HcommError) as cm:  # larger than the destination
            hcomm.memcpy_host_to_device(small, np.zeros(8, np.float32), 32, s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # size beyond the source
            hcomm.memcpy_host_to_device(small, np.zeros(2, np.float32), 16, s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # not contiguous
            hcomm.memcpy_host_to_device(small, np.zeros((4, 4), np.int8)[:, ::2], 8, s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        with self.assertRaises(hcomm.HcommError) as cm:  # read-only destination
            hcomm.memcpy_device_to_host(ro, small, 16, s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # a host array where device memory is needed
            hcomm.memcpy_host_to_device(np.zeros(4), np.zeros(4), 32, s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)

    def test_buffer_views(self):
        s = hcomm.create_stream(CTX)
        buf = hcomm.create_buffer(64)
        hcomm.update_buffer(buf, np.arange(16, dtype=np.int32), stream=s)
        self.assertEqual(buf.dtype, hcomm.DATA_TYPE_INT32)
        part = buf[16:32]
        self.assertEqual((part.address - buf.address, part.size), (16, 16))
        self.assertEqual(buf.view(48).size, 16)
        out = np.zeros(4, np.int32)
        hcomm.memcpy_device_to_host(out, part, 16, s)
        hcomm.stream_synchronize(s)
        np.testing.assert_array_equal(out, [4, 5, 6, 7])
        with self.assertRaises(hcomm.HcommError):
            buf.view(60, 8)
        buf.free()


class Pools(unittest.TestCase):
    def test_device_pool(self):
        pool = hcomm.create_buffer_pool(num_buffers=2, buffer_size=4096, memory_type=hcomm.MEMORY_TYPE_DEVICE)
        self.assertEqual((pool.num_buffers, pool.buffer_size), (2, 4096))
        a, b = pool.acquire(), pool.acquire()
        self.assertEqual(a.size, 4096)
        with self.assertRaises(hcomm.HcommError) as cm:  # every buffer acquired, none released
            pool.acquire()
        self.assertEqual(cm.exception.code, hcomm.E_UNAVAIL)
        with self.assertRaises(hcomm.HcommError) as cm:
            pool.destroy()
        self.assertEqual(cm.exception.code, hcomm.E_AGAIN)
        data = np.linspace(0, 1, 1024, dtype=np.float32)
        hcomm.update_buffer(a, data)
        pool.release(a)  # after the copy queued on the default stream
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.update_buffer(a, data)  # released: no longer usable
        self.assertEqual(cm.exception.code, hcomm.E_UNAVAIL)
        c = pool.acquire()
        out = np.zeros_like(data)
        hcomm.memcpy_device_to_host(out, c, data.nbytes, CTX.default_stream)
        hcomm.stream_synchronize(CTX.default_stream)
        np.testing.assert_array_equal(out, data)  # the same buffer came back, holding the data
        pool.release(b)
        pool.release(c)
        pool.destroy()

    def test_host_pool(self):
        pool = hcomm.create_buffer_pool(2, 64, hcomm.MEMORY_TYPE_HOST)
        h = pool.acquire()
        hcomm.update_buffer(h, np.arange(8, dtype=np.float64))
        np.testing.assert_array_equal(h.numpy(), np.arange(8, dtype=np.float64))
        pool.release(h)
        pool.destroy()


class Events(unittest.TestCase):
    def test_record_wait_query(self):
        s1, s2 = hcomm.create_stream(CTX), hcomm.create_stream(CTX)
        ev = hcomm.create_event(CTX)
        buf = hcomm.create_buffer(4096)
        a = np.full(1024, 7, np.int32)
        hcomm.memcpy_host_to_device(buf, a, a.nbytes, s1)
        hcomm.record_event(ev, s1)
        hcomm.wait_event(ev, stream=s2)
        out = np.zeros_like(a)
        hcomm.memcpy_device_to_host(out, buf, a.nbytes, s2)
        hcomm.stream_synchronize(s2)
        self.assertTrue(ev.query())
        np.testing.assert_array_equal(out, a)


class World(unittest.TestCase):
    def test_world_and_config(self):
        w = hcomm.world()
        self.assertEqual((w.rank, w.size), (0, 1))
        cfg = hcomm.get_config()
        self.assertEqual((cfg.timeout_ms, cfg.retry_count, cfg.num_qp), (45000, 5, 4))  # set_config's
        self.assertEqual(cfg.buffer_pool_size, 8)  # the default, resolved
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.set_config(hcomm.CommConfig())
        self.assertEqual(cm.exception.code, hcomm.E_NOT_SUPPORT)

    def test_topology(self):
        t = hcomm.get_topology()
        self.assertEqual((t.my_rank, t.num_nodes, t.distances), (0, 1, [0]))
        self.assertEqual(t.links[0]["link_type"], hcomm.LINK_LOCAL)

    def test_p2p_to_self_is_the_libraries_error(self):
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.irecv(np.zeros(4, np.float32), src_rank=0)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)


class Collectives(unittest.TestCase):
    """One rank: every collective's result is its input (or the input's blocks) — closed forms."""
    x = np.arange(96, dtype=np.float32) * 0.5

    def test_numpy(self):
        x = self.x
        np.testing.assert_array_equal(hcomm.allreduce(x), x)
        np.testing.assert_array_equal(hcomm.allreduce(x, op=hcomm.REDUCE_MAX), x)
        np.testing.assert_array_equal(hcomm.allgather(x), x)
        np.testing.assert_array_equal(hcomm.reduce_scatter(x), x)
        np.testing.assert_array_equal(hcomm.alltoall(x), x)
        np.testing.assert_array_equal(hcomm.reduce(x, root=0), x)
        y = x.copy()
        hcomm.broadcast(y, root=0)
        np.testing.assert_array_equal(y, x)
        r = np.zeros_like(x)
        np.testing.assert_array_equal(hcomm.scatter(x, r, root=0), x)
        np.testing.assert_array_equal(r, x)
        for t in (np.int8, np.int16, np.int32, np.int64, np.float16, np.float64):
            v = (np.arange(40) % 100).astype(t)
            out = np.zeros_like(v)
            hcomm.allreduce(v, out)
            np.testing.assert_array_equal(out, v)
        hcomm.barrier()

    def test_device_buffers(self):
        s = hcomm.create_stream(CTX)
        x = self.x
        src, dst = hcomm.create_buffer(x.nbytes), hcomm.create_buffer(x.nbytes)
        hcomm.memcpy_host_to_device(src, x, x.nbytes, s)
        hcomm.allreduce(src, dst, stream=s)
        hcomm.allreduce(src, src.view(0, 16), stream=s, count=4, dtype=np.float32)  # count, numpy dtype
        with self.assertRaises(hcomm.HcommError) as cm:  # 96 elements into a 16-byte recv
            hcomm.allreduce(src, src.view(0, 16), stream=s)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        out = np.zeros_like(x)
        hcomm.memcpy_device_to_host(out, dst, x.nbytes, s)
        hcomm.barrier(stream=s)
        hcomm.stream_synchronize(s)
        np.testing.assert_array_equal(out, x)

    def test_argument_errors(self):
        x = self.x
        for bad in (x.astype(np.uint8), x.astype(np.complex64)):
            with self.assertRaises(hcomm.HcommError) as cm:
                hcomm.allreduce(bad)
            self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # wrong recv size
            hcomm.allreduce(x, np.zeros(5, np.float32))
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # dtypes differ
            hcomm.allreduce(x, np.zeros(96, np.float64))
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(hcomm.HcommError) as cm:  # root outside [0, 1): the library's E_PARA
            hcomm.broadcast(x.copy(), root=3)
        self.assertEqual(cm.exception.code, hcomm.E_PARA)


class VCollectives(unittest.TestCase):
    """One rank: a -v collective places the input's block at the displacement; the rest stays."""
    x = np.arange(12, dtype=np.float32)

    def test_numpy(self):
        x = self.x
        np.testing.assert_array_equal(hcomm.allgatherv(x, [12]), x)
        got = hcomm.allgatherv(x, [12], [3], recv=np.full(20, -1, np.float32))
        np.testing.assert_array_equal(got, np.concatenate([[-1] * 3, x, [-1] * 5]).astype(np.float32))
        np.testing.assert_array_equal(hcomm.reduce_scatterv(x, [5], [4]), x[4:9])
        np.testing.assert_array_equal(hcomm.alltoallv(x, [6], [6], [2], [1], recv=np.zeros(8, np.float32)),
                                      np.concatenate([[0], x[2:8], [0]]).astype(np.float32))
        self.assertEqual(hcomm.batch_send_recv([]), [])

    def test_argument_errors(self):
        x = self.x
        for bad in (lambda: hcomm.allgatherv(x, [12, 0]), lambda: hcomm.allgatherv(x, [11]),
                    lambda: hcomm.reduce_scatterv(x, [13]), lambda: hcomm.alltoallv(x, [12], [12], recv=np.zeros(11, np.float32)),
                    lambda: hcomm.batch_send_recv([(hcomm.SEND, x, 0)]), lambda: hcomm.shrink([0])):
            with self.assertRaises(hcomm.HcommError) as cm:
                bad()
            self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(TypeError):
            hcomm.allgatherv(x, [1.5])
        with self.assertRaises(TypeError):
            hcomm.set_error_callback("not callable")
        for wrong_type in (lambda: hcomm.isend(x, 0, stream=5), lambda: hcomm.barrier(stream="s"),
                           lambda: hcomm.allreduce(x, comm=3), lambda: hcomm.create_buffer(16).view(0, -1),
                           lambda: hcomm.create_stream(ctx=3)):
            with self.assertRaises(TypeError):
                wrong_type()

    def test_failover_calls_when_healthy(self):
        self.assertEqual(hcomm.get_async_error(), hcomm.SUCCESS)
        self.assertEqual(hcomm.get_async_error_string(), "")
        self.assertEqual(hcomm.lost_ranks(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
