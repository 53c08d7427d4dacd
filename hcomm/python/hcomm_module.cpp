// The Python module `hcomm` (docs/python.md): the bindings. Objects, state and helpers:
// module.h, module_core.cpp. Every HCOMM error is raised as HcommError.
#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "module.h"

using namespace hcomm_py;

PYBIND11_MODULE(hcomm, m) {
  g = new State;
  m.doc() = "HCOMM, the communication library of Ascend NPUs (hcsim): Python API (docs/python.md)";

  // HcommError(code, message): .code is the HCOMM result code, str() the message.
  py::exec(R"(
class HcommError(Exception):
    """An HCOMM call failed: .code is the HCOMM result code (hcomm.E_PARA, ...), .message the text."""
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
)",
           m.attr("__dict__"));
  g_error_cls = new py::object(m.attr("HcommError"));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object inst = (*g_error_cls)(static_cast<int>(e.code), e.msg);
      PyErr_SetObject(g_error_cls->ptr(), inst.ptr());
    }
  });

  // An argument of the wrong Python type met inside a binding (obj.cast<T>(): a Stream that is not
  // one, a negative size) is a TypeError, as pybind11 raises for declared parameters (its cast_error
  // would otherwise surface as RuntimeError).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::cast_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });

  // ---- constants (the C values)
  const std::pair<const char*, long long> consts[] = {
      {"SUCCESS", HCOMM_SUCCESS}, {"E_PARA", HCOMM_E_PARA}, {"E_PTR", HCOMM_E_PTR}, {"E_MEMORY", HCOMM_E_MEMORY},
      {"E_INTERNAL", HCOMM_E_INTERNAL}, {"E_NOT_SUPPORT", HCOMM_E_NOT_SUPPORT}, {"E_NOT_FOUND", HCOMM_E_NOT_FOUND},
      {"E_UNAVAIL", HCOMM_E_UNAVAIL}, {"E_SYSCALL", HCOMM_E_SYSCALL}, {"E_TIMEOUT", HCOMM_E_TIMEOUT},
      {"E_OPEN_FILE_FAILURE", HCOMM_E_OPEN_FILE_FAILURE}, {"E_TCP_CONNECT", HCOMM_E_TCP_CONNECT},
      {"E_ROCE_CONNECT", HCOMM_E_ROCE_CONNECT}, {"E_TCP_TRANSFER", HCOMM_E_TCP_TRANSFER},
      {"E_ROCE_TRANSFER", HCOMM_E_ROCE_TRANSFER}, {"E_RUNTIME", HCOMM_E_RUNTIME}, {"E_DRV", HCOMM_E_DRV},
      {"E_NETWORK", HCOMM_E_NETWORK}, {"E_AGAIN", HCOMM_E_AGAIN}, {"E_REMOTE", HCOMM_E_REMOTE},
      {"E_HCOMM_ADDR_MISMATCH", E_HCOMM_ADDR_MISMATCH}, {"E_RANK_LOST", HCOMM_E_RANK_LOST}, {"I_FAILOVER", HCOMM_I_FAILOVER},
      {"DATA_TYPE_INT8", HCOMM_DATA_TYPE_INT8}, {"DATA_TYPE_INT16", HCOMM_DATA_TYPE_INT16},
      {"DATA_TYPE_INT32", HCOMM_DATA_TYPE_INT32}, {"DATA_TYPE_FP16", HCOMM_DATA_TYPE_FP16},
      {"DATA_TYPE_FP32", HCOMM_DATA_TYPE_FP32}, {"DATA_TYPE_INT64", HCOMM_DATA_TYPE_INT64},
      {"DATA_TYPE_FP64", HCOMM_DATA_TYPE_FP64}, {"DATA_TYPE_BFP16", HCOMM_DATA_TYPE_BFP16},
      {"REDUCE_SUM", HCOMM_REDUCE_SUM}, {"REDUCE_PROD", HCOMM_REDUCE_PROD}, {"REDUCE_MAX", HCOMM_REDUCE_MAX},
      {"REDUCE_MIN", HCOMM_REDUCE_MIN},
      {"MEMORY_TYPE_DEVICE", HCOMM_MEMORY_TYPE_DEVICE}, {"MEMORY_TYPE_HOST", HCOMM_MEMORY_TYPE_HOST},
      {"COMM_MODE_AUTO", HCOMM_COMM_MODE_AUTO}, {"COMM_MODE_SMALL_MSG", HCOMM_COMM_MODE_SMALL_MSG},
      {"COMM_MODE_LARGE_MSG", HCOMM_COMM_MODE_LARGE_MSG},
      {"PROTOCOL_TCP", HCOMM_PROTOCOL_TCP}, {"PROTOCOL_RDMA", HCOMM_PROTOCOL_RDMA}, {"PROTOCOL_SHM", HCOMM_PROTOCOL_SHM},
      {"LINK_NONE", HCOMM_LINK_NONE}, {"LINK_LOCAL", HCOMM_LINK_LOCAL}, {"LINK_HCCS", HCOMM_LINK_HCCS},
      {"LINK_PCIE", HCOMM_LINK_PCIE}, {"LINK_ROCE", HCOMM_LINK_ROCE},
      {"FLUSH_TO_DEVICE", HCOMM_FLUSH_TO_DEVICE}, {"FLUSH_FROM_DEVICE", HCOMM_FLUSH_FROM_DEVICE},
      {"ACCESS_LOCAL_WRITE", HCOMM_ACCESS_LOCAL_WRITE}, {"ACCESS_REMOTE_READ", HCOMM_ACCESS_REMOTE_READ},
      {"ACCESS_REMOTE_WRITE", HCOMM_ACCESS_REMOTE_WRITE}, {"SEND", HCOMM_SEND}, {"RECV", HCOMM_RECV},
  };
  for (const auto& [name, value] : consts) m.attr(name) = value;
  m.attr("SPLIT_NOCOLOR") = static_cast<long long>(HCOMM_SPLIT_NOCOLOR);

  m.def("result_string", [](int code) { return std::string(hcomm_result_string(static_cast<hcomm_result_t>(code))); },
        py::arg("code"), "hcomm_result_string");
  m.def("data_type", [](py::object dt) { return static_cast<int>(data_type_of(py::dtype::from_args(dt))); }, py::arg("dtype"),
        "The HCOMM data type of a numpy dtype (HcommError E_PARA when it has none)");
  m.def("data_type_size", [](int code) { return dtype_size(code); }, py::arg("data_type"), "hcomm_data_type_size");
  m.def("wtime", [] { return hcomm_wtime(); }, "The cluster's clock in seconds (hcomm_wtime; simulated time under hcsim exec)");

  // ---- context, streams, events
  py::class_<Context, CtxP>(m, "Context", "hcomm_context_t: one per NPU device and process")
      .def_property_readonly("device_id", [](const Context& c) { return c.device_id; })
      .def_property_readonly("max_buffer_size", [](const Context& c) {
        uint64_t b = 0;
        check(hcomm_context_max_buffer_size(c.h, &b), "hcomm_context_max_buffer_size");
        return b;
      })
      .def_property_readonly("device_buffer", [](const CtxP& c) {
        void* p = nullptr;
        uint64_t b = 0;
        check(hcomm_context_device_buffer(c->h, &p), "hcomm_context_device_buffer");
        check(hcomm_context_max_buffer_size(c->h, &b), "hcomm_context_max_buffer_size");
        auto buf = std::make_shared<Buffer>();
        buf->ctx = c;
        buf->addr = reinterpret_cast<uint64_t>(p);
        buf->size = b;
        return buf;
      })
      .def_property_readonly("default_stream", [](const CtxP& c) {
        auto s = std::make_shared<Stream>();
        s->ctx = c;
        s->h = c->default_stream();
        return s;
      })
      .def("__repr__", [](const Context& c) { return "<hcomm.Context device_id=" + std::to_string(c.device_id) + ">"; });
  m.def("create_context", [](uint32_t device_id) { return create_context(device_id); }, py::arg("device_id") = 0,
        "hcomm_create_context; the same device again returns the same context");

  py::class_<Stream, StreamP>(m, "Stream", "hcomm_stream_t")
      .def("synchronize", [](Stream& s) {
        check(nogil([&] { return hcomm_stream_synchronize(s.h); }), "hcomm_stream_synchronize");
        reclaim(s.h);
      })
      .def_property_readonly("context", [](const Stream& s) { return s.ctx; });
  m.def("create_stream", [](py::object ctx) {
        CtxP c = ctx.is_none() ? process_context() : ctx.cast<CtxP>();
        auto s = std::make_shared<Stream>();
        s->ctx = c;
        check(nogil([&] { return hcomm_create_stream(c->h, &s->h); }), "hcomm_create_stream");
        return s;
      }, py::arg("ctx") = py::none(), "hcomm_create_stream");
  m.def("stream_synchronize", [](const StreamP& s) {
        check(nogil([&] { return hcomm_stream_synchronize(s->h); }), "hcomm_stream_synchronize");
        reclaim(s->h);
      }, py::arg("stream").none(false), "hcomm_stream_synchronize: blocks until every task on the stream finished");
  m.def("launch_compute", [](const StreamP& s, uint64_t duration_ns) {
        check(hcomm_launch_compute(s->h, duration_ns), "hcomm_launch_compute");
      }, py::arg("stream").none(false), py::arg("duration_ns"), "hcomm_launch_compute: the stream is busy for duration_ns");
  m.def("launch_compute_flops", [](const StreamP& s, double flops, int dtype, double efficiency) {
        check(hcomm_launch_compute_flops(s->h, flops, static_cast<hcomm_data_type_t>(dtype), efficiency), "hcomm_launch_compute_flops");
      }, py::arg("stream").none(false), py::arg("flops"), py::arg("dtype") = static_cast<int>(HCOMM_DATA_TYPE_BFP16), py::arg("efficiency") = 1.0,
      "hcomm_launch_compute_flops: the stream is busy for `flops` of `dtype` (an HCOMM data type) at the NPU's peak times efficiency");

  py::class_<Event, EventP>(m, "Event", "hcomm_event_t")
      .def("query", [](Event& e) {
        const hcomm_result_t rc = hcomm_query_event(e.h);
        if (rc == HCOMM_E_AGAIN) return false;
        check(rc, "hcomm_query_event");
        return true;
      }, "True when the event's last record completed (hcomm_query_event)");
  m.def("create_event", [](py::object ctx) {
        CtxP c = ctx.is_none() ? process_context() : ctx.cast<CtxP>();
        auto e = std::make_shared<Event>();
        e->ctx = c;
        check(hcomm_create_event(c->h, &e->h), "hcomm_create_event");
        return e;
      }, py::arg("ctx") = py::none(), "hcomm_create_event");
  m.def("record_event", [](const EventP& e, const StreamP& s) { check(hcomm_record_event(e->h, s->h), "hcomm_record_event"); },
        py::arg("event").none(false), py::arg("stream").none(false), "hcomm_record_event");
  m.def("wait_event", [](const EventP& e, const StreamP& s) { check(hcomm_wait_event(e->h, s->h), "hcomm_wait_event"); },
        py::arg("event").none(false), py::arg("stream").none(false), "hcomm_wait_event: the stream waits (on the device) for the event");
  m.def("query_event", [](const EventP& e) {
        const hcomm_result_t rc = hcomm_query_event(e->h);
        if (rc == HCOMM_E_AGAIN) return false;
        check(rc, "hcomm_query_event");
        return true;
      }, py::arg("event").none(false));
  m.def("event_elapsed_time", [](const EventP& a, const EventP& b) {
        float ms = 0;
        check(hcomm_event_elapsed_time(a->h, b->h, &ms), "hcomm_event_elapsed_time");
        return ms;
      }, py::arg("start").none(false), py::arg("end").none(false), "milliseconds between two completed events");

  // ---- memory
  py::class_<Buffer, BufferP>(m, "Buffer", "Device memory (an opaque address and a size), or a host buffer of a host pool")
      .def_property_readonly("address", [](const Buffer& b) { return b.addr; })
      .def_property_readonly("size", [](const Buffer& b) { return b.size; })
      .def_property_readonly("memory_type", [](const Buffer& b) { return b.memory_type; })
      .def_property("dtype", [](const Buffer& b) { return b.dtype; },
                    [](Buffer& b, int d) { dtype_size(d); b.dtype = d; }, "HCOMM data type of its elements (default DATA_TYPE_INT8)")
      .def("view", [](const BufferP& b, uint64_t offset, py::object size) {
        if (offset > b->size) para("view offset " + std::to_string(offset) + " is past the buffer's " + std::to_string(b->size) + " bytes");
        const uint64_t n = size.is_none() ? b->size - offset : size.cast<uint64_t>();
        if (n > b->size - offset) para("view [" + std::to_string(offset) + ", +" + std::to_string(n) + ") exceeds the buffer's " + std::to_string(b->size) + " bytes");
        auto v = std::make_shared<Buffer>();
        v->ctx = b->ctx;
        v->addr = b->addr + offset;
        v->size = n;
        v->memory_type = b->memory_type;
        v->dtype = b->dtype;
        v->parent = b;
        return v;
      }, py::arg("offset"), py::arg("size") = py::none(), "bytes [offset, offset + size) of the buffer")
      .def("__getitem__", [](const BufferP& b, py::slice sl) {
        size_t start = 0, stop = 0, step = 0, len = 0;
        if (!sl.compute(b->size, &start, &stop, &step, &len)) throw py::error_already_set();
        if (step != 1) para("buffer slices take step 1");
        auto v = std::make_shared<Buffer>();
        v->ctx = b->ctx;
        v->addr = b->addr + start;
        v->size = len;
        v->memory_type = b->memory_type;
        v->dtype = b->dtype;
        v->parent = b;
        return v;
      })
      .def("__len__", [](const Buffer& b) { return b.size; })
      .def("numpy", [](const BufferP& b) {
        if (b->memory_type != HCOMM_MEMORY_TYPE_HOST) throw Error{HCOMM_E_NOT_SUPPORT, "Buffer.numpy(): device memory is not host-addressable; use memcpy_device_to_host"};
        return host_buffer_array(b);
      }, "host buffers: a numpy view of the memory (elements of .dtype)")
      .def("free", [](Buffer& b) {
        if (!b.owned) para("only a buffer from create_buffer or buffer_alloc can be freed");
        b.owned = false;
        if (b.symmetric) check(hcomm_buffer_free(b.ctx->h, dev(b.addr)), "hcomm_buffer_free");
        else check(hcomm_free(b.ctx->h, dev(b.addr)), "hcomm_free");
      }, "hcomm_free / hcomm_buffer_free (create_buffer's and buffer_alloc's buffers are also freed when the object goes away)")
      .def("__repr__", [](const Buffer& b) {
        return std::string("<hcomm.Buffer ") + (b.memory_type == HCOMM_MEMORY_TYPE_HOST ? "host" : "device") + " address=" +
               std::to_string(b.addr) + " size=" + std::to_string(b.size) + ">";
      });
  m.def("create_buffer", [](uint64_t size, py::object ctx) {
        reclaim();
        CtxP c = ctx.is_none() ? process_context() : ctx.cast<CtxP>();
        void* p = nullptr;
        check(nogil([&] { return hcomm_create_buffer(c->h, size, &p); }), "hcomm_create_buffer");
        auto b = std::make_shared<Buffer>();
        b->ctx = c;
        b->addr = reinterpret_cast<uint64_t>(p);
        b->size = size;
        b->owned = true;
        return b;
      }, py::arg("size"), py::arg("ctx") = py::none(), "hcomm_create_buffer: device memory of `size` bytes");

  m.def("memcpy_host_to_device", [](py::object dst, py::object src, py::object size, py::object stream) {
        reclaim();
        BufferP d = device_buf(dst, "dst");
        HostArr s = host_arr(src, "src", false, false);
        const uint64_t n = size.is_none() ? s.bytes : size.cast<uint64_t>();
        if (n > s.bytes) para("size " + std::to_string(n) + " exceeds src's " + std::to_string(s.bytes) + " bytes");
        need_bytes(d, n, "dst");
        hcomm_stream_t st = stream_or_default(stream, d->ctx);
        check(nogil([&] { return hcomm_memcpy_host_to_device(dev(d->addr), s.ptr, n, st); }), "hcomm_memcpy_host_to_device");
        try { d->dtype = data_type_of(s.arr.dtype()); } catch (const Error&) {}
        d->last_stream = st;
        add_pending(d->ctx, st, {}, py::make_tuple(dst, src));  // src must stay alive until the copy ran
      }, py::arg("dst"), py::arg("src"), py::arg("size") = py::none(), py::arg("stream") = py::none(),
      "hcomm_memcpy_host_to_device (asynchronous: src must not change until the stream is synchronized)");
  m.def("memcpy_device_to_host", [](py::object dst, py::object src, py::object size, py::object stream) {
        reclaim();
        BufferP s = device_buf(src, "src");
        HostArr d = host_arr(dst, "dst", true, false);
        const uint64_t n = size.is_none() ? std::min<uint64_t>(d.bytes, s->size) : size.cast<uint64_t>();
        if (n > d.bytes) para("size " + std::to_string(n) + " exceeds dst's " + std::to_string(d.bytes) + " bytes");
        need_bytes(s, n, "src");
        hcomm_stream_t st = stream_or_default(stream, s->ctx);
        check(nogil([&] { return hcomm_memcpy_device_to_host(d.ptr, dev(s->addr), n, st); }), "hcomm_memcpy_device_to_host");
        s->last_stream = st;
        add_pending(s->ctx, st, {}, py::make_tuple(dst, src));
      }, py::arg("dst"), py::arg("src"), py::arg("size") = py::none(), py::arg("stream") = py::none(),
      "hcomm_memcpy_device_to_host (asynchronous: dst is valid after the stream is synchronized)");
  m.def("memcpy_device_to_device", [](py::object dst, py::object src, py::object size, py::object stream) {
        reclaim();
        BufferP d = device_buf(dst, "dst"), s = device_buf(src, "src");
        const uint64_t n = size.is_none() ? std::min(d->size, s->size) : size.cast<uint64_t>();
        need_bytes(d, n, "dst");
        need_bytes(s, n, "src");
        hcomm_stream_t st = stream_or_default(stream, d->ctx);
        check(nogil([&] { return hcomm_memcpy_device_to_device(dev(d->addr), dev(s->addr), n, st); }), "hcomm_memcpy_device_to_device");
        add_pending(d->ctx, st, {}, py::make_tuple(dst, src));
      }, py::arg("dst"), py::arg("src"), py::arg("size") = py::none(), py::arg("stream") = py::none());
  m.def("update_buffer", [](py::object buffer, py::object data, py::object stream) {
        reclaim();
        if (!is_buffer(buffer)) para("buffer must be an hcomm Buffer");
        BufferP b = buffer.cast<BufferP>();
        b->check_usable("update_buffer");
        HostArr h = host_arr(data, "data", false, false);
        need_bytes(b, h.bytes, "buffer");
        try { b->dtype = data_type_of(h.arr.dtype()); } catch (const Error&) {}
        if (b->memory_type == HCOMM_MEMORY_TYPE_HOST) {
          std::memcpy(dev(b->addr), h.ptr, h.bytes);
          return;
        }
        hcomm_stream_t st = stream_or_default(stream, b->ctx);
        check(nogil([&] { return hcomm_memcpy_host_to_device(dev(b->addr), h.ptr, h.bytes, st); }), "hcomm_memcpy_host_to_device");
        b->last_stream = st;
        add_pending(b->ctx, st, {}, py::make_tuple(buffer, data));
      }, py::arg("buffer"), py::arg("data"), py::arg("stream") = py::none(),
      "Copy a numpy array into a buffer (device: queued on the stream; host: at once); sets buffer.dtype");

  py::class_<BufferPool, PoolP>(m, "BufferPool", "hcomm_buffer_pool_t")
      .def_property_readonly("num_buffers", [](const BufferPool& p) { return p.num_buffers; })
      .def_property_readonly("buffer_size", [](const BufferPool& p) { return p.buffer_size; })
      .def_property_readonly("memory_type", [](const BufferPool& p) { return p.memory_type; })
      .def("acquire", [](const PoolP& p, uint32_t timeout_ms) {
        reclaim();
        hcomm_buffer_t hb{};
        check(nogil([&] { return hcomm_buffer_pool_acquire(p->h, timeout_ms, &hb); }), "hcomm_buffer_pool_acquire");
        auto b = std::make_shared<Buffer>();
        b->ctx = p->ctx;
        b->addr = reinterpret_cast<uint64_t>(hb.addr);
        b->size = hb.size;
        b->index = hb.index;
        b->memory_type = p->memory_type;
        b->pool = p;
        return b;
      }, py::arg("timeout_ms") = 30000, "hcomm_buffer_pool_acquire")
      .def("release", [](const PoolP& p, const BufferP& b, py::object stream) {
        if (b->pool != p) para("the buffer is not from this pool");
        b->check_usable("release");
        hcomm_stream_t st = stream.is_none() ? b->last_stream : stream_handle(stream);
        hcomm_buffer_t hb{dev(b->addr), b->size, b->index};
        check(hcomm_buffer_pool_release(p->h, &hb, st), "hcomm_buffer_pool_release");
        b->released = true;
      }, py::arg("buffer").none(false), py::arg("stream") = py::none(),
      "hcomm_buffer_pool_release; without a stream, the stream of the buffer's last operation (it returns to the pool when that is done)")
      .def("available", [](const BufferPool& p) {
        uint32_t n = 0;
        check(hcomm_buffer_pool_available(p.h, &n), "hcomm_buffer_pool_available");
        return n;
      })
      .def("destroy", [](BufferPool& p) {
        reclaim();
        check(nogil([&] { return hcomm_destroy_buffer_pool(p.h); }), "hcomm_destroy_buffer_pool");
      }, "hcomm_destroy_buffer_pool (E_AGAIN while buffers are acquired)");
  m.def("create_buffer_pool", [](uint32_t num_buffers, uint64_t buffer_size, int memory_type, py::object ctx) {
        CtxP c = ctx.is_none() ? process_context() : ctx.cast<CtxP>();
        auto p = std::make_shared<BufferPool>();
        p->ctx = c;
        p->num_buffers = num_buffers;
        p->buffer_size = buffer_size;
        p->memory_type = memory_type;
        check(nogil([&] {
                return hcomm_create_buffer_pool(c->h, num_buffers, buffer_size, static_cast<hcomm_memory_type_t>(memory_type), &p->h);
              }), "hcomm_create_buffer_pool");
        return p;
      }, py::arg("num_buffers"), py::arg("buffer_size"), py::arg("memory_type") = static_cast<int>(HCOMM_MEMORY_TYPE_DEVICE),
      py::arg("ctx") = py::none(), "hcomm_create_buffer_pool");

  // ---- configuration
  py::class_<CommConfig>(m, "CommConfig",
                         "hcomm_config_t: every knob None (unset: the HCOMM_* environment or the default) until set; "
                         "out-of-range values raise HcommError(E_PARA)")
      .def(py::init([](py::kwargs kw) {
        CommConfig c;
        for (auto item : kw) {
          const std::string k = py::str(item.first);
          if (k == "algo") set_algo(c, py::reinterpret_borrow<py::object>(item.second));
          else set_knob(c, knob_named(k), py::reinterpret_borrow<py::object>(item.second));
        }
        return c;
      }))
      .def("__getattr__", [](const CommConfig& c, const std::string& name) -> py::object {
        if (name == "algo") return c.has_algo ? py::object(py::str(c.algo)) : py::object(py::none());
        const Knob& k = knob_named(name);
        const uint64_t v = c.c.*k.field;
        return v == HCOMM_CONFIG_UNSET ? py::object(py::none()) : py::object(py::int_(v));
      })
      .def("__setattr__", [](CommConfig& c, const std::string& name, py::object v) {
        if (name == "algo") set_algo(c, v);
        else set_knob(c, knob_named(name), v);
      })
      .def("to_dict", [](const CommConfig& c) {
        py::dict d;
        for (const Knob& k : kKnobs) {
          const uint64_t v = c.c.*k.field;
          d[k.name] = v == HCOMM_CONFIG_UNSET ? py::object(py::none()) : py::object(py::int_(v));
        }
        d["algo"] = c.has_algo ? py::object(py::str(c.algo)) : py::object(py::none());
        return d;
      })
      .def("__repr__", [](const CommConfig& c) {
        std::string s = "CommConfig(";
        bool first = true;
        for (const Knob& k : kKnobs)
          if (c.c.*k.field != HCOMM_CONFIG_UNSET) {
            s += (first ? "" : ", ") + std::string(k.name) + "=" + std::to_string(c.c.*k.field);
            first = false;
          }
        if (c.has_algo) s += (first ? "" : ", ") + std::string("algo='") + c.algo + "'";
        return s + ")";
      });
  m.def("set_config", [](const CommConfig& c) {
        if (g->world) throw Error{HCOMM_E_NOT_SUPPORT, "set_config: the world communicator already exists (set_config must come before the first communication call)"};
        g->config = c;
      }, py::arg("config"), "The configuration of the world communicator, which is created at first use");
  m.def("get_config", [](py::object comm) {
        CommP c = comm_or_world(comm);
        CommConfig out;
        check(hcomm_comm_get_config(c->h, &out.c), "hcomm_comm_get_config");
        if (out.c.algo) { out.has_algo = true; out.algo = out.c.algo; }
        out.c.algo = nullptr;
        return out;
      }, py::arg("comm") = py::none(), "hcomm_comm_get_config: the configuration in effect (every knob resolved)");

  // ---- communicators
  py::class_<Comm, CommP>(m, "Comm", "hcomm_comm_t")
      .def_property_readonly("rank", [](const Comm& c) { return c.rank; })
      .def_property_readonly("size", [](const Comm& c) { return c.size; })
      .def_property_readonly("context", [](const Comm& c) { return c.ctx; })
      .def("split", [](const CommP& c, uint32_t color, uint32_t key) -> py::object {
        hcomm_comm_t out = nullptr;
        check(nogil([&] { return hcomm_comm_split(c->h, color, key, &out); }), "hcomm_comm_split");
        if (!out) return py::none();
        return py::cast(wrap_comm(c->ctx, out));
      }, py::arg("color"), py::arg("key") = 0, "hcomm_comm_split (collective; color SPLIT_NOCOLOR: None)")
      .def("__repr__", [](const Comm& c) { return "<hcomm.Comm rank " + std::to_string(c.rank) + " of " + std::to_string(c.size) + ">"; });
  m.def("world", [] { return world(); },
        "The world communicator (hcomm_comm_init_config over RANK / WORLD_SIZE with set_config's configuration), created at first use");
  m.def("get_rank", [] { return world()->rank; });
  m.def("get_world_size", [] { return world()->size; });

  py::class_<Topology>(m, "Topology", "What discovery found: my_rank, num_nodes (ranks), distances (0 same server, 1 other server), links")
      .def_readonly("my_rank", &Topology::my_rank)
      .def_readonly("num_nodes", &Topology::num_nodes)
      .def_readonly("distances", &Topology::distances)
      .def_readonly("links", &Topology::links);
  m.def("get_topology", [](py::object comm) {
        CommP c = comm_or_world(comm);
        Topology t;
        t.my_rank = c->rank;
        t.num_nodes = c->size;
        for (uint32_t r = 0; r < c->size; ++r) {
          hcomm_topo_link_t l{};
          check(hcomm_get_topology(c->h, c->rank, r, &l), "hcomm_get_topology");
          int d = -1;  // no link
          if (l.link_type == HCOMM_LINK_LOCAL || l.link_type == HCOMM_LINK_HCCS || l.link_type == HCOMM_LINK_PCIE) d = 0;
          else if (l.link_type == HCOMM_LINK_ROCE) d = 1;
          t.distances.push_back(d);
          py::dict e;
          e["link_types"] = l.link_types;
          e["link_type"] = l.link_type;
          e["bandwidth_Bps"] = l.bandwidth_Bps;
          e["latency_ns"] = l.latency_ns;
          t.links.append(e);
        }
        return t;
      }, py::arg("comm") = py::none(), "hcomm_get_topology from this rank to every rank of the communicator");

  // ---- point-to-point
  py::class_<Request, RequestP>(m, "Request", "An isend / irecv in flight: await it (asyncio), or wait() / test()")
      .def("test", [](const RequestP& r) { return request_test(*r); }, "True when complete (hcomm_test); raises its error")
      .def("_poll", [](const RequestP& r) { return request_poll(*r); }, "test(), raising E_TIMEOUT after the communicator's timeout")
      .def("__repr__", [](const Request& r) { return "<hcomm.Request " + r.what + (r.done ? " done>" : ">"); })
      .def("wait", [](const RequestP& r) { return request_wait(*r); }, "Block until complete (hcomm_wait); returns the receive array (irecv) or None")
      .def_property_readonly("done", [](const Request& r) { return r.done; })
      .def_property_readonly("result", [](const Request& r) { return r.result; });
  py::exec(R"(
def _request_await(self):
    import asyncio
    polls = 0
    while not self._poll():
        polls += 1
        # Yield to the event loop: at once for the first polls, then every 0.2 ms (host time).
        yield from asyncio.sleep(0 if polls < 64 else 0.0002).__await__()
    return self.result
Request.__await__ = _request_await
del _request_await
)",
           m.attr("__dict__"));

  m.def("isend", [](py::object data, uint32_t dest_rank, uint32_t tag, py::object stream, py::object comm) {
        return post_send(data, dest_rank, tag, stream, comm);
      }, py::arg("data"), py::arg("dest_rank"), py::arg("tag") = 0, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_isend (numpy data is copied to device memory on the stream first)");
  m.def("irecv", [](py::object data, uint32_t src_rank, uint32_t tag, py::object stream, py::object comm) {
        return post_recv(data, src_rank, tag, stream, comm);
      }, py::arg("data"), py::arg("src_rank"), py::arg("tag") = 0, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_irecv (into a numpy array: copied back to it on the stream after the receive)");
  m.def("send", [](py::object data, uint32_t dest_rank, uint32_t tag, py::object comm) {
        request_wait(*post_send(data, dest_rank, tag, py::none(), comm));
      }, py::arg("data"), py::arg("dest_rank"), py::arg("tag") = 0, py::arg("comm") = py::none(),
      "Blocking send (hcomm_isend + hcomm_wait on the context's send stream)");
  m.def("recv", [](py::object data, uint32_t src_rank, uint32_t tag, py::object comm) {
        return request_wait(*post_recv(data, src_rank, tag, py::none(), comm));
      }, py::arg("data"), py::arg("src_rank"), py::arg("tag") = 0, py::arg("comm") = py::none(),
      "Blocking receive into data (returned)");
  m.def("wait_all", [](py::iterable reqs) {
        py::list out;
        for (auto r : reqs) out.append(request_wait(*r.cast<RequestP>()));
        return out;
      }, py::arg("requests"));

  // ---- collectives
  using P = hcomm_data_type_t;
  m.def("allreduce", [](py::object send, py::object recv, int op, py::object stream, py::object comm, py::object count, py::object dtype) {
        return run_collective("hcomm_allreduce", send, recv, stream, comm, count, dtype, 1, 1, false,
                              [op](void* s, void* r, uint64_t n, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_allreduce(s, r, n, dt, static_cast<hcomm_reduce_op_t>(op), c->h, st);
                              });
      }, py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = static_cast<int>(HCOMM_REDUCE_SUM), py::arg("stream") = py::none(),
      py::arg("comm") = py::none(), py::arg("count") = py::none(), py::arg("dtype") = py::none(), "hcomm_allreduce");
  m.def("allgather", [](py::object send, py::object recv, py::object stream, py::object comm, py::object count, py::object dtype) {
        const uint32_t n = comm_or_world(comm)->size;
        if (is_buffer(send) && recv.is_none()) para("hcomm_allgather: recv is required for device buffers");
        return run_collective("hcomm_allgather", send, recv, stream, comm, count, dtype, 1, n, false,
                              [](void* s, void* r, uint64_t k, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_allgather(s, r, k, dt, c->h, st);
                              });
      }, py::arg("send"), py::arg("recv") = py::none(), py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("count") = py::none(), py::arg("dtype") = py::none(), "hcomm_allgather: recv holds size * count, rank r's block at r * count");
  m.def("reduce_scatter", [](py::object send, py::object recv, int op, py::object stream, py::object comm, py::object count, py::object dtype) {
        const uint32_t n = comm_or_world(comm)->size;
        if (is_buffer(send) && recv.is_none()) para("hcomm_reduce_scatter: recv is required for device buffers");
        return run_collective("hcomm_reduce_scatter", send, recv, stream, comm, count, dtype, n, 1, false,
                              [op](void* s, void* r, uint64_t k, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_reduce_scatter(s, r, k, dt, static_cast<hcomm_reduce_op_t>(op), c->h, st);
                              });
      }, py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = static_cast<int>(HCOMM_REDUCE_SUM), py::arg("stream") = py::none(),
      py::arg("comm") = py::none(), py::arg("count") = py::none(), py::arg("dtype") = py::none(),
      "hcomm_reduce_scatter: send holds size * count; rank r gets the reduction of block r");
  m.def("alltoall", [](py::object send, py::object recv, py::object stream, py::object comm, py::object count, py::object dtype) {
        const uint32_t n = comm_or_world(comm)->size;
        if (is_buffer(send) && recv.is_none()) para("hcomm_alltoall: recv is required for device buffers");
        return run_collective("hcomm_alltoall", send, recv, stream, comm, count, dtype, n, n, false,
                              [](void* s, void* r, uint64_t k, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_alltoall(s, r, k, dt, c->h, st);
                              });
      }, py::arg("send"), py::arg("recv") = py::none(), py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("count") = py::none(), py::arg("dtype") = py::none(), "hcomm_alltoall: block j of send goes to rank j");
  m.def("broadcast", [](py::object data, uint32_t root, py::object stream, py::object comm, py::object count, py::object dtype) {
        // In place: the staged copy goes out and comes back into `data`.
        return run_collective("hcomm_broadcast", data, data, stream, comm, count, dtype, 1, 1, false,
                              [root](void* s, void* r, uint64_t k, P dt, hcomm_stream_t st, const CommP& c) {
                                if (s != r) {  // staged: send the host copy from the receive area
                                  const hcomm_result_t rc = hcomm_memcpy_device_to_device(r, s, k * hcomm_data_type_size(dt), st);
                                  if (rc != HCOMM_SUCCESS) return rc;
                                }
                                return hcomm_broadcast(r, k, dt, root, c->h, st);
                              });
      }, py::arg("data"), py::arg("root") = 0, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("count") = py::none(), py::arg("dtype") = py::none(), "hcomm_broadcast (in place in data)");
  m.def("reduce", [](py::object send, py::object recv, int op, uint32_t root, py::object stream, py::object comm, py::object count,
                     py::object dtype) {
        return run_collective("hcomm_reduce", send, recv, stream, comm, count, dtype, 1, 1, false,
                              [op, root](void* s, void* r, uint64_t n, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_reduce(s, r, n, dt, static_cast<hcomm_reduce_op_t>(op), root, c->h, st);
                              });
      }, py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = static_cast<int>(HCOMM_REDUCE_SUM), py::arg("root") = 0,
      py::arg("stream") = py::none(), py::arg("comm") = py::none(), py::arg("count") = py::none(), py::arg("dtype") = py::none(),
      "hcomm_reduce: recv is significant at the root only");
  m.def("scatter", [](py::object send, py::object recv, uint32_t root, py::object stream, py::object comm, py::object count, py::object dtype) {
        const uint32_t n = comm_or_world(comm)->size;
        if (recv.is_none()) para("hcomm_scatter: recv is required");
        // Every rank passes send of size * recv's count elements (read at the root only).
        return run_collective("hcomm_scatter", send, recv, stream, comm, count, dtype, n, 1, true,
                              [root](void* s, void* r, uint64_t k, P dt, hcomm_stream_t st, const CommP& c) {
                                return hcomm_scatter(s, r, k, dt, root, c->h, st);
                              });
      }, py::arg("send"), py::arg("recv"), py::arg("root") = 0, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("count") = py::none(), py::arg("dtype") = py::none(), "hcomm_scatter: rank r receives block r of the root's send");
  m.def("barrier", [](py::object stream, py::object comm) {
        reclaim();
        CommP c = comm_or_world(comm);
        hcomm_stream_t s = stream.is_none() ? nullptr : stream_handle(stream);
        check(nogil([&] { return hcomm_barrier(c->h, s); }), "hcomm_barrier");
      }, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_barrier: without a stream blocks until every rank arrived; with one, stream-ordered");

  bind_ext(m);  // failover, -v collectives, batch send/recv, RDMA, bandwidth reservation (module_ext.cpp)

  // ---- teardown: release every handle at interpreter exit (hcomm_finalize), before the module's
  // objects are collected in an arbitrary order.
  m.def("finalize", [] {
        if (g_finalized) return;
        g_finalized = true;
        for (Pending& p : g->pending) p.keep = py::object();
        g->pending.clear();
        hcomm_finalize();
      }, "hcomm_finalize: release every handle (registered with atexit)");
  py::module_::import("atexit").attr("register")(m.attr("finalize"));
}
