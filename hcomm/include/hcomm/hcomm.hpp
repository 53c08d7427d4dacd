// Thin RAII C++ layer over the HCOMM C API: handles are owned, failures throw hcomm::Error.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

#include "hcomm/hcomm.h"

namespace hcomm {

class Error : public std::runtime_error {
 public:
  Error(hcomm_result_t code, const std::string& what)
      : std::runtime_error(what + ": " + hcomm_result_string(code)), code_(code) {}
  hcomm_result_t code() const { return code_; }

 private:
  hcomm_result_t code_;
};

inline void check(hcomm_result_t rc, const char* what) {
  if (rc != HCOMM_SUCCESS) throw Error(rc, what);
}

// Move-only owner of one handle; Destroy is the C destroy function.
template <typename H, hcomm_result_t (*Destroy)(H)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H h) : h_(h) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) { reset(); h_ = std::exchange(o.h_, nullptr); }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  H get() const { return h_; }
  void reset() {
    if (h_) Destroy(h_);
    h_ = nullptr;
  }

 private:
  H h_ = nullptr;
};

class Context : public Handle<hcomm_context_t, hcomm_destroy_context> {
 public:
  explicit Context(uint32_t device_id) : Handle(make(device_id)) {}
  uint32_t device_id() const { uint32_t d = 0; check(hcomm_context_device_id(get(), &d), "hcomm_context_device_id"); return d; }

 private:
  static hcomm_context_t make(uint32_t id) {
    hcomm_context_t c = nullptr;
    check(hcomm_create_context(id, &c), "hcomm_create_context");
    return c;
  }
};

class Stream : public Handle<hcomm_stream_t, hcomm_destroy_stream> {
 public:
  explicit Stream(const Context& ctx) : Handle(make(ctx)) {}
  void synchronize() const { check(hcomm_stream_synchronize(get()), "hcomm_stream_synchronize"); }

 private:
  static hcomm_stream_t make(const Context& ctx) {
    hcomm_stream_t s = nullptr;
    check(hcomm_create_stream(ctx.get(), &s), "hcomm_create_stream");
    return s;
  }
};

class Event : public Handle<hcomm_event_t, hcomm_destroy_event> {
 public:
  explicit Event(const Context& ctx) : Handle(make(ctx)) {}
  void record(const Stream& s) const { check(hcomm_record_event(get(), s.get()), "hcomm_record_event"); }
  void wait(const Stream& s) const { check(hcomm_wait_event(get(), s.get()), "hcomm_wait_event"); }
  bool done() const { return hcomm_query_event(get()) == HCOMM_SUCCESS; }

 private:
  static hcomm_event_t make(const Context& ctx) {
    hcomm_event_t e = nullptr;
    check(hcomm_create_event(ctx.get(), &e), "hcomm_create_event");
    return e;
  }
};

class Comm : public Handle<hcomm_comm_t, hcomm_comm_destroy> {
 public:
  Comm(const Context& ctx, uint32_t nranks, uint32_t rank, const hcomm_config_t* cfg = nullptr) : Handle(make(ctx, nranks, rank, cfg)) {}
  void allreduce(const void* in, void* out, uint64_t count, hcomm_data_type_t t, hcomm_reduce_op_t op, const Stream& s) const {
    check(hcomm_allreduce(in, out, count, t, op, get(), s.get()), "hcomm_allreduce");
  }
  void allgather(const void* in, void* out, uint64_t count, hcomm_data_type_t t, const Stream& s) const {
    check(hcomm_allgather(in, out, count, t, get(), s.get()), "hcomm_allgather");
  }
  void reduce_scatter(const void* in, void* out, uint64_t count, hcomm_data_type_t t, hcomm_reduce_op_t op,
                      const Stream& s) const {
    check(hcomm_reduce_scatter(in, out, count, t, op, get(), s.get()), "hcomm_reduce_scatter");
  }
  void allgatherv(const void* in, uint64_t send_count, void* out, const uint64_t* recv_counts, const uint64_t* recv_displs,
                  hcomm_data_type_t t, const Stream& s) const {
    check(hcomm_allgatherv(in, send_count, out, recv_counts, recv_displs, t, get(), s.get()), "hcomm_allgatherv");
  }
  void reduce_scatterv(const void* in, const uint64_t* send_counts, const uint64_t* send_displs, void* out, uint64_t recv_count,
                       hcomm_data_type_t t, hcomm_reduce_op_t op, const Stream& s) const {
    check(hcomm_reduce_scatterv(in, send_counts, send_displs, out, recv_count, t, op, get(), s.get()), "hcomm_reduce_scatterv");
  }
  void broadcast(void* buf, uint64_t count, hcomm_data_type_t t, uint32_t root, const Stream& s) const {
    check(hcomm_broadcast(buf, count, t, root, get(), s.get()), "hcomm_broadcast");
  }
  void reduce(const void* in, void* out, uint64_t count, hcomm_data_type_t t, hcomm_reduce_op_t op, uint32_t root,
              const Stream& s) const {
    check(hcomm_reduce(in, out, count, t, op, root, get(), s.get()), "hcomm_reduce");
  }
  void scatter(const void* in, void* out, uint64_t count, hcomm_data_type_t t, uint32_t root, const Stream& s) const {
    check(hcomm_scatter(in, out, count, t, root, get(), s.get()), "hcomm_scatter");
  }
  void alltoall(const void* in, void* out, uint64_t count, hcomm_data_type_t t, const Stream& s) const {
    check(hcomm_alltoall(in, out, count, t, get(), s.get()), "hcomm_alltoall");
  }
  void alltoallv(const void* in, const uint64_t* send_counts, const uint64_t* send_displs, void* out, const uint64_t* recv_counts,
                 const uint64_t* recv_displs, hcomm_data_type_t t, const Stream& s) const {
    check(hcomm_alltoallv(in, send_counts, send_displs, out, recv_counts, recv_displs, t, get(), s.get()), "hcomm_alltoallv");
  }
  void batch_send_recv(const hcomm_send_recv_item_t* items, uint32_t n, const Stream& s) const {
    check(hcomm_batch_send_recv(items, n, get(), s.get()), "hcomm_batch_send_recv");
  }
  void send(const void* buf, uint64_t count, hcomm_data_type_t t, uint32_t dst, uint32_t tag) const {
    check(hcomm_send(buf, count, t, dst, tag, get()), "hcomm_send");
  }
  void recv(void* buf, uint64_t count, hcomm_data_type_t t, uint32_t src, uint32_t tag) const {
    check(hcomm_recv(buf, count, t, src, tag, get()), "hcomm_recv");
  }
  void barrier() const { check(hcomm_barrier(get(), nullptr), "hcomm_barrier"); }
  /// hcomm_comm_split: collective over this communicator. Owns the new communicator; empty
  /// (get() == nullptr) for HCOMM_SPLIT_NOCOLOR.
  Comm split(uint32_t color, uint32_t key) const {
    hcomm_comm_t c = nullptr;
    check(hcomm_comm_split(get(), color, key, &c), "hcomm_comm_split");
    return Comm(c);
  }
  /// hcomm_comm_create_group: collective over this communicator; empty when this rank is not listed.
  Comm create_group(uint32_t n, const uint32_t* ranks) const {
    hcomm_comm_t c = nullptr;
    check(hcomm_comm_create_group(get(), n, ranks, &c), "hcomm_comm_create_group");
    return Comm(c);
  }
  /// hcomm_reserve_bandwidth (docs/routing.md#reservation); throws on HCOMM_E_AGAIN like any failure.
  void reserve_bandwidth(uint64_t min_Bps, uint64_t max_Bps, uint32_t timeout_ms) const {
    check(hcomm_reserve_bandwidth(get(), min_Bps, max_Bps, timeout_ms), "hcomm_reserve_bandwidth");
  }
  void release_bandwidth() const { check(hcomm_release_bandwidth(get()), "hcomm_release_bandwidth"); }
  uint32_t rank() const { uint32_t r = 0; check(hcomm_comm_rank(get(), &r), "hcomm_comm_rank"); return r; }
  uint32_t size() const { uint32_t n = 0; check(hcomm_comm_size(get(), &n), "hcomm_comm_size"); return n; }
  /// Takes ownership of an existing communicator handle (may be null: an empty Comm).
  explicit Comm(hcomm_comm_t owned) : Handle(owned) {}
  Comm() = default;

 private:
  static hcomm_comm_t make(const Context& ctx, uint32_t n, uint32_t r, const hcomm_config_t* cfg) {
    hcomm_comm_t c = nullptr;
    check(hcomm_comm_init_config(ctx.get(), n, r, cfg, &c), "hcomm_comm_init");
    return c;
  }
};

/// Device memory owned for the scope.
class DeviceBuffer {
 public:
  DeviceBuffer(const Context& ctx, uint64_t bytes) : ctx_(ctx.get()) { check(hcomm_malloc(ctx_, bytes, &p_), "hcomm_malloc"); }
  ~DeviceBuffer() { if (p_) hcomm_free(ctx_, p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  hcomm_context_t ctx_;
  void* p_ = nullptr;
};

}  // namespace hcomm
