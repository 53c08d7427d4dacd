// Device memory (docs/architecture.md#hcomm): allocations, memcpy tasks, the symmetric slot region
// (hcomm_buffer_alloc) and host cache maintenance.
#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/types.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace {

hcomm_result_t memcpy_task(DrvTaskKind kind, void* dst, const void* src, uint64_t bytes, hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  if ((!dst || !src) && bytes) return HCOMM_E_PTR;
  DrvTask t;
  t.kind = kind;
  t.bytes = bytes;
  if (kind == DrvTaskKind::HostToDevice) { t.dst = dev(dst); t.host = const_cast<void*>(src); }
  else if (kind == DrvTaskKind::DeviceToHost) { t.src = dev(src); t.host = dst; }
  else { t.dst = dev(dst); t.src = dev(src); }
  return port::submit(s, t);
}

}  // namespace

extern "C" {

hcomm_result_t hcomm_malloc(hcomm_context_t ctx, uint64_t bytes, void** p) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p) return HCOMM_E_PTR;
  if (bytes == 0) return HCOMM_E_PARA;
  std::uint64_t a = 0;
  if (port::mem_alloc(ctx, bytes, &a) != HCOMM_SUCCESS) {
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
  port::mem_free(ctx, it->first);
  ctx->allocs.erase(it);
  return HCOMM_SUCCESS;
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

hcomm_result_t hcomm_flush_cache(hcomm_context_t ctx, const void* host_ptr, uint64_t size, hcomm_flush_dir_t dir) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!host_ptr && size) return HCOMM_E_PTR;
  if (dir != HCOMM_FLUSH_TO_DEVICE && dir != HCOMM_FLUSH_FROM_DEVICE) return HCOMM_E_PARA;
  if (size == 0) return HCOMM_SUCCESS;
  const std::uint64_t lines = (size + 63) / 64;
  port::host_delay(ctx, 500 + lines * 64 / 25);  // 0.5 us + lines x 64 B at 25 GB/s (25 B/ns)
  return HCOMM_SUCCESS;
}

}  // extern "C"
