// The library's composition root (docs/architecture.md#hcomm): the entry points that put the
// rooms together. hcomm_create_context gives the context recovery/'s hooks (core/recovery.h: how
// the rooms below the recovery call it); hcomm_comm_init runs topology discovery (discovery/)
// between core's communicator checks and its construction; hcomm_comm_destroy lets each room
// drop what it holds of the communicator. The top room: nothing includes it.
#include "algo/mesh.h"
#include "core/comm.h"
#include "core/context.h"
#include "core/handles.h"
#include "core/recovery.h"
#include "discovery/topo.h"
#include "recovery/failover.h"
#include "route/route.h"

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

// A communicator ends here, where every room it has state in can be reached: its streams and
// comm id (core), its reservation (route), the mesh pulls it owes (algo), the recovery's records.
hcomm_result_t hcomm_comm_destroy(hcomm_comm_t c) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  for (hcomm_request_t r : c->batch_reqs) hcomm_wait(r);  // batch send/recv still in flight
  hcomm_destroy_stream(c->internal);
  hcomm_destroy_stream(c->recv_stream);
  for (auto s : c->slaves) hcomm_destroy_stream(s);
  for (auto s : c->schedule_slaves) hcomm_destroy_stream(s);
  if (c->grant_stream) hcomm_destroy_stream(c->grant_stream);
  if (c->batch_send) hcomm_destroy_stream(c->batch_send);
  if (c->batch_recv) hcomm_destroy_stream(c->batch_recv);
  if (c->tcp_send) hcomm_destroy_stream(c->tcp_send);  // before its staging buffers go with c
  if (live(c->ctx, kCtx)) {
    recovery::comm_destroyed(c);  // its context still lives
    release_comm_id(c);
    route::drop_reservation(c);  // its bandwidth reservation ends with it
    forget_mesh_debts(c, true);
  }
  untrack(c);
  delete c;
  return HCOMM_SUCCESS;
}

}  // extern "C"
