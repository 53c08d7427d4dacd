// The driver port: the only calls into the Driver (docs/architecture.md#hcomm).
#include "driver_port.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace hcomm {

namespace {
DriverSet g_drivers;  // process-wide, as the real runtime is
bool g_load_tried = false;

// A process that set no driver loads one, as the real runtime loads its driver library: the
// shared library named by HCOMM_DRIVER, whose C entry point hcomm_driver_open returns the
// process-wide driver (hcsim exec's emulation driver, docs/exec.md). Tried once; a failure
// leaves no driver (contexts then fail with HCOMM_E_DRV) and says why on stderr.
const DriverSet& load_driver() {
  if (g_drivers.complete() || g_load_tried) return g_drivers;
  g_load_tried = true;
  const char* path = std::getenv("HCOMM_DRIVER");
  if (!path || !*path) return g_drivers;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "[HCOMM_ERR] HCOMM_DRIVER=%s: %s\n", path, dlerror());
    return g_drivers;
  }
  using OpenFn = Driver* (*)();
  auto open = reinterpret_cast<OpenFn>(dlsym(h, "hcomm_driver_open"));
  if (!open) {
    std::fprintf(stderr, "[HCOMM_ERR] HCOMM_DRIVER=%s: no hcomm_driver_open in it\n", path);
    return g_drivers;
  }
  Driver* d = open();
  if (!d) std::fprintf(stderr, "[HCOMM_ERR] HCOMM_DRIVER=%s: hcomm_driver_open failed\n", path);
  set_driver(d);
  return g_drivers;
}
}  // namespace
void set_driver(Driver* d) { g_drivers = d ? DriverSet{d, d, d, d} : DriverSet{}; }
void set_driver(const DriverSet& parts) { g_drivers = parts.complete() ? parts : DriverSet{}; }
const DriverSet& drivers() { return load_driver(); }

namespace port {

namespace {
hcomm_result_t ok_or(DrvStatus st, hcomm_result_t failure) { return st == DrvStatus::Ok ? HCOMM_SUCCESS : failure; }
}  // namespace

hcomm_result_t open_device(std::uint32_t device_id, DriverSet* drv, std::uint32_t* device) {
  const DriverSet& d = load_driver();
  if (!d.complete()) return HCOMM_E_DRV;
  if (d.runtime->device_of(device_id, device) != DrvStatus::Ok) return HCOMM_E_PARA;
  *drv = d;
  return HCOMM_SUCCESS;
}

std::uint32_t rank_count(hcomm_context_t ctx) { return ctx->drv.runtime->rank_count(); }
hcomm_result_t rank_desc(hcomm_context_t ctx, std::uint32_t rank, RankDesc* out) {
  return ok_or(ctx->drv.runtime->rank_desc(rank, out), HCOMM_E_NOT_FOUND);
}

hcomm_result_t hccs_port(hcomm_context_t ctx, std::uint32_t port, HccsPortInfo* out) {
  return ok_or(ctx->drv.runtime->hccs_port(ctx->device, port, out), HCOMM_E_DRV);
}
hcomm_result_t pcie_peer(hcomm_context_t ctx, std::uint32_t peer_device, bool* reachable) {
  return ok_or(ctx->drv.runtime->pcie_peer(ctx->device, peer_device, reachable), HCOMM_E_DRV);
}
hcomm_result_t device_of(hcomm_context_t ctx, std::uint32_t device_id, std::uint32_t* device) {
  return ok_or(ctx->drv.runtime->device_of(device_id, device), HCOMM_E_NOT_FOUND);
}
hcomm_result_t device_rank(hcomm_context_t ctx, std::uint32_t device, std::uint32_t* rank) {
  return ok_or(ctx->drv.runtime->device_rank(device, rank), HCOMM_E_NOT_FOUND);
}
namespace {
hcomm_result_t ctrl_status(DrvStatus st) {
  switch (st) {
    case DrvStatus::Ok: return HCOMM_SUCCESS;
    case DrvStatus::NotSupported: return HCOMM_E_NOT_SUPPORT;
    case DrvStatus::Timeout: return HCOMM_E_TIMEOUT;
    default: return HCOMM_E_DRV;
  }
}
}  // namespace
hcomm_result_t ctrl_send(hcomm_context_t ctx, std::uint32_t from_rank, std::uint32_t to_rank, CtrlMsg msg) {
  return ctrl_status(ctx->drv.host->ctrl_send(from_rank, to_rank, std::move(msg)));
}
hcomm_result_t ctrl_recv(hcomm_context_t ctx, std::uint32_t to_rank, std::uint32_t from_rank, std::uint64_t timeout_ns,
                         CtrlMsg* msg) {
  return ctrl_status(ctx->drv.host->ctrl_recv(to_rank, from_rank, timeout_ns, msg));
}

hcomm_result_t ctrl_signal(hcomm_context_t ctx, std::uint32_t from_rank, std::uint32_t to_rank, CtrlMsg msg) {
  return ctrl_status(ctx->drv.host->ctrl_signal(from_rank, to_rank, std::move(msg)));
}
hcomm_result_t ctrl_signal_poll(hcomm_context_t ctx, std::uint32_t to_rank, std::uint32_t* from_rank, CtrlMsg* msg) {
  return ctrl_status(ctx->drv.host->ctrl_signal_poll(to_rank, from_rank, msg));
}
hcomm_result_t device_abort(hcomm_context_t ctx) { return ctrl_status(ctx->drv.runtime->device_abort(ctx->device)); }
hcomm_result_t notify_reset(hcomm_context_t ctx) { return ctrl_status(ctx->drv.runtime->notify_reset(ctx->device)); }
void failover_reported(hcomm_context_t ctx, const FailoverInfo& f) { ctx->drv.observer->failover_reported(ctx->device, f); }
hcomm_result_t device_progress(hcomm_context_t ctx, std::uint64_t* completed, bool* head_not_started) {
  return ctrl_status(ctx->drv.runtime->device_progress(ctx->device, completed, head_not_started));
}
hcomm_result_t device_event_poll(hcomm_context_t ctx, DeviceEvent* out) {
  return ctrl_status(ctx->drv.runtime->device_event_poll(ctx->device, out));
}
hcomm_result_t heartbeat_register(hcomm_context_t ctx, std::uint32_t rank, const HeartbeatSpec& spec) {
  return ctrl_status(ctx->drv.host->heartbeat_register(rank, spec));
}
hcomm_result_t host_socket(hcomm_stream_t s, const HostSocketOp& op) { return ctrl_status(s->ctx->drv.host->host_socket(s->id, op)); }

hcomm_result_t nic_info(hcomm_context_t ctx, NicInfo* out) { return ok_or(ctx->drv.rdma->nic_info(ctx->device, out), HCOMM_E_DRV); }
hcomm_result_t peer_nic_info(hcomm_context_t ctx, std::uint32_t device, NicInfo* out) {
  return ok_or(ctx->drv.rdma->nic_info(device, out), HCOMM_E_DRV);
}
hcomm_result_t nic_counters(hcomm_context_t ctx, NicCounters* out) {
  return ok_or(ctx->drv.rdma->nic_counters(ctx->device, out), HCOMM_E_DRV);
}
hcomm_result_t probe_egress(hcomm_context_t ctx, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                            std::vector<ProbeEgress>* out) {
  const DrvStatus st = ctx->drv.rdma->probe_egress(ctx->device, targets, sports, n, out);
  return st == DrvStatus::NotSupported ? HCOMM_E_NOT_SUPPORT : ok_or(st, HCOMM_E_DRV);
}
hcomm_result_t qp_connect(hcomm_context_t ctx, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) {
  const DrvStatus st = ctx->drv.rdma->qp_connect(ctx->device, target, qp, sport);
  return st == DrvStatus::NotSupported ? HCOMM_E_NOT_SUPPORT : ok_or(st, HCOMM_E_DRV);
}
void route_decided(hcomm_context_t ctx, const RouteInfo& r) { ctx->drv.observer->route_decided(ctx->device, r); }
bool route_reports(hcomm_context_t ctx) { return ctx->drv.observer->route_reports(); }
std::uint64_t now_ns(hcomm_context_t ctx) { return ctx->drv.runtime->now_ns(); }

hcomm_result_t mem_alloc(hcomm_context_t ctx, std::uint64_t bytes, std::uint64_t* addr) {
  return ok_or(ctx->drv.runtime->mem_alloc(ctx->device, bytes, addr), HCOMM_E_MEMORY);
}
hcomm_result_t mem_free(hcomm_context_t ctx, std::uint64_t addr) {
  return ok_or(ctx->drv.runtime->mem_free(ctx->device, addr), HCOMM_E_DRV);
}
hcomm_result_t mr_register(hcomm_context_t ctx, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                           std::uint32_t* key) {
  return ok_or(ctx->drv.rdma->mr_register(ctx->device, addr, bytes, access, key), HCOMM_E_DRV);
}
hcomm_result_t mr_deregister(hcomm_context_t ctx, std::uint32_t key) {
  return ok_or(ctx->drv.rdma->mr_deregister(ctx->device, key), HCOMM_E_DRV);
}

hcomm_result_t stream_create(hcomm_context_t ctx, std::uint32_t* id) {
  return ok_or(ctx->drv.runtime->stream_create(ctx->device, id), HCOMM_E_DRV);
}
hcomm_result_t stream_destroy(hcomm_stream_t s) { return ok_or(s->ctx->drv.runtime->stream_destroy(s->id), HCOMM_E_DRV); }
hcomm_result_t stream_create_on(hcomm_context_t ctx, std::uint32_t device, std::uint32_t* id) {
  return ok_or(ctx->drv.runtime->stream_create(device, id), HCOMM_E_DRV);
}
hcomm_result_t submit(hcomm_stream_t s, const DrvTask& t) {
  const DrvStatus st = s->ctx->drv.runtime->submit(s->id, t);
  return st == DrvStatus::NotSupported ? HCOMM_E_NOT_SUPPORT : ok_or(st, HCOMM_E_DRV);
}
hcomm_result_t stream_synchronize(hcomm_stream_t s, std::uint64_t timeout_ns, std::string* error) {
  switch (s->ctx->drv.runtime->stream_synchronize(s->id, timeout_ns, error)) {
    case DrvStatus::Ok: return HCOMM_SUCCESS;
    case DrvStatus::Timeout: return HCOMM_E_TIMEOUT;
    case DrvStatus::Aborted: return HCOMM_E_REMOTE;
    default: return HCOMM_E_RUNTIME;
  }
}
bool stream_idle(hcomm_stream_t s) { return s->ctx->drv.runtime->stream_idle(s->id); }
std::uint64_t event_completed(hcomm_event_t ev) { return ev->ctx->drv.runtime->event_completed(ev->ctx->device, ev->id); }
std::uint64_t event_value(hcomm_context_t ctx, std::uint64_t id) { return ctx->drv.runtime->event_completed(ctx->device, id); }
std::uint64_t event_time_ns(hcomm_event_t ev) { return ev->ctx->drv.runtime->event_time_ns(ev->ctx->device, ev->id); }

void host_delay(hcomm_context_t ctx, std::uint64_t ns) { ctx->drv.runtime->host_delay(ns); }
void profile_op(hcomm_context_t ctx, std::uint64_t begin_key, std::uint64_t end_key, const OpInfo& info) {
  ctx->drv.observer->profile_op(ctx->device, begin_key, end_key, info);
}
void log(hcomm_context_t ctx, int level, const std::string& line) { ctx->drv.observer->log(ctx->device, level, line); }

}  // namespace port
}  // namespace hcomm

extern "C" double hcomm_wtime(void) {
  const hcomm::DriverSet& d = hcomm::drivers();
  return d.complete() ? static_cast<double>(d.runtime->now_ns()) * 1e-9 : 0.0;
}
