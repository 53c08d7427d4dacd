// Hierarchical all-reduce (docs/architecture.md#hcomm, docs/algorithms/README.md): HCCL's "level0
// mesh, level1 <family>" for a communicator spanning several servers.
#pragma once
#include <cstdint>

#include "algo/coll_req.h"
#include "algo/family.h"
#include "algo/groups.h"

namespace hcomm::detail {

/// Needs g filled by route_server_peers (algo/mesh.h). The mesh reduce-scatter leaves each rank with its server's
/// reduction of slice l; `level1` all-reduces that slice among the ranks with index l on every
/// server (one NIC rail); the mesh all-gather finishes. With one rank per server it is `level1` alone.
hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, std::uint64_t in,
                                      std::uint64_t out, std::uint64_t count, int dtype, int op, hcomm_stream_t main);

/// The hierarchical all-gather, reduce-scatter, and broadcast or reduce (hier_rooted) with
/// `level1` along the rails and the mesh inside the server (docs/algorithms/README.md#compositions),
/// in chunks; g filled as for allreduce_hierarchical.
hcomm_result_t hier_allgather(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, const CollReq& r, std::uint64_t esz,
                              hcomm_stream_t main);
hcomm_result_t hier_reduce_scatter(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, const CollReq& r,
                                   std::uint64_t esz, hcomm_stream_t main);
hcomm_result_t hier_rooted(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, const CollReq& r, std::uint64_t esz,
                           hcomm_stream_t main);

}  // namespace hcomm::detail
