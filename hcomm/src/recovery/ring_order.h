// The op retry's ring order (docs/failover.md#op-retry-hcomm_op_retry1): the order of the comm
// ranks on the flat ring the re-execution runs on, chosen so that no ring edge needs a dead HCCS
// link and no RoCE edge needs a dead NIC. Pure function of its inputs (unit-tested against brute
// force in tests/hcomm/ring_order_test.cpp); no driver, no communicator.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hcomm::detail {

struct RingOrderIn {
  std::vector<std::uint32_t> server;                                 ///< per comm rank: its server
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_pairs;   ///< comm-rank pairs whose HCCS link is down (a < b)
  std::vector<bool> nic_dead;                                        ///< per comm rank: its NIC is down
};

/// Servers stay contiguous, in the order of their lowest comm rank. With two or more servers,
/// each server's ranks form a path over pairs that are not dead whose first and last ranks (the
/// RoCE edges to the previous and the next server) have live NICs; with one server, a cycle over
/// pairs that are not dead. Among the valid orders the lexicographically smallest per server (so
/// with no fault on a comm whose servers hold consecutive ranks: comm-rank order). Returns false
/// when none exists (`why` says for which server). A server of more than kMaxRingServerRanks
/// ranks is only tried in comm-rank order.
constexpr std::uint32_t kMaxRingServerRanks = 16;
bool ring_order(const RingOrderIn& in, std::vector<std::uint32_t>* order, std::string* why);

/// Whether `order` is a valid ring for `in` (the definition ring_order searches by).
bool ring_order_valid(const RingOrderIn& in, const std::vector<std::uint32_t>& order);

/// "0..2 4 3 5..7 | 8..15": the order, runs of three or more consecutive ranks as a..b, a bar
/// between servers.
std::string ring_order_text(const RingOrderIn& in, const std::vector<std::uint32_t>& order);

}  // namespace hcomm::detail
