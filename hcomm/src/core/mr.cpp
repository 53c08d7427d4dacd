// Memory registration on the device's NIC (docs/architecture.md#hcomm): access flags are checked
// by the target NIC when a peer writes.
#include "core/handles.h"
#include "core/objects.h"
#include "core/types.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

extern "C" {

hcomm_result_t hcomm_reg_mr(hcomm_context_t ctx, void* p, uint64_t bytes, uint32_t access, hcomm_mr_t* mr) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!p || !mr) return HCOMM_E_PTR;
  if (bytes == 0 || access == 0 || (access & ~7u)) return HCOMM_E_PARA;
  std::uint32_t key = 0;
  if (port::mr_register(ctx, dev(p), bytes, access, &key) != HCOMM_SUCCESS) return HCOMM_E_PARA;
  ctx->mrs[key] = dev(p);
  *mr = hcomm_mr_t{dev(p), bytes, key, key, access};
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_dereg_mr(hcomm_context_t ctx, const hcomm_mr_t* mr) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!mr) return HCOMM_E_PTR;
  if (!ctx->mrs.erase(mr->lkey) || port::mr_deregister(ctx, mr->lkey) != HCOMM_SUCCESS) return HCOMM_E_NOT_FOUND;
  return HCOMM_SUCCESS;
}

}  // extern "C"
