// Hierarchical all-reduce (docs/architecture.md#hcomm, docs/algorithms/README.md): HCCL's "level0
// mesh, level1 <family>" for a communicator spanning several servers.
#pragma once
#include <cstdint>

#include "algo/family.h"
#include "algo/groups.h"

namespace hcomm::detail {

/// Needs g filled by route_server_peers (algo/mesh.h). The mesh reduce-scatter leaves each rank with its server's
/// reduction of slice l; `level1` all-reduces that slice among the ranks with index l on every
/// server (one NIC rail); the mesh all-gather finishes. With one rank per server it is `level1` alone.
hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, std::uint64_t in,
                                      std::uint64_t out, std::uint64_t count, int dtype, int op, hcomm_stream_t main);

}  // namespace hcomm::detail
