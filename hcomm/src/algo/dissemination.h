// Dissemination barrier (docs/architecture.md#hcomm): ceil(log2 n) rounds of notifies.
#pragma once
#include "hcomm/hcomm.h"

namespace hcomm::detail {
/// Submit the rounds on `s`. HCOMM_E_NOT_FOUND when a peer's descriptor is unknown.
hcomm_result_t barrier_dissemination(hcomm_comm_t comm, hcomm_stream_t s);
}  // namespace hcomm::detail
