// The Python module `hcomm` (docs/python.md): the objects the bindings (hcomm_module.cpp) wrap,
// the module state and the helpers of module_core.cpp. numpy arrays are host memory: operations
// on them are staged through device memory the module allocates and frees; Buffer objects are
// device memory (opaque addresses). Point-to-point calls and collectives run on a world
// communicator the module creates at first use from RANK / WORLD_SIZE (hcsim exec sets them).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/hcomm.h"

namespace hcomm_py {

namespace py = pybind11;

// ---------------------------------------------------------------- errors
struct Error {  // thrown by the bindings, raised in Python as HcommError(code, message)
  hcomm_result_t code;
  std::string msg;
};
extern py::object* g_error_cls;  // hcomm.HcommError
[[noreturn]] void fail(hcomm_result_t rc, const std::string& what);
void check(hcomm_result_t rc, const char* what);
[[noreturn]] void para(const std::string& msg);

// Run a C call without the GIL (it may block: synchronize, wait, blocking send/recv, init).
template <class F>
hcomm_result_t nogil(F f) {
  py::gil_scoped_release release;
  return f();
}

extern bool g_finalized;  // hcomm_finalize ran (interpreter exit): handles are gone

// numpy dtype -> HCOMM data type (HCOMM_E_PARA when none); HCOMM data type -> numpy dtype; element size.
hcomm_data_type_t data_type_of(const py::dtype& dt);
py::dtype numpy_dtype_of(int code);
uint32_t dtype_size(int code);

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
  bool owned = false;                // create_buffer / buffer_alloc: freed with the object
  bool symmetric = false;            // buffer_alloc: a symmetric slot (hcomm_buffer_free)
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

struct Comm {
  CtxP ctx;
  hcomm_comm_t h = nullptr;  // null once destroyed (the library answers E_UNAVAIL)
  uint32_t rank = 0, size = 0;
  uint64_t timeout_ms = 30000;  // the configuration in effect: how long an await polls
  py::object error_cb;          // set_error_callback's callable (the C callback's user_data is this object)
  ~Comm();
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
inline const Knob kKnobs[] = {
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
void set_knob(CommConfig& cc, const Knob& k, const py::object& v);
void set_algo(CommConfig& cc, const py::object& v);
const Knob& knob_named(const std::string& name);  // max_retries: retry_count

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
};
extern State* g;  // never freed: handles must not be destroyed at interpreter teardown in an arbitrary order

// A stream's entries complete in order, so only its oldest unfinished one is queried: few queries
// per call (under hcsim exec a query is a driver call, and many at one instant count as polling).
// `synced`: a stream just synchronized successfully, whose entries are all done (no query).
void reclaim(hcomm_stream_t synced = nullptr);
// Record the end of the work queued so far on `s`; free `scratch` and drop `keep` once it is done.
void add_pending(const CtxP& ctx, hcomm_stream_t s, std::vector<uint64_t> scratch, py::object keep);

// The context of a device (one per device and process); the process's context (LOCAL_RANK's);
// the world communicator (created at first use); `comm` or the world; `stream` or the default.
CtxP create_context(uint32_t device_id);
CtxP process_context();
CommP world();
CommP comm_or_world(const py::object& comm);
hcomm_stream_t stream_or_default(const py::object& stream, const CtxP& ctx);
hcomm_stream_t stream_handle(const py::object& stream);  // a Stream's handle; TypeError for anything else

// ---------------------------------------------------------------- arguments
inline bool is_array(const py::handle& o) { return py::isinstance<py::array>(o); }
inline bool is_buffer(const py::handle& o) { return py::isinstance<Buffer>(o); }

struct HostArr {
  py::array arr;
  void* ptr = nullptr;
  uint64_t bytes = 0, count = 0;
  hcomm_data_type_t dtype = HCOMM_DATA_TYPE_INT8;
};
py::array host_buffer_array(const BufferP& b);  // a host pool buffer as a numpy array
// A numpy array argument: C-contiguous; writable when the library writes it; an HCOMM data type
// when `typed` (send/recv/collectives; memcpy takes bytes of any dtype).
HostArr host_arr(const py::object& o, const char* what, bool writable, bool typed);
BufferP device_buf(const py::object& o, const char* what);
uint64_t alloc_scratch(const CtxP& ctx, uint64_t bytes);
inline void* dev(uint64_t a) { return reinterpret_cast<void*>(a); }

// Point-to-point: post (numpy data staged on the stream), test (one poll), poll (await: test, and
// HCOMM_E_TIMEOUT after the communicator's timeout_ms of cluster time), wait (blocking).
RequestP post_send(const py::object& data, uint32_t dest, uint32_t tag, const py::object& stream, const py::object& comm);
RequestP post_recv(const py::object& data, uint32_t src_rank, uint32_t tag, const py::object& stream, const py::object& comm);
bool request_test(Request& r);
bool request_poll(Request& r);
py::object request_wait(Request& r);

// ---------------------------------------------------------------- collectives
// Either every buffer argument is host memory (numpy: staged, the call blocks until the result is
// back on the host and returns it) or device memory (Buffer: stream-ordered, returns at once).
struct Staging {
  CommP c;
  hcomm_stream_t s = nullptr;
  std::vector<uint64_t> scratch;
  bool synced = false;
  std::vector<py::object> keep;  // host arrays the queued copies write or read: kept alive with the scratch on failure
  ~Staging() {
    if (g_finalized || scratch.empty()) return;
    if (synced) {
      for (uint64_t a : scratch) hcomm_free(c->ctx->h, dev(a));
      return;
    }
    try {  // failed midway: the copies queued so far may still use the memory
      py::list k;
      for (auto& o : keep) k.append(o);
      add_pending(c->ctx, s, std::move(scratch), std::move(k));
    } catch (...) {
    }
  }
  void* put(const HostArr& h, bool copy) {  // device copy of a host array
    keep.push_back(h.arr);
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

py::array empty_like_count(const HostArr& like, uint64_t count);
hcomm_data_type_t buf_dtype(const BufferP& b, const py::object& dtype);
uint64_t buf_count(const BufferP& b, hcomm_data_type_t dt, const py::object& count, uint64_t div);
void need_bytes(const BufferP& b, uint64_t bytes, const char* what);
void keep_bufs(const CommP& c, hcomm_stream_t s, py::tuple keep);

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

// A new Comm object over a handle the library returned (split, shrink).
CommP wrap_comm(const CtxP& ctx, hcomm_comm_t h);

// The bindings of module_ext.cpp: failover (async error, callback, lost ranks, shrink, destroy),
// the -v collectives, batch send/recv, RDMA and bandwidth reservation.
void bind_ext(py::module_& m);

// ---------------------------------------------------------------- topology
struct Topology {
  uint32_t my_rank = 0, num_nodes = 0;
  std::vector<int> distances;
  py::list links;
};

}  // namespace hcomm_py
