#!/usr/bin/python3
"""The Python module hcomm without a driver (docs/python.md): import, the constants against the C
header's values (parsed here from hcomm/include/hcomm/hcomm.h, not from the module), CommConfig's
ranges against docs/config.md's table, numpy dtype mapping, and HcommError(E_DRV) from
create_context. Run: PYTHONPATH=build/python HCOMM_DRIVER= /usr/bin/python3 tests/python/test_module_basic.py"""
import os
import re
import sys
import unittest

import numpy as np

os.environ.pop("HCOMM_DRIVER", None)
import hcomm  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def header_enums():
    """NAME -> value of every enumerator in hcomm.h (explicit values only, as the header writes them)."""
    with open(os.path.join(ROOT, "hcomm", "include", "hcomm", "hcomm.h")) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\b((?:HCOMM|E_HCOMM)_\w+)\s*=\s*(\d+)", text)}


class Constants(unittest.TestCase):
    def test_every_python_constant_is_the_c_value(self):
        c = header_enums()
        pairs = {
            "SUCCESS": "HCOMM_SUCCESS", "E_PARA": "HCOMM_E_PARA", "E_PTR": "HCOMM_E_PTR", "E_MEMORY": "HCOMM_E_MEMORY",
            "E_NOT_SUPPORT": "HCOMM_E_NOT_SUPPORT", "E_UNAVAIL": "HCOMM_E_UNAVAIL", "E_TIMEOUT": "HCOMM_E_TIMEOUT",
            "E_RUNTIME": "HCOMM_E_RUNTIME", "E_DRV": "HCOMM_E_DRV", "E_AGAIN": "HCOMM_E_AGAIN", "E_REMOTE": "HCOMM_E_REMOTE",
            "E_HCOMM_ADDR_MISMATCH": "E_HCOMM_ADDR_MISMATCH", "E_RANK_LOST": "HCOMM_E_RANK_LOST",
            "I_FAILOVER": "HCOMM_I_FAILOVER",
            "DATA_TYPE_INT8": "HCOMM_DATA_TYPE_INT8", "DATA_TYPE_INT16": "HCOMM_DATA_TYPE_INT16",
            "DATA_TYPE_INT32": "HCOMM_DATA_TYPE_INT32", "DATA_TYPE_INT64": "HCOMM_DATA_TYPE_INT64",
            "DATA_TYPE_FP16": "HCOMM_DATA_TYPE_FP16", "DATA_TYPE_FP32": "HCOMM_DATA_TYPE_FP32",
            "DATA_TYPE_FP64": "HCOMM_DATA_TYPE_FP64", "DATA_TYPE_BFP16": "HCOMM_DATA_TYPE_BFP16",
            "REDUCE_SUM": "HCOMM_REDUCE_SUM", "REDUCE_PROD": "HCOMM_REDUCE_PROD", "REDUCE_MAX": "HCOMM_REDUCE_MAX",
            "REDUCE_MIN": "HCOMM_REDUCE_MIN",
            "MEMORY_TYPE_DEVICE": "HCOMM_MEMORY_TYPE_DEVICE", "MEMORY_TYPE_HOST": "HCOMM_MEMORY_TYPE_HOST",
            "COMM_MODE_AUTO": "HCOMM_COMM_MODE_AUTO", "COMM_MODE_SMALL_MSG": "HCOMM_COMM_MODE_SMALL_MSG",
            "COMM_MODE_LARGE_MSG": "HCOMM_COMM_MODE_LARGE_MSG",
            "PROTOCOL_TCP": "HCOMM_PROTOCOL_TCP", "PROTOCOL_RDMA": "HCOMM_PROTOCOL_RDMA", "PROTOCOL_SHM": "HCOMM_PROTOCOL_SHM",
            "LINK_HCCS": "HCOMM_LINK_HCCS", "LINK_ROCE": "HCOMM_LINK_ROCE", "LINK_PCIE": "HCOMM_LINK_PCIE",
            "SEND": "HCOMM_SEND", "RECV": "HCOMM_RECV", "ACCESS_LOCAL_WRITE": "HCOMM_ACCESS_LOCAL_WRITE",
            "ACCESS_REMOTE_READ": "HCOMM_ACCESS_REMOTE_READ", "ACCESS_REMOTE_WRITE": "HCOMM_ACCESS_REMOTE_WRITE",
        }
        for py_name, c_name in pairs.items():
            self.assertIn(c_name, c)
            self.assertEqual(getattr(hcomm, py_name), c[c_name], py_name)
        self.assertEqual(hcomm.data_type_size(hcomm.DATA_TYPE_FP16), 2)
        self.assertEqual(hcomm.data_type_size(hcomm.DATA_TYPE_FP64), 8)


class Config(unittest.TestCase):
    # docs/config.md: knob -> (lowest, highest) accepted value
    RANGES = {
        "mode": (0, 2), "protocol": (0, 2), "timeout_ms": (1000, 300000), "retry_count": (0, 10), "max_retries": (0, 10),
        "num_qp": (1, 32), "bandwidth_limit": (0, 1000), "buffer_size": (1 << 20, 64 << 20),
        "send_buffer_size": (1 << 20, 1 << 30), "recv_buffer_size": (1 << 20, 1 << 30), "buffer_pool_size": (1, 1024),
        "op_retry": (0, 1), "heartbeat_timeout_ms": (0, 300000), "multi_qp_threshold": (1, 8192),
    }

    def test_ranges(self):
        for knob, (lo, hi) in self.RANGES.items():
            cfg = hcomm.CommConfig()
            self.assertIsNone(getattr(cfg, knob), knob)
            setattr(cfg, knob, lo)
            self.assertEqual(getattr(cfg, knob), lo)
            setattr(cfg, knob, hi)
            self.assertEqual(getattr(cfg, knob), hi)
            bad = [hi + 1, -1] + ([lo - 1] if lo > 0 else [])
            for v in bad:
                with self.assertRaises(hcomm.HcommError, msg=f"{knob}={v}") as cm:
                    setattr(cfg, knob, v)
                self.assertEqual(cm.exception.code, hcomm.E_PARA)
                self.assertIn(knob if knob != "max_retries" else "retry_count", str(cm.exception))
            self.assertEqual(getattr(cfg, knob), hi, "a rejected value leaves the knob as it was")
            with self.assertRaises(hcomm.HcommError) as cm:
                hcomm.CommConfig(**{knob: hi + 1})
            self.assertEqual(cm.exception.code, hcomm.E_PARA)

    def test_seed_sample_config(self):
        cfg = hcomm.CommConfig()
        cfg.mode = hcomm.COMM_MODE_AUTO
        cfg.send_buffer_size = 16 * 1024 * 1024
        cfg.recv_buffer_size = 16 * 1024 * 1024
        cfg.buffer_pool_size = 8
        cfg.timeout_ms = 60000
        cfg.max_retries = 3
        self.assertEqual(cfg.retry_count, 3)
        self.assertEqual(cfg.to_dict()["timeout_ms"], 60000)
        cfg.max_retries = None
        self.assertIsNone(cfg.retry_count)
        hcomm.set_config(cfg)  # no communicator yet: accepted

    def test_wrong_types_and_names(self):
        cfg = hcomm.CommConfig()
        with self.assertRaises(hcomm.HcommError) as cm:
            cfg.timeout_ms = 1.5
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        with self.assertRaises(AttributeError):
            cfg.no_such_knob = 1
        with self.assertRaises(hcomm.HcommError) as cm:
            cfg.algo = "level1:no_such_algo"
        self.assertEqual(cm.exception.code, hcomm.E_PARA)
        cfg.algo = "level0:NA;level1:ring"
        self.assertEqual(cfg.algo, "level0:NA;level1:ring")


class DataTypes(unittest.TestCase):
    def test_mapping(self):
        expect = {np.int8: hcomm.DATA_TYPE_INT8, np.int16: hcomm.DATA_TYPE_INT16, np.int32: hcomm.DATA_TYPE_INT32,
                  np.int64: hcomm.DATA_TYPE_INT64, np.float16: hcomm.DATA_TYPE_FP16, np.float32: hcomm.DATA_TYPE_FP32,
                  np.float64: hcomm.DATA_TYPE_FP64}
        for t, code in expect.items():
            self.assertEqual(hcomm.data_type(t), code)
            self.assertEqual(hcomm.data_type(np.dtype(t)), code)
            self.assertEqual(hcomm.data_type_size(code), np.dtype(t).itemsize)

    def test_unmapped(self):
        for t in (np.uint8, np.uint32, np.bool_, np.complex64, ">f4", "U3"):
            with self.assertRaises(hcomm.HcommError, msg=str(t)) as cm:
                hcomm.data_type(t)
            self.assertEqual(cm.exception.code, hcomm.E_PARA)


class NoDriver(unittest.TestCase):
    def test_create_context_raises_e_drv(self):
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.create_context(device_id=0)
        self.assertEqual(cm.exception.code, hcomm.E_DRV)
        self.assertEqual(cm.exception.code, 16)
        self.assertIn("HCOMM_DRIVER", str(cm.exception))
        self.assertTrue(issubclass(hcomm.HcommError, Exception))

    def test_calls_needing_a_communicator_raise_e_drv(self):
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.send(np.zeros(4, np.float32), dest_rank=0)
        self.assertEqual(cm.exception.code, hcomm.E_DRV)
        with self.assertRaises(hcomm.HcommError) as cm:
            hcomm.get_topology()
        self.assertEqual(cm.exception.code, hcomm.E_DRV)

    def test_bound_extensions_raise_e_drv(self):
        x = np.zeros(4, np.float32)
        calls = {
            "allgatherv": lambda: hcomm.allgatherv(x, [4]), "reduce_scatterv": lambda: hcomm.reduce_scatterv(x, [4]),
            "alltoallv": lambda: hcomm.alltoallv(x, [4], [4]), "batch_send_recv": lambda: hcomm.batch_send_recv([]),
            "get_async_error": hcomm.get_async_error, "get_async_error_string": hcomm.get_async_error_string,
            "lost_ranks": hcomm.lost_ranks, "shrink": lambda: hcomm.shrink([]),
            "set_error_callback": lambda: hcomm.set_error_callback(None), "buffer_alloc": lambda: hcomm.buffer_alloc(64),
            "reserve_bandwidth": lambda: hcomm.reserve_bandwidth(1), "release_bandwidth": hcomm.release_bandwidth,
            "get_reserved_bandwidth": hcomm.get_reserved_bandwidth,
        }
        for name, call in calls.items():
            with self.assertRaises(hcomm.HcommError, msg=name) as cm:
                call()
            self.assertEqual(cm.exception.code, hcomm.E_DRV, name)

    def test_wtime_without_driver_is_zero(self):
        self.assertEqual(hcomm.wtime(), 0.0)

    def test_result_string(self):
        self.assertTrue(hcomm.result_string(hcomm.E_PARA))


if __name__ == "__main__":
    unittest.main(verbosity=2)
