// Nodes of the Ethernet network (docs/models/ethernet-switch.md): hosts (a NIC's one port) and
// switches (ports with output queues on a shared buffer). The packets they carry: models/packet.h.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "models/packet.h"
#include "models/time.h"

namespace models {

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
// in one cache line; the counters next; fault state last.
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
  // the event (fabric.cpp, try_tx).
  Tick busy_until = 0;
  double corrupt_rate = 0;  ///< probability a data packet sent on this cable arrives corrupted (fault injection)
  NetPortStats st;
  Tick paused_since = 0;
  Tick fanin_since = kTickMax;  ///< flow tier: a fan-in bottleneck since then (kTickMax: not one)
  Tick wd_since = ~0ULL;  ///< paused with packets queued since (~0: not both); the watchdog's detection runs from here
  Tick wd_last_pause = 0; ///< storm state: when a pause was last asserted (a frame, or the end of a held pause)
  Tick storm_until = 0;   ///< hosts (pfc_storm fault): the NIC sends pause frames until then
};

// Field order: what forwarding reads (the ports, the MMU's state) first; the name last.
struct NetNode {
  std::vector<NetPort> ports;
  bool is_switch = false;
  Tick latency = 0;
  std::uint64_t buffer = 0, used = 0;   // switch MMU: shared buffer and its occupancy
  std::uint64_t xoff = 0, xon = 0;  // switch MMU: PFC thresholds per ingress port
  std::string name;
};

}  // namespace models
