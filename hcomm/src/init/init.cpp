// The library's composition root (docs/architecture.md#hcomm): the entry points that put the
// rooms together. hcomm_create_context gives the context recovery/'s hooks (core/recovery.h: how
// the rooms below the recovery call it); hcomm_comm_init runs topology discovery (discovery/)
// between core's communicator checks and its construction. The top room: nothing includes it.
#include "core/comm.h"
#include "core/context.h"
#include "discovery/topo.h"
#include "recovery/failover.h"

using namespace hcomm::detail;

extern "C" {

hcomm_result_t hcomm_create_context(uint32_t device_id, hcomm_context_t* out) {
  return make_context(device_id, &failover::hooks(), out);
}

hcomm_result_t hcomm_comm_init(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, hcomm_comm_t* out) {
  return hcomm_comm_init_config(ctx, nranks, rank, nullptr, out);
}

hcomm_result_t hcomm_comm_init_config(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, const hcomm_config_t* user,
                                      hcomm_comm_t* out) {
  CommInit in;
  if (hcomm_result_t rc = comm_init_check(ctx, nranks, rank, user, out, &in); rc != HCOMM_SUCCESS) return rc;
  // Topology discovery (docs/discovery.md): once per context, collective over the ranks.
  if (hcomm_result_t rc = discover(ctx, rank, nranks, in.me); rc != HCOMM_SUCCESS) return rc;
  return comm_init_make(ctx, nranks, rank, in, out);
}

}  // extern "C"
