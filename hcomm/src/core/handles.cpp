// Live-handle table and hcomm_finalize (docs/architecture.md#hcomm).
#include "core/handles.h"

#include <cstdlib>
#include <unordered_map>

#include "core/objects.h"

namespace hcomm::detail {
namespace {
std::unordered_map<const void*, int>& handles() {
  static std::unordered_map<const void*, int> h;
  return h;
}
}  // namespace

bool live(const void* h, int type) {
  if (!h) return false;
  auto it = handles().find(h);
  return it != handles().end() && it->second == type;
}
void track(const void* h, int type) { handles()[h] = type; }
void untrack(const void* h) { handles().erase(h); }
std::vector<const void*> live_handles(int type) {
  std::vector<const void*> out;
  for (const auto& [h, t] : handles())
    if (t == type) out.push_back(h);
  return out;
}

}  // namespace hcomm::detail

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_finalize(void) {
  // Dependency order; within a type the order does not matter (nothing observable is produced).
  for (int type : {kReq, kPool, kEvent, kComm, kStream, kCtx}) {
    for (const void* h : live_handles(type)) {
      switch (type) {
        case kReq: {
          auto* r = static_cast<hcomm_request_t>(const_cast<void*>(h));
          untrack(r);
          delete r;  // its event is a tracked handle of its own
          break;
        }
        case kPool: {
          auto* p = static_cast<hcomm_buffer_pool_t>(const_cast<void*>(h));
          for (void* a : p->addr) p->type == HCOMM_MEMORY_TYPE_DEVICE ? (void)hcomm_free(p->ctx, a) : std::free(a);
          untrack(p);
          delete p;
          break;
        }
        case kEvent: hcomm_destroy_event(static_cast<hcomm_event_t>(const_cast<void*>(h))); break;
        case kComm: hcomm_comm_destroy(static_cast<hcomm_comm_t>(const_cast<void*>(h))); break;
        case kStream: hcomm_destroy_stream(static_cast<hcomm_stream_t>(const_cast<void*>(h))); break;
        case kCtx: hcomm_destroy_context(static_cast<hcomm_context_t>(const_cast<void*>(h))); break;
      }
    }
  }
  return HCOMM_SUCCESS;
}
