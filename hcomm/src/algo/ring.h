// Ring all-reduce (docs/architecture.md#hcomm, docs/algorithms.md):
// S members, member i sends to i+1; 2(S-1) steps (S-1 reduce-scatter, S-1 all-gather).
#pragma once
#include <cstdint>
#include <vector>

#include "algo/groups.h"

namespace hcomm::detail {

/// Fill g->rail (the rank with my local index on every server) and check that each server holds
/// its ranks contiguously; HCOMM_E_NOT_SUPPORT (logged) otherwise.
hcomm_result_t ring_check(hcomm_comm_t comm, ServerGroups* g);

/// Ring all-reduce of `bytes` at CCL address `x` (same offset on every ring member) among `ring`,
/// where I am member `pos`. Blocks are staged at `stage_off` from the start of the next member's
/// CCL (the collective buffer's second half).
void ring_allreduce(hcomm_comm_t comm, hcomm_stream_t s, const std::vector<const RankDesc*>& ring, std::uint32_t pos,
                    std::uint64_t x, std::uint64_t bytes, std::uint64_t esz, int dtype, int op, std::uint64_t stage_off);

}  // namespace hcomm::detail
