// Dissemination barrier (docs/architecture.md#hcomm).
#include "algo/dissemination.h"

#include <vector>

#include "core/comm.h"
#include "route/route.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

hcomm_result_t barrier_dissemination(hcomm_comm_t comm, hcomm_stream_t s) {
  const std::uint32_t n = comm->nranks, r = comm->rank;
  {  // every round's peer routed together: one probe call for the new ones (route/route.h)
    std::vector<std::uint32_t> peers;
    for (std::uint32_t d = 1; d < n; d <<= 1) peers.push_back((r + d) % n);
    route::prepare_control(comm, peers);
  }
  // Round k: tell rank r + 2^k, wait for rank r - 2^k. Counting notifies make repeated barriers safe.
  for (std::uint32_t k = 0, d = 1; d < n; ++k, d <<= 1) {
    const RankDesc* to = peer_desc(comm, (r + d) % n);
    if (!to) return HCOMM_E_NOT_FOUND;
    remote_notify(s, comm, *to, notify_key(comm->id, kBarrier, r, k));
    notify_wait(s, notify_key(comm->id, kBarrier, (r + n - d) % n, k));
  }
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
