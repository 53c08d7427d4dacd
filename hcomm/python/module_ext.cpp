// The Python module `hcomm` (docs/python.md): the bindings of the failover calls (asynchronous
// error, error callback, lost ranks, shrink, destroy), the -v collectives, batch send/recv, RDMA
// (symmetric buffers, memory registration, one-sided writes) and bandwidth reservation. The same
// conventions as hcomm_module.cpp: numpy arrays are host memory (staged, the call blocks and returns
// the result), device Buffers are queued on the stream; `comm=None` is the world communicator.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "module.h"

namespace hcomm_py {
namespace {

using P = hcomm_data_type_t;
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// ---------------------------------------------------------------- arguments
// A non-negative integer (Python int or numpy integer) up to `max`: HcommError(E_PARA) when out of
// range, TypeError when not an integer.
uint64_t as_uint(const py::handle& o, const std::string& what, uint64_t max = kU64Max) {
  PyObject* idx = PyNumber_Index(o.ptr());
  if (!idx) {
    PyErr_Clear();
    throw py::type_error(what + " must be an integer, not " + std::string(py::str(o.get_type().attr("__name__"))));
  }
  py::int_ v = py::reinterpret_steal<py::int_>(idx);
  if (PyObject_RichCompareBool(v.ptr(), py::int_(0).ptr(), Py_LT) == 1) para(what + " = " + std::string(py::str(v)) + " is negative");
  const unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    para(what + " = " + std::string(py::str(v)) + " is too large");
  }
  if (x > max) para(what + " = " + std::to_string(x) + " is above " + std::to_string(max));
  return x;
}

// A sequence of `n` element counts or displacements (one per rank of the communicator).
std::vector<uint64_t> per_rank(const py::object& o, uint32_t n, const char* what) {
  if (!py::isinstance<py::sequence>(o) || py::isinstance<py::str>(o))
    throw py::type_error(std::string(what) + " must be a sequence of " + std::to_string(n) + " integers (one per rank)");
  py::sequence seq = py::reinterpret_borrow<py::sequence>(o);
  if (seq.size() != n) para(std::string(what) + " has " + std::to_string(seq.size()) + " entries; the communicator has " + std::to_string(n) + " ranks");
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(as_uint(seq[i], std::string(what) + "[" + std::to_string(i) + "]"));
  return v;
}
// Displacements: given, or packed (the prefix sums of the counts).
std::vector<uint64_t> displs_or_packed(const py::object& o, const std::vector<uint64_t>& counts, const char* what) {
  if (!o.is_none()) return per_rank(o, static_cast<uint32_t>(counts.size()), what);
  std::vector<uint64_t> d;
  uint64_t at = 0;
  for (uint64_t c : counts) {
    d.push_back(at);
    if (c > kU64Max - at) para(std::string(what) + ": the counts overflow");
    at += c;
  }
  return d;
}
// Elements a buffer must hold for blocks (displs[r], counts[r]).
uint64_t extent(const std::vector<uint64_t>& counts, const std::vector<uint64_t>& displs, const char* what) {
  uint64_t e = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > kU64Max - displs[r]) para(std::string(what) + ": block " + std::to_string(r) + " ends past 2^64");
    e = std::max(e, displs[r] + counts[r]);
  }
  return e;
}

// A -v collective: send holds at least send_elems elements (exactly, when send_exact), recv at least
// recv_elems (exactly, when recv_exact; allocated with that many zeros when None for numpy
// arrays). Host: a given recv is copied in first, so elements no block covers keep their values.
// fn(send_dev, recv_dev, dtype, stream, comm).
template <class F>
py::object run_v(const char* name, const CommP& c, const py::object& send, py::object recv, const py::object& stream,
                 const py::object& dtype, uint64_t send_elems, bool send_exact, uint64_t recv_elems, bool recv_exact, F fn) {
  reclaim();
  hcomm_stream_t s = stream_or_default(stream, c->ctx);
  auto exact = [&](uint64_t have, uint64_t want, bool ex, const char* what) {
    if (ex ? have != want : have < want)
      para(std::string(name) + ": " + what + " has " + std::to_string(have) + " elements, " + (ex ? "" : "at least ") +
           std::to_string(want) + " needed");
  };
  if (is_buffer(send) && send.cast<BufferP>()->memory_type == HCOMM_MEMORY_TYPE_DEVICE) {
    if (recv.is_none()) para(std::string(name) + ": recv is required for device buffers");
    BufferP sb = device_buf(send, "send"), rb = device_buf(recv, "recv");
    const P dt = buf_dtype(sb, dtype);
    const uint64_t es = hcomm_data_type_size(dt);
    if (send_elems > kU64Max / es || recv_elems > kU64Max / es) para(std::string(name) + ": the counts overflow");
    need_bytes(sb, send_elems * es, "send");
    need_bytes(rb, recv_elems * es, "recv");
    sb->last_stream = rb->last_stream = s;
    check(nogil([&] { return fn(dev(sb->addr), dev(rb->addr), dt, s, c); }), name);
    keep_bufs(c, s, py::make_tuple(send, recv));
    return recv;
  }
  if (!dtype.is_none()) para(std::string(name) + ": dtype= is for device buffers (numpy arrays carry their dtype)");
  HostArr sh = host_arr(send, "send", false, true);
  exact(sh.count, send_elems, send_exact, "send");
  const bool given = !recv.is_none();
  if (!given) recv = py::array(sh.arr.dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(recv_elems)});
  HostArr rh = host_arr(recv, "recv", true, true);
  if (!given) std::fill_n(static_cast<char*>(rh.ptr), rh.bytes, 0);
  if (rh.dtype != sh.dtype) para(std::string(name) + ": send and recv have different dtypes");
  exact(rh.count, recv_elems, recv_exact, "recv");
  Staging st{c, s, {}};
  void* sd = st.put(sh, true);
  void* rd = st.put(rh, given && !recv_exact);
  check(nogil([&] { return fn(sd, rd, sh.dtype, s, c); }), name);
  st.get(rh, rd);
  st.sync();
  return recv;
}

// ---------------------------------------------------------------- failover
void on_error(hcomm_comm_t, hcomm_result_t error, const char* msg, void* user_data) {
  if (g_finalized || !user_data) return;
  py::gil_scoped_acquire gil;  // called from inside a library call, which may have released the GIL
  py::object cb = static_cast<Comm*>(user_data)->error_cb;  // a copy: the callback may unregister itself
  if (!cb || cb.is_none()) return;
  try {
    cb(static_cast<int>(error), std::string(msg ? msg : ""));
  } catch (py::error_already_set& e) {  // cannot propagate through the C library
    e.discard_as_unraisable("hcomm error callback");
  }
}

std::vector<uint32_t> lost_ranks(const CommP& c) {
  uint32_t n = 0;
  check(hcomm_comm_lost_ranks(c->h, 0, nullptr, &n), "hcomm_comm_lost_ranks");
  std::vector<uint32_t> v(n);
  uint32_t got = 0;
  if (n) check(hcomm_comm_lost_ranks(c->h, n, v.data(), &got), "hcomm_comm_lost_ranks");
  v.resize(std::min(n, got));
  return v;
}

CommP shrink(const CommP& c, const py::object& lost) {
  if (!py::isinstance<py::iterable>(lost) || py::isinstance<py::str>(lost))
    throw py::type_error("lost_ranks must be an iterable of comm ranks");
  std::vector<uint32_t> v;
  for (auto r : lost) v.push_back(static_cast<uint32_t>(as_uint(r, "lost rank", 0xffffffffu)));
  hcomm_comm_t out = nullptr;
  check(nogil([&] { return hcomm_comm_shrink(c->h, static_cast<uint32_t>(v.size()), v.data(), &out); }), "hcomm_comm_shrink");
  return wrap_comm(c->ctx, out);
}

void destroy(Comm& c) {
  if (g_finalized) throw Error{HCOMM_E_UNAVAIL, "hcomm was finalized"};
  if (!c.h) throw Error{HCOMM_E_UNAVAIL, "hcomm_comm_destroy: the communicator was already destroyed"};
  reclaim();
  hcomm_comm_t h = c.h;
  c.h = nullptr;
  const hcomm_result_t rc = nogil([&] { return hcomm_comm_destroy(h); });
  c.error_cb = py::object();
  check(rc, "hcomm_comm_destroy");
}

// ---------------------------------------------------------------- RDMA
struct MemoryRegion {
  CtxP ctx;
  hcomm_mr_t mr{};
  bool registered = true;
};
using MrP = std::shared_ptr<MemoryRegion>;

}  // namespace

void bind_ext(py::module_& m) {
  // ---- failover (docs/failover.md)
  py::class_<Comm, CommP> comm_cls = py::reinterpret_borrow<py::class_<Comm, CommP>>(m.attr("Comm"));
  comm_cls
      .def("shrink", [](const CommP& c, py::object lost) { return shrink(comm_or_world(py::cast(c)), lost); },
           py::arg("lost_ranks"), "hcomm_comm_shrink: a communicator of the survivors (every survivor calls it with the same list)")
      .def("destroy", [](Comm& c) { destroy(c); },
           "hcomm_comm_destroy; later calls on the communicator raise HcommError(E_UNAVAIL)")
      .def_property_readonly("destroyed", [](const Comm& c) { return c.h == nullptr; });
  m.def("get_async_error", [](py::object comm) {
        CommP c = comm_or_world(comm);
        hcomm_result_t e = HCOMM_SUCCESS;
        check(hcomm_get_async_error(c->h, &e), "hcomm_get_async_error");
        return static_cast<int>(e);
      }, py::arg("comm") = py::none(),
      "hcomm_get_async_error: SUCCESS while healthy, else the first error the communicator learned; I_FAILOVER once after a survived fault");
  m.def("get_async_error_string", [](py::object comm) {
        CommP c = comm_or_world(comm);
        const char* s = nullptr;
        check(hcomm_get_async_error_string(c->h, &s), "hcomm_get_async_error_string");
        return std::string(s ? s : "");
      }, py::arg("comm") = py::none(), "hcomm_get_async_error_string: the error as text (\"\" while healthy)");
  m.def("set_error_callback", [](py::object callback, py::object comm) {
        CommP c = comm_or_world(comm);
        if (!callback.is_none() && !PyCallable_Check(callback.ptr())) throw py::type_error("callback must be callable or None");
        if (callback.is_none()) {
          check(hcomm_comm_set_error_callback(c->h, nullptr, nullptr), "hcomm_comm_set_error_callback");
          c->error_cb = py::object();
          return;
        }
        c->error_cb = callback;
        check(hcomm_comm_set_error_callback(c->h, on_error, c.get()), "hcomm_comm_set_error_callback");
      }, py::arg("callback"), py::arg("comm") = py::none(),
      "hcomm_comm_set_error_callback: callback(code, message) once per fault, from inside the call that learned it "
      "(an exception it raises is reported as unraisable); None unregisters");
  m.def("lost_ranks", [](py::object comm) { return lost_ranks(comm_or_world(comm)); }, py::arg("comm") = py::none(),
        "hcomm_comm_lost_ranks: the comm ranks found lost, ascending");
  m.def("shrink", [](py::object lost, py::object comm) { return shrink(comm_or_world(comm), lost); }, py::arg("lost_ranks"),
        py::arg("comm") = py::none(), "hcomm_comm_shrink: a communicator of the survivors, ranked in their old order");
  m.def("comm_destroy", [](const CommP& c) { destroy(*c); }, py::arg("comm").none(false), "hcomm_comm_destroy (Comm.destroy)");

  // ---- -v collectives
  m.def("allgatherv", [](py::object send, py::object recv_counts, py::object recv_displs, py::object recv, py::object stream,
                         py::object comm, py::object dtype) {
        CommP c = comm_or_world(comm);
        const std::vector<uint64_t> counts = per_rank(recv_counts, c->size, "recv_counts");
        const std::vector<uint64_t> displs = displs_or_packed(recv_displs, counts, "recv_displs");
        const uint64_t mine = counts[c->rank];
        return run_v("hcomm_allgatherv", c, send, recv, stream, dtype, mine, true, extent(counts, displs, "recv_displs"), false,
                     [&](void* s, void* r, P dt, hcomm_stream_t st, const CommP& cc) {
                       return hcomm_allgatherv(s, mine, r, counts.data(), displs.data(), dt, cc->h, st);
                     });
      }, py::arg("send"), py::arg("recv_counts"), py::arg("recv_displs") = py::none(), py::arg("recv") = py::none(),
      py::arg("stream") = py::none(), py::arg("comm") = py::none(), py::arg("dtype") = py::none(),
      "hcomm_allgatherv: rank r's recv_counts[r] elements (its send) land at recv_displs[r] (default: packed) of every recv");
  m.def("reduce_scatterv", [](py::object send, py::object send_counts, py::object send_displs, py::object recv, int op,
                              py::object stream, py::object comm, py::object dtype) {
        CommP c = comm_or_world(comm);
        const std::vector<uint64_t> counts = per_rank(send_counts, c->size, "send_counts");
        const std::vector<uint64_t> displs = displs_or_packed(send_displs, counts, "send_displs");
        const uint64_t mine = counts[c->rank];
        return run_v("hcomm_reduce_scatterv", c, send, recv, stream, dtype, extent(counts, displs, "send_displs"), false, mine, true,
                     [&](void* s, void* r, P dt, hcomm_stream_t st, const CommP& cc) {
                       return hcomm_reduce_scatterv(s, counts.data(), displs.data(), r, mine, dt, static_cast<hcomm_reduce_op_t>(op), cc->h, st);
                     });
      }, py::arg("send"), py::arg("send_counts"), py::arg("send_displs") = py::none(), py::arg("recv") = py::none(),
      py::arg("op") = static_cast<int>(HCOMM_REDUCE_SUM), py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("dtype") = py::none(),
      "hcomm_reduce_scatterv: block r is send_counts[r] elements at send_displs[r] (default: packed); rank r gets its reduction");
  m.def("alltoallv", [](py::object send, py::object send_counts, py::object recv_counts, py::object send_displs,
                        py::object recv_displs, py::object recv, py::object stream, py::object comm, py::object dtype) {
        CommP c = comm_or_world(comm);
        const std::vector<uint64_t> sc = per_rank(send_counts, c->size, "send_counts");
        const std::vector<uint64_t> rc = per_rank(recv_counts, c->size, "recv_counts");
        const std::vector<uint64_t> sd = displs_or_packed(send_displs, sc, "send_displs");
        const std::vector<uint64_t> rd = displs_or_packed(recv_displs, rc, "recv_displs");
        return run_v("hcomm_alltoallv", c, send, recv, stream, dtype, extent(sc, sd, "send_displs"), false, extent(rc, rd, "recv_displs"),
                     false, [&](void* s, void* r, P dt, hcomm_stream_t st, const CommP& cc) {
                       return hcomm_alltoallv(s, sc.data(), sd.data(), r, rc.data(), rd.data(), dt, cc->h, st);
                     });
      }, py::arg("send"), py::arg("send_counts"), py::arg("recv_counts"), py::arg("send_displs") = py::none(),
      py::arg("recv_displs") = py::none(), py::arg("recv") = py::none(), py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      py::arg("dtype") = py::none(),
      "hcomm_alltoallv: send_counts[j] elements at send_displs[j] go to rank j; recv_counts[j] from rank j land at recv_displs[j]");

  // ---- batch send/recv
  m.def("batch_send_recv", [](py::object items, py::object stream, py::object comm) -> py::object {
        reclaim();
        CommP c = comm_or_world(comm);
        hcomm_stream_t s = stream_or_default(stream, c->ctx);
        if (!py::isinstance<py::iterable>(items)) throw py::type_error("items must be an iterable of (SEND or RECV, buffer, remote_rank)");
        struct It {
          int type;
          py::object buf;
          uint32_t peer;
        };
        std::vector<It> v;
        for (auto item : items) {
          if (!py::isinstance<py::tuple>(item) && !py::isinstance<py::list>(item))
            throw py::type_error("batch item " + std::to_string(v.size()) + " must be a tuple (SEND or RECV, buffer, remote_rank)");
          py::sequence t = py::reinterpret_borrow<py::sequence>(item);
          const std::string at = "batch item " + std::to_string(v.size());
          if (t.size() != 3) para(at + " has " + std::to_string(t.size()) + " fields, not 3 (SEND or RECV, buffer, remote_rank)");
          const uint64_t type = as_uint(t[0], at + " type");
          if (type != HCOMM_SEND && type != HCOMM_RECV) para(at + ": type " + std::to_string(type) + " is neither SEND nor RECV");
          v.push_back(It{static_cast<int>(type), t[1], static_cast<uint32_t>(as_uint(t[2], at + " remote_rank", 0xffffffffu))});
        }
        auto is_dev = [](const py::object& o) { return is_buffer(o) && o.cast<BufferP>()->memory_type == HCOMM_MEMORY_TYPE_DEVICE; };
        const bool device = !v.empty() && is_dev(v[0].buf);
        for (size_t i = 0; i < v.size(); ++i)
          if (is_dev(v[i].buf) != device)
            para("batch item " + std::to_string(i) + ": every buffer of a batch must be host memory (numpy) or every one a device Buffer");
        std::vector<hcomm_send_recv_item_t> c_items;
        if (device) {
          py::list keep;
          for (size_t i = 0; i < v.size(); ++i) {
            BufferP b = device_buf(v[i].buf, ("batch item " + std::to_string(i)).c_str());
            const P dt = static_cast<P>(b->dtype);
            c_items.push_back({static_cast<hcomm_send_recv_type_t>(v[i].type), dev(b->addr), b->size / dtype_size(dt), dt, v[i].peer});
            b->last_stream = s;
            keep.append(v[i].buf);
          }
          check(nogil([&] { return hcomm_batch_send_recv(c_items.data(), static_cast<uint32_t>(c_items.size()), c->h, s); }),
                "hcomm_batch_send_recv");
          keep_bufs(c, s, py::tuple(keep));
          return py::none();
        }
        Staging st{c, s, {}};
        std::vector<HostArr> hosts;
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string what = "batch item " + std::to_string(i);
          hosts.push_back(host_arr(v[i].buf, what.c_str(), v[i].type == HCOMM_RECV, true));
          void* d = st.put(hosts.back(), v[i].type == HCOMM_SEND);
          c_items.push_back({static_cast<hcomm_send_recv_type_t>(v[i].type), d, hosts.back().count, hosts.back().dtype, v[i].peer});
        }
        check(nogil([&] { return hcomm_batch_send_recv(c_items.data(), static_cast<uint32_t>(c_items.size()), c->h, s); }),
              "hcomm_batch_send_recv");
        py::list received;
        for (size_t i = 0; i < v.size(); ++i)
          if (v[i].type == HCOMM_RECV) {
            st.get(hosts[i], c_items[i].buf);
            received.append(v[i].buf);
          }
        st.sync();
        return std::move(received);
      }, py::arg("items"), py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_batch_send_recv: items (SEND or RECV, buffer, remote_rank); numpy: blocks and returns the receive arrays in item "
      "order; device Buffers (count from size and .dtype): queued on the stream, returns None");

  // ---- RDMA: symmetric buffers, memory regions, one-sided writes
  m.def("buffer_alloc", [](uint64_t size, py::object ctx) {
        reclaim();
        if (!ctx.is_none() && !py::isinstance<Context>(ctx)) throw py::type_error("ctx must be an hcomm.Context or None");
        CtxP c = ctx.is_none() ? process_context() : ctx.cast<CtxP>();
        void* p = nullptr;
        check(hcomm_buffer_alloc(c->h, size, &p), "hcomm_buffer_alloc");
        auto b = std::make_shared<Buffer>();
        b->ctx = c;
        b->addr = reinterpret_cast<uint64_t>(p);
        b->size = size;
        b->owned = true;
        b->symmetric = true;
        return b;
      }, py::arg("size"), py::arg("ctx") = py::none(),
      "hcomm_buffer_alloc: device memory in the symmetric region (whole slots; the same offset on every rank that allocates "
      "in the same order)");
  py::class_<MemoryRegion, MrP>(m, "MemoryRegion", "hcomm_mr_t: a registered device memory region")
      .def_property_readonly("address", [](const MemoryRegion& r) { return r.mr.addr; })
      .def_property_readonly("size", [](const MemoryRegion& r) { return r.mr.size; })
      .def_property_readonly("lkey", [](const MemoryRegion& r) { return r.mr.lkey; })
      .def_property_readonly("rkey", [](const MemoryRegion& r) { return r.mr.rkey; })
      .def_property_readonly("access", [](const MemoryRegion& r) { return r.mr.access; })
      .def_property_readonly("registered", [](const MemoryRegion& r) { return r.registered; })
      .def("__repr__", [](const MemoryRegion& r) {
        return "<hcomm.MemoryRegion address=" + std::to_string(r.mr.addr) + " size=" + std::to_string(r.mr.size) +
               " rkey=" + std::to_string(r.mr.rkey) + (r.registered ? ">" : " deregistered>");
      });
  m.def("reg_mr", [](py::object buffer, int64_t access, py::object size) {
        BufferP b = device_buf(buffer, "buffer");
        const uint64_t n = size.is_none() ? b->size : as_uint(size, "size");
        need_bytes(b, n, "buffer");
        if (access < 0 || access > 0xffffffffLL) para("access = " + std::to_string(access) + " is not a set of ACCESS_* flags");
        auto r = std::make_shared<MemoryRegion>();
        r->ctx = b->ctx;
        check(hcomm_reg_mr(b->ctx->h, dev(b->addr), n, static_cast<uint32_t>(access), &r->mr), "hcomm_reg_mr");
        return r;
      }, py::arg("buffer"), py::arg("access") = static_cast<int64_t>(HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE),
      py::arg("size") = py::none(), "hcomm_reg_mr: register bytes [0, size) of a device Buffer (default: all of it)");
  m.def("dereg_mr", [](const MrP& r) {
        check(hcomm_dereg_mr(r->ctx->h, &r->mr), "hcomm_dereg_mr");
        r->registered = false;
      }, py::arg("mr").none(false), "hcomm_dereg_mr (E_NOT_FOUND when not registered)");
  m.def("remote_addr", [](py::object buffer, uint32_t peer, py::object comm) {
        CommP c = comm_or_world(comm);
        BufferP b = device_buf(buffer, "buffer");
        uint64_t a = 0;
        check(hcomm_remote_addr(c->h, peer, dev(b->addr), &a), "hcomm_remote_addr");
        return a;
      }, py::arg("buffer"), py::arg("peer"), py::arg("comm") = py::none(),
      "hcomm_remote_addr: the address of this symmetric buffer's copy on comm rank `peer`");
  m.def("rdma_write", [](py::object local, uint32_t dst_rank, uint64_t remote_addr, uint32_t rkey, py::object size, py::object stream,
                         py::object comm) {
        reclaim();
        CommP c = comm_or_world(comm);
        BufferP b = device_buf(local, "local");
        const uint64_t n = size.is_none() ? b->size : as_uint(size, "size");
        need_bytes(b, n, "local");
        hcomm_stream_t s = stream_or_default(stream, c->ctx);
        b->last_stream = s;
        check(nogil([&] { return hcomm_rdma_write(dev(b->addr), n, dst_rank, remote_addr, rkey, c->h, s); }), "hcomm_rdma_write");
        keep_bufs(c, s, py::make_tuple(local));
      }, py::arg("local"), py::arg("dst_rank"), py::arg("remote_addr"), py::arg("rkey"), py::arg("size") = py::none(),
      py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_rdma_write: one-sided write of `size` bytes (default: the buffer's) of a device Buffer to remote_addr on dst_rank, "
      "queued on the stream (a bad key or range fails its synchronize with E_RUNTIME)");

  // ---- bandwidth reservation (docs/routing.md#reservation)
  m.def("reserve_bandwidth", [](uint64_t min_Bps, uint64_t max_Bps, uint32_t timeout_ms, py::object comm) {
        CommP c = comm_or_world(comm);
        check(nogil([&] { return hcomm_reserve_bandwidth(c->h, min_Bps, max_Bps, timeout_ms); }), "hcomm_reserve_bandwidth");
      }, py::arg("min_Bps"), py::arg("max_Bps") = 0, py::arg("timeout_ms") = 0, py::arg("comm") = py::none(),
      "hcomm_reserve_bandwidth: keep min_Bps of this rank's RoCE NIC for the communicator (max_Bps 0: the line rate)");
  m.def("release_bandwidth", [](py::object comm) {
        CommP c = comm_or_world(comm);
        check(hcomm_release_bandwidth(c->h), "hcomm_release_bandwidth");
      }, py::arg("comm") = py::none(), "hcomm_release_bandwidth (E_NOT_FOUND when none)");
  m.def("get_reserved_bandwidth", [](py::object comm) {
        CommP c = comm_or_world(comm);
        uint64_t mn = 0, share = 0;
        check(hcomm_get_reserved_bandwidth(c->h, &mn, &share), "hcomm_get_reserved_bandwidth");
        return py::make_tuple(mn, share);
      }, py::arg("comm") = py::none(),
      "hcomm_get_reserved_bandwidth: (the communicator's reserved min_Bps (0: none), the NIC rate its writes may use now)");
}

}  // namespace hcomm_py
