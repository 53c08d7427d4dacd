// Contexts (core/context.cpp, docs/architecture.md#hcomm).
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail {
/// hcomm_create_context's work (its entry point is init/init.cpp, which passes recovery/'s
/// hooks): open the device, read the context environment, allocate and register the symmetric
/// buffers. `recovery` is what the rooms below the recovery call it through (core/recovery.h).
hcomm_result_t make_context(std::uint32_t device_id, const Recovery* recovery, hcomm_context_t* out);
}  // namespace hcomm::detail
