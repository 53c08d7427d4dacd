// Network: composes the NIC transport (models::RcTransport) and the Ethernet fabric
// (docs/models/README.md). This file holds only what spans them: building the topology, the
// event switch, link faults, totals, and the hosts' ports as the transport sees them (NicPort).
#include "models/network.h"

#include <stdexcept>

#include "models/net/policies.h"

namespace models {

namespace {
constexpr std::uint32_t kNone = 0xffffffffu;

RcParams rc_params(const NetParams& p) {
  RcParams r;
  r.flow = p.flow;
  r.flow_cc = p.flow && p.flow_cc && p.dcqcn.enabled && p.ecn.enabled;  // Network::fcc_on
  r.mtu = p.mtu;
  r.unit_bytes = p.unit_bytes;
  r.header_bytes = p.header_bytes;
  r.ctrl_bytes = p.ctrl_bytes;
  r.ack_every = p.ack_every;
  r.timeout_exp = p.timeout_exp;
  r.retry_count = p.retry_count;
  r.nic_latency_ps = p.nic_latency_ps;
  r.dcqcn = p.dcqcn;
  return r;
}
}  // namespace

Network::Network(Scheduler& s, NetParams p)
    : sch_(s),
      p_(p),
      rc_(s, rc_params(p_), static_cast<NicPort&>(*this)),
      rng_(p.seed ? p.seed : 1),
      flow_(s, p_, rc_, static_cast<FlowFabric&>(*this), port_samples_) {
  if (p_.flow) rc_.set_flow_tier(&flow_);
}

std::uint32_t Network::create_qp(std::uint32_t src, std::uint32_t dst, std::uint16_t sport) {
  const double line = static_cast<double>(nodes_.at(src).ports[0].Bps);
  return rc_.create_qp(src, dst, sport, policy::ecmp_flow_key(p_.ecmp_hash, src, dst, sport, p_.ecmp_salt), line);
}

NicPort::State Network::nic_state(std::uint32_t host) const {
  const Port& p = nodes_[host].ports[0];
  if (!p.up) return State::kDown;
  if (p.busy || p.paused) return State::kBlocked;
  return q_empty(p) ? State::kIdle : State::kQueued;
}

void Network::nic_enqueue(std::uint32_t host, const Pkt& k, bool ahead) {
  Port& p = nodes_[host].ports[0];
  const std::uint32_t id = alloc_pkt(k);
  if (ahead) q_push_front(p, id); else q_push_back(p, id);
  p.qbytes += k.bytes;
}

void Network::nic_prefetch(std::uint32_t host) const {
  __builtin_prefetch(&nodes_[host]);
  if (host < port_ptr_.size()) __builtin_prefetch(port_ptr_[host]);
}

std::uint32_t Network::add_host(std::string name) {
  Node n;
  n.name = std::move(name);
  n.ports.resize(1);
  nodes_.push_back(std::move(n));
  rc_.add_node();
  auto id = static_cast<std::uint32_t>(nodes_.size() - 1);
  routes_.add_node(id, true);
  return id;
}

std::uint32_t Network::add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer, Tick latency) {
  Node n;
  n.name = std::move(name);
  n.is_switch = true;
  n.buffer = buffer;
  n.latency = latency;
  n.ports.resize(ports);
  nodes_.push_back(std::move(n));
  rc_.add_node();
  auto id = static_cast<std::uint32_t>(nodes_.size() - 1);
  routes_.add_node(id, false);
  return id;
}

void Network::connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick lat) {
  Port& x = nodes_.at(a).ports.at(pa);
  Port& y = nodes_.at(b).ports.at(pb);
  if (x.cabled || y.cabled) throw std::invalid_argument("network: port cabled twice");
  x.peer = b; x.peer_port = pb; x.Bps = Bps; x.latency = lat; x.cabled = true;
  y.peer = a; y.peer_port = pa; y.Bps = Bps; y.latency = lat; y.cabled = true;
  x.peer_switch = nodes_[b].is_switch; x.peer_latency = x.peer_switch ? nodes_[b].latency : 0;
  y.peer_switch = nodes_[a].is_switch; y.peer_latency = y.peer_switch ? nodes_[a].latency : 0;
  flow_.paths_changed();
}

void Network::set_link_up(std::uint32_t node, std::uint32_t port, bool up) {
  Port& a = nodes_.at(node).ports.at(port);
  Port& b = nodes_[a.peer].ports[a.peer_port];
  routes_.link_set(a.up, up);
  a.up = b.up = up;
  flow_.paths_changed();  // the flow tier's memo of QPs' paths (flow_path)
  if (up) {
    if (nodes_[node].is_switch) try_tx(node, port); else rc_.kick(node);
    if (nodes_[a.peer].is_switch) try_tx(a.peer, a.peer_port); else rc_.kick(a.peer);
  }
}

void Network::set_link_corruption(std::uint32_t node, std::uint32_t port, double rate) {
  Port& a = nodes_.at(node).ports.at(port);
  a.corrupt_rate = nodes_[a.peer].ports[a.peer_port].corrupt_rate = rate;
}

void Network::build_routes() {
  flow_.paths_changed();
  index_ports();         // global port ids (flow tier; routing's path probes)
  set_pfc_thresholds();  // switch MMU
  routes_.build();
}

bool Network::trace_path(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::vector<Hop>* hops, Tick* rtt_ps) const {
  return routes_.trace_path(src, dst, ecmp_flow_key(p_.ecmp_hash, src, dst, sport, p_.ecmp_salt), hops, rtt_ps);
}

std::uint32_t Network::ecmp_port(std::uint32_t sw, std::uint32_t qp) const { return ecmp_port_for(sw, rc_.qp(qp).dst, rc_.qp(qp).hash); }

// Global port ids: node -> its first, id -> node, and the flow tier's table of the ports.
void Network::index_ports() {
  port_base_.assign(nodes_.size() + 1, 0);
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) port_base_[n + 1] = port_base_[n] + static_cast<std::uint32_t>(nodes_[n].ports.size());
  port_node_.resize(port_base_.back());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) std::fill(port_node_.begin() + port_base_[n], port_node_.begin() + port_base_[n + 1], n);
  port_ptr_.resize(nodes_.size());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) port_ptr_[n] = nodes_[n].ports.data();
  std::vector<NetPort*> gport(port_base_.back());
  for (std::uint32_t g = 0; g < port_base_.back(); ++g) gport[g] = &nodes_[port_node_[g]].ports[g - port_base_[port_node_[g]]];
  flow_.bind_ports(std::move(gport));  // the flow tier reads the ports by global id
}

// The flow tier's path of a QP's data (FlowFabric): the ports the forwarding picks, hop by hop.
bool Network::flow_walk(std::uint32_t qp, PortPath& path, Tick& latency) const {
  const Qp& q = rc_.qp(qp);
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
    port = ecmp_port(node, qp);
    if (port == 0xffffffffu) return false;
  }
  return up && node == q.dst;
}

std::uint64_t Network::total_drops() const {
  std::uint64_t d = 0;
  for (auto& n : nodes_) for (auto& p : n.ports) d += p.st.drops;
  return d;
}

void Network::on_event(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = a >> 8;
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
void Network::prefetch(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = a >> 8;
  if (type == kArrive || type == kTxDone) {
    const Node& n = nodes_[id];
    __builtin_prefetch(&n);
    const std::uint32_t port = static_cast<std::uint32_t>(type == kArrive ? b >> 32 : b);
    // The node's ports from a dense side table (index_ports): reading n.ports here would wait for
    // the node's line, the miss this prefetch is meant to hide.
    const Port* p = (id < port_ptr_.size() ? port_ptr_[id] : n.ports.data()) + port;
    __builtin_prefetch(p);
    if (type == kArrive) __builtin_prefetch(&pkts_[static_cast<std::uint32_t>(b)]);
    else if (p->qhead != kNoPkt) __builtin_prefetch(&pkts_[p->qhead]);  // the packet it sends next
  }
}

// The Network's static names for the policies (callers in sim/ and tests use them).
double Network::ecn_mark_probability(const EcnParams& e, double q) { return policy::ecn_mark_probability(e, q); }
std::uint64_t Network::ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint32_t salt) {
  return policy::ecmp_flow_key(h, src, dst, sport, salt);
}
void Network::pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                             std::uint64_t* xoff, std::uint64_t* xon) {
  policy::pfc_thresholds(buffer, ports, headroom, unit_wire, xoff, xon);
}

}  // namespace models
