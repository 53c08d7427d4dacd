// What the collective entries share (docs/architecture.md#hcomm): the one-rank case and the
// one-server mesh set-up.
#pragma once
#include <cstdint>

#include "algo/groups.h"
#include "core/objects.h"
#include "core/profile.h"

namespace hcomm::detail {

/// One rank: the operation is a local copy of `bytes` (none in place), between its markers.
void run_local_copy(hcomm_comm_t comm, const OpInfo& info, std::uint64_t in, std::uint64_t out, std::uint64_t bytes,
                    hcomm_stream_t main);

/// The server groups of a communicator the mesh can serve alone (one server): HCOMM_E_NOT_SUPPORT,
/// logged with `what`, across servers; the mesh's checks and helper streams otherwise.
hcomm_result_t one_server_mesh(hcomm_comm_t comm, const char* what, ServerGroups* g);

}  // namespace hcomm::detail
