// Ethernet switch forwarding and transmission (docs/models/ethernet-switch.md): packets (units)
// arrive, take an ECMP next hop, pass the switch MMU (switch_mmu.cpp), wait in their
// output queue, and leave at the port's line rate, cut-through once their first packet is in.
#include "models/net/fabric.h"

#include <algorithm>
#include <cmath>

#include "models/net/policies.h"

namespace models {

namespace {
constexpr std::uint32_t kNone = 0xffffffffu;
}  // namespace

std::uint32_t Fabric::alloc_pkt(const Pkt& p) {
  if (!free_pkts_.empty()) {
    auto id = free_pkts_.back();
    free_pkts_.pop_back();
    pkts_[id] = p;
    return id;
  }
  pkts_.push_back(p);
  return static_cast<std::uint32_t>(pkts_.size() - 1);
}

void Fabric::enqueue(std::uint32_t node, std::uint32_t port, std::uint32_t pkt) {
  Port& p = nodes_[node].ports[port];
  q_push_back(p, pkt);
  p.qbytes += pkts_[pkt].bytes;
  p.st.max_queue_bytes = std::max(p.st.max_queue_bytes, p.qbytes);
  if (p.paused && p.wd_since == ~0ULL && p_.pfc.watchdog && nodes_[node].is_switch) wd_arm(node, port);  // PFC watchdog
  try_tx(node, port);
  // Samples count the bytes waiting, not a unit that went straight onto the wire.
  if (port_samples_.on()) port_samples_.queue(port_base_[node] + port, sch_.now(), p.qbytes);
}

void Fabric::try_tx(std::uint32_t node, std::uint32_t port) {
  Node& n = nodes_[node];
  Port& p = n.ports[port];
  if (p.busy || p.paused || !p.up || q_empty(p)) return;
  const Tick now = sch_.now();
  if (now < p.busy_until) {  // still sending a unit that left nothing queued: wake at its end
    p.busy = true;
    schedule(p.busy_until, kTxDone, node, port);
    return;
  }
  const std::uint32_t id = q_pop_front(p);
  Pkt& k = pkts_[id];
  p.qbytes -= k.bytes;
  if (n.is_switch) mmu_release(node, k);
  p.busy = true;
  p.st.tx_bytes += k.bytes;
  p.st.tx_packets += k.npk;
  // A unit is a train of MTU packets: a switch forwards it cut-through once its first packet is in
  // (as the packet tier pipelines packets), and it cannot leave faster than its tail arrives.
  const std::uint64_t piece = std::min<std::uint64_t>(k.bytes, p_.mtu + p_.header_bytes);
  const Tick ser = serialization_ps(k.bytes, p.Bps);
  Tick dur = ser;
  if (k.tail_at > now) dur = std::max(dur, k.tail_at - now + serialization_ps(piece, p.Bps));
  const Tick end = now + dur;
  p.st.busy_ps += ser;
  if (port_samples_.on()) {  // the unit's bytes at line rate, spread over its time on the port
    port_samples_.busy(port_base_[node] + port, now, end, ser, k.bytes);
    if (n.is_switch) port_samples_.queue(port_base_[node] + port, now, p.qbytes);
  }
  // A switch with nothing queued behind this unit needs no event at its end: the next unit
  // enqueued starts at once if the port is free by then, or schedules the event (above).
  // Nothing else happens at a unit's end (its buffer was released above, at dequeue).
  if (n.is_switch && q_empty(p)) {
    p.busy = false;
    p.busy_until = end;
  } else {
    schedule(end, kTxDone, node, port);
  }
  const double loss = k.kind != kData || p_.drop_rate <= 0 ? 0 : k.npk == 1 ? p_.drop_rate : 1 - std::pow(1 - p_.drop_rate, k.npk);
  if (loss > 0 && uniform() < loss) { p.st.drops += k.npk; sample(node, port, SampleCount::Drops, k.npk); free_pkt(id); return; }
  if (p.corrupt_rate > 0 && k.kind == kData) {  // corrupted on the wire: the receiver's FCS check drops it
    const double bad = k.npk == 1 ? p.corrupt_rate : 1 - std::pow(1 - p.corrupt_rate, k.npk);
    if (uniform() < bad) {
      Port& rx = nodes_[p.peer].ports[p.peer_port];
      rx.st.fcs_errors += k.npk;
      rx.st.drops += k.npk;
      sample(p.peer, p.peer_port, SampleCount::Drops, k.npk);
      free_pkt(id);
      return;
    }
  }
  k.tail_at = end + p.latency + p.peer_latency;
  const Tick at = p.peer_switch ? now + serialization_ps(piece, p.Bps) + p.latency + p.peer_latency : k.tail_at;
  const std::uint64_t to = p.peer_switch ? p.peer : p.peer | (static_cast<std::uint64_t>(k.qp) + 1) << kNodeBits;
  schedule(at, kArrive, to, (static_cast<std::uint64_t>(p.peer_port) << 32) | id);
}

void Fabric::arrive(std::uint32_t node, std::uint32_t port, std::uint32_t id) {
  Node& n = nodes_[node];
  Pkt& k = pkts_[id];
  if (!n.ports[port].up) {  // the link went down while the packet was on it
    nodes_[n.ports[port].peer].ports[n.ports[port].peer_port].st.drops += k.npk;
    sample(n.ports[port].peer, n.ports[port].peer_port, SampleCount::Drops, k.npk);
    free_pkt(id);
    return;
  }
  if (!n.is_switch) {  // at a NIC: the RC transport takes it (its slot is free again first)
    const Pkt k2 = k;
    free_pkt(id);
    rc_.on_rx(node, k2);
    return;
  }
  std::uint32_t out;
  if (k.kind == kData) {
    out = fwd_.ecmp_port_for(node, k.dst, k.hash);
  } else {  // control packets travel back to the sender: routed to the QP's source, hashed apart
    out = fwd_.ctrl_port_for(node, k.dst, k.hash);
  }
  if (out == kNone) { free_pkt(id); return; }
  Port& op = n.ports[out];
  if (!mmu_admit(n, op, k)) { free_pkt(id); return; }
  if (k.kind == kData && p_.ecn.enabled) ecn_mark(n, port, op, k);
  mmu_ingress(node, port, k);
  enqueue(node, out, id);
}

}  // namespace models
