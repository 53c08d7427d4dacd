// The failover protocol's messages on the host control channel (recovery/failover_msg.cpp,
// docs/failover.md): the wire format and one communicator's send and receive.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail::failover {

enum Kind : std::uint8_t { kAbort = 1, kReady = 2, kReset = 3, kReady2 = 4, kGo = 5, kShrink = 6, kShrinkGo = 7, kRestore = 8, kRestoreGo = 9 };
constexpr std::uint32_t kMagic = 0x48464f31;  // "HFO1"
constexpr std::uint8_t kHasValue = 0x80;       // flag bit: a 64-bit value follows the flag

struct Msg {
  std::uint8_t kind = 0;
  std::uint32_t comm = 0, origin = 0;  // comm id, sender's comm rank
  std::int32_t code = 0;
  std::uint64_t seq = 0;               // operation (abort) / agreement round (others)
  std::uint8_t flag = 0;               // abort: retry requested; READY: can re-execute; GO: go
  std::uint64_t value = 0;             // READY: elements (per block) delivered here; GO: resume from (sent when nonzero)
  std::vector<std::uint32_t> list;     // dead pairs (a, b flattened) / GO: lost ranks then pairs (count first)
  std::string text;
};

CtrlMsg encode(const Msg& m);
/// False for a message that is not one of ours (magic, length).
bool decode(const CtrlMsg& c, Msg* m);
/// This rank's world rank.
std::uint32_t me_global(hcomm_comm_t c);
/// To comm rank `to` of `c`.
bool send_ctrl(hcomm_comm_t c, std::uint32_t to, const Msg& m);
/// The next agreement message of round `round` on this communicator from comm rank `from`
/// (older rounds' late messages are skipped); past the deadline still takes one already arrived.
bool recv_ctrl(hcomm_comm_t c, std::uint32_t from, std::uint64_t round, std::uint64_t deadline_ns, Msg* m);

}  // namespace hcomm::detail::failover
