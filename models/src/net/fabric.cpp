// The Ethernet fabric (models/net/fabric.h, docs/models/ethernet-switch.md): its topology, global
// port ids, link state, the forwarding and transmission of packets (units): they arrive, take an
// ECMP next hop, pass the switch MMU (switch_mmu.cpp), wait in their output queue, and leave at
// the port's line rate, cut-through once their first packet is in; and what the RC transport
// (NicPort) and the flow tier (FlowFabric) read of it.
#include "models/net/fabric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace models {

void Fabric::add_node(Node&& n) {
  if (nodes_.size() >= kNodeMask) throw std::invalid_argument("network: more than 16,777,215 nodes (hosts and switches)");
  nodes_.push_back(std::move(n));
}

std::uint32_t Fabric::add_host(std::string name) {
  Node n;
  n.name = std::move(name);
  n.ports.resize(1);
  add_node(std::move(n));
  auto id = static_cast<std::uint32_t>(nodes_.size() - 1);
  fwd_.add_node(id, true);
  return id;
}

std::uint32_t Fabric::add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer, Tick latency) {
  Node n;
  n.name = std::move(name);
  n.is_switch = true;
  n.buffer = buffer;
  n.latency = latency;
  n.ports.resize(ports);
  add_node(std::move(n));
  auto id = static_cast<std::uint32_t>(nodes_.size() - 1);
  fwd_.add_node(id, false);
  return id;
}

void Fabric::connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick lat) {
  Port& x = nodes_.at(a).ports.at(pa);
  Port& y = nodes_.at(b).ports.at(pb);
  if (x.cabled || y.cabled) throw std::invalid_argument("network: port cabled twice");
  x.peer = b; x.peer_port = pb; x.Bps = Bps; x.latency = lat; x.cabled = true;
  y.peer = a; y.peer_port = pa; y.Bps = Bps; y.latency = lat; y.cabled = true;
  x.peer_switch = nodes_[b].is_switch; x.peer_latency = x.peer_switch ? nodes_[b].latency : 0;
  y.peer_switch = nodes_[a].is_switch; y.peer_latency = y.peer_switch ? nodes_[a].latency : 0;
}

// Global port ids: node -> its first, id -> node, and every port by id (the flow tier's table).
std::vector<NetPort*> Fabric::index_ports() {
  port_base_.assign(nodes_.size() + 1, 0);
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) port_base_[n + 1] = port_base_[n] + static_cast<std::uint32_t>(nodes_[n].ports.size());
  port_node_.resize(port_base_.back());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) std::fill(port_node_.begin() + port_base_[n], port_node_.begin() + port_base_[n + 1], n);
  port_ptr_.resize(nodes_.size());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) port_ptr_[n] = nodes_[n].ports.data();
  std::vector<NetPort*> gport(port_base_.back());
  for (std::uint32_t g = 0; g < port_base_.back(); ++g) gport[g] = &nodes_[port_node_[g]].ports[g - port_base_[port_node_[g]]];
  return gport;
}

void Fabric::set_link_up(std::uint32_t node, std::uint32_t port, bool up) {
  Port& a = nodes_.at(node).ports.at(port);
  Port& b = nodes_[a.peer].ports[a.peer_port];
  fwd_.link_set(a.up, up);
  a.up = b.up = up;
}

// The cable is up again: both ends send what waits (a host's transport is woken).
void Fabric::restart_link(std::uint32_t node, std::uint32_t port) {
  const Port& a = nodes_[node].ports[port];
  send_waiting(node, port);
  send_waiting(a.peer, a.peer_port);
}

void Fabric::set_link_corruption(std::uint32_t node, std::uint32_t port, double rate) {
  Port& a = nodes_.at(node).ports.at(port);
  a.corrupt_rate = nodes_[a.peer].ports[a.peer_port].corrupt_rate = rate;
}

std::uint64_t Fabric::total_drops() const {
  std::uint64_t d = 0;
  for (auto& n : nodes_) for (auto& p : n.ports) d += p.st.drops;
  return d;
}

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
  if (p.paused && p.wd_since == ~0ULL && p_.pfc.watchdog && nodes_[node].is_switch) mmu_.wd_arm(node, port);  // PFC watchdog
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
  if (n.is_switch) mmu_.release(n, k);
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
  if (out == Forwarding::kNone) { free_pkt(id); return; }
  Port& op = n.ports[out];
  if (!mmu_.admit(n, op, k)) { free_pkt(id); return; }
  if (k.kind == kData && p_.ecn.enabled) mmu_.mark(n, port, op, k);
  mmu_.ingress(n, node, port, k);
  enqueue(node, out, id);
}

// (node, port) may send: a switch port transmits what waits, a host's NIC arbitrates.
void Fabric::send_waiting(std::uint32_t node, std::uint32_t port) {
  if (nodes_[node].is_switch) try_tx(node, port);
  else rc_.kick(node);
}

void Fabric::mmu_resume(std::uint32_t node, std::uint32_t port) { send_waiting(node, port); }

// Action drop: what is queued for the port is discarded (its buffer freed, which may resume the
// senders upstream), counted in its drops.
void Fabric::mmu_drop_queue(std::uint32_t node, std::uint32_t port) {
  NetPort& p = nodes_[node].ports[port];
  while (!q_empty(p)) {
    const std::uint32_t id = q_pop_front(p);
    const Pkt& k = pkts_[id];
    p.qbytes -= k.bytes;
    mmu_.release(nodes_[node], k);
    p.st.drops += k.npk;
    p.st.pfcwd_drops += k.npk;
    sample(node, port, SampleCount::Drops, k.npk);
    free_pkt(id);
  }
  if (port_samples_.on()) port_samples_.queue(port_base_[node] + port, sch_.now(), p.qbytes);
}

NicPort::State Fabric::nic_state(std::uint32_t host) const {
  const Port& p = nodes_[host].ports[0];
  if (!p.up) return State::kDown;
  if (p.busy || p.paused) return State::kBlocked;
  return q_empty(p) ? State::kIdle : State::kQueued;
}

void Fabric::nic_enqueue(std::uint32_t host, const Pkt& k, bool ahead) {
  Port& p = nodes_[host].ports[0];
  const std::uint32_t id = alloc_pkt(k);
  if (ahead) q_push_front(p, id); else q_push_back(p, id);
  p.qbytes += k.bytes;
}

void Fabric::nic_prefetch(std::uint32_t host) const {
  __builtin_prefetch(&nodes_[host]);
  if (host < port_ptr_.size()) __builtin_prefetch(port_ptr_[host]);
}

// The flow tier's path of a QP's data (FlowFabric): the ports the forwarding picks, hop by hop.
bool Fabric::flow_walk(std::uint32_t qp, PortPath& path, Tick& latency) const {
  const RcQp& q = rc_.qp(qp);
  std::uint32_t node = q.src, port = 0;
  bool up = true;
  for (std::uint32_t hops = 0;; ++hops) {
    if (hops == PortPath::kMax) return false;  // a forwarding loop: no path
    const Port& pt = nodes_[node].ports[port];
    up = up && pt.cabled && pt.up;
    path.p[path.n++] = port_base_[node] + port;
    latency += pt.latency + (nodes_[pt.peer].is_switch ? nodes_[pt.peer].latency : 0);
    node = pt.peer;
    if (!nodes_[node].is_switch) break;
    port = fwd_.ecmp_port_for(node, q.dst, q.hash);
    if (port == Forwarding::kNone) return false;
  }
  return up && node == q.dst;
}

void Fabric::on_event(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = (a >> 8) & kNodeMask;
  switch (type) {
    case kTxDone: {
      auto node = static_cast<std::uint32_t>(id);
      auto port = static_cast<std::uint32_t>(b);
      nodes_[node].ports[port].busy = false;
      send_waiting(node, port);
      break;
    }
    case kArrive: arrive(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b >> 32), static_cast<std::uint32_t>(b)); break;
    default: break;
  }
}

// The event queue names the next event while this one runs: start loading its node, port and
// packet (at 8192 endpoints these miss cache; the loads overlap the current event's work).
void Fabric::prefetch(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = (a >> 8) & kNodeMask;
  if (type == kArrive || type == kTxDone) {
    const Node& n = nodes_[id];
    __builtin_prefetch(&n);
    const std::uint32_t port = static_cast<std::uint32_t>(type == kArrive ? b >> 32 : b);
    // The node's ports from a dense side table (index_ports): reading n.ports here would wait for
    // the node's line, the miss this prefetch is meant to hide.
    const Port* p = (id < port_ptr_.size() ? port_ptr_[id] : n.ports.data()) + port;
    __builtin_prefetch(p);
    if (type == kArrive) {
      __builtin_prefetch(&pkts_[static_cast<std::uint32_t>(b)]);
      if (const std::uint64_t qp1 = a >> (8 + kNodeBits)) rc_.prefetch_rx(static_cast<std::uint32_t>(qp1 - 1));  // at a host
    } else {
      if (p->qhead != kNoPkt) __builtin_prefetch(&pkts_[p->qhead]);  // the packet it sends next
      rc_.prefetch_kick(static_cast<std::uint32_t>(id));  // a host's port frees: its NIC arbitrates next
    }
  }
}

}  // namespace models
