// The flow tier (docs/models/roce-nic.md): a flow-level solver standing for ideal congestion
// control.
#include <algorithm>
#include <cmath>

#include "models/net/flow_tier.h"

namespace models {

FlowTier::FlowTier(Scheduler& s, const NetParams& p, RcTransport& rc, FlowFabric& fabric, Sampler& samples)
    : sch_(s), p_(p), rc_(rc), fabric_(fabric), port_samples_(samples) {}

void FlowTier::bind_ports(std::vector<NetPort*> gport) {
  gport_ = std::move(gport);
  tiny_tx_.resize(gport_.size());
}

// Each QP sends its messages in order; the head message is a fluid flow along its ECMP path.
// Rates are max-min fair over the ports' capacities (progressive filling), recomputed whenever a
// flow starts or ends. The message lands one path latency after its last byte leaves (the flow's
// end) and is acknowledged one path latency later. No queues, ECN, DCQCN or PFC in this tier: it
// stands for ideal congestion control.

// A write posted as its QP's only message starts after WQE processing (later ones start when the
// one before is sent). Behind a one-packet message sent ahead (still leaving the NIC), it starts
// as that one ends, as it would behind a queued message.
void FlowTier::flow_posted(std::uint32_t qp) {
  const Qp& q = rc_.qp(qp);
  const Tick start = q.next_tx > sch_.now() ? q.next_tx : q.ready_at;
  if (!flow_send_ahead(qp, start)) schedule(start, kFlowStart, qp, q.flow_epoch);
}

// A free flow slot (reused, or a new one at the end).
std::uint32_t FlowTier::flow_alloc() {
  if (!free_flows_.empty()) {
    const std::uint32_t id = free_flows_.back();
    free_flows_.pop_back();
    flow_share_[id] = 0;  // a one-packet message takes no share (flow_done subtracts it)
    return id;
  }
  flows_.emplace_back();
  flow_share_.push_back(0);
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

// The slowest line rate along a path (bytes/s): where a one-packet message is serialised.
double FlowTier::path_min_Bps(const PortPath& path) const {
  double bps = 0;
  for (std::uint32_t g : path) {
    const double c = static_cast<double>(gport(g).Bps);
    if (bps == 0 || c < bps) bps = c;
  }
  return bps;
}

void FlowTier::flow_post(std::uint32_t qp, std::int64_t after) {
  Qp& q = rc_.qp(qp);
  if (q.flow_retries > rc_.retry_limit(q)) {
    // The last retry's timer expired too: the QP enters the error state, as the packet tiers'
    // does, and every write posted on it fails.
    q.flow_retries = 0;
    rc_.fail_qp(qp);
    return;
  }
  const Msg& m = q.msgs.front();
  const std::uint32_t id = flow_alloc();
  Flow& f = flows_[id];
  f = Flow{};
  f.qp = qp;
  f.tag = m.tag;
  f.bytes = m.bytes;
  f.signaled = m.signaled;
  f.left = static_cast<double>(p_.wire_bytes(m.bytes));
  cc_.flow_reset(id);
  double bps = 0;
  if (!flow_path(qp, f, &bps)) {
    // No path (a link down): as the packet tiers' sender, whose packets go unacknowledged, the
    // head's timer expires one retransmit timeout later and it tries again; the expiry after the
    // QP's retry count of retries fails the QP (above): retry_count + 1 timeouts after the first try.
    free_flows_.push_back(id);
    ++q.timeouts;
    ++q.flow_retries;
    schedule(sch_.now() + rc_.rto_ps(), kFlowStart, qp, q.flow_epoch);
    return;
  }
  q.flow_retries = 0;
  f.active = true;
  f.t_set = sch_.now();
  q.tx_bytes += m.bytes;
  const bool after_fluid = after >= 0 && !flows_[static_cast<std::size_t>(after)].tiny;
  if (p_.packets(m.bytes) == 1) {
    // One packet is not a fluid flow: it is serialised at the slowest port's line rate between
    // the flows' packets and does not change their rates (a notify record, a grant).
    f.tiny = true;
    const Tick end = sch_.now() + static_cast<Tick>(std::ceil(f.left / bps * 1e12));
    if (q.msgs.size() == 1 && !port_samples_.on()) flow_taken(id, end);  // nothing behind it: no end event (flow_send_ahead)
    else schedule(end, kFlowTinyDone, id);
    if (after_fluid) {  // the message before it was a fluid flow: its ports are refilled
      const auto& prev = flows_[static_cast<std::size_t>(after)].gports;
      flow_seeds_.insert(flow_seeds_.end(), prev.begin(), prev.end());
      flow_rates_soon();
    }
    return;
  }
  if (port_flows_.size() < gport_.size()) port_flows_.resize(gport_.size());
  for (std::uint32_t g : f.gports) port_flows_[g].push_back(id);
  if (after_fluid && flows_[static_cast<std::size_t>(after)].gports == f.gports) {
    const double share = flow_share_[static_cast<std::size_t>(after)];  // same paths, same rates
    flow_share_[id] = share;
    f.rate = cc_.on() ? cc_.rate(id) : share;
    if (port_alloc_.size() < gport_.size()) port_alloc_.resize(gport_.size(), 0.0);
    for (std::uint32_t g : f.gports) port_alloc_[g] += share;
    flow_project(id);
  } else {
    flow_seeds_.insert(flow_seeds_.end(), f.gports.begin(), f.gports.end());
    if (after_fluid) flow_seeds_.insert(flow_seeds_.end(), flows_[static_cast<std::size_t>(after)].gports.begin(), flows_[static_cast<std::size_t>(after)].gports.end());
  }
  flow_rates_soon();
}


// The path (egress ports, one-way latency, and in min_Bps the slowest line rate) a QP's message
// takes now, from the memo when the QP's entry is of the current epoch.
bool FlowTier::flow_path(std::uint32_t qp, Flow& f, double* min_Bps) const {
  if (path_memo_.empty()) {
    std::size_t n = 256;
    while (n < 4 * fabric_.flow_hosts() && n < (std::size_t{1} << 16)) n *= 2;
    path_memo_.resize(n);
  }
  PathMemo& m = path_memo_[qp & (path_memo_.size() - 1)];
  if (m.qp != qp || m.epoch != path_epoch_) {
    m.qp = qp;
    m.epoch = path_epoch_;
    m.latency = 0;
    m.path.n = 0;
    m.ok = fabric_.flow_walk(qp, m.path, m.latency);
    m.min_Bps = path_min_Bps(m.path);
  }
  if (min_Bps) *min_Bps = m.min_Bps;
  for (std::uint32_t i = 0; i < m.path.n; ++i) f.gports.p[f.gports.n++] = m.path.p[i];
  f.latency += m.latency;
  return m.ok;
}

// A one-packet message takes no line time from the fluid flows and changes no rate: once it
// starts, its end, delivery and acknowledgement are fixed. So when nothing is queued behind it,
// it is taken whole where it is posted (or where the fluid flow before it ends): its start and
// end are not events, only its delivery and acknowledgement are, and the QP remembers when it
// ends (next_tx), where a message posted meanwhile starts. Posted, its path is the one at the
// post, up to one WQE processing time (nic_latency) before it starts: a link that goes down in
// between does not fail it (docs/models/roce-nic.md#flow-tier). Port samples (which place its
// bytes at its end) keep the events.
bool FlowTier::flow_send_ahead(std::uint32_t qp, Tick start) {
  Qp& q = rc_.qp(qp);
  const Msg& m = q.msgs.front();
  if (q.msgs.size() != 1 || p_.packets(m.bytes) != 1 || port_samples_.on()) return false;
  Flow probe{};
  double bps = 0;
  if (!flow_path(qp, probe, &bps)) return false;  // the failure is taken at its start, as before
  const std::uint32_t id = flow_alloc();
  Flow& f = flows_[id];
  f = probe;
  f.qp = qp;
  f.tag = m.tag;
  f.bytes = m.bytes;
  f.signaled = m.signaled;
  f.tiny = true;
  f.t_set = start;
  const double wire = static_cast<double>(p_.wire_bytes(m.bytes));
  q.tx_bytes += m.bytes;
  flow_taken(id, start + static_cast<Tick>(std::ceil(wire / bps * 1e12)));
  return true;
}

void FlowTier::flow_taken(std::uint32_t id, Tick end) {
  Flow& f = flows_[id];
  Qp& q = rc_.qp(f.qp);
  f.active = false;
  for (std::uint32_t g : f.gports) {
    tiny_tx_[g].bytes += f.bytes;
    ++tiny_tx_[g].packets;
  }
  if (!flow_land(id, end + f.latency)) free_flows_.push_back(id);
  q.next_tx = end;
  q.msgs.pop_front();
}

// The flow's progress at its rate up to `now` taken: its port samples, the wire bytes left, and
// `now` as the time its rate holds from.
void FlowTier::flow_settle(Flow& f, Tick now) {
  const double left = flow_left(f, now);
  flow_sample(f, left);
  f.left = left;
  f.t_set = now;
}

void FlowTier::flow_rates_soon() {
  if (flow_rates_pending_) return;
  flow_rates_pending_ = true;
  schedule(sch_.now(), kFlowRates, 0);
}

void FlowTier::flow_project(std::uint32_t id) {
  Flow& f = flows_[id];
  f.stamp = ++flow_stamp_;
  if (f.rate <= 0) return;
  f.t_end = f.t_set + static_cast<Tick>(std::ceil(f.left / f.rate * 1e12));
  schedule(f.t_end, kFlowDone, id, f.stamp);
}

void FlowTier::flow_rates() {
  // The component of the changed ports: ports -> their flows -> those flows' ports, ...
  const std::size_t P = gport_.size();
  if (fill_cap_.size() < P) { fill_cap_.assign(P, 0); fill_cnt_.assign(P, 0); port_seen_.assign(P, 0); }
  if (port_alloc_.size() < P) port_alloc_.resize(P, 0.0);
  if (flow_seen_.size() < flows_.size()) { flow_seen_.resize(flows_.size(), 0); fill_frozen_.resize(flows_.size(), 0); }
  if (flow_bneck_.size() < flows_.size()) flow_bneck_.resize(flows_.size(), kNoPkt);
  fill_ports_.clear();
  fill_flows_.clear();
  for (std::uint32_t g : flow_seeds_)
    if (!port_seen_[g]) { port_seen_[g] = 1; fill_ports_.push_back(g); }
  // The component of the changed ports — unless it grows past kLocalFlows (a big fabric under an
  // all-to-all-like load joins nearly every flow through the spines): then a local refill of the
  // flows on the changed ports only, against the capacity the other flows leave at their current
  // rates (docs/models/roce-nic.md#flow-tier).
  // The search visits the changed ports first (breadth first), so the flows on them, with their
  // ports, come first in both outcomes: collect those in full, then go on past them only while
  // the component stays small, and on overflow cut back to what the changed ports gave (the
  // local refill's set, in the same order). Visiting flows beyond the changed ports only to
  // throw them away was most of this function's cache misses at 8192 ranks.
  constexpr std::size_t kLocalFlows = 64;
  const std::size_t seeds = fill_ports_.size();
  auto visit = [&](std::uint32_t g) {
    for (std::uint32_t id : port_flows_[g]) {
      if (flow_seen_[id]) continue;
      flow_seen_[id] = 1;
      fill_flows_.push_back(id);
      for (std::uint32_t h : flows_[id].gports)
        if (!port_seen_[h]) { port_seen_[h] = 1; fill_ports_.push_back(h); }
    }
  };
  for (std::size_t i = 0; i < seeds; ++i) visit(fill_ports_[i]);
  bool local = fill_flows_.size() > kLocalFlows;
  if (!local) {
    const std::size_t seed_flows = fill_flows_.size(), seed_ports = fill_ports_.size();
    for (std::size_t i = seeds; i < fill_ports_.size() && !local; ++i)
      for (std::uint32_t id : port_flows_[fill_ports_[i]]) {
        if (flow_seen_[id]) continue;
        flow_seen_[id] = 1;
        fill_flows_.push_back(id);
        for (std::uint32_t h : flows_[id].gports)
          if (!port_seen_[h]) { port_seen_[h] = 1; fill_ports_.push_back(h); }
        if (fill_flows_.size() > kLocalFlows) { local = true; break; }
      }
    if (local) {  // back to the changed ports' flows and those flows' ports
      for (std::size_t i = seed_flows; i < fill_flows_.size(); ++i) flow_seen_[fill_flows_[i]] = 0;
      for (std::size_t i = seed_ports; i < fill_ports_.size(); ++i) port_seen_[fill_ports_[i]] = 0;
      fill_flows_.resize(seed_flows);
      fill_ports_.resize(seed_ports);
    }
  }

  flow_seeds_.clear();
  for (std::uint32_t g : fill_ports_) port_seen_[g] = 0;
  const Tick now = sch_.now();
  fill_old_rate_.resize(fill_flows_.size());
  for (std::size_t i = 0; i < fill_flows_.size(); ++i) {  // settle each flow's progress at its old rate
    const std::uint32_t id = fill_flows_[i];
    Flow& f = flows_[id];
    fill_old_rate_[i] = f.rate;
    flow_settle(f, now);
    for (std::uint32_t h : f.gports) port_alloc_[h] -= flow_share_[id];
    f.rate = 0;
    flow_share_[id] = 0;
    fill_frozen_[id] = 0;  // flow_seen_ stays 1: "in this refill" until the end
  }
  std::sort(fill_ports_.begin(), fill_ports_.end());  // deterministic order
  if (!local) {
    for (std::uint32_t g : fill_ports_) {
      fill_cap_[g] = static_cast<double>(gport(g).Bps);
      fill_cnt_[g] = static_cast<std::uint32_t>(port_flows_[g].size());
    }
  } else {
    for (std::uint32_t g : fill_ports_) {
      fill_cap_[g] = std::max(0.0, static_cast<double>(gport(g).Bps) - port_alloc_[g]);
      fill_cnt_[g] = 0;
    }
    for (std::uint32_t id : fill_flows_)
      for (std::uint32_t h : flows_[id].gports) ++fill_cnt_[h];
  }
  // Progressive filling: repeatedly find the port with the smallest equal share of its remaining
  // capacity and freeze its unfrozen flows at that share.
  std::size_t left = fill_flows_.size();
  fill_open_.clear();  // ports with unfrozen flows, in fill_ports_ order; shrinks as they freeze
  for (std::uint32_t g : fill_ports_)
    if (fill_cnt_[g] > 0) fill_open_.push_back(g);
  while (left > 0) {
    double share = -1;
    std::size_t k = 0;
    for (std::uint32_t g : fill_open_)
      if (fill_cnt_[g] > 0) {
        fill_open_[k++] = g;
        const double s = fill_cap_[g] / fill_cnt_[g];
        if (share < 0 || s < share) share = s;
      }
    fill_open_.resize(k);
    if (share < 0) break;
    std::size_t frozen = 0;
    for (std::uint32_t g : fill_open_) {
      if (fill_cnt_[g] == 0 || fill_cap_[g] / fill_cnt_[g] > share * (1 + 1e-12)) continue;
      for (std::uint32_t id : port_flows_[g]) {
        if (fill_frozen_[id] || !flow_seen_[id]) continue;
        fill_frozen_[id] = 1;
        flow_share_[id] = share;
        // This port sets the flow's rate, unless another port of its path offers no more (a tie:
        // e.g. two flows each halved at its NIC meeting here fill it without overrunning it).
        bool tie = false;
        for (std::uint32_t h : flows_[id].gports)
          if (h != g && fill_cnt_[h] > 0 && fill_cap_[h] / fill_cnt_[h] <= share * (1 + 1e-9)) { tie = true; break; }
        flow_bneck_[id] = tie ? kNoPkt : g;
        for (std::uint32_t h : flows_[id].gports) { fill_cap_[h] = std::max(0.0, fill_cap_[h] - share); --fill_cnt_[h]; }
        ++frozen;
      }
    }
    if (frozen == 0) break;  // numerical safety
    left -= frozen;
  }
  for (std::uint32_t id : fill_flows_) {
    flow_seen_[id] = 0;
    flows_[id].rate = flow_share_[id];
    for (std::uint32_t h : flows_[id].gports) port_alloc_[h] += flow_share_[id];
  }
  for (std::uint32_t g : fill_ports_) flow_fanin(g, now);
  if (cc_.on())  // after flow_fanin, which watches the ports where flows meet
    for (std::uint32_t id : fill_flows_) flows_[id].rate = cc_.rate(id);
  // Re-project the refilled flows whose rate changed: a flow refilled at its old rate keeps its
  // projected completion (most refills on a balanced fabric change few rates). A projection is a
  // kFlowDone event carrying the flow's stamp; one whose stamp is no longer the flow's is stale and
  // dropped when it comes due (no separate completion heap).
  for (std::size_t i = 0; i < fill_flows_.size(); ++i) {
    const std::uint32_t id = fill_flows_[i];
    if (flows_[id].rate != fill_old_rate_[i] || fill_old_rate_[i] <= 0) flow_project(id);
  }
}

// Fan-in bookkeeping after a refill (NetPortStats::fanin_ps): the port is saturated (its flows'
// rates fill its line rate), they enter its switch through two or more ports, and either it is
// what sets the rate of at least one of them (the port progressive filling froze it at, with no
// other port of its path at the same share) or it leads to another switch. A port to a NIC that
// is full only because its senders' NICs split their rates (two halved flows meeting there) is
// not: there the packet tier's senders arrive paced to fit and build no queue (measured: no ECN
// mark, 9.7 KB at most). Between switches, flows merged over several hops arrive in bursts and a
// full port queues even at equal shares (an all-to-all at 2:1 whose uplinks carry 4 flows of 4
// NICs sending 4 each: 2 MB queues and 48356 marks in the packet tier). A flow's first hop is
// its NIC's port, not a switch's: not counted.
void FlowTier::flow_fanin(std::uint32_t g, Tick now) {
  Port& P = gport(g);
  bool fan = false;
  if (port_alloc_[g] >= static_cast<double>(P.Bps) * (1 - 1e-9)) {
    std::uint32_t first = kNoPkt;
    bool several = false, sets = false;
    for (std::uint32_t id : port_flows_[g]) {
      const auto& gp = flows_[id].gports;
      const auto it = std::find(gp.begin(), gp.end(), g);
      if (it == gp.begin() || it == gp.end()) continue;
      const std::uint32_t in = gport(*(it - 1)).peer_port;
      if (first == kNoPkt) first = in;
      else if (in != first) several = true;
      sets = sets || flow_bneck_[id] == g || P.peer_switch;
      if (several && sets) { fan = true; break; }
    }
  }
  if (fan && cc_.on()) cc_.watch(g);
  if (fan && P.fanin_since == kTickMax) P.fanin_since = now;
  else if (!fan && P.fanin_since != kTickMax) { P.st.fanin_ps += now - P.fanin_since; P.fanin_since = kTickMax; }
}

void FlowTier::flow_done(std::uint32_t id) {
  Flow& f = flows_[id];
  f.active = false;
  flow_sample(f, 0);
  f.left = 0;
  if (port_alloc_.size() >= gport_.size())
    for (std::uint32_t g : f.gports) port_alloc_[g] -= flow_share_[id];
  for (std::uint32_t g : f.gports) {
    PortStats& st = gport(g).st;
    st.tx_bytes += f.bytes;
    ++st.tx_packets;
    if (!f.tiny) st.busy_ps += serialization_ps(p_.wire_bytes(f.bytes), gport(g).Bps);  // a one-packet message takes no line time from the fluid flows
  }
  const bool keep = flow_land(id, sch_.now() + f.latency);
  // The QP's next message follows (its WQE was processed meanwhile).
  if (!f.tiny)
    for (std::uint32_t g : f.gports) {
      auto& v = port_flows_[g];
      v.erase(std::find(v.begin(), v.end(), id));
    }
  Qp& q = rc_.qp(f.qp);
  q.msgs.pop_front();
  if (!q.msgs.empty()) {
    flow_post(f.qp, id);
  } else if (!f.tiny) {
    flow_seeds_.insert(flow_seeds_.end(), f.gports.begin(), f.gports.end());
    flow_rates_soon();
  }
  if (!keep) free_flows_.push_back(id);  // after flow_post, which reads it as the message before
}

// The message lands at `at`: a delivery event, unless landing changes nothing at the receiver
// (the listener's data_is_silent: a data part of a timing payload). Then the QP counts the bytes
// received now, and a signaled message goes straight to its acknowledgement, one path latency
// after it lands, at the time the delivery event would have scheduled it. Returns false when no
// event is left for the flow (silent and unsignaled): its slot may be freed.
bool FlowTier::flow_land(std::uint32_t id, Tick at) {
  Flow& f = flows_[id];
  if (!listener_ || !listener_->data_is_silent(f.tag, f.bytes)) {
    schedule(at, kFlowDeliver, id, f.tag);  // b: the tag, for the listener's prefetch
    return true;
  }
  rc_.qp(f.qp).rx_bytes += f.bytes;
  if (!f.signaled) return false;
  schedule(at + f.latency, kFlowAck, id, f.tag);
  return true;
}


// The segment [t_set, now) of a flow at its rate: wire bytes left - `left`, busy for them at each
// port's line rate; the payload bytes are counted cumulatively, so their samples sum to f.bytes
// (as port_counters.tx_bytes counts them in this tier). A one-packet message (tiny) is not fluid
// and does not slow the fluid flows: its bytes count, its line time does not (util stays <= 1).
void FlowTier::flow_sample(Flow& f, double left) {
  const Tick now = sch_.now();
  if (!port_samples_.on()) return;
  const double wire = static_cast<double>(p_.wire_bytes(f.bytes));
  const double seg = std::max(0.0, f.left - left);
  std::uint64_t cum = left <= 0 ? f.bytes : static_cast<std::uint64_t>(std::llround((wire - left) / wire * static_cast<double>(f.bytes)));
  cum = std::max(f.sampled, std::min(cum, f.bytes));
  const std::uint64_t d = cum - f.sampled;
  f.sampled = cum;
  if (now <= f.t_set && d == 0) return;
  for (std::uint32_t g : f.gports) {
    const Tick busy = now <= f.t_set || f.tiny ? 0 : std::min<Tick>(now - f.t_set, static_cast<Tick>(seg / static_cast<double>(gport(g).Bps) * 1e12));  // rounded down: shares never sum past the line
    port_samples_.busy(g, f.t_set, std::max(now, f.t_set), busy, d);
  }
}



void FlowTier::set_flow_rate(std::uint32_t id, double rate) {
  Flow& f = flows_[id];
  flow_settle(f, sch_.now());
  f.rate = rate;
  flow_project(id);
}

void FlowTier::on_event(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = a >> 8;
  switch (type) {
    case kFlowStart:
      if (!rc_.qp(id).msgs.empty() && b == rc_.qp(id).flow_epoch) flow_post(static_cast<std::uint32_t>(id));
      break;
    case kFlowDone:
      if (flows_[id].active && flows_[id].stamp == b) flow_done(static_cast<std::uint32_t>(id));
      break;
    case kFlowTinyDone:
      flow_done(static_cast<std::uint32_t>(id));
      break;
    case kFlowRates:
      flow_rates_pending_ = false;
      if (!flow_seeds_.empty()) flow_rates();
      break;
    case kFlowDeliver: {
      Flow& f = flows_[id];
      rc_.qp(f.qp).rx_bytes += f.bytes;
      if (listener_) listener_->on_data(f.qp, f.tag, 0, f.bytes);
      if (f.signaled && !(listener_ && listener_->ack_is_silent(f.tag))) {
        schedule(sch_.now() + f.latency, kFlowAck, id, f.tag);
        break;
      }
      free_flows_.push_back(static_cast<std::uint32_t>(id));  // unsignaled, or nobody waits for the ack
      if (f.signaled) listener_->on_write_done_ahead(f.qp, f.tag, sch_.now() + f.latency);
      break;
    }
    case kFlowAck: {
      Flow& f = flows_[id];
      free_flows_.push_back(static_cast<std::uint32_t>(id));
      if (listener_) listener_->on_write_done(f.qp, f.tag, true);
      break;
    }
    default: break;
  }
}

// The event queue names the next event while this one runs: start loading the flow's record (a
// completion checks its stamp first) or the QP's.
void FlowTier::prefetch(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff, id = a >> 8;
  if (type == kFlowDone || type == kFlowDeliver || type == kFlowAck || type == kFlowTinyDone) {
    if (id < flows_.size()) {
      const char* f = reinterpret_cast<const char*>(&flows_[id]);
      __builtin_prefetch(f);
      __builtin_prefetch(f + 64);
    }
    // A delivery or acknowledgement carries the write's tag: what the listener will look up.
    if ((type == kFlowDeliver || type == kFlowAck) && listener_) listener_->prefetch_tag(b);
  } else if (type == kFlowStart) {
    if (id < rc_.qp_count()) __builtin_prefetch(&rc_.qp(static_cast<std::uint32_t>(id)));
  }
}

}  // namespace models
