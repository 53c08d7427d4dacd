#include "sim/device_heap.h"

#include <iterator>

namespace sim {

DeviceHeap::Status DeviceHeap::alloc(std::uint64_t bytes, std::uint64_t* offset) {
  const std::uint64_t need = (bytes + 511) & ~511ULL;
  if (need < bytes) return Status::NoMemory;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    std::uint64_t off = it->first, left = it->second - need;
    free_.erase(it);
    if (left) free_[off + need] = left;
    used_[off] = need;
    *offset = off;
    return Status::Ok;
  }
  if (need > capacity_ - top_) return Status::NoMemory;
  std::uint64_t off = top_;
  top_ += need;
  used_[off] = need;
  *offset = off;
  return Status::Ok;
}

DeviceHeap::Status DeviceHeap::free(std::uint64_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) return Status::Invalid;
  std::uint64_t off = it->first, len = it->second;
  used_.erase(it);
  // Coalesce with neighbours.
  auto nx = free_.lower_bound(off);
  if (nx != free_.end() && off + len == nx->first) { len += nx->second; nx = free_.erase(nx); }
  if (nx != free_.begin()) {
    auto pv = std::prev(nx);
    if (pv->first + pv->second == off) { off = pv->first; len += pv->second; free_.erase(pv); }
  }
  if (off + len == top_) top_ = off;
  else free_[off] = len;
  return Status::Ok;
}

}  // namespace sim
