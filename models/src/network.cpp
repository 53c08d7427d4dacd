#include "models/network.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace models {

namespace {
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
constexpr std::uint32_t kNone = 0xffffffffu;
}  // namespace

std::uint32_t Network::add_host(std::string name) {
  Node n;
  n.name = std::move(name);
  n.ports.resize(1);
  nodes_.push_back(std::move(n));
  auto id = static_cast<std::uint32_t>(nodes_.size() - 1);
  host_index_.resize(nodes_.size(), kNone);
  host_index_[id] = static_cast<std::uint32_t>(hosts_.size());
  hosts_.push_back(id);
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
  host_index_.resize(nodes_.size(), kNone);
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

void Network::connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick lat) {
  Port& x = nodes_.at(a).ports.at(pa);
  Port& y = nodes_.at(b).ports.at(pb);
  if (x.cabled || y.cabled) throw std::invalid_argument("network: port cabled twice");
  x.peer = b; x.peer_port = pb; x.Bps = Bps; x.latency = lat; x.cabled = true;
  y.peer = a; y.peer_port = pa; y.Bps = Bps; y.latency = lat; y.cabled = true;
}

void Network::build_routes() {
  // A host has one port, to the switch it is attached to; routes toward a host are the routes
  // toward that switch plus its port to the host. So one BFS per attachment switch (not per
  // host): tables of switches x attachment switches instead of switches x hosts.
  const std::uint32_t H = static_cast<std::uint32_t>(hosts_.size());
  attach_.assign(H, kNone);
  attach_port_.assign(H, 0);
  att_index_.assign(nodes_.size(), kNone);
  att_nodes_.clear();
  for (std::uint32_t h = 0; h < H; ++h) {
    const Port& p = nodes_[hosts_[h]].ports[0];
    if (!p.cabled || !nodes_[p.peer].is_switch) continue;
    attach_[h] = p.peer;
    attach_port_[h] = p.peer_port;
    if (att_index_[p.peer] == kNone) {
      att_index_[p.peer] = static_cast<std::uint32_t>(att_nodes_.size());
      att_nodes_.push_back(p.peer);
    }
  }
  const std::uint32_t A = static_cast<std::uint32_t>(att_nodes_.size());
  hop_start_.assign(nodes_.size(), {});
  hops_.assign(nodes_.size(), {});
  for (std::uint32_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].is_switch) hop_start_[n].assign(A + 1, 0);
  std::vector<std::uint32_t> dist(nodes_.size()), queue(nodes_.size());
  for (std::uint32_t a = 0; a < A; ++a) {
    std::fill(dist.begin(), dist.end(), kNone);
    std::size_t head = 0, tail = 0;
    dist[att_nodes_[a]] = 0;
    queue[tail++] = att_nodes_[a];
    while (head < tail) {  // over switches only: hosts do not forward
      const std::uint32_t u = queue[head++];
      for (auto& p : nodes_[u].ports)
        if (p.cabled && nodes_[p.peer].is_switch && dist[p.peer] == kNone) { dist[p.peer] = dist[u] + 1; queue[tail++] = p.peer; }
    }
    for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
      if (!nodes_[s].is_switch) continue;
      hop_start_[s][a] = static_cast<std::uint32_t>(hops_[s].size());
      if (dist[s] == kNone || dist[s] == 0) continue;
      for (std::uint32_t k = 0; k < nodes_[s].ports.size(); ++k) {
        const Port& p = nodes_[s].ports[k];
        if (p.cabled && nodes_[p.peer].is_switch && dist[p.peer] + 1 == dist[s]) hops_[s].push_back(k);
      }
    }
  }
  // PFC headroom covers two whole units in flight (two packets in the packet tier).
  const std::uint64_t unit_wire = p_.wire_bytes(p_.unit());
  port_base_.assign(nodes_.size() + 1, 0);
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) port_base_[n + 1] = port_base_[n] + static_cast<std::uint32_t>(nodes_[n].ports.size());
  port_node_.resize(port_base_.back());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n) std::fill(port_node_.begin() + port_base_[n], port_node_.begin() + port_base_[n + 1], n);
  for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
    if (!nodes_[s].is_switch) continue;
    hop_start_[s][A] = static_cast<std::uint32_t>(hops_[s].size());
    // PFC thresholds from the shared buffer and each port's headroom.
    Node& n = nodes_[s];
    std::uint64_t headroom = 0;
    for (auto& p : n.ports)
      if (p.cabled)
        headroom = std::max<std::uint64_t>(headroom, 3 * static_cast<std::uint64_t>(static_cast<double>(p.Bps) * p.latency / kPsPerSec) +
                                                         2ULL * unit_wire);
    pfc_thresholds(n.buffer, n.ports.size(), headroom, unit_wire, &n.xoff, &n.xon);
  }
}

// ---- policies ------------------------------------------------------------------------------

double Network::ecn_mark_probability(const EcnParams& e, double q) {
  if (!e.enabled) return 0;
  if (e.mode == EcnParams::Mode::Step) return q > static_cast<double>(e.kmin_bytes) ? 1.0 : 0.0;
  if (q > static_cast<double>(e.kmax_bytes)) return 1.0;
  if (q <= static_cast<double>(e.kmin_bytes)) return 0.0;
  return e.pmax * (q - static_cast<double>(e.kmin_bytes)) / static_cast<double>(e.kmax_bytes - e.kmin_bytes);
}

std::uint64_t Network::ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t sport) {
  const std::uint64_t port = h == EcmpHash::FiveTuple ? sport : 0;
  return mix64((static_cast<std::uint64_t>(src) << 40) ^ (static_cast<std::uint64_t>(dst) << 16) ^ port) ^ 4791;
}

void Network::pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                             std::uint64_t* xoff, std::uint64_t* xon) {
  // Every ingress port may hold xoff before it pauses its sender; headroom absorbs what is in
  // flight when the pause lands (HPCC's ns-3 setup); resume 2 units below.
  *xoff = buffer > ports * headroom ? (buffer - ports * headroom) / ports : unit_wire;
  *xon = *xoff > 2 * unit_wire ? *xoff - 2 * unit_wire : 0;
}

std::uint32_t Network::route_choices(std::uint32_t sw, std::uint32_t dst, const std::uint32_t** first) const {
  const std::uint32_t h = host_index_[dst];
  const std::uint32_t at = h == kNone ? kNone : attach_[h];
  if (at == kNone) return 0;
  if (at == sw) { *first = &attach_port_[h]; return 1; }
  const std::uint32_t a = att_index_[at];
  *first = hops_[sw].data() + hop_start_[sw][a];
  return hop_start_[sw][a + 1] - hop_start_[sw][a];
}

std::vector<std::uint32_t> Network::next_hops(std::uint32_t sw, std::uint32_t dst) const {
  const std::uint32_t* first = nullptr;
  const std::uint32_t n = route_choices(sw, dst, &first);
  return n ? std::vector<std::uint32_t>(first, first + n) : std::vector<std::uint32_t>{};
}

std::uint32_t Network::ecmp_port(std::uint32_t sw, std::uint32_t qp) const {
  const std::uint32_t* first = nullptr;
  const std::uint32_t n = route_choices(sw, qps_[qp].dst, &first);
  if (n == 0) return kNone;
  if (n == 1) return first[0];
  // ECMP mechanism: the policy's flow key (ecmp_flow_key), salted per switch, picks a next hop.
  return first[mix64(qps_[qp].hash ^ (static_cast<std::uint64_t>(sw) * 0x9e3779b97f4a7c15ULL)) % n];
}

std::uint32_t Network::create_qp(std::uint32_t src, std::uint32_t dst, std::uint16_t sport) {
  Qp q;
  q.src = src;
  q.dst = dst;
  q.sport = sport;
  q.hash = ecmp_flow_key(p_.ecmp_hash, src, dst, sport);
  q.line = static_cast<double>(nodes_.at(src).ports[0].Bps);
  q.rc = q.rt = q.line;
  qps_.push_back(q);
  auto id = static_cast<std::uint32_t>(qps_.size() - 1);
  nodes_[src].qps.push_back(id);
  return id;
}

void Network::set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps) {
  Qp& q = qps_.at(qp);
  const double port = static_cast<double>(nodes_[q.src].ports[0].Bps);
  const double line = Bps ? std::min(port, static_cast<double>(Bps)) : port;
  if (line == q.line) return;
  q.line = line;
  q.rc = std::min(q.rc, line);
  q.rt = std::min(q.rt, line);
  if (!q.limited) q.rc = q.rt = line;
}

void Network::post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag) {
  Qp& q = qps_.at(qp);
  const std::uint64_t unit = p_.unit();
  std::uint64_t npkts = bytes == 0 ? 1 : (bytes + unit - 1) / unit;  // units (packets in the packet tier)
  if (q.msgs.empty()) q.ready_at = sch_.now() + p_.nic_latency_ps;
  q.msgs.push_back(Msg{tag, bytes, q.end_psn, npkts});
  q.end_psn += npkts;
  if (q.failed) { if (listener_) listener_->on_write_done(qp, tag, false); q.msgs.pop_back(); return; }
  if (p_.flow) {  // the head message starts after WQE processing; later ones when it is sent
    if (q.msgs.size() == 1) schedule(std::max(sch_.now(), q.ready_at), kFlowStart, qp);
    return;
  }
  schedule(std::max(sch_.now(), q.ready_at), kHostKick, q.src);
}

// ---- flow tier ----------------------------------------------------------------------------
// Each QP sends its messages in order; the head message is a fluid flow along its ECMP path.
// Rates are max-min fair over the ports' capacities (progressive filling), recomputed whenever a
// flow starts or ends. The message lands one path latency after its last byte leaves (the flow's
// end) and is acknowledged one path latency later. No queues, ECN, DCQCN or PFC in this tier: it
// stands for ideal congestion control.

void Network::flow_post(std::uint32_t qp, std::int64_t after) {
  Qp& q = qps_[qp];
  const Msg& m = q.msgs.front();
  std::uint32_t id;
  if (!free_flows_.empty()) { id = free_flows_.back(); free_flows_.pop_back(); }
  else { id = static_cast<std::uint32_t>(flows_.size()); flows_.emplace_back(); }
  Flow& f = flows_[id];
  f = Flow{};
  f.qp = qp;
  f.tag = m.tag;
  f.bytes = m.bytes;
  f.left = static_cast<double>(p_.wire_bytes(m.bytes));
  std::uint32_t node = q.src, port = 0;
  bool up = true;
  for (int hops = 0; hops < 64; ++hops) {
    const Port& pt = nodes_[node].ports[port];
    up = up && pt.cabled && pt.up;
    f.gports.push_back(port_base_[node] + port);
    f.latency += pt.latency + (nodes_[pt.peer].is_switch ? nodes_[pt.peer].latency : 0);
    node = pt.peer;
    if (!nodes_[node].is_switch) break;
    port = ecmp_port(node, qp);
    if (port == 0xffffffffu) { up = false; break; }
  }
  if (!up || node != q.dst) {  // no path: the write fails as after exhausted retries
    Msg dead = q.msgs.front();
    q.msgs.pop_front();
    free_flows_.push_back(id);
    ++q.st.timeouts;
    if (listener_) listener_->on_write_done(qp, dead.tag, false);
    if (!q.msgs.empty()) flow_post(qp);
    return;
  }
  f.active = true;
  f.t_set = sch_.now();
  q.st.tx_bytes += m.bytes;
  if (port_flows_.size() < port_base_.back()) port_flows_.resize(port_base_.back());
  for (std::uint32_t g : f.gports) port_flows_[g].push_back(id);
  if (after >= 0 && flows_[static_cast<std::size_t>(after)].gports == f.gports) {
    f.rate = flows_[static_cast<std::size_t>(after)].rate;  // same paths, same rates
    flow_project(id);
  } else {
    flow_seeds_.insert(flow_seeds_.end(), f.gports.begin(), f.gports.end());
    if (after >= 0) flow_seeds_.insert(flow_seeds_.end(), flows_[static_cast<std::size_t>(after)].gports.begin(), flows_[static_cast<std::size_t>(after)].gports.end());
  }
  flow_rates_soon();
}

void Network::flow_rates_soon() {
  if (flow_rates_pending_) return;
  flow_rates_pending_ = true;
  schedule(sch_.now(), kFlowRates, 0);
}

void Network::flow_project(std::uint32_t id) {
  Flow& f = flows_[id];
  f.stamp = ++flow_stamp_;
  if (f.rate > 0) flow_heap_.emplace(f.t_set + static_cast<Tick>(std::ceil(f.left / f.rate * 1e12)), id, f.stamp);
}

void Network::flow_rates() {
  // The component of the changed ports: ports -> their flows -> those flows' ports, ...
  const std::size_t P = port_base_.back();
  if (fill_cap_.size() < P) { fill_cap_.assign(P, 0); fill_cnt_.assign(P, 0); port_seen_.assign(P, 0); }
  if (flow_seen_.size() < flows_.size()) { flow_seen_.resize(flows_.size(), 0); fill_frozen_.resize(flows_.size(), 0); }
  fill_ports_.clear();
  fill_flows_.clear();
  for (std::uint32_t g : flow_seeds_)
    if (!port_seen_[g]) { port_seen_[g] = 1; fill_ports_.push_back(g); }
  flow_seeds_.clear();
  for (std::size_t i = 0; i < fill_ports_.size(); ++i)
    for (std::uint32_t id : port_flows_[fill_ports_[i]]) {
      if (flow_seen_[id]) continue;
      flow_seen_[id] = 1;
      fill_flows_.push_back(id);
      for (std::uint32_t h : flows_[id].gports)
        if (!port_seen_[h]) { port_seen_[h] = 1; fill_ports_.push_back(h); }
    }
  for (std::uint32_t g : fill_ports_) port_seen_[g] = 0;
  const Tick now = sch_.now();
  for (std::uint32_t id : fill_flows_) {  // settle each flow's progress at its old rate
    Flow& f = flows_[id];
    f.left = std::max(0.0, f.left - f.rate * static_cast<double>(now - f.t_set) / 1e12);
    f.t_set = now;
    f.rate = 0;
    flow_seen_[id] = 0;
    fill_frozen_[id] = 0;
  }
  std::sort(fill_ports_.begin(), fill_ports_.end());  // deterministic order
  for (std::uint32_t g : fill_ports_) {
    fill_cap_[g] = static_cast<double>(gport(g).Bps);
    fill_cnt_[g] = static_cast<std::uint32_t>(port_flows_[g].size());
  }
  // Progressive filling: repeatedly find the port with the smallest equal share of its remaining
  // capacity and freeze its unfrozen flows at that share.
  std::size_t left = fill_flows_.size();
  while (left > 0) {
    double share = -1;
    for (std::uint32_t g : fill_ports_)
      if (fill_cnt_[g] > 0) {
        const double s = fill_cap_[g] / fill_cnt_[g];
        if (share < 0 || s < share) share = s;
      }
    if (share < 0) break;
    std::size_t frozen = 0;
    for (std::uint32_t g : fill_ports_) {
      if (fill_cnt_[g] == 0 || fill_cap_[g] / fill_cnt_[g] > share * (1 + 1e-12)) continue;
      for (std::uint32_t id : port_flows_[g]) {
        if (fill_frozen_[id]) continue;
        fill_frozen_[id] = 1;
        flows_[id].rate = share;
        for (std::uint32_t h : flows_[id].gports) { fill_cap_[h] = std::max(0.0, fill_cap_[h] - share); --fill_cnt_[h]; }
        ++frozen;
      }
    }
    if (frozen == 0) break;  // numerical safety
    left -= frozen;
  }
  for (std::uint32_t id : fill_flows_) flow_project(id);
}

void Network::flow_next() {
  ++flow_gen_;
  while (!flow_heap_.empty()) {
    const auto [t, id, stamp] = flow_heap_.top();
    if (!flows_[id].active || flows_[id].stamp != stamp) { flow_heap_.pop(); continue; }
    schedule(t, kFlowDone, id, flow_gen_);
    return;
  }
}

void Network::flow_done(std::uint32_t id) {
  Flow& f = flows_[id];
  f.active = false;
  f.left = 0;
  for (std::uint32_t g : f.gports) {
    PortStats& st = gport(g).st;
    st.tx_bytes += f.bytes;
    ++st.tx_packets;
  }
  schedule(sch_.now() + f.latency, kFlowDeliver, id);
  // The QP's next message follows (its WQE was processed meanwhile).
  for (std::uint32_t g : f.gports) {
    auto& v = port_flows_[g];
    v.erase(std::find(v.begin(), v.end(), id));
  }
  Qp& q = qps_[f.qp];
  q.msgs.pop_front();
  if (!q.msgs.empty()) {
    flow_post(f.qp, id);
  } else {
    flow_seeds_.insert(flow_seeds_.end(), f.gports.begin(), f.gports.end());
    flow_rates_soon();
  }
}

std::uint64_t Network::psn_bytes(const Qp& q, std::uint64_t psn, std::uint64_t* tag, std::uint64_t* off, bool* last) const {
  for (const Msg& m : q.msgs)
    if (psn >= m.first_psn && psn < m.first_psn + m.npkts) {
      std::uint64_t k = psn - m.first_psn;
      *tag = m.tag;
      *off = k * p_.unit();
      *last = k + 1 == m.npkts;
      return std::min<std::uint64_t>(p_.unit(), m.bytes - *off);
    }
  *tag = 0; *off = 0; *last = true;
  return 0;
}

std::uint32_t Network::alloc_pkt(const Pkt& p) {
  if (!free_pkts_.empty()) {
    auto id = free_pkts_.back();
    free_pkts_.pop_back();
    pkts_[id] = p;
    return id;
  }
  pkts_.push_back(p);
  return static_cast<std::uint32_t>(pkts_.size() - 1);
}

void Network::enqueue(std::uint32_t node, std::uint32_t port, std::uint32_t pkt) {
  Port& p = nodes_[node].ports[port];
  p.q.push_back(pkt);
  p.qbytes += pkts_[pkt].bytes;
  p.st.max_queue_bytes = std::max(p.st.max_queue_bytes, p.qbytes);
  try_tx(node, port);
}

void Network::try_tx(std::uint32_t node, std::uint32_t port) {
  Node& n = nodes_[node];
  Port& p = n.ports[port];
  if (p.busy || p.paused || !p.up || p.q.empty()) return;
  std::uint32_t id = p.q.front();
  p.q.pop_front();
  Pkt& k = pkts_[id];
  p.qbytes -= k.bytes;
  if (n.is_switch) {
    n.used -= k.bytes;
    Port& in = n.ports[k.in_port];
    in.in_bytes -= k.bytes;
    if (p_.pfc.enabled && in.upstream_paused && in.in_bytes <= n.xon) {
      in.upstream_paused = false;
      schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port);  // resume
    }
  }
  p.busy = true;
  p.st.tx_bytes += k.bytes;
  p.st.tx_packets += k.npk;
  // A unit is a train of MTU packets: a switch forwards it cut-through once its first packet is in
  // (as the packet tier pipelines packets), and it cannot leave faster than its tail arrives.
  const Tick now = sch_.now();
  const std::uint64_t piece = std::min<std::uint64_t>(k.bytes, p_.mtu + p_.header_bytes);
  Tick dur = serialization_ps(k.bytes, p.Bps);
  if (k.tail_at > now) dur = std::max(dur, k.tail_at - now + serialization_ps(piece, p.Bps));
  const Tick end = now + dur;
  schedule(end, kTxDone, node, port);
  const double loss = k.kind != kData || p_.drop_rate <= 0 ? 0 : k.npk == 1 ? p_.drop_rate : 1 - std::pow(1 - p_.drop_rate, k.npk);
  if (loss > 0 && uniform() < loss) { p.st.drops += k.npk; free_pkt(id); return; }
  const Node& next = nodes_[p.peer];
  k.tail_at = end + p.latency + (next.is_switch ? next.latency : 0);
  const Tick at = next.is_switch ? now + serialization_ps(piece, p.Bps) + p.latency + next.latency : k.tail_at;
  schedule(at, kArrive, p.peer, (static_cast<std::uint64_t>(p.peer_port) << 32) | id);
}

void Network::pfc_frame(std::uint32_t node, std::uint32_t port, bool pause) {
  Port& p = nodes_[node].ports[port];
  if (pause) {
    if (!p.paused) { p.paused = true; p.paused_since = sch_.now(); }
    ++p.st.pause_rcv;
  } else if (p.paused) {
    p.paused = false;
    p.st.paused_ps += sch_.now() - p.paused_since;
    if (nodes_[node].is_switch) try_tx(node, port);
    else host_kick(node);
  }
}

void Network::arrive(std::uint32_t node, std::uint32_t port, std::uint32_t id) {
  Node& n = nodes_[node];
  Pkt& k = pkts_[id];
  if (!n.ports[port].up) {  // the link went down while the packet was on it
    nodes_[n.ports[port].peer].ports[n.ports[port].peer_port].st.drops += k.npk;
    free_pkt(id);
    return;
  }
  if (!n.is_switch) { host_rx(node, id); return; }
  std::uint32_t out;
  if (k.kind == kData) {
    out = ecmp_port(node, k.qp);
  } else {  // control packets travel back to the sender: routed to the QP's source, hashed apart
    const std::uint32_t* first = nullptr;
    const std::uint32_t cnt = route_choices(node, k.dst, &first);
    out = cnt ? first[cnt == 1 ? 0 : mix64(qps_[k.qp].hash ^ 0x5bd1e995ULL ^ node) % cnt] : kNone;
  }
  if (out == kNone) { free_pkt(id); return; }
  Port& op = n.ports[out];
  if (n.used + k.bytes > n.buffer || !op.up) {  // shared buffer full (or a dead port): tail drop
    op.st.drops += k.npk;
    free_pkt(id);
    return;
  }
  if (k.kind == kData && p_.ecn.enabled) {  // ECN at enqueue, by the marking policy
    auto red = [this](double q) { return ecn_mark_probability(p_.ecn, q); };
    if (p_.unit() <= p_.mtu) {
      const double pk = red(static_cast<double>(op.qbytes));
      if (pk >= 1 || (pk > 0 && uniform() < pk)) k.ecn = true;  // a mark from an earlier hop stays
    } else {
      // Chunk tier: units move as line-rate bursts, so their queue is lumpy even when the senders'
      // paced rates fit. Mark on the queue that packets paced at those rates would build (a fluid
      // queue fed by each unit at its sender's rate, drained at line rate), evaluated at each of
      // the unit's packets; the unit is marked if any of them would be.
      const Tick now = sch_.now();
      double vq = virtual_queue(op, now);
      const double r = std::min(k.rate > 0 ? k.rate : static_cast<double>(n.ports[port].Bps), static_cast<double>(n.ports[port].Bps));
      op.vin.emplace_back(now + static_cast<Tick>(static_cast<double>(k.bytes) / r * kPsPerSec), r);
      double in = 0;
      for (auto& v : op.vin) in += v.second;
      const double step = (in - static_cast<double>(op.Bps)) * static_cast<double>(k.bytes) / k.npk / r;  // queue change per packet
      std::uint32_t m = 0;
      for (std::uint32_t i = 0; i < k.npk; ++i) {
        const double pk = red(vq);
        if (pk >= 1 || (pk > 0 && uniform() < pk)) ++m;
        vq = std::max(0.0, vq + step);
      }
      k.marks = std::min(k.npk, k.marks + m);
      k.ecn = k.marks > 0;
      // Fluid FIFO: a port receiving more than its line rate passes each flow on at its share of
      // it, and that is the rate the flow's packets reach the next queue at.
      const double C = static_cast<double>(op.Bps);
      if (in > C) k.rate = r * C / in;
    }
    if (k.ecn) ++op.st.ecn_marked;
  }
  n.used += k.bytes;
  k.in_port = port;
  Port& in = n.ports[port];
  in.in_bytes += k.bytes;
  if (p_.pfc.enabled && !in.upstream_paused && in.in_bytes > n.xoff) {
    in.upstream_paused = true;
    ++in.st.pause_sent;
    schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port | (1ULL << 32));
  }
  enqueue(node, out, id);
}

void Network::send_ctrl(std::uint32_t host, PktKind kind, std::uint32_t qp, std::uint64_t psn) {
  Pkt k;
  k.kind = kind;
  k.qp = qp;
  k.src = host;
  k.dst = qps_[qp].src;
  k.psn = psn;
  k.bytes = p_.ctrl_bytes;
  nodes_[host].ports[0].q.push_front(alloc_pkt(k));  // control frames go ahead of queued data
  nodes_[host].ports[0].qbytes += k.bytes;
  host_kick(host);
}

void Network::host_kick(std::uint32_t host) {
  Node& n = nodes_[host];
  Port& p = n.ports[0];
  if (p.busy || p.paused || !p.up) return;
  if (!p.q.empty()) { try_tx(host, 0); return; }
  // Egress arbitration: round-robin over QPs whose rate limiter and WQE processing allow a packet.
  const Tick now = sch_.now();
  Tick wake = kTickMax;
  const std::size_t nq = n.qps.size();
  for (std::size_t i = 0; i < nq; ++i) {
    std::uint32_t qi = n.qps[(n.rr + i) % nq];
    Qp& q = qps_[qi];
    if (q.failed || q.next_psn >= q.end_psn) continue;
    Tick t = std::max(q.next_tx, q.ready_at);
    if (t > now) { wake = std::min(wake, t); continue; }
    n.rr = static_cast<std::uint32_t>((n.rr + i + 1) % nq);
    Pkt k;
    k.kind = kData;
    k.qp = qi;
    k.src = host;
    k.dst = q.dst;
    if (q.next_psn < q.acked) q.next_psn = q.acked;  // never resend what is acknowledged
    k.psn = q.next_psn;
    k.payload = psn_bytes(q, q.next_psn, &k.msg_tag, &k.msg_off, &k.last);
    k.npk = static_cast<std::uint32_t>(p_.packets(k.payload));
    k.bytes = p_.wire_bytes(k.payload);
    k.rate = q.rc;
    ++q.next_psn;
    q.st.tx_bytes += k.payload;
    q.next_tx = now + serialization_ps(k.bytes, static_cast<std::uint64_t>(q.rc));
    if (p_.dcqcn.enabled && q.limited) {
      q.bytes_since += k.bytes;
      if (q.bytes_since >= p_.dcqcn.byte_counter) { q.bytes_since = 0; ++q.bc_stage; rate_increase(qi); }
    }
    if (q.rto_gen % 2 == 0) arm_rto(qi);  // even generation: no timer armed
    p.q.push_back(alloc_pkt(k));
    p.qbytes += k.bytes;
    try_tx(host, 0);
    return;
  }
  if (wake != kTickMax) schedule(wake, kHostKick, host);
}

double Network::virtual_queue(Port& p, Tick now) {
  const double C = static_cast<double>(p.Bps);
  while (p.vq_t < now) {
    double in = 0;
    Tick seg = now;
    for (auto& [end, r] : p.vin) { in += r; seg = std::min(seg, end); }
    p.vq = std::max(0.0, p.vq + (in - C) * static_cast<double>(seg - p.vq_t) / kPsPerSec);
    p.vq_t = seg;
    p.vin.erase(std::remove_if(p.vin.begin(), p.vin.end(), [seg](const std::pair<Tick, double>& v) { return v.first <= seg; }), p.vin.end());
  }
  return p.vq;
}

void Network::arm_rto(std::uint32_t qi) {
  Qp& q = qps_[qi];
  q.rto_gen += (q.rto_gen % 2 == 0) ? 1 : 2;  // odd generation: a timer is armed
  Tick rto = static_cast<Tick>(4096) * kPsPerNs * (1ULL << std::min<std::uint32_t>(p_.timeout_exp, 31));
  schedule(sch_.now() + rto, kRto, qi, q.rto_gen);
}

void Network::host_rx(std::uint32_t host, std::uint32_t id) {
  Pkt k = pkts_[id];
  free_pkt(id);
  Qp& q = qps_[k.qp];
  const std::uint32_t qi = k.qp;
  switch (k.kind) {
    case kData: {
      if (k.psn == q.expected) {
        ++q.expected;
        q.nak_sent = false;
        q.st.rx_bytes += k.payload;
        if (listener_) listener_->on_data(qi, k.msg_tag, k.msg_off, k.payload);
        q.unacked += k.npk;
        if (q.unacked >= p_.ack_every || k.last) { q.unacked = 0; send_ctrl(host, kAck, qi, q.expected); }
      } else if (k.psn > q.expected) {
        if (!q.nak_sent) { q.nak_sent = true; send_ctrl(host, kNak, qi, q.expected); }
      } else {
        send_ctrl(host, kAck, qi, q.expected);  // duplicate: re-acknowledge
      }
      const Tick now = sch_.now(), iv = p_.dcqcn.cnp_interval_ps;
      if (k.ecn && p_.dcqcn.enabled && k.npk > 1) {
        // Chunk tier: the unit's packets stand for a stream that a packet-tier receiver would
        // have seen spread since this QP's previous unit; it would have sent a CNP for a marked
        // packet once per interval of that window, at most one per marked packet. One CNP
        // frame carries them.
        const Tick ws = q.seen_rx ? q.last_rx : now;
        const Tick from = q.any_cnp ? std::max(ws, q.last_cnp + iv) : ws;
        if (now >= from) {
          const std::uint64_t c = std::min<std::uint64_t>(k.marks, 1 + (now - from) / iv);
          q.any_cnp = true;
          q.last_cnp = from + (c - 1) * iv;
          q.st.cnp_sent += c;
          send_ctrl(host, kCnp, qi, c);
        }
      } else if (k.ecn && p_.dcqcn.enabled && (!q.any_cnp || now - q.last_cnp >= iv)) {
        q.any_cnp = true;
        q.last_cnp = now;
        ++q.st.cnp_sent;
        send_ctrl(host, kCnp, qi, 1);
      }
      q.seen_rx = true;
      q.last_rx = now;
      break;
    }
    case kAck:
    case kNak: {
      if (k.kind == kNak) ++q.st.naks;
      if (k.psn > q.acked) {
        q.acked = k.psn;
        q.retries = 0;
        while (!q.msgs.empty() && q.msgs.front().first_psn + q.msgs.front().npkts <= q.acked) {
          Msg m = q.msgs.front();
          q.msgs.pop_front();
          if (!q.msgs.empty()) q.ready_at = std::max(q.ready_at, sch_.now());
          if (listener_) listener_->on_write_done(qi, m.tag, true);
        }
        if (q.acked < q.next_psn) arm_rto(qi);
        else if (q.rto_gen % 2 == 1) ++q.rto_gen;  // disarm
      }
      if (k.kind == kNak && k.psn < q.next_psn) {  // go-back-N from the receiver's expected PSN
        q.st.retransmits += (q.next_psn - std::max(k.psn, q.acked)) * p_.packets_per_unit();
        q.next_psn = std::max(k.psn, q.acked);
      }
      host_kick(host);
      break;
    }
    case kCnp:  // carries the number of CNPs it stands for (1 in the packet tier)
      for (std::uint64_t i = 0; i < std::max<std::uint64_t>(k.psn, 1); ++i) {
        ++q.st.cnp_rcv;
        on_cnp(qi);
      }
      break;
    default: break;
  }
}

void Network::on_cnp(std::uint32_t qi) {
  Qp& q = qps_[qi];
  const DcqcnParams& d = p_.dcqcn;
  if (!d.enabled) return;
  q.rt = q.rc;
  q.rc = std::max(static_cast<double>(d.min_rate_Bps), q.rc * (1 - q.alpha / 2));
  q.alpha = (1 - d.g) * q.alpha + d.g;
  q.t_stage = q.bc_stage = 0;
  q.bytes_since = 0;
  q.cnp_this_period = true;
  ++q.timer_gen;  // restart the rate-increase timer
  schedule(sch_.now() + d.rate_increase_timer_ps, kRateTimer, qi, q.timer_gen);
  if (!q.limited) {
    q.limited = true;
    schedule(sch_.now() + d.alpha_timer_ps, kAlphaTimer, qi, ++q.alpha_gen);
  }
}

void Network::rate_increase(std::uint32_t qi) {
  Qp& q = qps_[qi];
  const DcqcnParams& d = p_.dcqcn;
  const std::uint32_t F = d.fast_recovery_stages;
  if (std::max(q.t_stage, q.bc_stage) < F) {
    // fast recovery: towards the target rate
  } else if (std::min(q.t_stage, q.bc_stage) > F) {
    q.rt += static_cast<double>(std::min(q.t_stage, q.bc_stage) - F) * static_cast<double>(d.rhai_Bps);  // hyper increase
  } else {
    q.rt += static_cast<double>(d.rai_Bps);  // additive increase
  }
  q.rt = std::min(q.rt, q.line);
  q.rc = std::min((q.rt + q.rc) / 2, q.line);
  if (q.rc >= q.line * (1 - 1e-9)) { q.rc = q.line; q.limited = false; ++q.timer_gen; ++q.alpha_gen; }
}

void Network::set_link_up(std::uint32_t node, std::uint32_t port, bool up) {
  Port& a = nodes_.at(node).ports.at(port);
  Port& b = nodes_[a.peer].ports[a.peer_port];
  a.up = b.up = up;
  if (up) {
    if (nodes_[node].is_switch) try_tx(node, port); else host_kick(node);
    if (nodes_[a.peer].is_switch) try_tx(a.peer, a.peer_port); else host_kick(a.peer);
  }
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
      else host_kick(node);
      break;
    }
    case kArrive: arrive(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b >> 32), static_cast<std::uint32_t>(b)); break;
    case kHostKick: host_kick(static_cast<std::uint32_t>(id)); break;
    case kPfcFrame: pfc_frame(static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(b & 0xffffffffu), (b >> 32) != 0); break;
    case kFlowStart:
      if (!qps_[id].msgs.empty()) flow_post(static_cast<std::uint32_t>(id));
      break;
    case kFlowDone:
      if (b == flow_gen_) flow_done(static_cast<std::uint32_t>(id));
      break;
    case kFlowRates:
      flow_rates_pending_ = false;
      if (!flow_seeds_.empty()) flow_rates();
      flow_next();
      break;
    case kFlowDeliver: {
      Flow& f = flows_[id];
      qps_[f.qp].st.rx_bytes += f.bytes;
      if (listener_) listener_->on_data(f.qp, f.tag, 0, f.bytes);
      schedule(sch_.now() + f.latency, kFlowAck, id);
      break;
    }
    case kFlowAck: {
      Flow& f = flows_[id];
      free_flows_.push_back(static_cast<std::uint32_t>(id));
      if (listener_) listener_->on_write_done(f.qp, f.tag, true);
      break;
    }
    case kRto: {
      Qp& q = qps_[id];
      if (b != q.rto_gen) break;  // stale
      ++q.rto_gen;                // disarmed
      if (q.acked >= q.next_psn && q.acked >= q.end_psn) break;
      ++q.st.timeouts;
      if (++q.retries > (q.retry_limit == ~0u ? p_.retry_count : q.retry_limit)) {
        q.failed = true;
        while (!q.msgs.empty()) {
          Msg m = q.msgs.front();
          q.msgs.pop_front();
          if (listener_) listener_->on_write_done(static_cast<std::uint32_t>(id), m.tag, false);
        }
        q.next_psn = q.end_psn = q.acked;
        break;
      }
      q.st.retransmits += (q.next_psn - q.acked) * p_.packets_per_unit();
      q.next_psn = q.acked;
      arm_rto(static_cast<std::uint32_t>(id));
      host_kick(q.src);
      break;
    }
    case kRateTimer: {
      Qp& q = qps_[id];
      if (b != q.timer_gen || !q.limited) break;
      ++q.t_stage;
      rate_increase(static_cast<std::uint32_t>(id));
      if (q.limited) schedule(sch_.now() + p_.dcqcn.rate_increase_timer_ps, kRateTimer, id, q.timer_gen);
      break;
    }
    case kAlphaTimer: {
      Qp& q = qps_[id];
      if (b != q.alpha_gen || !q.limited) break;
      if (!q.cnp_this_period) q.alpha = (1 - p_.dcqcn.g) * q.alpha;
      q.cnp_this_period = false;
      schedule(sch_.now() + p_.dcqcn.alpha_timer_ps, kAlphaTimer, id, q.alpha_gen);
      break;
    }
    default: break;
  }
}

}  // namespace models
