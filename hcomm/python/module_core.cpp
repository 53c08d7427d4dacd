// The Python module `hcomm` (docs/python.md): errors, data types, configuration checks, the module
// state (staging memory and requests released as their stream work completes), the world
// communicator, argument checks and point-to-point; the bindings are in hcomm_module.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "module.h"

namespace hcomm_py {

py::object* g_error_cls = nullptr;
bool g_finalized = false;
State* g = nullptr;

[[noreturn]] void fail(hcomm_result_t rc, const std::string& what) {
  throw Error{rc, what + ": " + hcomm_result_string(rc) + " (code " + std::to_string(static_cast<int>(rc)) + ")"};
}
void check(hcomm_result_t rc, const char* what) {
  if (rc != HCOMM_SUCCESS) fail(rc, what);
}
[[noreturn]] void para(const std::string& msg) { throw Error{HCOMM_E_PARA, msg}; }


// ---------------------------------------------------------------- data types
struct DType {
  hcomm_data_type_t code;
  const char* numpy_name;
};
const DType kDTypes[] = {{HCOMM_DATA_TYPE_INT8, "int8"},       {HCOMM_DATA_TYPE_INT16, "int16"},
                         {HCOMM_DATA_TYPE_INT32, "int32"},     {HCOMM_DATA_TYPE_INT64, "int64"},
                         {HCOMM_DATA_TYPE_FP16, "float16"},    {HCOMM_DATA_TYPE_FP32, "float32"},
                         {HCOMM_DATA_TYPE_FP64, "float64"},    {HCOMM_DATA_TYPE_BFP16, "bfloat16"}};

// numpy dtype -> HCOMM data type; anything else (unsigned, bool, complex, non-native byte order) is
// HCOMM_E_PARA. bfloat16 is numpy's extension type of that name (ml_dtypes), when installed.
hcomm_data_type_t data_type_of(const py::dtype& dt) {
  const std::string name = py::str(dt.attr("name"));
  const std::string order = py::str(dt.attr("byteorder"));
  if (order == ">") para("numpy dtype " + name + " is big-endian; HCOMM takes native byte order");
  for (const DType& d : kDTypes)
    if (name == d.numpy_name) return d.code;
  para("numpy dtype " + name +
       " has no HCOMM data type (supported: int8, int16, int32, int64, float16, float32, float64, bfloat16)");
}
py::dtype numpy_dtype_of(int code) {
  for (const DType& d : kDTypes)
    if (d.code == code) {
      if (code == HCOMM_DATA_TYPE_BFP16) {
        try {
          return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
        } catch (py::error_already_set&) {
          throw Error{HCOMM_E_NOT_SUPPORT, "bfloat16 needs the ml_dtypes package (numpy has no bfloat16)"};
        }
      }
      return py::dtype(d.numpy_name);
    }
  para("unknown HCOMM data type " + std::to_string(code));
}
uint32_t dtype_size(int code) {
  const uint32_t s = hcomm_data_type_size(static_cast<hcomm_data_type_t>(code));
  if (s == 0) para("unknown HCOMM data type " + std::to_string(code));
  return s;
}

Buffer::~Buffer() {
  if (!owned || g_finalized || !ctx || !ctx->h) return;
  if (symmetric) hcomm_buffer_free(ctx->h, reinterpret_cast<void*>(addr));
  else hcomm_free(ctx->h, reinterpret_cast<void*>(addr));
}
Comm::~Comm() {  // the library must not call back into a freed object
  if (error_cb && h && !g_finalized) hcomm_comm_set_error_callback(h, nullptr, nullptr);
}
CommP wrap_comm(const CtxP& ctx, hcomm_comm_t h) {
  auto n = std::make_shared<Comm>();
  n->ctx = ctx;
  n->h = h;
  n->read_timeout();
  check(hcomm_comm_rank(h, &n->rank), "hcomm_comm_rank");
  check(hcomm_comm_size(h, &n->size), "hcomm_comm_size");
  return n;
}

// Validate with the library's own table (hcomm_config_check on the knob's environment name).
void set_knob(CommConfig& cc, const Knob& k, const py::object& v) {
  if (v.is_none()) { cc.c.*k.field = HCOMM_CONFIG_UNSET; return; }
  if (!py::isinstance<py::int_>(v)) para(std::string("CommConfig.") + k.name + " must be an int or None, not " +
                                         std::string(py::str(v.get_type().attr("__name__"))));
  const std::string text = py::str(v);
  if (!text.empty() && text[0] == '-') para(std::string("CommConfig.") + k.name + " = " + text + " is out of range (negative)");
  char err[256];
  const hcomm_result_t rc = hcomm_config_check(k.env, text.c_str(), err, sizeof err);
  if (rc != HCOMM_SUCCESS) throw Error{rc, std::string("CommConfig.") + k.name + " = " + text + ": " + err};
  cc.c.*k.field = std::strtoull(text.c_str(), nullptr, 10);
}
void set_algo(CommConfig& cc, const py::object& v) {
  if (v.is_none()) { cc.has_algo = false; cc.algo.clear(); return; }
  if (!py::isinstance<py::str>(v)) para("CommConfig.algo must be a str or None");
  const std::string s = py::str(v);
  char err[256];
  const hcomm_result_t rc = hcomm_config_check("HCOMM_ALGO", s.c_str(), err, sizeof err);
  if (rc != HCOMM_SUCCESS) throw Error{rc, std::string("CommConfig.algo: ") + err};
  cc.has_algo = true;
  cc.algo = s;
}
const Knob& knob_named(const std::string& name) {
  const std::string n = name == "max_retries" ? "retry_count" : name;  // the seeds' name for retry_count
  for (const Knob& k : kKnobs)
    if (n == k.name) return k;
  throw py::attribute_error("CommConfig has no knob " + name);
}

void reclaim(hcomm_stream_t synced) {
  if (g_finalized) return;
  std::vector<hcomm_stream_t> busy;
  auto& d = g->detached;
  for (size_t i = 0; i < d.size();) {
    if (std::find(busy.begin(), busy.end(), d[i].first) != busy.end()) { ++i; continue; }
    if (hcomm_test(d[i].second) == HCOMM_E_AGAIN) { busy.push_back(d[i].first); ++i; continue; }
    d.erase(d.begin() + static_cast<long>(i));  // done (or failed: its stream reports it): released
  }
  busy.clear();
  auto& v = g->pending;
  for (size_t i = 0; i < v.size();) {
    if (v[i].stream != synced) {
      if (std::find(busy.begin(), busy.end(), v[i].stream) != busy.end()) { ++i; continue; }
      if (hcomm_query_event(v[i].ev) == HCOMM_E_AGAIN) { busy.push_back(v[i].stream); ++i; continue; }
    }
    hcomm_destroy_event(v[i].ev);
    for (uint64_t a : v[i].scratch) hcomm_free(v[i].ctx->h, reinterpret_cast<void*>(a));
    v.erase(v.begin() + static_cast<long>(i));
  }
}
Request::~Request() {
  if (g_finalized || !g) return;
  if (tail) hcomm_destroy_event(tail);
  if (req) g->detached.emplace_back(stream, req);
}

void add_pending(const CtxP& ctx, hcomm_stream_t s, std::vector<uint64_t> scratch, py::object keep) {
  hcomm_event_t ev = nullptr;
  hcomm_result_t rc = hcomm_create_event(ctx->h, &ev);
  if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(ev, s);
  if (rc != HCOMM_SUCCESS) {  // cannot track it: wait for it here instead
    if (ev) hcomm_destroy_event(ev);
    nogil([&] { return hcomm_stream_synchronize(s); });
    for (uint64_t a : scratch) hcomm_free(ctx->h, reinterpret_cast<void*>(a));
    check(rc, "hcomm_record_event");
  }
  g->pending.push_back(Pending{ctx, s, ev, std::move(scratch), std::move(keep)});
}

uint32_t env_u32(const char* name, uint32_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (*end || x > 0xffffffffULL || v[0] == '-') para(std::string(name) + "=" + v + " is not a rank number");
  return static_cast<uint32_t>(x);
}

CtxP create_context(uint32_t device_id) {
  for (const CtxP& c : g->contexts)
    if (c->device_id == device_id) return c;  // one context per device and process
  auto c = std::make_shared<Context>();
  c->device_id = device_id;
  const hcomm_result_t rc = nogil([&] { return hcomm_create_context(device_id, &c->h); });
  if (rc == HCOMM_E_DRV) {
    const char* drv = std::getenv("HCOMM_DRIVER");
    throw Error{rc, "hcomm_create_context(" + std::to_string(device_id) + "): " + hcomm_result_string(rc) +
                        " (code 16): no driver" +
                        (drv && *drv ? std::string(" could be loaded from HCOMM_DRIVER=") + drv
                                     : std::string(" (HCOMM_DRIVER is not set; run under `hcsim exec`)"))};
  }
  check(rc, "hcomm_create_context");
  g->contexts.push_back(c);
  return c;
}
// The process's context: the one for LOCAL_RANK's device if created, else the first created,
// else a new one for LOCAL_RANK (default 0).
CtxP process_context() {
  const uint32_t local = env_u32("LOCAL_RANK", 0);
  for (const CtxP& c : g->contexts)
    if (c->device_id == local) return c;
  if (!g->contexts.empty()) return g->contexts.front();
  return create_context(local);
}

CommP world() {
  if (g->world) return g->world;
  CtxP ctx = process_context();
  const uint32_t size = env_u32("WORLD_SIZE", 1), rank = env_u32("RANK", 0);
  if (rank >= size) para("RANK=" + std::to_string(rank) + " is not below WORLD_SIZE=" + std::to_string(size));
  hcomm_config_t cfg = g->config.c;
  cfg.algo = g->config.has_algo ? g->config.algo.c_str() : nullptr;
  auto w = std::make_shared<Comm>();
  w->ctx = ctx;
  w->rank = rank;
  w->size = size;
  const hcomm_result_t rc = nogil([&] { return hcomm_comm_init_config(ctx->h, size, rank, &cfg, &w->h); });
  if (rc != HCOMM_SUCCESS) {
    const char* why = nullptr;
    std::string msg = "hcomm_comm_init_config(world, rank " + std::to_string(rank) + " of " + std::to_string(size) +
                      "): " + hcomm_result_string(rc) + " (code " + std::to_string(static_cast<int>(rc)) + ")";
    if (hcomm_get_discovery_error(ctx->h, &why) == HCOMM_SUCCESS && why && *why) msg += ": " + std::string(why);
    const char* local = std::getenv("LOCAL_RANK");
    if (local && *local && std::to_string(ctx->device_id) != local)
      msg += "; the context is for device " + std::to_string(ctx->device_id) + " but LOCAL_RANK is " + local +
             " (create_context(device_id=int(os.environ['LOCAL_RANK'])))";
    throw Error{rc, msg};
  }
  w->read_timeout();
  g->world = w;
  return w;
}
CommP comm_or_world(const py::object& comm) {
  if (!comm.is_none() && !py::isinstance<Comm>(comm))
    throw py::type_error("comm must be an hcomm.Comm or None, not " + std::string(py::str(comm.get_type().attr("__name__"))));
  CommP c = comm.is_none() ? world() : comm.cast<CommP>();
  if (!c->h) throw Error{HCOMM_E_UNAVAIL, "the communicator was destroyed (Comm.destroy)"};
  return c;
}
hcomm_stream_t stream_handle(const py::object& stream) {
  if (!py::isinstance<Stream>(stream))
    throw py::type_error("stream must be an hcomm.Stream or None, not " + std::string(py::str(stream.get_type().attr("__name__"))));
  return stream.cast<StreamP>()->h;
}
hcomm_stream_t stream_or_default(const py::object& stream, const CtxP& ctx) {
  return stream.is_none() ? ctx->default_stream() : stream_handle(stream);
}

// A host buffer of a pool, as a numpy array over its memory.
py::array host_buffer_array(const BufferP& b) {
  py::dtype dt = numpy_dtype_of(b->dtype);
  const auto n = static_cast<py::ssize_t>(b->size / dt.itemsize());
  return py::array(dt, {n}, {static_cast<py::ssize_t>(dt.itemsize())}, reinterpret_cast<void*>(b->addr), py::cast(b));
}
HostArr host_arr(const py::object& o, const char* what, bool writable, bool typed) {
  py::array a;
  if (is_buffer(o) && o.cast<BufferP>()->memory_type == HCOMM_MEMORY_TYPE_HOST) a = host_buffer_array(o.cast<BufferP>());
  else if (is_array(o)) a = py::reinterpret_borrow<py::array>(o);
  else para(std::string(what) + " must be a numpy array, not " + std::string(py::str(o.get_type().attr("__name__"))));
  if (!(a.flags() & py::array::c_style)) para(std::string(what) + " must be C-contiguous (use numpy.ascontiguousarray)");
  if (writable && !a.writeable()) para(std::string(what) + " must be writable");
  HostArr h;
  h.arr = a;
  h.ptr = const_cast<void*>(a.data());
  h.bytes = static_cast<uint64_t>(a.nbytes());
  if (typed) {
    h.dtype = data_type_of(a.dtype());
    h.count = static_cast<uint64_t>(a.size());
  } else {
    h.count = h.bytes;
  }
  return h;
}
BufferP device_buf(const py::object& o, const char* what) {
  if (!is_buffer(o)) para(std::string(what) + " must be an hcomm Buffer (device memory), not " +
                          std::string(py::str(o.get_type().attr("__name__"))));
  BufferP b = o.cast<BufferP>();
  b->check_usable(what);
  if (b->memory_type != HCOMM_MEMORY_TYPE_DEVICE) para(std::string(what) + " is host memory; a device Buffer is needed");
  return b;
}
uint64_t alloc_scratch(const CtxP& ctx, uint64_t bytes) {
  void* p = nullptr;
  check(nogil([&] { return hcomm_malloc(ctx->h, bytes ? bytes : 1, &p); }), "hcomm_malloc (staging)");
  return reinterpret_cast<uint64_t>(p);
}

namespace {
// ---------------------------------------------------------------- point-to-point
// A message argument: a numpy array / host pool buffer (staged), or a device Buffer.
struct Msg {
  bool host = false;
  HostArr h;
  BufferP b;
  uint64_t count = 0;
  hcomm_data_type_t dtype = HCOMM_DATA_TYPE_INT8;
  uint64_t bytes() const { return count * hcomm_data_type_size(dtype); }
};
Msg msg_arg(const py::object& o, const char* what, bool writable) {
  Msg m;
  if (is_buffer(o) && o.cast<BufferP>()->memory_type == HCOMM_MEMORY_TYPE_DEVICE) {
    m.b = device_buf(o, what);
    m.dtype = static_cast<hcomm_data_type_t>(m.b->dtype);
    m.count = m.b->size / dtype_size(m.dtype);
  } else {
    m.host = true;
    m.h = host_arr(o, what, writable, true);
    m.dtype = m.h.dtype;
    m.count = m.h.count;
  }
  return m;
}
}  // namespace

RequestP post_send(const py::object& data, uint32_t dest, uint32_t tag, const py::object& stream, const py::object& comm) {
  reclaim();
  CommP c = comm_or_world(comm);
  Msg m = msg_arg(data, "data", false);
  hcomm_stream_t s = stream.is_none() ? c->ctx->p2p_stream(true) : stream_handle(stream);
  auto r = std::make_shared<Request>();
  r->ctx = c->ctx;
  r->stream = s;
  r->result = py::none();
  r->what = "isend to rank " + std::to_string(dest) + " (tag " + std::to_string(tag) + ")";
  r->timeout_ms = c->timeout_ms;
  std::vector<uint64_t> scratch;
  const void* src = nullptr;
  if (m.host) {
    scratch.push_back(alloc_scratch(c->ctx, m.h.bytes));
    src = dev(scratch[0]);
    const hcomm_result_t rc = nogil([&] { return hcomm_memcpy_host_to_device(dev(scratch[0]), m.h.ptr, m.h.bytes, s); });
    if (rc != HCOMM_SUCCESS) { hcomm_free(c->ctx->h, dev(scratch[0])); fail(rc, "hcomm_memcpy_host_to_device (isend staging)"); }
  } else {
    src = dev(m.b->addr);
    m.b->last_stream = s;
  }
  const hcomm_result_t rc = nogil([&] { return hcomm_isend(src, m.count, m.dtype, dest, tag, c->h, s, &r->req); });
  add_pending(c->ctx, s, std::move(scratch), data);  // the staging memory and the data live until the send is done
  check(rc, "hcomm_isend");
  return r;
}

RequestP post_recv(const py::object& data, uint32_t src_rank, uint32_t tag, const py::object& stream, const py::object& comm) {
  reclaim();
  CommP c = comm_or_world(comm);
  Msg m = msg_arg(data, "data", true);
  hcomm_stream_t s = stream.is_none() ? c->ctx->p2p_stream(false) : stream_handle(stream);
  auto r = std::make_shared<Request>();
  r->ctx = c->ctx;
  r->stream = s;
  r->result = data;
  r->what = "irecv from rank " + std::to_string(src_rank) + " (tag " + std::to_string(tag) + ")";
  r->timeout_ms = c->timeout_ms;
  std::vector<uint64_t> scratch;
  void* dst = nullptr;
  if (m.host) {
    scratch.push_back(alloc_scratch(c->ctx, m.h.bytes));
    dst = dev(scratch[0]);
  } else {
    dst = dev(m.b->addr);
    m.b->last_stream = s;
  }
  hcomm_result_t rc = nogil([&] { return hcomm_irecv(dst, m.count, m.dtype, src_rank, tag, c->h, s, &r->req); });
  if (rc == HCOMM_SUCCESS && m.host) {
    rc = nogil([&] { return hcomm_memcpy_device_to_host(m.h.ptr, dst, m.h.bytes, s); });
    if (rc == HCOMM_SUCCESS) rc = hcomm_create_event(c->ctx->h, &r->tail);
    if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(r->tail, s);
  }
  add_pending(c->ctx, s, std::move(scratch), data);
  check(rc, "hcomm_irecv");
  return r;
}

namespace {
// Request completion. test: one poll; wait: blocks (the request's stream up to the receive's copy back).
void request_finish_tail(Request& r, bool block) {
  if (!r.tail) return;
  if (hcomm_query_event(r.tail) != HCOMM_SUCCESS && block)
    check(nogil([&] { return hcomm_stream_synchronize(r.stream); }), "hcomm_stream_synchronize (irecv copy to host)");
  hcomm_destroy_event(r.tail);
  r.tail = nullptr;
}
}  // namespace
bool request_test(Request& r) {
  if (r.done) return true;
  if (g_finalized) throw Error{HCOMM_E_UNAVAIL, "hcomm was finalized"};
  if (r.req) {
    const hcomm_result_t rc = nogil([&] { return hcomm_test(r.req); });
    if (rc == HCOMM_E_AGAIN) return false;
    r.req = nullptr;  // completed or failed: the library released it
    if (rc != HCOMM_SUCCESS) {
      if (r.tail) { hcomm_destroy_event(r.tail); r.tail = nullptr; }
      r.done = true;
      fail(rc, "hcomm_test");
    }
  }
  if (r.tail) {
    const hcomm_result_t q = hcomm_query_event(r.tail);
    if (q == HCOMM_E_AGAIN) return false;
    hcomm_destroy_event(r.tail);
    r.tail = nullptr;
    if (q != HCOMM_SUCCESS) { r.done = true; fail(q, "hcomm_query_event (irecv copy to host)"); }
  }
  r.done = true;
  reclaim();
  return true;
}
// await's poll: request_test, and HCOMM_E_TIMEOUT once the request has been polled for the
// communicator's timeout_ms of cluster time (hcomm_wtime) without completing; it stays in flight.
bool request_poll(Request& r) {
  if (request_test(r)) return true;
  const double now = hcomm_wtime();
  if (r.first_poll < 0) r.first_poll = now;
  else if ((now - r.first_poll) * 1000.0 > static_cast<double>(r.timeout_ms))
    throw Error{HCOMM_E_TIMEOUT, r.what + ": not complete after timeout_ms = " + std::to_string(r.timeout_ms) +
                                     " ms of awaiting (hcomm_wtime); sizes and tags must match on both sides, and a receive "
                                     "holds back later work on its stream"};
  return false;
}
py::object request_wait(Request& r) {
  if (!r.done) {
    if (g_finalized) throw Error{HCOMM_E_UNAVAIL, "hcomm was finalized"};
    if (r.req) {
      const hcomm_result_t rc = nogil([&] { return hcomm_wait(r.req); });
      r.req = nullptr;
      if (rc != HCOMM_SUCCESS) {
        if (r.tail) { hcomm_destroy_event(r.tail); r.tail = nullptr; }
        r.done = true;
        fail(rc, "hcomm_wait");
      }
    }
    request_finish_tail(r, true);
    r.done = true;
    reclaim();
  }
  return r.result;
}

py::array empty_like_count(const HostArr& like, uint64_t count) {
  return py::array(like.arr.dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(count)});
}

hcomm_data_type_t buf_dtype(const BufferP& b, const py::object& dtype) {
  if (dtype.is_none()) return static_cast<hcomm_data_type_t>(b->dtype);
  if (!py::isinstance<py::int_>(dtype)) return data_type_of(py::dtype::from_args(dtype));  // a numpy dtype
  const int d = dtype.cast<int>();
  dtype_size(d);
  return static_cast<hcomm_data_type_t>(d);
}
uint64_t buf_count(const BufferP& b, hcomm_data_type_t dt, const py::object& count, uint64_t div) {
  if (!count.is_none()) return count.cast<uint64_t>();
  const uint64_t elems = b->size / hcomm_data_type_size(dt);
  if (elems % div) para("buffer of " + std::to_string(elems) + " elements does not divide into " + std::to_string(div) + " blocks");
  return elems / div;
}
void need_bytes(const BufferP& b, uint64_t bytes, const char* what) {
  if (bytes > b->size) para(std::string(what) + " holds " + std::to_string(b->size) + " bytes, the operation needs " + std::to_string(bytes));
}
void keep_bufs(const CommP& c, hcomm_stream_t s, py::tuple keep) { add_pending(c->ctx, s, {}, keep); }

}  // namespace hcomm_py
