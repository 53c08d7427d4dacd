// A flat family's schedule over all ranks of a communicator, in chunks of the collective buffer
// (docs/algorithms/README.md#chunking): the vector operations chunk the vector, the block
// operations each block, the all-to-all runs once.
#pragma once
#include <cstdint>
#include <vector>

#include "algo/coll_req.h"
#include "algo/family.h"

namespace hcomm::detail {

/// Run `r` with family `f` over all ranks; `local` is the ranks per server the pipeline's schedule
/// needs (1 otherwise). With `order` (op retry's ring, recovery/ring_order.h) member m is comm
/// rank order[m] (ignored for all-to-all or when it does not cover the communicator).
hcomm_result_t run_flat(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r, const Family& f, std::uint64_t esz,
                        std::uint32_t local, const std::vector<std::uint32_t>* order = nullptr);

}  // namespace hcomm::detail
