// Server groups (docs/architecture.md#hcomm).
#include "algo/groups.h"

#include "core/comm.h"
#include "core/log.h"

namespace hcomm::detail {

hcomm_result_t find_server_groups(hcomm_comm_t comm, ServerGroups* g) {
  const std::uint32_t p = comm->nranks, r = comm->rank;
  if (!comm->members.empty()) {
    // A sub-communicator: its shape was found once, at creation, from every member's server
    // (coll/split.cpp): equal servers whose members are contiguous in comm rank order, or none.
    const std::uint32_t L = comm->server_size;
    if (L == 0) {
      logf(comm->ctx, 2, "Rank%u sub-communicator of %u ranks: servers unequal or not contiguous in rank order: flat algorithms only",
           r, p);
      return HCOMM_E_NOT_SUPPORT;
    }
    g->first = r / L * L;
    g->size = L;
    g->index = r % L;
    g->servers = p / L;
    return HCOMM_SUCCESS;
  }
  const RankDesc* me = peer_desc(comm, r);
  if (!me) return HCOMM_E_NOT_FOUND;
  std::uint32_t first = r, last = r;
  while (first > 0) { const RankDesc* d = peer_desc(comm, first - 1); if (!d) return HCOMM_E_NOT_FOUND; if (d->server != me->server) break; --first; }
  while (last + 1 < p) { const RankDesc* d = peer_desc(comm, last + 1); if (!d) return HCOMM_E_NOT_FOUND; if (d->server != me->server) break; ++last; }
  const std::uint32_t L = last - first + 1;
  if (p % L != 0) {
    logf(comm->ctx, 2, "Rank%u servers hold unequal numbers of ranks (%u here, %u in all): flat algorithms only", r, L, p);
    return HCOMM_E_NOT_SUPPORT;
  }
  g->first = first;
  g->size = L;
  g->index = r - first;
  g->servers = p / L;
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
