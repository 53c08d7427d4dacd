// Requests of non-blocking operations (docs/architecture.md#hcomm): an event recorded on the
// operation's stream after its tasks.
#pragma once
#include <cstdint>

#include "hcomm/hcomm.h"

namespace hcomm::detail {
hcomm_result_t make_request(hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req, std::int64_t peer = -1,
                            std::uint32_t tag = 0, std::uint64_t bytes = 0, bool is_send = false);
}  // namespace hcomm::detail
