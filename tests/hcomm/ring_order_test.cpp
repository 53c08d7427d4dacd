// The op retry's ring-order search (hcomm/src/recovery/ring_order.h) against brute force: on small
// random communicators (1..3 servers, 1..8 ranks in all, servers contiguous or interleaved in
// comm-rank order) with random dead HCCS pairs and dead NICs, ring_order finds a ring exactly when
// some permutation of the ranks is a valid ring, and then the lexicographically smallest one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "recovery/ring_order.h"

using namespace hcomm::detail;

namespace {

// The smallest valid permutation by enumeration (std::next_permutation visits them in
// lexicographic order), or empty.
std::vector<std::uint32_t> brute(const RingOrderIn& in) {
  std::vector<std::uint32_t> p(in.server.size());
  for (std::uint32_t i = 0; i < p.size(); ++i) p[i] = i;
  do {
    if (ring_order_valid(in, p)) return p;
  } while (std::next_permutation(p.begin(), p.end()));
  return {};
}

std::string show(const std::vector<std::uint32_t>& v) {
  std::string s;
  for (auto x : v) s += std::to_string(x) + " ";
  return s;
}

}  // namespace

TEST(RingOrder, MatchesBruteForce) {
  std::mt19937 rng(12345);
  int found = 0, none = 0;
  for (int it = 0; it < 3000; ++it) {
    const std::uint32_t n = 1 + rng() % 8, servers = 1 + rng() % std::min<std::uint32_t>(3, n);
    RingOrderIn in;
    in.server.resize(n);
    const bool interleaved = rng() % 4 == 0;
    for (std::uint32_t r = 0; r < n; ++r) in.server[r] = interleaved ? r % servers : r * servers / n;
    const double p_dead = (rng() % 5) / 10.0, p_nic = (rng() % 4) / 10.0;
    std::uniform_real_distribution<double> u(0, 1);
    for (std::uint32_t a = 0; a < n; ++a)
      for (std::uint32_t b = a + 1; b < n; ++b)
        if (in.server[a] == in.server[b] && u(rng) < p_dead) in.dead_pairs.emplace_back(a, b);
    in.nic_dead.resize(n);
    for (std::uint32_t r = 0; r < n; ++r) in.nic_dead[r] = u(rng) < p_nic;
    std::vector<std::uint32_t> got;
    std::string why;
    const bool ok = ring_order(in, &got, &why);
    const std::vector<std::uint32_t> want = brute(in);
    std::string ctx = "n=" + std::to_string(n) + " servers=" + std::to_string(servers) + " dead:";
    for (auto [a, b] : in.dead_pairs) ctx += " " + std::to_string(a) + "-" + std::to_string(b);
    ctx += " nic:";
    for (std::uint32_t r = 0; r < n; ++r) if (in.nic_dead[r]) ctx += " " + std::to_string(r);
    ASSERT_EQ(ok, !want.empty()) << ctx << " brute " << show(want) << " why " << why;
    if (!ok) {
      EXPECT_FALSE(why.empty()) << ctx;
      ++none;
      continue;
    }
    ++found;
    EXPECT_TRUE(ring_order_valid(in, got)) << ctx << " got " << show(got);
    EXPECT_EQ(got, want) << ctx;
  }
  // Both outcomes are exercised.
  EXPECT_GT(found, 300);
  EXPECT_GT(none, 300);
}

// The cases of the scenarios (docs/failover.md): 2 servers of 8.
TEST(RingOrder, ScenarioCases) {
  RingOrderIn in;
  for (std::uint32_t r = 0; r < 16; ++r) in.server.push_back(r / 8);
  in.nic_dead.assign(16, false);
  std::vector<std::uint32_t> got;
  std::string why;
  ASSERT_TRUE(ring_order(in, &got, &why));  // no fault: comm-rank order
  for (std::uint32_t r = 0; r < 16; ++r) EXPECT_EQ(got[r], r);
  EXPECT_EQ(ring_order_text(in, got), "0..7 | 8..15");
  in.nic_dead[7] = true;  // the old ring's RoCE edge 7-8: 7 moves inside its server
  ASSERT_TRUE(ring_order(in, &got, &why));
  EXPECT_EQ(ring_order_text(in, got), "0..5 7 6 | 8..15");
  in.nic_dead[7] = false;
  in.dead_pairs = {{2, 3}};  // HCCS 2-3 between comm-rank neighbours
  ASSERT_TRUE(ring_order(in, &got, &why));
  EXPECT_EQ(ring_order_text(in, got), "0..2 4 3 5..7 | 8..15");
  in.nic_dead[3] = in.nic_dead[12] = true;  // and NICs at both servers' middles: no edge moves
  ASSERT_TRUE(ring_order(in, &got, &why));
  EXPECT_EQ(ring_order_text(in, got), "0..2 4 3 5..7 | 8..15");
  // Every NIC of server 1 but one: a path needs two ends with live NICs.
  in.dead_pairs.clear();
  for (std::uint32_t r = 8; r < 16; ++r) in.nic_dead[r] = r != 9;
  EXPECT_FALSE(ring_order(in, &got, &why));
  EXPECT_NE(why.find("8 9 10 11 12 13 14 15"), std::string::npos) << why;
  // One server: a cycle; rank 0 cut off from all but rank 1 has none.
  RingOrderIn one;
  one.server.assign(8, 0);
  for (std::uint32_t r = 2; r < 8; ++r) one.dead_pairs.emplace_back(0, r);
  EXPECT_FALSE(ring_order(one, &got, &why));
  one.dead_pairs.pop_back();  // 0-7 live again: 0 1 ... 7 closes the cycle
  ASSERT_TRUE(ring_order(one, &got, &why));
  EXPECT_EQ(ring_order_text(one, got), "0..7");
}
