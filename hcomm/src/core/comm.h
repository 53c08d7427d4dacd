// Communicators (docs/architecture.md#hcomm): rank, size, resolved configuration, the streams the
// library owns, and descriptors/links of the peers actually used.
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail {
/// The descriptor of `rank` (asked from the driver once, then cached); null when unknown.
const RankDesc* peer_desc(hcomm_comm_t comm, std::uint32_t rank);
}  // namespace hcomm::detail
