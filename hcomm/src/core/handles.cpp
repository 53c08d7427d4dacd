// Live-handle table and hcomm_finalize (docs/architecture.md#hcomm).
#include "core/handles.h"

#include <cstdlib>
#include <cstdint>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail {
namespace {
// An open-addressing table (linear probing, backward-shift deletion): a lookup is one or two
// cache lines where a node-based map took three misses. At 8192 ranks it holds ~10^5 handles
// and every API call looks one up.
class HandleTable {
 public:
  int find(const void* h) const {
    if (slots_.empty()) return 0;
    for (std::size_t i = home(h);; i = (i + 1) & mask_) {
      if (slots_[i].h == h) return slots_[i].type;
      if (!slots_[i].h) return 0;
    }
  }
  void put(const void* h, int type) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow();
    std::size_t i = home(h);
    while (slots_[i].h && slots_[i].h != h) i = (i + 1) & mask_;
    if (!slots_[i].h) ++used_;
    slots_[i] = Slot{h, type};
  }
  void erase(const void* h) {
    if (slots_.empty()) return;
    std::size_t i = home(h);
    while (slots_[i].h != h) {
      if (!slots_[i].h) return;
      i = (i + 1) & mask_;
    }
    --used_;
    // Shift later members of the probe run back so that no lookup stops at the hole too early.
    for (std::size_t j = (i + 1) & mask_; slots_[j].h; j = (j + 1) & mask_) {
      const std::size_t k = home(slots_[j].h);
      const bool movable = i <= j ? (k <= i || k > j) : (k <= i && k > j);
      if (movable) { slots_[i] = slots_[j]; i = j; }
    }
    slots_[i] = Slot{};
  }
  template <class F> void each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.h) f(s.h, s.type);
  }

 private:
  struct Slot { const void* h = nullptr; int type = 0; };
  std::size_t home(const void* h) const {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(h) * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const std::size_t n = old.empty() ? 64 : old.size() * 2;
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64;
    for (std::size_t b = n; b > 1; b >>= 1) --shift_;
    used_ = 0;
    for (const Slot& s : old)
      if (s.h) put(s.h, s.type);
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0, used_ = 0;
  unsigned shift_ = 64;
};
HandleTable& handles() {
  static HandleTable h;
  return h;
}
}  // namespace

bool live(const void* h, int type) { return h && handles().find(h) == type; }
void track(const void* h, int type) { handles().put(h, type); }
void untrack(const void* h) { handles().erase(h); }
std::vector<const void*> live_handles(int type) {
  std::vector<const void*> out;
  handles().each([&](const void* h, int t) {
    if (t == type) out.push_back(h);
  });
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
