// Library log lines (docs/architecture.md#hcomm): printf-style, filtered by HCOMM_DEBUG, handed to
// the driver (which traces them).
#pragma once
#include "hcomm/hcomm.h"

namespace hcomm::detail {
/// level: 0 error, 1 warning, 2 info, 3 debug. Errors are always emitted.
void logf(hcomm_context_t ctx, int level, const char* fmt, ...);
}  // namespace hcomm::detail
