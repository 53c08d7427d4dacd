// Streams and events (docs/architecture.md#hcomm).
#pragma once
#include <cstdint>

#include "hcomm/hcomm.h"

namespace hcomm::detail {
hcomm_result_t make_stream(hcomm_context_t ctx, hcomm_stream_t* out);
/// A fresh event id of the context's device (the events' numbering is core's).
std::uint64_t new_event_id(hcomm_context_t ctx);
/// Synchronize a stream with a timeout (ms): HCOMM_E_TIMEOUT or HCOMM_E_RUNTIME (logged) on failure.
hcomm_result_t sync_timeout(hcomm_stream_t s, std::uint64_t timeout_ms);
}  // namespace hcomm::detail
