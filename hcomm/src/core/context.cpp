// Contexts (docs/architecture.md#hcomm): one per device a process drives. Owns the symmetric
// communication buffers — the collective buffer, the point-to-point window and the slot region —
// allocated and registered first so that offsets and keys are equal on every rank.
#include "core/context.h"

#include "core/config.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail {

hcomm_result_t make_context(std::uint32_t device_id, const Recovery* recovery, hcomm_context_t* out) {
  if (!out) return HCOMM_E_PTR;
  DriverSet drv;
  std::uint32_t device = 0;
  if (hcomm_result_t rc = port::open_device(device_id, &drv, &device); rc != HCOMM_SUCCESS) return rc;
  ContextEnv env;
  const bool good = read_context_env(&env);
  auto* c = new hcomm_context_s;
  c->recovery = recovery;
  c->drv = drv;
  c->device_id = device_id;
  c->device = device;
  c->debug = env.debug;
  c->timeout_ns = env.timeout_ns;
  c->ccl_bytes = env.ccl_bytes;
  c->p2p_bytes = env.p2p_bytes;
  c->slot_bytes = env.slot_bytes;
  c->route_policy = env.route_policy;
  c->route_cnp_threshold = env.route_cnp_threshold;
  c->retry_reroute = env.retry_reroute;
  c->nic_borrow = env.nic_borrow;
  c->retry_resume = env.retry_resume;
  c->hb_period_ns = env.hb_period_ns;
  c->hb_misses = env.hb_misses;
  c->pool_buffers = env.pool_buffers;
  const std::uint64_t slots = env.slots;
  if (!good) { delete c; return HCOMM_E_PARA; }
  // The communication buffers are the first allocations on every device, so their offsets from
  // the HBM base are identical on every rank (symmetric): remote address = peer base + offset.
  // The symmetric slot region is reserved the same way (HBM is only touched when written).
  if (port::mem_alloc(c, c->ccl_bytes, &c->ccl_addr) != HCOMM_SUCCESS ||
      port::mem_alloc(c, c->p2p_bytes, &c->p2p_addr) != HCOMM_SUCCESS ||
      (slots && port::mem_alloc(c, slots * c->slot_bytes, &c->sym_addr) != HCOMM_SUCCESS)) {
    delete c;
    return HCOMM_E_MEMORY;
  }
  // The HCCS relay work area (transport/relay.h): other NPUs of the server stage their slices here
  // when this NPU relays for them. Reserved at creation, so symmetric too (the address space only:
  // HBM is touched when a relay writes it); a server of two NPUs cannot relay.
  std::uint32_t ndev = 0;
  for (std::uint32_t id = 0, dev = 0; id < 32 && port::device_of(c, id, &dev) == HCOMM_SUCCESS; ++id) ++ndev;
  if (ndev >= 3) {
    c->relay_bytes = static_cast<std::uint64_t>(ndev) * kRelayStages * 2 * kRelaySliceBytes;
    if (port::mem_alloc(c, c->relay_bytes, &c->relay_addr) != HCOMM_SUCCESS) c->relay_addr = c->relay_bytes = 0;
  }
  c->slot_used.assign(slots, 0);
  // Peers write into these over RoCE: register them (first registrations: same keys everywhere).
  const std::uint32_t rw = HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE;
  if (port::mr_register(c, c->ccl_addr, c->ccl_bytes, rw, &c->ccl_rkey) != HCOMM_SUCCESS ||
      port::mr_register(c, c->p2p_addr, c->p2p_bytes, rw, &c->p2p_rkey) != HCOMM_SUCCESS) {
    delete c;
    return HCOMM_E_DRV;
  }
  c->base = c->ccl_addr & ~((1ULL << 40) - 1);
  track(c, kCtx);
  *out = c;
  logf(c, 2, "context created: device %u, comm buffer %llu MiB", device_id, (unsigned long long)(c->ccl_bytes >> 20));
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail

extern "C" {

hcomm_result_t hcomm_destroy_context(hcomm_context_t ctx) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  for (auto& [key, addr] : ctx->mrs) port::mr_deregister(ctx, key);
  port::mr_deregister(ctx, ctx->p2p_rkey);
  port::mr_deregister(ctx, ctx->ccl_rkey);
  for (auto& ch : ctx->relay_chan_list)
    for (hcomm_stream_t s : {ch.hop1, ch.hop2})
      if (s) { port::stream_destroy(s); delete s; }
  if (ctx->relay_addr) port::mem_free(ctx, ctx->relay_addr);
  if (ctx->sym_addr) port::mem_free(ctx, ctx->sym_addr);
  port::mem_free(ctx, ctx->p2p_addr);
  port::mem_free(ctx, ctx->ccl_addr);
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

}  // extern "C"
