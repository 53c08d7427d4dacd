// Mesh all-reduce (docs/architecture.md#hcomm, docs/algorithms.md): HCCL's
// intra-server algorithm on 910B — reduce-scatter then all-gather over the full HCCS mesh, every
// peer link busy at once, one slave stream per peer.
#pragma once
#include <cstdint>
#include <functional>

#include "algo/groups.h"

namespace hcomm::detail {

/// Fill g->local and check that every local peer is reached by SDMA (HCCS or PCIe peer-to-peer);
/// HCOMM_E_NOT_SUPPORT (logged) otherwise.
hcomm_result_t mesh_check(hcomm_comm_t comm, ServerGroups* g);

/// Runs between the two halves of a chunk on the main stream, with CCL[slice l] (address, bytes)
/// holding the server's reduction of my slice; it must leave the final result there.
using MeshMiddle = std::function<void(std::uint64_t slice_addr, std::uint64_t slice_bytes)>;

/// The mesh reduce-scatter and all-gather over `count` elements, in chunks of `area` bytes of the
/// collective buffer, with `middle` (if any) between the halves of every chunk. Creates the slave
/// streams on first use (HCOMM_E_DRV when that fails).
hcomm_result_t mesh_chunks(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                           int dtype, int op, hcomm_stream_t main, std::uint64_t area, const MeshMiddle& middle);

/// The mesh all-reduce inside one server (chunks of the whole collective buffer).
hcomm_result_t allreduce_mesh(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                              std::uint64_t count, int dtype, int op, hcomm_stream_t main);

}  // namespace hcomm::detail
