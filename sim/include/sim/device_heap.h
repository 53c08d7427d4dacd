// Device memory allocator of one simulated NPU (docs/architecture.md#sim): first fit over a free
// list in 512-byte granules, freed blocks coalesced. Plain C++; the driver keeps one per device.
#pragma once
#include <cstdint>
#include <map>

namespace sim {

class DeviceHeap {
 public:
  enum class Status { Ok, NoMemory, Invalid };
  explicit DeviceHeap(std::uint64_t capacity = 0) : capacity_(capacity) {}
  std::uint64_t capacity() const { return capacity_; }
  /// A block of at least `bytes` (> 0); its offset from the device's base in `*offset`.
  Status alloc(std::uint64_t bytes, std::uint64_t* offset);
  /// Frees the block starting at `offset`; Invalid if no block starts there.
  Status free(std::uint64_t offset);

 private:
  std::uint64_t capacity_ = 0, top_ = 0;
  std::map<std::uint64_t, std::uint64_t> used_;  // offset -> bytes
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> bytes
};

}  // namespace sim
