// The questions every shape asks of a collective request (algo/coll_req.h).
#include "algo/coll_req.h"

#include "core/log.h"
#include "transport/tasks.h"

namespace hcomm::detail {

void copy_if(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes) {
  if (bytes && dst != src) copy(s, dst, src, bytes);
}

hcomm_result_t too_small(hcomm_comm_t comm, const CollReq& r, std::uint32_t n) {
  logf(comm->ctx, 0, "Rank%u %s: the collective buffer (%llu B) cannot hold one element per rank (%u ranks)", comm->rank,
       r.kind, static_cast<unsigned long long>(comm->ctx->ccl_bytes), n);
  return HCOMM_E_NOT_SUPPORT;
}

}  // namespace hcomm::detail
