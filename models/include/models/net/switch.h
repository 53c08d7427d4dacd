// Nodes of the Ethernet network (docs/models/ethernet-switch.md): hosts (a NIC's one port) and
// switches (ports with output queues on a shared buffer), and the packets (units) they carry.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

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
  std::uint64_t psn = 0, bytes = 0, payload = 0, msg_tag = 0, msg_off = 0;
  std::uint64_t hash = 0;           // its QP's ECMP flow key (the header fields switches hash), carried
                                    // so a switch forwards without reading the QP
};

struct NetPortStats {
  std::uint64_t tx_bytes = 0, tx_packets = 0, drops = 0, ecn_marked = 0, pause_sent = 0, pause_rcv = 0;
  std::uint64_t fcs_errors = 0;  ///< received packets that failed the FCS check (packet_corruption), counted in drops too
  std::uint64_t pfcwd_storms = 0;  ///< times the PFC watchdog found this (switch egress) port in a pause storm
  std::uint64_t pfcwd_drops = 0;   ///< packets the watchdog's drop action discarded here (counted in drops too)
  std::uint64_t max_queue_bytes = 0;
  std::uint64_t max_in_bytes = 0;  ///< switch ports: peak PFC ingress occupancy (bytes buffered that arrived here)
  Tick paused_ps = 0;
  Tick busy_ps = 0;  ///< time spent transmitting (bytes at the line rate)
  /// Flow tier: time this switch egress port was a saturated bottleneck shared by flows from two
  /// or more of the switch's ingress ports (fan-in: where the packet and chunk tiers queue, mark
  /// and pause, and this tier's ideal congestion control is optimistic).
  Tick fanin_ps = 0;
};

// Field order: what every packet reads (cabling, state, the egress queue, its byte counts) first,
// in one cache line; the counters next; fault and chunk-tier state last.
struct NetPort {
  std::uint32_t peer = 0, peer_port = 0;
  std::uint64_t Bps = 0;
  Tick latency = 0;
  Tick peer_latency = 0;     ///< that switch's forwarding latency (0 for a host)
  // The egress queue: packet slots linked through Pkt::next (an intrusive FIFO: a port costs no
  // allocation, and the head is read with the packet it names, one cache miss instead of two).
  std::uint32_t qhead = kNoPkt, qtail = kNoPkt;
  std::uint64_t qbytes = 0;
  // PFC ingress accounting (switch ports): bytes buffered that arrived on this port.
  std::uint64_t in_bytes = 0;
  bool cabled = false, up = true, busy = false, paused = false;
  bool peer_switch = false;  ///< the node at the other end is a switch (copied at connect: read per packet)
  bool upstream_paused = false;
  // PFC watchdog (switch egress ports, switch_mmu.cpp): in the storm state pauses are ignored
  // (`paused` stays false) and, with action drop, `wd_drop` drops every packet for the port.
  bool wd_storm = false, wd_drop = false;
  bool wd_held = false;  ///< storm state: the peer still asserts its pause
  // A switch port that started its last unit with nothing queued behind it schedules no
  // transmit-done event: it is busy until this time, and a unit enqueued before then schedules
  // the event (switch_forwarding.cpp, try_tx).
  Tick busy_until = 0;
  double corrupt_rate = 0;  ///< probability a data packet sent on this cable arrives corrupted (fault injection)
  NetPortStats st;
  Tick paused_since = 0;
  Tick fanin_since = kTickMax;  ///< flow tier: a fan-in bottleneck since then (kTickMax: not one)
  Tick wd_since = ~0ULL;  ///< paused with packets queued since (~0: not both); the watchdog's detection runs from here
  Tick wd_last_pause = 0; ///< storm state: when a pause was last asserted (a frame, or the end of a held pause)
  Tick storm_until = 0;   ///< hosts (pfc_storm fault): the NIC sends pause frames until then
  // Chunk tier, ECN: the queue a packet-tier port would hold. Units reach it as fluid at their
  // senders' paced rates (ending at the Tick), and it drains at the line rate.
  double vq = 0;
  Tick vq_t = 0;
  std::vector<std::pair<Tick, double>> vin;
};

// Field order: what forwarding reads (the ports, the MMU's state) first; the name last.
struct NetNode {
  std::vector<NetPort> ports;
  bool is_switch = false;
  Tick latency = 0;
  std::uint64_t buffer = 0, used = 0;   // switch MMU: shared buffer and its occupancy
  std::uint64_t xoff = 0, xon = 0;  // switch MMU: PFC thresholds per ingress port
  std::vector<std::uint32_t> qps;   // hosts: QPs sending from here, for egress arbitration
  std::uint32_t rr = 0;             // round-robin pointer over qps
  std::vector<std::uint64_t> qp_active;  // hosts: bit i set when qps[i] may have packets to send
  std::string name;
};

}  // namespace models
