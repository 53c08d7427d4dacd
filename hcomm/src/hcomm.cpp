// libhcomm: contexts, streams, events, memory, communicators and point-to-point.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <unordered_map>

#include "internal.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm {
namespace {
Driver* g_driver = nullptr;
// Live handles: lets every API call reject a destroyed or foreign handle instead of crashing.
// Process-wide by design (handles are addresses); holds no per-rank state.
std::unordered_map<const void*, int>& handles() {
  static std::unordered_map<const void*, int> h;
  return h;
}
}  // namespace
void set_driver(Driver* d) { g_driver = d; }
Driver* driver() { return g_driver; }

namespace detail {
bool live(const void* h, int type) {
  if (!h) return false;
  auto it = handles().find(h);
  return it != handles().end() && it->second == type;
}
void track(const void* h, int type) { handles()[h] = type; }
void untrack(const void* h) { handles().erase(h); }

void logf(hcomm_context_t ctx, int level, const char* fmt, ...) {
  // level: 0 error, 1 warning, 2 info, 3 debug. HCOMM_DEBUG selects how much is emitted.
  if (level > ctx->debug && level > 0) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  static const char* tags[] = {"[HCOMM_ERR]", "[HCOMM_WARN]", "[HCOMM_INFO]", "[HCOMM_DBG]"};
  char line[600];
  std::snprintf(line, sizeof line, "%s %s", tags[std::min(std::max(level, 0), 3)], msg);
  ctx->drv->log(ctx->device, level, line);
}

hcomm_result_t submit(hcomm_stream_t s, const DrvTask& t) {
  DrvStatus st = s->ctx->drv->submit(s->id, t);
  return st == DrvStatus::Ok ? HCOMM_SUCCESS : HCOMM_E_DRV;
}
hcomm_result_t notify_record(hcomm_stream_t s, std::uint32_t target, std::uint64_t key) {
  DrvTask t;
  t.kind = DrvTaskKind::NotifyRecord;
  t.target = target;
  t.key = key;
  return submit(s, t);
}
hcomm_result_t notify_wait(hcomm_stream_t s, std::uint64_t key) {
  DrvTask t;
  t.kind = DrvTaskKind::NotifyWait;
  t.key = key;
  return submit(s, t);
}
static hcomm_result_t sdma(hcomm_stream_t s, DrvTaskKind kind, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                           int dtype, int op) {
  DrvTask t;
  t.kind = kind;
  t.dst = dst;
  t.src = src;
  t.bytes = bytes;
  t.dtype = dtype;
  t.op = op;
  return submit(s, t);
}
hcomm_result_t copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes) {
  return sdma(s, DrvTaskKind::Copy, dst, src, bytes, 0, 0);
}
hcomm_result_t reduce_copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, int dtype, int op) {
  return sdma(s, DrvTaskKind::ReduceCopy, dst, src, bytes, dtype, op);
}
hcomm_result_t rdma_write(hcomm_stream_t s, std::uint32_t device, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                          bool notify, std::uint64_t key, std::uint32_t rkey, hcomm_comm_t comm) {
  DrvTask t;
  t.kind = DrvTaskKind::RdmaWrite;
  t.target = device;
  t.dst = dst;
  t.src = src;
  t.bytes = bytes;
  t.key = key;
  t.value = notify ? 1 : 0;
  t.rkey = rkey;
  if (comm) {  // the communicator's num_qp and bandwidth_limit (MB/s)
    t.qp_count = static_cast<std::uint32_t>(comm->cfg.num_qp);
    t.rate_cap_Bps = comm->cfg.bandwidth_limit * 1000000ULL;
    t.retry_count = static_cast<std::uint32_t>(comm->cfg.retry_count);
  }
  return submit(s, t);
}
bool via_sdma(hcomm_comm_t comm, const RankDesc& peer) {
  auto it = comm->links.find(peer.rank);
  if (it == comm->links.end()) it = comm->links.emplace(peer.rank, comm->ctx->drv->pair_link(comm->ctx->device, peer.device)).first;
  return it->second == PairLink::Hccs || it->second == PairLink::Pcie;
}
static const char* p2p_algo(hcomm_comm_t comm, const RankDesc& peer) {
  via_sdma(comm, peer);
  switch (comm->links[peer.rank]) {
    case PairLink::Hccs: return "p2p-hccs";
    case PairLink::Pcie: return "p2p-pcie";
    default: return "p2p-roce";
  }
}
hcomm_result_t remote_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t key) {
  if (via_sdma(comm, peer)) return notify_record(s, peer.device, key);
  if (comm->cfg.protocol == HCOMM_PROTOCOL_SHM) return HCOMM_E_NOT_SUPPORT;
  return rdma_write(s, peer.device, 0, 0, 0, true, key, 0, comm);
}
hcomm_result_t put_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, std::uint64_t key, std::uint32_t rkey) {
  if (via_sdma(comm, peer)) {
    if (bytes) copy(s, dst, src, bytes);
    return notify_record(s, peer.device, key);
  }
  if (comm->cfg.protocol == HCOMM_PROTOCOL_SHM) return HCOMM_E_NOT_SUPPORT;
  return rdma_write(s, peer.device, dst, src, bytes, true, key, rkey, comm);
}
hcomm_result_t make_stream(hcomm_context_t ctx, hcomm_stream_t* out) {
  std::uint32_t id = 0;
  if (ctx->drv->stream_create(ctx->device, &id) != DrvStatus::Ok) return HCOMM_E_DRV;
  auto* s = new hcomm_stream_s{ctx, id};
  track(s, kStream);
  *out = s;
  return HCOMM_SUCCESS;
}
std::uint64_t op_begin(hcomm_stream_t s, const OpInfo& info) {
  DrvTask t;
  t.kind = DrvTaskKind::Marker;
  t.key = s->ctx->next_marker;
  s->ctx->next_marker += 2;
  s->ctx->drv->profile_op(s->ctx->device, t.key, t.key + 1, info);
  submit(s, t);
  return t.key;
}
void op_end(hcomm_stream_t s, std::uint64_t begin_key) {
  DrvTask t;
  t.kind = DrvTaskKind::Marker;
  t.key = begin_key + 1;
  submit(s, t);
}
const RankDesc* peer_desc(hcomm_comm_t comm, std::uint32_t rank) {
  auto it = comm->peers.find(rank);
  if (it != comm->peers.end()) return &it->second;
  RankDesc d;
  if (comm->ctx->drv->rank_desc(rank, &d) != DrvStatus::Ok) return nullptr;
  return &comm->peers.emplace(rank, d).first->second;
}
}  // namespace detail
}  // namespace hcomm

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t def, std::uint64_t lo, std::uint64_t hi, bool* bad) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (*end || x < lo || x > hi) {
    *bad = true;
    std::fprintf(stderr, "[HCOMM_ERR] %s=%s is out of range [%llu, %llu]\n", name, v, (unsigned long long)lo,
                 (unsigned long long)hi);
    return def;
  }
  return x;
}

std::uint64_t dev(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

bool valid_dtype(int t) {
  switch (t) {
    case HCOMM_DATA_TYPE_INT8: case HCOMM_DATA_TYPE_INT16: case HCOMM_DATA_TYPE_INT32: case HCOMM_DATA_TYPE_INT64:
    case HCOMM_DATA_TYPE_FP16: case HCOMM_DATA_TYPE_BFP16: case HCOMM_DATA_TYPE_FP32: case HCOMM_DATA_TYPE_FP64:
      return true;
    default: return false;
  }
}

hcomm_result_t sync_stream(hcomm_stream_t s) { return hcomm::detail::sync_timeout(s, s->ctx->timeout_ns / 1000000); }

}  // namespace

namespace hcomm::detail {
hcomm_result_t sync_timeout(hcomm_stream_t s, std::uint64_t timeout_ms) {
  std::string err;
  DrvStatus st = s->ctx->drv->stream_synchronize(s->id, timeout_ms * 1000000ULL, &err);
  switch (st) {
    case DrvStatus::Ok: return HCOMM_SUCCESS;
    case DrvStatus::Timeout:
      logf(s->ctx, 0, "Device%u stream %u synchronize timed out after %llu ms%s%s", s->ctx->device_id, s->id,
           (unsigned long long)timeout_ms, err.empty() ? "" : ": ", err.c_str());
      return HCOMM_E_TIMEOUT;
    default:
      logf(s->ctx, 0, "Device%u stream %u task failed: %s", s->ctx->device_id, s->id, err.c_str());
      return HCOMM_E_RUNTIME;
  }
}
}  // namespace hcomm::detail

namespace {

// Resolve one knob: communicator value, else HCOMM_<env> (number, or one of `names`), else default.
bool resolve(hcomm_context_t ctx, std::uint64_t* field, const char* field_name, const char* env, std::uint64_t def, std::uint64_t lo,
             std::uint64_t hi, std::initializer_list<const char*> names = {}) {
  if (*field == HCOMM_CONFIG_UNSET) {
    *field = def;
    if (const char* v = std::getenv(env); v && *v) {
      std::uint64_t i = 0;
      bool named = false;
      for (const char* n : names) { if (std::strcmp(v, n) == 0) { *field = i; named = true; } ++i; }
      if (!named) {
        char* end = nullptr;
        unsigned long long x = std::strtoull(v, &end, 10);
        if (*end || end == v) {
          logf(ctx, 0, "%s=%s is not a valid value for %s", env, v, field_name);
          return false;
        }
        *field = x;
      }
    }
  }
  if (*field < lo || *field > hi) {
    logf(ctx, 0, "config %s = %llu is out of range [%llu, %llu]", field_name, (unsigned long long)*field, (unsigned long long)lo,
         (unsigned long long)hi);
    return false;
  }
  return true;
}

}  // namespace

extern "C" {

const char* hcomm_result_string(hcomm_result_t r) {
  switch (r) {
    case HCOMM_SUCCESS: return "success";
    case HCOMM_E_PARA: return "parameter error";
    case HCOMM_E_PTR: return "invalid pointer";
    case HCOMM_E_MEMORY: return "out of memory";
    case HCOMM_E_INTERNAL: return "internal error";
    case HCOMM_E_NOT_SUPPORT: return "not supported";
    case HCOMM_E_NOT_FOUND: return "not found";
    case HCOMM_E_UNAVAIL: return "resource unavailable";
    case HCOMM_E_SYSCALL: return "system call failed";
    case HCOMM_E_TIMEOUT: return "timeout";
    case HCOMM_E_OPEN_FILE_FAILURE: return "cannot open file";
    case HCOMM_E_TCP_CONNECT: return "TCP connect failed";
    case HCOMM_E_ROCE_CONNECT: return "RoCE connect failed";
    case HCOMM_E_TCP_TRANSFER: return "TCP transfer failed";
    case HCOMM_E_ROCE_TRANSFER: return "RoCE transfer failed";
    case HCOMM_E_RUNTIME: return "device task failed";
    case HCOMM_E_DRV: return "driver error";
    case HCOMM_E_NETWORK: return "network error";
    case HCOMM_E_AGAIN: return "try again";
    case HCOMM_E_REMOTE: return "remote error";
    case E_HCOMM_ADDR_MISMATCH: return "rank descriptor address mismatch";
  }
  return "unknown";
}

uint32_t hcomm_data_type_size(hcomm_data_type_t t) {
  switch (t) {
    case HCOMM_DATA_TYPE_INT8: return 1;
    case HCOMM_DATA_TYPE_INT16: case HCOMM_DATA_TYPE_FP16: case HCOMM_DATA_TYPE_BFP16: return 2;
    case HCOMM_DATA_TYPE_INT32: case HCOMM_DATA_TYPE_FP32: return 4;
    case HCOMM_DATA_TYPE_INT64: case HCOMM_DATA_TYPE_FP64: return 8;
  }
  return 0;
}

hcomm_result_t hcomm_create_context(uint32_t device_id, hcomm_context_t* out) {
  if (!out) return HCOMM_E_PTR;
  Driver* drv = hcomm::driver();
  if (!drv) return HCOMM_E_DRV;
  std::uint32_t device = 0;
  if (drv->device_of(device_id, &device) != DrvStatus::Ok) return HCOMM_E_PARA;
  bool bad = false;
  auto* c = new hcomm_context_s;
  c->drv = drv;
  c->device_id = device_id;
  c->device = device;
  c->debug = static_cast<int>(env_u64("HCOMM_DEBUG", 0, 0, 3, &bad));
  c->timeout_ns = env_u64("HCOMM_TIMEOUT_MS", 30000, 1000, 300000, &bad) * 1000000ULL;
  c->ccl_bytes = env_u64("HCOMM_BUFFSIZE_MB", 256, 1, 4096, &bad) << 20;
  c->p2p_bytes = env_u64("HCOMM_BUFFER_SIZE_MB", 8, 1, 64, &bad) << 20;
  c->slot_bytes = env_u64("HCOMM_SLOT_SIZE_MB", 256, 1, 4096, &bad) << 20;
  const std::uint64_t slots = env_u64("HCOMM_SYM_SLOTS", 4, 0, 64, &bad);
  if (bad) { delete c; return HCOMM_E_PARA; }
  // The communication buffers are the first allocations on every device, so their offsets from
  // the HBM base are identical on every rank (symmetric): remote address = peer base + offset.
  // The symmetric slot region is reserved the same way (HBM is only touched when written).
  if (drv->mem_alloc(device, c->ccl_bytes, &c->ccl_addr) != DrvStatus::Ok ||
      drv->mem_alloc(device, c->p2p_bytes, &c->p2p_addr) != DrvStatus::Ok ||
      (slots && drv->mem_alloc(device, slots * c->slot_bytes, &c->sym_addr) != DrvStatus::Ok)) {
    delete c;
    return HCOMM_E_MEMORY;
  }
  c->slot_used.assign(slots, 0);
  // Peers write into these over RoCE: register them (first registrations: same keys everywhere).
  const std::uint32_t rw = HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE;
  if (drv->mr_register(device, c->ccl_addr, c->ccl_bytes, rw, &c->ccl_rkey) != DrvStatus::Ok ||
      drv->mr_register(device, c->p2p_addr, c->p2p_bytes, rw, &c->p2p_rkey) != DrvStatus::Ok) {
    delete c;
    return HCOMM_E_DRV;
  }
  c->base = c->ccl_addr & ~((1ULL << 40) - 1);
  track(c, kCtx);
  *out = c;
  logf(c, 2, "context created: device %u, comm buffer %llu MiB", device_id, (unsigned long long)(c->ccl_bytes >> 20));
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_destroy_context(hcomm_context_t ctx) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  for (auto& [key, addr] : ctx->mrs) ctx->drv->mr_deregister(ctx->device, key);
  ctx->drv->mr_deregister(ctx->device, ctx->p2p_rkey);
  ctx->drv->mr_deregister(ctx->device, ctx->ccl_rkey);
  if (ctx->sym_addr) ctx->drv->mem_free(ctx->device, ctx->sym_addr);
  ctx->drv->mem_free(ctx->device, ctx->p2p_addr);
  ctx->drv->mem_free(ctx->device, ctx->ccl_addr);
  untrack(ctx);
  delete ctx;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_context_device_id(hcomm_context_t ctx, uint32_t* id) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!id) return HCOMM_E_PTR;
  *id = ctx->device_id;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_context_max_buffer_size(hcomm_context_t ctx, uint64_t* bytes) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!bytes) return HCOMM_E_PTR;
  *bytes = ctx->ccl_bytes;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_context_device_buffer(hcomm_context_t ctx, void** p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p) return HCOMM_E_PTR;
  *p = reinterpret_cast<void*>(ctx->ccl_addr);
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_create_stream(hcomm_context_t ctx, hcomm_stream_t* s) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!s) return HCOMM_E_PTR;
  return make_stream(ctx, s);
}
hcomm_result_t hcomm_destroy_stream(hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  s->ctx->drv->stream_destroy(s->id);
  untrack(s);
  delete s;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_stream_synchronize(hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  return sync_stream(s);
}

hcomm_result_t hcomm_create_event(hcomm_context_t ctx, hcomm_event_t* ev) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!ev) return HCOMM_E_PTR;
  auto* e = new hcomm_event_s{ctx, ctx->next_event++, 0};
  track(e, kEvent);
  *ev = e;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_destroy_event(hcomm_event_t ev) {
  if (!live(ev, kEvent)) return HCOMM_E_UNAVAIL;
  untrack(ev);
  delete ev;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_record_event(hcomm_event_t ev, hcomm_stream_t s) {
  if (!live(ev, kEvent) || !live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (ev->ctx != s->ctx) return HCOMM_E_PARA;
  DrvTask t;
  t.kind = DrvTaskKind::EventRecord;
  t.key = ev->id;
  t.value = ++ev->recorded;
  return submit(s, t);
}
hcomm_result_t hcomm_wait_event(hcomm_event_t ev, hcomm_stream_t s) {
  if (!live(ev, kEvent) || !live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (ev->ctx != s->ctx) return HCOMM_E_PARA;
  if (ev->recorded == 0) return HCOMM_SUCCESS;  // never recorded: nothing to wait for
  DrvTask t;
  t.kind = DrvTaskKind::EventWait;
  t.key = ev->id;
  t.value = ev->recorded;
  return submit(s, t);
}
hcomm_result_t hcomm_query_event(hcomm_event_t ev) {
  if (!live(ev, kEvent)) return HCOMM_E_UNAVAIL;
  return ev->ctx->drv->event_completed(ev->ctx->device, ev->id) >= ev->recorded ? HCOMM_SUCCESS : HCOMM_E_AGAIN;
}
hcomm_result_t hcomm_event_elapsed_time(hcomm_event_t a, hcomm_event_t b, float* ms) {
  if (!live(a, kEvent) || !live(b, kEvent)) return HCOMM_E_UNAVAIL;
  if (!ms) return HCOMM_E_PTR;
  if (hcomm_query_event(a) != HCOMM_SUCCESS || hcomm_query_event(b) != HCOMM_SUCCESS || !a->recorded || !b->recorded)
    return HCOMM_E_AGAIN;
  double ta = static_cast<double>(a->ctx->drv->event_time_ns(a->ctx->device, a->id));
  double tb = static_cast<double>(b->ctx->drv->event_time_ns(b->ctx->device, b->id));
  *ms = static_cast<float>((tb - ta) / 1e6);
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_malloc(hcomm_context_t ctx, uint64_t bytes, void** p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p) return HCOMM_E_PTR;
  if (bytes == 0) return HCOMM_E_PARA;
  std::uint64_t a = 0;
  if (ctx->drv->mem_alloc(ctx->device, bytes, &a) != DrvStatus::Ok) {
    logf(ctx, 0, "device %u: cannot allocate %llu bytes", ctx->device_id, (unsigned long long)bytes);
    return HCOMM_E_MEMORY;
  }
  ctx->allocs[a] = bytes;
  *p = reinterpret_cast<void*>(a);
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_create_buffer(hcomm_context_t ctx, uint64_t bytes, void** p) { return hcomm_malloc(ctx, bytes, p); }

hcomm_result_t hcomm_free(hcomm_context_t ctx, void* p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  auto it = ctx->allocs.find(dev(p));
  if (it == ctx->allocs.end()) return HCOMM_E_PTR;
  ctx->drv->mem_free(ctx->device, it->first);
  ctx->allocs.erase(it);
  return HCOMM_SUCCESS;
}

static hcomm_result_t memcpy_task(DrvTaskKind kind, void* dst, const void* src, uint64_t bytes, hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  if ((!dst || !src) && bytes) return HCOMM_E_PTR;
  DrvTask t;
  t.kind = kind;
  t.bytes = bytes;
  if (kind == DrvTaskKind::HostToDevice) { t.dst = dev(dst); t.host = const_cast<void*>(src); }
  else if (kind == DrvTaskKind::DeviceToHost) { t.src = dev(src); t.host = dst; }
  else { t.dst = dev(dst); t.src = dev(src); }
  return submit(s, t);
}
hcomm_result_t hcomm_memcpy_host_to_device(void* dst, const void* src, uint64_t bytes, hcomm_stream_t s) {
  return memcpy_task(DrvTaskKind::HostToDevice, dst, src, bytes, s);
}
hcomm_result_t hcomm_memcpy_device_to_host(void* dst, const void* src, uint64_t bytes, hcomm_stream_t s) {
  return memcpy_task(DrvTaskKind::DeviceToHost, dst, src, bytes, s);
}
hcomm_result_t hcomm_memcpy_device_to_device(void* dst, const void* src, uint64_t bytes, hcomm_stream_t s) {
  return memcpy_task(DrvTaskKind::Copy, dst, src, bytes, s);
}

hcomm_result_t hcomm_finalize(void) {
  // Dependency order; within a type the order does not matter (nothing observable is produced).
  for (int type : {kReq, kPool, kEvent, kComm, kStream, kCtx}) {
    std::vector<const void*> live_of_type;
    for (const auto& [h, t] : handles())
      if (t == type) live_of_type.push_back(h);
    for (const void* h : live_of_type) {
      switch (type) {
        case kReq: {
          auto* r = static_cast<hcomm_request_t>(const_cast<void*>(h));
          untrack(r);
          delete r;  // its event is a tracked handle of its own
          break;
        }
        case kPool: {
          auto* p = static_cast<hcomm_buffer_pool_t>(const_cast<void*>(h));
          for (void* a : p->addr) p->type == HCOMM_MEMORY_TYPE_DEVICE ? (void)hcomm_free(p->ctx, a) : std::free(a);
          untrack(p);
          delete p;
          break;
        }
        case kEvent: hcomm_destroy_event(static_cast<hcomm_event_t>(const_cast<void*>(h))); break;
        case kComm: hcomm_comm_destroy(static_cast<hcomm_comm_t>(const_cast<void*>(h))); break;
        case kStream: hcomm_destroy_stream(static_cast<hcomm_stream_t>(const_cast<void*>(h))); break;
        case kCtx: hcomm_destroy_context(static_cast<hcomm_context_t>(const_cast<void*>(h))); break;
      }
    }
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_create_buffer_pool(hcomm_context_t ctx, uint32_t num, uint64_t size, hcomm_memory_type_t type,
                                        hcomm_buffer_pool_t* out) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  if (num == 0 || num > 65536 || size == 0 || (type != HCOMM_MEMORY_TYPE_DEVICE && type != HCOMM_MEMORY_TYPE_HOST)) return HCOMM_E_PARA;
  auto* p = new hcomm_buffer_pool_s;
  p->ctx = ctx;
  p->type = type;
  p->size = size;
  for (uint32_t i = 0; i < num; ++i) {
    void* a = nullptr;
    if (type == HCOMM_MEMORY_TYPE_DEVICE) {
      if (hcomm_malloc(ctx, size, &a) != HCOMM_SUCCESS) a = nullptr;
    } else {
      a = std::malloc(size);
    }
    if (!a) {
      for (void* b : p->addr) type == HCOMM_MEMORY_TYPE_DEVICE ? (void)hcomm_free(ctx, b) : std::free(b);
      delete p;
      return HCOMM_E_MEMORY;
    }
    p->addr.push_back(a);
  }
  p->state.assign(num, hcomm_buffer_pool_s::kFree);
  p->ev.assign(num, nullptr);
  p->stream.assign(num, nullptr);
  p->order.assign(num, 0);
  track(p, kPool);
  *out = p;
  return HCOMM_SUCCESS;
}

static void pool_reclaim(hcomm_buffer_pool_t p, std::size_t i) {
  hcomm_destroy_event(p->ev[i]);
  p->ev[i] = nullptr;
  p->stream[i] = nullptr;
  p->state[i] = hcomm_buffer_pool_s::kFree;
}

hcomm_result_t hcomm_buffer_pool_acquire(hcomm_buffer_pool_t p, uint32_t timeout_ms, hcomm_buffer_t* buf) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!buf) return HCOMM_E_PTR;
  const std::size_t n = p->addr.size();
  std::size_t pick = n, oldest = n;
  for (std::size_t i = 0; i < n && pick == n; ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending && hcomm_query_event(p->ev[i]) == HCOMM_SUCCESS) pool_reclaim(p, i);
    if (p->state[i] == hcomm_buffer_pool_s::kFree) pick = i;
    else if (p->state[i] == hcomm_buffer_pool_s::kPending && (oldest == n || p->order[i] < p->order[oldest])) oldest = i;
  }
  if (pick == n) {
    if (oldest == n) {
      logf(p->ctx, 1, "buffer pool empty: all %zu buffers are acquired", n);
      return HCOMM_E_UNAVAIL;
    }
    // Wait for the oldest released buffer's transfer (the stream's work up to its release).
    hcomm_result_t rc = hcomm_query_event(p->ev[oldest]) == HCOMM_SUCCESS ? HCOMM_SUCCESS : sync_timeout(p->stream[oldest], timeout_ms);
    if (rc != HCOMM_SUCCESS) return rc;
    pool_reclaim(p, oldest);
    pick = oldest;
  }
  p->state[pick] = hcomm_buffer_pool_s::kOut;
  *buf = hcomm_buffer_t{p->addr[pick], p->size, static_cast<uint32_t>(pick)};
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_pool_release(hcomm_buffer_pool_t p, const hcomm_buffer_t* buf, hcomm_stream_t stream) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!buf) return HCOMM_E_PTR;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (buf->index >= p->addr.size() || p->addr[buf->index] != buf->addr || p->state[buf->index] != hcomm_buffer_pool_s::kOut)
    return HCOMM_E_PARA;
  if (!stream) { p->state[buf->index] = hcomm_buffer_pool_s::kFree; return HCOMM_SUCCESS; }
  hcomm_event_t e = nullptr;
  hcomm_result_t rc = hcomm_create_event(p->ctx, &e);
  if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(e, stream);
  if (rc != HCOMM_SUCCESS) { if (e) hcomm_destroy_event(e); return rc; }
  p->state[buf->index] = hcomm_buffer_pool_s::kPending;
  p->ev[buf->index] = e;
  p->stream[buf->index] = stream;
  p->order[buf->index] = ++p->seq;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_pool_available(hcomm_buffer_pool_t p, uint32_t* n) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!n) return HCOMM_E_PTR;
  *n = 0;
  for (std::size_t i = 0; i < p->addr.size(); ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending && hcomm_query_event(p->ev[i]) == HCOMM_SUCCESS) pool_reclaim(p, i);
    if (p->state[i] == hcomm_buffer_pool_s::kFree) ++*n;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_destroy_buffer_pool(hcomm_buffer_pool_t p) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  std::size_t out = 0;
  for (auto s : p->state) out += s == hcomm_buffer_pool_s::kOut;
  if (out) {
    logf(p->ctx, 0, "buffer pool destroy: %zu buffers are still acquired", out);
    return HCOMM_E_AGAIN;
  }
  for (std::size_t i = 0; i < p->addr.size(); ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending) {
      if (hcomm_query_event(p->ev[i]) != HCOMM_SUCCESS) sync_timeout(p->stream[i], p->ctx->timeout_ns / 1000000);
      pool_reclaim(p, i);
    }
    if (p->type == HCOMM_MEMORY_TYPE_DEVICE) hcomm_free(p->ctx, p->addr[i]);
    else std::free(p->addr[i]);
  }
  untrack(p);
  delete p;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_flush_cache(hcomm_context_t ctx, const void* host_ptr, uint64_t size, hcomm_flush_dir_t dir) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!host_ptr && size) return HCOMM_E_PTR;
  if (dir != HCOMM_FLUSH_TO_DEVICE && dir != HCOMM_FLUSH_FROM_DEVICE) return HCOMM_E_PARA;
  if (size == 0) return HCOMM_SUCCESS;
  const std::uint64_t lines = (size + 63) / 64;
  ctx->drv->host_delay(500 + lines * 64 / 25);  // 0.5 us + lines x 64 B at 25 GB/s (25 B/ns)
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_alloc(hcomm_context_t ctx, uint64_t bytes, void** p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p) return HCOMM_E_PTR;
  if (bytes == 0) return HCOMM_E_PARA;
  const std::uint64_t need = (bytes + ctx->slot_bytes - 1) / ctx->slot_bytes;
  const std::uint64_t n = ctx->slot_used.size();
  for (std::uint64_t i = 0; i + need <= n; ++i) {  // first fit: deterministic, so symmetric across ranks
    std::uint64_t k = 0;
    while (k < need && ctx->slot_used[i + k] == 0) ++k;
    if (k < need) { i += k; continue; }
    for (k = 0; k < need; ++k) ctx->slot_used[i + k] = k == 0 ? static_cast<std::uint32_t>(need) : ~0u;
    *p = reinterpret_cast<void*>(ctx->sym_addr + i * ctx->slot_bytes);
    return HCOMM_SUCCESS;
  }
  logf(ctx, 0, "device %u: no %llu free symmetric slots of %llu MiB (HCOMM_SYM_SLOTS)", ctx->device_id, (unsigned long long)need,
       (unsigned long long)(ctx->slot_bytes >> 20));
  return HCOMM_E_MEMORY;
}

hcomm_result_t hcomm_buffer_free(hcomm_context_t ctx, void* p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  std::uint64_t a = dev(p);
  if (a < ctx->sym_addr || (a - ctx->sym_addr) % ctx->slot_bytes) return HCOMM_E_PTR;
  std::uint64_t i = (a - ctx->sym_addr) / ctx->slot_bytes;
  if (i >= ctx->slot_used.size() || ctx->slot_used[i] == 0 || ctx->slot_used[i] == ~0u) return HCOMM_E_PTR;
  std::uint32_t need = ctx->slot_used[i];
  for (std::uint32_t k = 0; k < need; ++k) ctx->slot_used[i + k] = 0;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_reg_mr(hcomm_context_t ctx, void* p, uint64_t bytes, uint32_t access, hcomm_mr_t* mr) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p || !mr) return HCOMM_E_PTR;
  if (bytes == 0 || access == 0 || (access & ~7u)) return HCOMM_E_PARA;
  std::uint32_t key = 0;
  if (ctx->drv->mr_register(ctx->device, dev(p), bytes, access, &key) != DrvStatus::Ok) return HCOMM_E_PARA;
  ctx->mrs[key] = dev(p);
  *mr = hcomm_mr_t{dev(p), bytes, key, key, access};
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_dereg_mr(hcomm_context_t ctx, const hcomm_mr_t* mr) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!mr) return HCOMM_E_PTR;
  if (!ctx->mrs.erase(mr->lkey) || ctx->drv->mr_deregister(ctx->device, mr->lkey) != DrvStatus::Ok) return HCOMM_E_NOT_FOUND;
  return HCOMM_SUCCESS;
}

void hcomm_config_init(hcomm_config_t* c) {
  if (!c) return;
  c->mode = c->send_buffer_size = c->recv_buffer_size = c->buffer_pool_size = c->timeout_ms = c->retry_count = c->protocol =
      c->bandwidth_limit = c->num_qp = c->buffer_size = HCOMM_CONFIG_UNSET;
}

hcomm_result_t hcomm_comm_init(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, hcomm_comm_t* out) {
  return hcomm_comm_init_config(ctx, nranks, rank, nullptr, out);
}

hcomm_result_t hcomm_comm_get_config(hcomm_comm_t comm, hcomm_config_t* cfg) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!cfg) return HCOMM_E_PTR;
  *cfg = comm->cfg;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_init_config(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, const hcomm_config_t* user,
                                      hcomm_comm_t* out) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  hcomm_config_t cfg;
  hcomm_config_init(&cfg);
  if (user) cfg = *user;
  const std::uint64_t MB = 1ULL << 20;
  bool good = resolve(ctx, &cfg.mode, "mode", "HCOMM_MODE", HCOMM_COMM_MODE_AUTO, 0, 2, {"AUTO", "SMALL_MSG", "LARGE_MSG"}) &&
              resolve(ctx, &cfg.send_buffer_size, "send_buffer_size", "HCOMM_SEND_BUFFER_SIZE", 16 * MB, MB, 1024 * MB) &&
              resolve(ctx, &cfg.recv_buffer_size, "recv_buffer_size", "HCOMM_RECV_BUFFER_SIZE", 16 * MB, MB, 1024 * MB) &&
              resolve(ctx, &cfg.buffer_pool_size, "buffer_pool_size", "HCOMM_BUFFER_POOL_SIZE", 8, 1, 1024) &&
              resolve(ctx, &cfg.timeout_ms, "timeout_ms", "HCOMM_TIMEOUT_MS", 30000, 1000, 300000) &&
              resolve(ctx, &cfg.retry_count, "retry_count", "HCOMM_RETRY_COUNT", 3, 0, 10) &&
              resolve(ctx, &cfg.protocol, "protocol", "HCOMM_PROTOCOL", HCOMM_PROTOCOL_RDMA, 0, 2, {"TCP", "RDMA", "SHM"}) &&
              resolve(ctx, &cfg.bandwidth_limit, "bandwidth_limit", "HCOMM_BANDWIDTH_LIMIT", 0, 0, 1000) &&
              resolve(ctx, &cfg.num_qp, "num_qp", "HCOMM_NUM_QP", 8, 1, 32) &&
              resolve(ctx, &cfg.buffer_size, "buffer_size", "HCOMM_BUFFER_SIZE", 8 * MB, MB, 64 * MB);
  if (!good) return HCOMM_E_PARA;
  if (cfg.protocol == HCOMM_PROTOCOL_TCP) {
    logf(ctx, 0, "protocol TCP is not modelled by this driver (RDMA and SHM are)");
    return HCOMM_E_NOT_SUPPORT;
  }
  if (nranks == 0 || nranks != ctx->drv->rank_count() || rank >= nranks) {
    logf(ctx, 0, "comm init: nranks %u / rank %u do not match the cluster's %u ranks", nranks, rank,
         ctx->drv->rank_count());
    return HCOMM_E_PARA;
  }
  RankDesc me;
  if (ctx->drv->rank_desc(rank, &me) != DrvStatus::Ok) return HCOMM_E_NOT_FOUND;
  if (me.device != ctx->device || me.device_base_addr != ctx->base) {
    logf(ctx, 0, "Rank%u descriptor does not match device %u (base 0x%llx vs 0x%llx)", rank, ctx->device_id,
         (unsigned long long)me.device_base_addr, (unsigned long long)ctx->base);
    return E_HCOMM_ADDR_MISMATCH;
  }
  auto* c = new hcomm_comm_s;
  c->ctx = ctx;
  c->cfg = cfg;
  c->id = ctx->next_comm_id++;
  c->rank = rank;
  c->nranks = nranks;
  c->peers.emplace(rank, me);
  hcomm_result_t r = make_stream(ctx, &c->internal);
  if (r == HCOMM_SUCCESS) r = make_stream(ctx, &c->recv_stream);
  if (r != HCOMM_SUCCESS) { delete c; return r; }
  track(c, kComm);
  *out = c;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_destroy(hcomm_comm_t c) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_destroy_stream(c->internal);
  hcomm_destroy_stream(c->recv_stream);
  for (auto s : c->slaves) hcomm_destroy_stream(s);
  untrack(c);
  delete c;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_comm_rank(hcomm_comm_t c, uint32_t* r) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  if (!r) return HCOMM_E_PTR;
  *r = c->rank;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_comm_size(hcomm_comm_t c, uint32_t* n) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  if (!n) return HCOMM_E_PTR;
  *n = c->nranks;
  return HCOMM_SUCCESS;
}

// ---- point-to-point ----
// Protocol, per chunk of the receiver's p2p window (symmetric, ctx->p2p_bytes):
//   receiver: notify READY(tag) on the sender, wait DATA(tag), copy window -> user buffer
//   sender:   wait READY(tag), SDMA write user buffer -> receiver's window over HCCS, notify DATA(tag)
// All receives of a communicator run on its recv stream in posting order, so the one window is
// granted to one sender at a time; the user's stream is joined to it through events.
static const std::uint32_t kMaxTag = (1u << 26) - 1;

static hcomm_result_t p2p_check(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t peer,
                                uint32_t tag, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype) || peer >= comm->nranks || peer == comm->rank || tag > kMaxTag) return HCOMM_E_PARA;
  if (!buf && count) return HCOMM_E_PTR;
  return HCOMM_SUCCESS;
}

// Point-to-point chunk: buffer_size (AUTO), at most 256 KiB (SMALL_MSG: earlier first bytes,
// more handshakes) or the whole receive window (LARGE_MSG: fewest handshakes).
static std::uint64_t p2p_chunk(hcomm_comm_t comm) {
  const std::uint64_t window = comm->ctx->p2p_bytes;
  switch (comm->cfg.mode) {
    case HCOMM_COMM_MODE_SMALL_MSG: return std::min<std::uint64_t>({window, comm->cfg.buffer_size, 256 * 1024});
    case HCOMM_COMM_MODE_LARGE_MSG: return window;
    default: return std::min(window, comm->cfg.buffer_size);
  }
}

static hcomm_result_t make_request(hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req, std::int64_t peer = -1,
                                   std::uint32_t tag = 0, std::uint64_t bytes = 0, bool is_send = false) {
  auto* r = new hcomm_request_s{comm, stream, nullptr, peer, tag, bytes, is_send};
  hcomm_result_t rc = hcomm_create_event(comm->ctx, &r->done);
  if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(r->done, stream);
  if (rc != HCOMM_SUCCESS) { delete r; return rc; }
  track(r, kReq);
  *req = r;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_isend(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst, uint32_t tag,
                           hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req) {
  hcomm_result_t rc = p2p_check(buf, count, dtype, dst, tag, comm, stream);
  if (rc != HCOMM_SUCCESS) return rc;
  if (!stream || !req) return HCOMM_E_PTR;
  const RankDesc* peer = peer_desc(comm, dst);
  if (!peer) return HCOMM_E_NOT_FOUND;
  hcomm_context_t ctx = comm->ctx;
  const std::uint64_t bytes = count * hcomm_data_type_size(dtype);
  const std::uint64_t window = peer->device_base_addr + (ctx->p2p_addr - ctx->base);
  OpInfo info{comm->rank, comm->nranks, "send", p2p_algo(comm, *peer), bytes, dtype, 0, dst, comm->op_seq};
  std::uint64_t mk = op_begin(stream, info);
  std::uint64_t off = 0;
  do {
    std::uint64_t n = std::min(p2p_chunk(comm), bytes - off);
    notify_wait(stream, notify_key(comm->id, kP2pReady, dst, tag));
    const bool last = off + n >= bytes;
    put_notify(stream, comm, *peer, window, dev(buf) + off, n,
               last ? last_key(comm->id, comm->rank, tag, bytes) : notify_key(comm->id, kP2pData, comm->rank, tag), ctx->p2p_rkey);
    off += n;
  } while (off < bytes);
  op_end(stream, mk);
  return make_request(comm, stream, req, dst, tag, bytes, true);
}

hcomm_result_t hcomm_irecv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src, uint32_t tag,
                           hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req) {
  hcomm_result_t rc = p2p_check(buf, count, dtype, src, tag, comm, stream);
  if (rc != HCOMM_SUCCESS) return rc;
  if (!stream || !req) return HCOMM_E_PTR;
  const RankDesc* peer = peer_desc(comm, src);
  if (!peer) return HCOMM_E_NOT_FOUND;
  hcomm_context_t ctx = comm->ctx;
  const std::uint64_t bytes = count * hcomm_data_type_size(dtype);
  hcomm_stream_t rs = comm->recv_stream;
  hcomm_event_t before = nullptr, after = nullptr;
  hcomm_create_event(ctx, &before);
  hcomm_create_event(ctx, &after);
  hcomm_record_event(before, stream);   // the receive starts after earlier work on the user stream
  hcomm_wait_event(before, rs);
  OpInfo info{comm->rank, comm->nranks, "recv", p2p_algo(comm, *peer), bytes, dtype, 0, src, comm->op_seq};
  std::uint64_t mk = op_begin(rs, info);
  std::uint64_t off = 0;
  do {
    std::uint64_t n = std::min(p2p_chunk(comm), bytes - off);
    remote_notify(rs, comm, *peer, notify_key(comm->id, kP2pReady, comm->rank, tag));
    const bool last = off + n >= bytes;
    notify_wait(rs, last ? last_key(comm->id, src, tag, bytes) : notify_key(comm->id, kP2pData, src, tag));
    if (n) copy(rs, dev(buf) + off, ctx->p2p_addr, n);
    off += n;
  } while (off < bytes);
  op_end(rs, mk);
  hcomm_record_event(after, rs);
  hcomm_wait_event(after, stream);      // later work on the user stream sees the data
  hcomm_destroy_event(before);
  hcomm_destroy_event(after);
  return make_request(comm, stream, req, src, tag, bytes, false);
}

hcomm_result_t hcomm_test(hcomm_request_t r) {
  if (!live(r, kReq)) return HCOMM_E_UNAVAIL;
  hcomm_result_t q = hcomm_query_event(r->done);
  if (q != HCOMM_SUCCESS) {
    if (r->comm->ctx->drv->stream_idle(r->stream->id)) return hcomm_wait(r);  // failed stream: report it
    return q;
  }
  hcomm_destroy_event(r->done);
  untrack(r);
  delete r;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_wait(hcomm_request_t r) {
  if (!live(r, kReq)) return HCOMM_E_UNAVAIL;
  hcomm_result_t rc = HCOMM_SUCCESS;
  if (hcomm_query_event(r->done) != HCOMM_SUCCESS) rc = sync_timeout(r->stream, r->comm->cfg.timeout_ms);
  if (rc == HCOMM_E_TIMEOUT && r->peer >= 0)
    logf(r->comm->ctx, 0, "Rank%u %s rank %lld (tag %u, %llu bytes) timed out: no matching %s; sizes and tags must match on both sides",
         r->comm->rank, r->is_send ? "send to" : "recv from", (long long)r->peer, r->tag, (unsigned long long)r->bytes,
         r->is_send ? "receive was posted" : "message arrived");
  hcomm_destroy_event(r->done);
  untrack(r);
  delete r;
  return rc;
}

hcomm_result_t hcomm_waitall(uint32_t n, hcomm_request_t* reqs) {
  if (!reqs && n) return HCOMM_E_PTR;
  hcomm_result_t first = HCOMM_SUCCESS;
  for (uint32_t i = 0; i < n; ++i) {
    hcomm_result_t rc = hcomm_wait(reqs[i]);
    if (rc != HCOMM_SUCCESS && first == HCOMM_SUCCESS) first = rc;
  }
  return first;
}

hcomm_result_t hcomm_send(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst, uint32_t tag,
                          hcomm_comm_t comm) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_request_t r = nullptr;
  hcomm_result_t rc = hcomm_isend(buf, count, dtype, dst, tag, comm, comm->internal, &r);
  return rc == HCOMM_SUCCESS ? hcomm_wait(r) : rc;
}

hcomm_result_t hcomm_recv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src, uint32_t tag,
                          hcomm_comm_t comm) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_request_t r = nullptr;
  hcomm_result_t rc = hcomm_irecv(buf, count, dtype, src, tag, comm, comm->internal, &r);
  return rc == HCOMM_SUCCESS ? hcomm_wait(r) : rc;
}

hcomm_result_t hcomm_remote_addr(hcomm_comm_t comm, uint32_t peer, const void* my_ptr, uint64_t* remote) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!remote) return HCOMM_E_PTR;
  if (peer >= comm->nranks) return HCOMM_E_PARA;
  const RankDesc* d = peer_desc(comm, peer);
  if (!d) return HCOMM_E_NOT_FOUND;
  if (dev(my_ptr) < comm->ctx->base) return HCOMM_E_PTR;
  *remote = d->device_base_addr + (dev(my_ptr) - comm->ctx->base);
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_rdma_write(const void* local, uint64_t bytes, uint32_t dst, uint64_t remote_addr, uint32_t rkey,
                                hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!local && bytes) return HCOMM_E_PTR;
  if (dst >= comm->nranks || stream->ctx != comm->ctx) return HCOMM_E_PARA;
  const RankDesc* peer = peer_desc(comm, dst);
  if (!peer) return HCOMM_E_NOT_FOUND;
  if (comm->ctx->drv->pair_link(comm->ctx->device, peer->device) == PairLink::None) return HCOMM_E_ROCE_CONNECT;
  OpInfo info{comm->rank, comm->nranks, "rdma_write", "roce", bytes, HCOMM_DATA_TYPE_INT8, 0, dst, comm->op_seq};
  std::uint64_t mk = op_begin(stream, info);
  hcomm_result_t rc = rdma_write(stream, peer->device, remote_addr, dev(local), bytes, false, 0, rkey, comm);
  op_end(stream, mk);
  return rc;
}

hcomm_result_t hcomm_barrier(hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  hcomm_stream_t s = stream ? stream : comm->internal;
  const std::uint32_t n = comm->nranks, r = comm->rank;
  OpInfo info{r, n, "barrier", "dissemination", 0, HCOMM_DATA_TYPE_INT8, 0, -1, comm->op_seq++};
  std::uint64_t mk = op_begin(s, info);
  // Round k: tell rank r + 2^k, wait for rank r - 2^k. Counting notifies make repeated barriers safe.
  for (std::uint32_t k = 0, d = 1; d < n; ++k, d <<= 1) {
    const RankDesc* to = peer_desc(comm, (r + d) % n);
    if (!to) return HCOMM_E_NOT_FOUND;
    remote_notify(s, comm, *to, notify_key(comm->id, kBarrier, r, k));
    notify_wait(s, notify_key(comm->id, kBarrier, (r + n - d) % n, k));
  }
  op_end(s, mk);
  return stream ? HCOMM_SUCCESS : sync_timeout(s, comm->cfg.timeout_ms);
}

hcomm_result_t hcomm_allreduce(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                               hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype) || op < HCOMM_REDUCE_SUM || op > HCOMM_REDUCE_MIN) return HCOMM_E_PARA;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  return allreduce_mesh(comm, dev(in), dev(out), count, dtype, op, stream);
}

}  // extern "C"
