// Hierarchical all-reduce (docs/architecture.md#hcomm, docs/algorithms.md): HCCL's "level0 mesh,
// level1 ring" for a communicator spanning several servers. Composes algo/mesh and algo/ring.
#pragma once
#include <cstdint>

#include "algo/groups.h"

namespace hcomm::detail {

/// Needs g filled by mesh_check and ring_check. With one rank per server it is a plain ring.
hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                                      std::uint64_t count, int dtype, int op, hcomm_stream_t main);

}  // namespace hcomm::detail
