// One-sided RDMA (docs/architecture.md#hcomm): remote addresses of symmetric memory and
// hcomm_rdma_write into a peer's registered region.
#include "core/comm.h"
#include "core/handles.h"
#include "core/objects.h"
#include "core/profile.h"
#include "core/recovery.h"
#include "core/types.h"
#include "discovery/topo.h"
#include "route/route.h"
#include "transport/tasks.h"

using namespace hcomm;
using namespace hcomm::detail;

extern "C" {

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
  if (hcomm_result_t e = recovery::check(comm); e != HCOMM_SUCCESS) return e;  // docs/failover.md
  recovery::uses(comm, stream);
  if (!local && bytes) return HCOMM_E_PTR;
  if (dst >= comm->nranks || stream->ctx != comm->ctx) return HCOMM_E_PARA;
  const RankDesc* peer = peer_desc(comm, dst);
  if (!peer) return HCOMM_E_NOT_FOUND;
  // Discovery's link on every call (not the per-peer transport cache).
  if (discovered_link(comm, *peer) == PairLink::None) return HCOMM_E_ROCE_CONNECT;
  OpInfo info{global_rank(comm, comm->rank), comm->nranks, "rdma_write", "roce", bytes, HCOMM_DATA_TYPE_INT8, 0, global_rank(comm, dst), comm->op_seq, {}, 0, {}, 0};
  std::uint64_t mk = op_begin(stream, info);
  // One-sided: the caller learns the write is done from the stream (a completion, as ibverbs' CQE).
  hcomm_result_t rc = rdma_write(stream, peer->device, remote_addr, dev(local), bytes, false, 0, rkey, route::rdma_policy(comm), ~0u, true);
  op_end(stream, mk);
  return rc;
}

}  // extern "C"
