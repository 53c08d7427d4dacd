// The RoCE v2 packet (a unit: one MTU packet, or in the chunk tier a train of them) as the NIC's
// RC transport (models/nic/rc_transport.h) builds it and the switches (models/net/switch.h)
// forward it. Shared by both rooms, owned by neither: the wire between them.
#pragma once
#include <cstdint>

#include "models/time.h"

namespace models {

enum PktKind : std::uint8_t { kData, kAck, kNak, kCnp, kPause, kResume };

constexpr std::uint32_t kNoPkt = ~0u;  ///< "no packet slot"

struct Pkt {
  PktKind kind = kData;
  bool ecn = false, last = false;
  std::uint32_t qp = 0, src = 0, dst = 0, in_port = 0;
  std::uint32_t npk = 1;            // MTU packets this unit stands for (1 in the packet tier)
  std::uint32_t marks = 0;          // chunk tier: how many of them carry ECN marks
  std::uint32_t next = 0;           // the next packet slot in its port's queue (kNoPkt: last)
  Tick tail_at = 0;                 // when its last byte reaches the node it is travelling to
  double rate = 0;                  // chunk tier: the sender's paced rate (bytes/s) when it left
  Tick sent_at = 0;                 // chunk tier: when its sender sent it (data)
  std::uint64_t psn = 0, bytes = 0, payload = 0, msg_tag = 0, msg_off = 0;
  std::uint64_t hash = 0;           // its QP's ECMP flow key (the header fields switches hash), carried
                                    // so a switch forwards without reading the QP
};

}  // namespace models
