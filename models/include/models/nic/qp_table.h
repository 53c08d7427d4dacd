// One source NPU's QPs by (target NPU, stripe): an open-addressing hash table (linear probing,
// power-of-two capacity, at most 3/4 full). It replaced a sorted array, whose insertions in the
// order a pairwise all-to-all meets its peers (me+1, ..., n-1, then 0, ..., me-1) moved half the
// array each: O(peers^2) per source. bench_flow's BM_QpLookupPairwise, 8 stripes per peer, 16
// sources: 1023 peers (the two-level all-to-all at 1024 servers) 62 ms against 12 ms; 8191 peers
// (the flat pairwise) 3.9 s against 0.14 s. A table per source keeps a lookup in that source's own
// memory (one global table missed cache at scale). Lookups and insertions only: nothing iterates
// it, so its order cannot leak into results.
#pragma once
#include <cstdint>
#include <vector>

namespace models {

class QpTable {
 public:
  /// The value stored for (dst, index), or nullptr.
  std::uint32_t* find(std::uint32_t dst, std::uint32_t index) {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(dst, index);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.dst == kEmpty) return nullptr;
      if (s.dst == dst && s.index == index) return &s.value;
    }
  }
  const std::uint32_t* find(std::uint32_t dst, std::uint32_t index) const { return const_cast<QpTable*>(this)->find(dst, index); }
  /// Stores `value` for (dst, index), which must not be in the table.
  void insert(std::uint32_t dst, std::uint32_t index, std::uint32_t value) {
    if (4 * (n_ + 1) > 3 * slots_.size()) grow();
    std::size_t i = home(dst, index);
    while (slots_[i].dst != kEmpty) i = (i + 1) & mask();
    slots_[i] = Slot{dst, index, value};
    ++n_;
  }
  std::size_t size() const { return n_; }
  /// f(dst, index, value) for every entry, in slot order.
  template <class F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.dst != kEmpty) f(s.dst, s.index, s.value);
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;  // no NPU has this id
  struct Slot {
    std::uint32_t dst = kEmpty, index = 0, value = 0;
  };
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(std::uint32_t dst, std::uint32_t index) const {
    const std::uint64_t k = (static_cast<std::uint64_t>(dst) << 20) ^ index;
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ULL) >> 32) & mask();
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 8 : 2 * old.size(), Slot{});
    n_ = 0;
    for (const Slot& s : old)
      if (s.dst != kEmpty) insert(s.dst, s.index, s.value);
  }
  std::vector<Slot> slots_;
  std::size_t n_ = 0;
};

}  // namespace models
