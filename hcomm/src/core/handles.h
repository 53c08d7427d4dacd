// Live-handle table (docs/architecture.md#hcomm): every API call rejects a destroyed or foreign
// handle with HCOMM_E_UNAVAIL instead of crashing. Process-wide by design (handles are
// addresses); holds no per-rank state.
#pragma once
#include <vector>

namespace hcomm::detail {

enum HandleType { kCtx = 1, kStream, kEvent, kComm, kReq, kPool };

bool live(const void* handle, int type);
void track(const void* handle, int type);
void untrack(const void* handle);
/// The live handles of one type (for hcomm_finalize).
std::vector<const void*> live_handles(int type);

}  // namespace hcomm::detail
