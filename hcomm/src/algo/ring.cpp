// Ring all-reduce (docs/architecture.md#hcomm, docs/algorithms.md).
// Each step moves one of S blocks into the next member's staging area by put-with-notify (RDMA
// write + notify across servers); the receiver reduces (reduce-scatter) or copies (all-gather)
// it into place, then returns a credit: the staging area is free again.
#include "algo/ring.h"

#include "algo/partition.h"
#include "core/comm.h"
#include "core/log.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

hcomm_result_t ring_check(hcomm_comm_t comm, ServerGroups* g) {
  const RankDesc* me = peer_desc(comm, comm->rank);
  g->rail.assign(g->servers, nullptr);
  for (std::uint32_t s = 0; s < g->servers; ++s) {
    g->rail[s] = peer_desc(comm, s * g->size + g->index);
    if (!g->rail[s] || (s != g->first / g->size && g->rail[s]->server == me->server)) {
      logf(comm->ctx, 0, "Rank%u all-reduce needs servers of %u contiguous ranks each", comm->rank, g->size);
      return HCOMM_E_NOT_SUPPORT;
    }
  }
  return HCOMM_SUCCESS;
}

void ring_allreduce(hcomm_comm_t comm, hcomm_stream_t s, const std::vector<const RankDesc*>& ring, std::uint32_t pos,
                    std::uint64_t x, std::uint64_t bytes, std::uint64_t esz, int dtype, int op, std::uint64_t stage_off) {
  hcomm_context_t ctx = comm->ctx;
  const auto S = static_cast<std::uint32_t>(ring.size());
  const RankDesc& next = *ring[(pos + 1) % S];
  const RankDesc& prev = *ring[(pos + S - 1) % S];
  const Partition blk(bytes / esz, S, esz);
  const std::uint64_t ccl_off = ctx->ccl_addr - ctx->base;
  const std::uint64_t my_stage = ctx->ccl_addr + stage_off, next_stage = next.device_base_addr + ccl_off + stage_off;
  if (!comm->ring_primed) {  // the very first ring: my staging area is free
    remote_notify(s, comm, prev, notify_key(comm->id, kRingCredit, comm->rank));
    comm->ring_primed = true;
  }
  for (std::uint32_t k = 0; k < 2 * (S - 1); ++k) {
    const bool rs = k < S - 1;
    const std::uint32_t kk = rs ? k : k - (S - 1);
    const std::uint32_t send = rs ? (pos + S - kk) % S : (pos + 1 + S - kk) % S;
    const std::uint32_t recv = rs ? (pos + S - kk - 1) % S : (pos + S - kk) % S;
    notify_wait(s, notify_key(comm->id, kRingCredit, next.rank));
    put_notify(s, comm, next, next_stage, x + blk.off(send), blk.len(send), notify_key(comm->id, kRingData, comm->rank),
               ctx->ccl_rkey);
    notify_wait(s, notify_key(comm->id, kRingData, prev.rank));
    if (blk.len(recv)) {
      if (rs) reduce_copy(s, x + blk.off(recv), my_stage, blk.len(recv), dtype, op);
      else copy(s, x + blk.off(recv), my_stage, blk.len(recv));
    }
    remote_notify(s, comm, prev, notify_key(comm->id, kRingCredit, comm->rank));
  }
}

}  // namespace hcomm::detail
