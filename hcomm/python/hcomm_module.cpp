// The Python module `hcomm` (docs/python.md): the HCOMM product documentation's Python API over the
// C API (hcomm/include/hcomm/hcomm.h). numpy arrays are host memory: operations on them are staged
// through device memory the module allocates and frees; Buffer objects are device memory (opaque
// addresses). Point-to-point calls and collectives run on a world communicator the module creates at
// first use from RANK / WORLD_SIZE (hcsim exec sets them). Every HCOMM error is raised as HcommError.
#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"

namespace py = pybind11;

namespace {

// ---------------------------------------------------------------- errors
struct Error {  // thrown by the bindings, raised in Python as HcommError(code, message)
  hcomm_result_t code;
  std::string msg;
};
py::object* g_error_cls = nullptr;  // hcomm.HcommError (intentionally never freed)

[[noreturn]] void fail(hcomm_result_t rc, const std::string& what) {
  throw Error{rc, what + ": " + hcomm_result_string(rc) + " (code " + std::to_string(static_cast<int>(rc)) + ")"};
}
void check(hcomm_result_t rc, const char* what) {
  if (rc != HCOMM_SUCCESS) fail(rc, what);
}
[[noreturn]] void para(const std::string& msg) { throw Error{HCOMM_E_PARA, msg}; }

// Run a C call without the GIL (it may block: synchronize, wait, blocking send/recv, init).
template <class F>
hcomm_result_t nogil(F f) {
  py::gil_scoped_release release;
  return f();
}

bool g_finalized = false;  // hcomm_finalize ran (interpreter exit): handles are gone

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

// ---------------------------------------------------------------- objects
struct Context {
  hcomm_context_t h = nullptr;
  uint32_t device_id = 0;
  hcomm_stream_t def_stream = nullptr;  // the module's stream for calls given no stream
  // isend / irecv given no stream: one stream each, so a rank may post its sends and receives in
  // any order (on one stream a receive would hold back every later send of the rank).
  hcomm_stream_t send_stream = nullptr, recv_stream = nullptr;
  hcomm_stream_t default_stream() { return lazy(&def_stream); }
  hcomm_stream_t lazy(hcomm_stream_t* s) {
    if (!*s) check(nogil([&] { return hcomm_create_stream(h, s); }), "hcomm_create_stream");
    return *s;
  }
  // A point-to-point stream that first waits for the work queued so far on the default stream
  // (e.g. update_buffer of the buffer about to be sent).
  hcomm_stream_t p2p_stream(bool send) {
    hcomm_stream_t s = lazy(send ? &send_stream : &recv_stream);
    if (def_stream) {
      hcomm_event_t ev = nullptr;
      hcomm_result_t rc = hcomm_create_event(h, &ev);
      if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(ev, def_stream);
      if (rc == HCOMM_SUCCESS) rc = hcomm_wait_event(ev, s);
      if (ev) hcomm_destroy_event(ev);
      check(rc, "hcomm_wait_event (default stream -> point-to-point stream)");
    }
    return s;
  }
};
using CtxP = std::shared_ptr<Context>;

struct Stream {
  CtxP ctx;
  hcomm_stream_t h = nullptr;
};
using StreamP = std::shared_ptr<Stream>;

struct Event {
  CtxP ctx;
  hcomm_event_t h = nullptr;
};
using EventP = std::shared_ptr<Event>;

struct BufferPool;
struct Buffer {
  CtxP ctx;
  uint64_t addr = 0, size = 0;
  int memory_type = HCOMM_MEMORY_TYPE_DEVICE;
  int dtype = HCOMM_DATA_TYPE_INT8;  // element type for send/recv/collectives; set by update_buffer / memcpy
  bool owned = false;                // create_buffer: freed with the object
  std::shared_ptr<Buffer> parent;    // a view keeps its buffer alive
  // pool buffers
  std::shared_ptr<BufferPool> pool;
  uint32_t index = 0;
  bool released = false;
  hcomm_stream_t last_stream = nullptr;  // stream of the last operation that used it
  ~Buffer();
  void check_usable(const char* what) const {
    if (released) throw Error{HCOMM_E_UNAVAIL, std::string(what) + ": the buffer was released to its pool"};
  }
  Buffer* root() { return parent ? parent->root() : this; }
};
using BufferP = std::shared_ptr<Buffer>;

struct BufferPool {
  CtxP ctx;
  hcomm_buffer_pool_t h = nullptr;
  uint32_t num_buffers = 0;
  uint64_t buffer_size = 0;
  int memory_type = 0;
};
using PoolP = std::shared_ptr<BufferPool>;

Buffer::~Buffer() {
  if (owned && !g_finalized && ctx && ctx->h) hcomm_free(ctx->h, reinterpret_cast<void*>(addr));
}

struct Comm {
  CtxP ctx;
  hcomm_comm_t h = nullptr;
  uint32_t rank = 0, size = 0;
  uint64_t timeout_ms = 30000;  // the configuration in effect: how long an await polls
  void read_timeout() {
    hcomm_config_t c;
    if (hcomm_comm_get_config(h, &c) == HCOMM_SUCCESS) timeout_ms = c.timeout_ms;
  }
};
using CommP = std::shared_ptr<Comm>;

struct Request {
  CtxP ctx;
  hcomm_request_t req = nullptr;  // null once hcomm_test/hcomm_wait completed it
  hcomm_event_t tail = nullptr;   // irecv into a numpy array: the copy back to host after the receive
  hcomm_stream_t stream = nullptr;
  py::object result;              // what await / wait return (the receive array, or None)
  bool done = false;
  std::string what;               // "isend to rank 1 (tag 0)"
  uint64_t timeout_ms = 30000;    // the communicator's
  double first_poll = -1;         // hcomm_wtime of await's first poll
  ~Request();
};
using RequestP = std::shared_ptr<Request>;

// ---------------------------------------------------------------- configuration
struct Knob {
  const char* name;
  const char* env;
  uint64_t hcomm_config_t::*field;
};
const Knob kKnobs[] = {
    {"mode", "HCOMM_MODE", &hcomm_config_t::mode},
    {"send_buffer_size", "HCOMM_SEND_BUFFER_SIZE", &hcomm_config_t::send_buffer_size},
    {"recv_buffer_size", "HCOMM_RECV_BUFFER_SIZE", &hcomm_config_t::recv_buffer_size},
    {"buffer_pool_size", "HCOMM_BUFFER_POOL_SIZE", &hcomm_config_t::buffer_pool_size},
    {"timeout_ms", "HCOMM_TIMEOUT_MS", &hcomm_config_t::timeout_ms},
    {"retry_count", "HCOMM_RETRY_COUNT", &hcomm_config_t::retry_count},
    {"protocol", "HCOMM_PROTOCOL", &hcomm_config_t::protocol},
    {"bandwidth_limit", "HCOMM_BANDWIDTH_LIMIT", &hcomm_config_t::bandwidth_limit},
    {"num_qp", "HCOMM_NUM_QP", &hcomm_config_t::num_qp},
    {"buffer_size", "HCOMM_BUFFER_SIZE", &hcomm_config_t::buffer_size},
    {"op_retry", "HCOMM_OP_RETRY", &hcomm_config_t::op_retry},
    {"heartbeat_timeout_ms", "HCOMM_HEARTBEAT_TIMEOUT_MS", &hcomm_config_t::heartbeat_timeout_ms},
    {"multi_qp_threshold", "HCOMM_MULTI_QP_THRESHOLD", &hcomm_config_t::multi_qp_threshold},
};

struct CommConfig {
  hcomm_config_t c;
  bool has_algo = false;
  std::string algo;
  CommConfig() { hcomm_config_init(&c); }
};

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

// ---------------------------------------------------------------- module state
// Work queued on a stream that holds module-owned device memory (staging) or Python objects that
// must outlive it (host arrays of asynchronous copies, buffers): released when the event recorded
// after it completes (checked at every call).
struct Pending {
  CtxP ctx;
  hcomm_stream_t stream = nullptr;
  hcomm_event_t ev = nullptr;
  std::vector<uint64_t> scratch;
  py::object keep;
};

struct State {
  std::vector<CtxP> contexts;  // creation order
  CommP world;
  CommConfig config;  // set_config before the world communicator exists
  std::vector<Pending> pending;
  // Requests whose Python object went away in flight (an isend never waited for): completed by
  // hcomm_test in reclaim, which releases them.
  std::vector<std::pair<hcomm_stream_t, hcomm_request_t>> detached;
} *g = nullptr;  // never freed: handles must not be destroyed at interpreter teardown in an arbitrary order

// A stream's entries complete in order, so only its oldest unfinished one is queried: few queries
// per call (under hcsim exec a query is a driver call, and many at one instant count as polling).
// `synced`: a stream just synchronized successfully, whose entries are all done (no query).
void reclaim(hcomm_stream_t synced = nullptr) {
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

// Record the end of the work queued so far on `s`; free `scratch` and drop `keep` once it is done.
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
CommP comm_or_world(const py::object& comm) { return comm.is_none() ? world() : comm.cast<CommP>(); }
hcomm_stream_t stream_or_default(const py::object& stream, const CtxP& ctx) {
  if (stream.is_none()) return ctx->default_stream();
  return stream.cast<StreamP>()->h;
}

// ---------------------------------------------------------------- arguments
bool is_array(const py::handle& o) { return py::isinstance<py::array>(o); }
bool is_buffer(const py::handle& o) { return py::isinstance<Buffer>(o); }

struct HostArr {
  py::array arr;
  void* ptr = nullptr;
  uint64_t bytes = 0, count = 0;
  hcomm_data_type_t dtype = HCOMM_DATA_TYPE_INT8;
};
// A host buffer of a pool, as a numpy array over its memory.
py::array host_buffer_array(const BufferP& b) {
  py::dtype dt = numpy_dtype_of(b->dtype);
  const auto n = static_cast<py::ssize_t>(b->size / dt.itemsize());
  return py::array(dt, {n}, {static_cast<py::ssize_t>(dt.itemsize())}, reinterpret_cast<void*>(b->addr), py::cast(b));
}
// A numpy array argument: C-contiguous; writable when the library writes it; an HCOMM data type
// when `typed` (send/recv/collectives; memcpy takes bytes of any dtype).
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
void* dev(uint64_t a) { return reinterpret_cast<void*>(a); }

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

RequestP post_send(const py::object& data, uint32_t dest, uint32_t tag, const py::object& stream, const py::object& comm) {
  reclaim();
  CommP c = comm_or_world(comm);
  Msg m = msg_arg(data, "data", false);
  hcomm_stream_t s = stream.is_none() ? c->ctx->p2p_stream(true) : stream.cast<StreamP>()->h;
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
  hcomm_stream_t s = stream.is_none() ? c->ctx->p2p_stream(false) : stream.cast<StreamP>()->h;
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

// Request completion. test: one poll; wait: blocks (the request's stream up to the receive's copy back).
void request_finish_tail(Request& r, bool block) {
  if (!r.tail) return;
  if (hcomm_query_event(r.tail) != HCOMM_SUCCESS && block)
    check(nogil([&] { return hcomm_stream_synchronize(r.stream); }), "hcomm_stream_synchronize (irecv copy to host)");
  hcomm_destroy_event(r.tail);
  r.tail = nullptr;
}
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

// ---------------------------------------------------------------- collectives
// Either every buffer argument is host memory (numpy: staged, the call blocks until the result is
// back on the host and returns it) or device memory (Buffer: stream-ordered, returns at once).
struct Staging {
  CommP c;
  hcomm_stream_t s = nullptr;
  std::vector<uint64_t> scratch;
  bool synced = false;
  ~Staging() {
    if (g_finalized || scratch.empty()) return;
    if (synced) {
      for (uint64_t a : scratch) hcomm_free(c->ctx->h, dev(a));
      return;
    }
    try {  // failed midway: the copies queued so far may still use the memory
      add_pending(c->ctx, s, std::move(scratch), py::none());
    } catch (...) {
    }
  }
  void* put(const HostArr& h, bool copy) {  // device copy of a host array
    scratch.push_back(alloc_scratch(c->ctx, h.bytes));
    void* d = dev(scratch.back());
    if (copy) check(nogil([&] { return hcomm_memcpy_host_to_device(d, h.ptr, h.bytes, s); }), "hcomm_memcpy_host_to_device");
    return d;
  }
  void get(const HostArr& h, void* d) {
    check(nogil([&] { return hcomm_memcpy_device_to_host(h.ptr, d, h.bytes, s); }), "hcomm_memcpy_device_to_host");
  }
  void sync() {
    check(nogil([&] { return hcomm_stream_synchronize(s); }), "hcomm_stream_synchronize");
    synced = true;
  }
};

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

// Elementwise collectives with send and recv of sizes in_blocks * count and out_blocks * count.
// fn(send_dev, recv_dev, count, dtype, stream).
template <class F>
py::object run_collective(const char* name, const py::object& send, py::object recv, const py::object& stream, const py::object& comm,
                          const py::object& count, const py::object& dtype, uint64_t in_blocks, uint64_t out_blocks, bool recv_needed,
                          F fn) {
  reclaim();
  CommP c = comm_or_world(comm);
  hcomm_stream_t s = stream_or_default(stream, c->ctx);
  if (is_buffer(send) && send.cast<BufferP>()->memory_type == HCOMM_MEMORY_TYPE_DEVICE) {
    BufferP sb = device_buf(send, "send");
    BufferP rb = recv.is_none() ? sb : device_buf(recv, "recv");
    const hcomm_data_type_t dt = buf_dtype(sb, dtype);
    const uint64_t n = buf_count(sb, dt, count, in_blocks);
    const uint64_t es = hcomm_data_type_size(dt);
    need_bytes(sb, n * in_blocks * es, "send");
    need_bytes(rb, n * out_blocks * es, "recv");
    sb->last_stream = rb->last_stream = s;
    check(nogil([&] { return fn(dev(sb->addr), dev(rb->addr), n, dt, s, c); }), name);
    keep_bufs(c, s, py::make_tuple(send, recv));
    return recv.is_none() ? send : recv;
  }
  HostArr sh = host_arr(send, "send", false, true);
  if (sh.count % in_blocks) para(std::string(name) + ": send has " + std::to_string(sh.count) + " elements, not a multiple of " + std::to_string(in_blocks));
  const uint64_t n = sh.count / in_blocks;
  if (recv.is_none()) {
    if (!recv_needed) recv = empty_like_count(sh, n * out_blocks);
    else para(std::string(name) + ": recv is required");
  }
  HostArr rh = host_arr(recv, "recv", true, true);
  if (rh.dtype != sh.dtype) para(std::string(name) + ": send and recv have different dtypes");
  if (rh.count != n * out_blocks)
    para(std::string(name) + ": recv has " + std::to_string(rh.count) + " elements, expected " + std::to_string(n * out_blocks));
  Staging st{c, s, {}};
  void* sd = st.put(sh, true);
  void* rd = st.put(rh, false);
  check(nogil([&] { return fn(sd, rd, n, sh.dtype, s, c); }), name);
  st.get(rh, rd);
  st.sync();
  return recv;
}

// ---------------------------------------------------------------- topology
struct Topology {
  uint32_t my_rank = 0, num_nodes = 0;
  std::vector<int> distances;
  py::list links;
};

}  // namespace

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
      {"ACCESS_REMOTE_WRITE", HCOMM_ACCESS_REMOTE_WRITE},
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
      }, py::arg("stream"), "hcomm_stream_synchronize: blocks until every task on the stream finished");
  m.def("launch_compute", [](const StreamP& s, uint64_t duration_ns) {
        check(hcomm_launch_compute(s->h, duration_ns), "hcomm_launch_compute");
      }, py::arg("stream"), py::arg("duration_ns"), "hcomm_launch_compute: the stream is busy for duration_ns");

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
        py::arg("event"), py::arg("stream"), "hcomm_record_event");
  m.def("wait_event", [](const EventP& e, const StreamP& s) { check(hcomm_wait_event(e->h, s->h), "hcomm_wait_event"); },
        py::arg("event"), py::arg("stream"), "hcomm_wait_event: the stream waits (on the device) for the event");
  m.def("query_event", [](const EventP& e) {
        const hcomm_result_t rc = hcomm_query_event(e->h);
        if (rc == HCOMM_E_AGAIN) return false;
        check(rc, "hcomm_query_event");
        return true;
      }, py::arg("event"));
  m.def("event_elapsed_time", [](const EventP& a, const EventP& b) {
        float ms = 0;
        check(hcomm_event_elapsed_time(a->h, b->h, &ms), "hcomm_event_elapsed_time");
        return ms;
      }, py::arg("start"), py::arg("end"), "milliseconds between two completed events");

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
        if (!b.owned) para("only a buffer from create_buffer can be freed");
        b.owned = false;
        check(hcomm_free(b.ctx->h, dev(b.addr)), "hcomm_free");
      }, "hcomm_free (create_buffer's buffers are also freed when the object goes away)")
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
        hcomm_stream_t st = stream.is_none() ? b->last_stream : stream.cast<StreamP>()->h;
        hcomm_buffer_t hb{dev(b->addr), b->size, b->index};
        check(hcomm_buffer_pool_release(p->h, &hb, st), "hcomm_buffer_pool_release");
        b->released = true;
      }, py::arg("buffer"), py::arg("stream") = py::none(),
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
        auto n = std::make_shared<Comm>();
        n->ctx = c->ctx;
        n->h = out;
        n->read_timeout();
        check(hcomm_comm_rank(out, &n->rank), "hcomm_comm_rank");
        check(hcomm_comm_size(out, &n->size), "hcomm_comm_size");
        return py::cast(n);
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
        hcomm_stream_t s = stream.is_none() ? nullptr : stream.cast<StreamP>()->h;
        check(nogil([&] { return hcomm_barrier(c->h, s); }), "hcomm_barrier");
      }, py::arg("stream") = py::none(), py::arg("comm") = py::none(),
      "hcomm_barrier: without a stream blocks until every rank arrived; with one, stream-ordered");

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
