// Server groups of a communicator (docs/architecture.md#hcomm): the ranks of my server (HCCL
// keeps them contiguous, found by descriptor) and, across servers, the rail of ranks with my
// local index. The mesh works inside the group, the ring along the rail.
#pragma once
#include <cstdint>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail {

struct ServerGroups {
  std::uint32_t first = 0;    ///< first rank of my server
  std::uint32_t size = 0;     ///< L: ranks per server
  std::uint32_t index = 0;    ///< l: my index inside my server
  std::uint32_t servers = 0;  ///< S: servers of the communicator
  std::vector<const RankDesc*> local;  ///< my server's ranks (route_server_peers fills it)
  std::vector<const RankDesc*> rail;   ///< the rank with index l on every server (ring_check fills it)
};

/// Find my server's ranks. HCOMM_E_NOT_FOUND for an unknown descriptor; HCOMM_E_NOT_SUPPORT
/// (logged) when servers do not hold equal numbers of ranks.
hcomm_result_t find_server_groups(hcomm_comm_t comm, ServerGroups* g);

}  // namespace hcomm::detail
