// Notify keys (docs/architecture.md#hcomm, docs/algorithms/README.md): a key encodes (communicator,
// purpose, peer rank, sub-index), so no O(N^2) tables of notify registers exist.
#pragma once
#include <cstdint>

namespace hcomm::detail {

enum Purpose : std::uint64_t {
  kArReady = 1, kArDone, kArReduced, kArPulled, kFork, kJoin, kP2pReady, kP2pData, kRingData, kRingCredit, kBarrier, kP2pLast,
  kScheduleData, kScheduleCredit, kScheduleFork, kScheduleJoin,
  kRelayGo, kRelayBack, kRelayReady, kRelayCredit,  // transport/relay.cpp (comm field 0, peer field: the origin device)
  kP2pDone
};
/// Notify key: communicator, purpose, peer rank and a sub-index (tag or slave index).
inline std::uint64_t notify_key(std::uint32_t comm, Purpose p, std::uint32_t peer, std::uint32_t sub = 0) {
  return (static_cast<std::uint64_t>(comm & 0xff) << 56) | (static_cast<std::uint64_t>(p) << 50) |
         (static_cast<std::uint64_t>(peer & 0xffffff) << 26) | (sub & 0x3ffffff);
}

/// Key of a message's last DATA notify: it also encodes the message size, so that a receiver
/// expecting another size never matches it (it times out instead of taking wrong bytes).
inline std::uint64_t last_key(std::uint32_t comm, std::uint32_t src, std::uint32_t tag, std::uint64_t bytes) {
  std::uint64_t h = bytes * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 29;
  return notify_key(comm, kP2pLast, src, static_cast<std::uint32_t>((tag ^ h) & 0x3ffffff));
}

}  // namespace hcomm::detail
