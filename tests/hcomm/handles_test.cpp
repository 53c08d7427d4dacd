// The live-handle table (hcomm/src/core/handles.cpp) against std::unordered_map: random inserts,
// re-inserts with another type and erases, with addresses spaced and clustered like heap blocks
// so that probe runs collide, wrap around the table's end and get erased from the middle.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "core/handles.h"

namespace {
using hcomm::detail::live;
using hcomm::detail::live_handles;
using hcomm::detail::track;
using hcomm::detail::untrack;

constexpr int kTypes[] = {hcomm::detail::kCtx, hcomm::detail::kStream, hcomm::detail::kComm};

TEST(Handles, TableMatchesAReferenceMap) {
  std::mt19937_64 rng(7);
  std::unordered_map<std::uintptr_t, int> ref;
  std::vector<std::uintptr_t> pool;
  for (std::uintptr_t i = 1; i <= 30000; ++i) pool.push_back(0x10000 + i * 16 * (1 + i % 3));  // heap-like spacing
  for (int round = 0; round < 200000; ++round) {
    const std::uintptr_t a = pool[rng() % pool.size()];
    const void* h = reinterpret_cast<const void*>(a);
    const int t = kTypes[rng() % 3];
    switch (rng() % 3) {
      case 0: case 1: track(h, t); ref[a] = t; break;
      default: untrack(h); ref.erase(a); break;
    }
    if (round % 1000 == 0) {
      for (std::uintptr_t p : pool) {
        const auto it = ref.find(p);
        for (int ty : kTypes)
          ASSERT_EQ(live(reinterpret_cast<const void*>(p), ty), it != ref.end() && it->second == ty) << "round " << round;
      }
    }
  }
  std::size_t n = 0;
  for (int ty : kTypes) n += live_handles(ty).size();
  EXPECT_EQ(n, ref.size());
  for (const auto& [a, t] : ref) untrack(reinterpret_cast<const void*>(a));
  for (int ty : kTypes) EXPECT_TRUE(live_handles(ty).empty());
  EXPECT_FALSE(live(nullptr, hcomm::detail::kCtx));
}
}  // namespace
