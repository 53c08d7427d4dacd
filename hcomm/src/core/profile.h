// Operation brackets (docs/architecture.md#hcomm): every API operation is announced to the driver
// (as the real library feeds msprof) and bracketed by begin/end Marker tasks on its stream.
#pragma once
#include <cstdint>

#include "hcomm/driver.h"
#include "hcomm/hcomm.h"

namespace hcomm::detail {
/// Announce an operation and submit its begin marker; returns the begin key for op_end.
std::uint64_t op_begin(hcomm_stream_t s, const OpInfo& info);
/// Submit the end marker of the operation begun with `begin_key`.
void op_end(hcomm_stream_t s, std::uint64_t begin_key);
}  // namespace hcomm::detail
