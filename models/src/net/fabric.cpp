// The Ethernet fabric (models/net/fabric.h, docs/models/ethernet-switch.md): its topology, global
// port ids, link state, the event switch, and what the RC transport (NicPort) and the flow tier
// (FlowFabric) read of it. Forwarding: switch_forwarding.cpp; the MMU: switch_mmu.cpp.
#include "models/net/fabric.h"

#include <algorithm>
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
  if (nodes_[node].is_switch) try_tx(node, port); else rc_.kick(node);
  if (nodes_[a.peer].is_switch) try_tx(a.peer, a.peer_port); else rc_.kick(a.peer);
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
      if (nodes_[node].is_switch) try_tx(node, port);
      else rc_.kick(node);
      break;
    }
    case kArrive: arrive(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b >> 32), static_cast<std::uint32_t>(b)); break;
    case kPfcFrame: pfc_frame(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b & 0xffffffffu), (b >> 32) != 0); break;
    case kPfcWd: pfc_wd(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b)); break;
    case kPfcStorm: pfc_storm_tick(static_cast<std::uint32_t>(id)); break;
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
