// A communicator's members as the workload tracks them (run/workload.cpp, run/checks.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace sim {

/// A communicator's ranks in its rank order, as original rank numbers: all ranks until a shrink
/// (kept implicit: no list of N entries per rank), then the survivors.
struct Members {
  std::uint32_t all = 0;
  /// null: 0 .. all - 1; else the survivors, one list shared by every rank that shrank alike.
  std::shared_ptr<const std::vector<std::uint32_t>> list;
  std::uint32_t size() const { return list ? static_cast<std::uint32_t>(list->size()) : all; }
  std::uint32_t operator[](std::uint32_t j) const { return list ? (*list)[j] : j; }
  /// The index of original rank r, size() when it is not a member.
  std::uint32_t index_of(std::uint32_t r) const {
    if (!list) return r < all ? r : all;
    auto it = std::lower_bound(list->begin(), list->end(), r);  // survivors keep their order: sorted
    return it != list->end() && *it == r ? static_cast<std::uint32_t>(it - list->begin()) : size();
  }
};
}  // namespace sim
