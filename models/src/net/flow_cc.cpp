// The flow tier's congestion control (docs/models/roce-nic.md#flow-tier-congestion-control):
// DCQCN acting on fluid rates through fluid queues at the fan-in ports.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "models/net/policies.h"
#include "models/net/flow_cc.h"

namespace models {

// Max-min progressive filling (flow_tier.cpp) gives each flow its share of the ports, the rate
// ideal congestion control would hold it at. Real senders start at their line rate and DCQCN
// reacts to what the queues they build: a port where flows from several ingress ports meet
// (flow_fanin) is watched. While watched it holds a fluid queue, integrated every
// flow_cc_step_ps from the rates the flows arrive at (their QP's DCQCN rate, at most the NIC's
// equal share, or their share where an upstream queue drains), marked by the switch's ECN policy
// at enqueue; a flow's marks become CNPs at its receiver (at most one per cnp_interval), which
// reach its QP's DCQCN reaction point (nic/dcqcn.cpp, the packet tiers' own) after the queue's
// delay and the path's round trip. A flow then moves at its share while any port on its path has
// a queue to drain (the port stays busy), and at min(share, DCQCN rate) otherwise: the time a
// cut leaves the port idle is what the tier loses against ideal congestion control. PFC bounds a
// queue at xoff per ingress port that feeds it (the pause stops arrivals there).

FlowCc::FlowCc(Scheduler& s, const NetParams& p, RcTransport& rc, FlowFabric& fabric, FlowCcHost& host,
               const std::vector<NetPort*>& gport)
    : sch_(s), p_(p), rc_(rc), fabric_(fabric), host_(host), gport_(gport), rng_(p.seed ? p.seed : 1) {}

void FlowCc::on_event(std::uint64_t a, std::uint64_t /*b*/) {
  switch (a & 0xff) {
    case kStep: step_pending_ = false; step(); break;
    case kCnp: rc_.cc().on_cnp(static_cast<std::uint32_t>(a >> 8)); break;
    default: break;
  }
}

void FlowCc::watch(std::uint32_t g) {
  const std::size_t P = gport_.size();
  if (q_.size() < P) { q_.resize(P, 0.0); watched_.resize(P, 0); fifo_.resize(P); }
  if (watched_[g]) return;
  watched_[g] = 1;
  ports_.push_back(g);
  wake();
}

void FlowCc::wake() {
  if (step_pending_) return;
  step_pending_ = true;
  last_ = sch_.now();
  schedule(sch_.now() + p_.flow_cc_step_ps, kStep, 0);
}

double FlowCc::rate(std::uint32_t id) {
  const std::vector<Flow>& flows = host_.cc_flows();
  const Flow& f = flows[id];
  const double share = host_.cc_share(id);
  const double rc = rc_.cc().rate_Bps(f.qp);
  // A QP DCQCN holds below its line is followed every step until it is back there, even while
  // its share is lower still: its byte counter counts what it sends, as the packet tier's does.
  if (rc_.cc().next_rate_change(f.qp) != kTickMax) {
    if (is_limited_.size() < flows.size()) is_limited_.resize(flows.size(), 0);
    if (!is_limited_[id]) {
      is_limited_[id] = 1;
      limited_.push_back(id);
      wake();
    }
  } else {
    return share;
  }
  if (!q_.empty())
    for (std::uint32_t g : f.gports)
      if (q_[g] > 0) return share;  // a queue to drain keeps that port busy at its line rate
  return std::min(share, rc);
}

void FlowCc::step() {
  const std::vector<Flow>& flows = host_.cc_flows();
  const std::vector<std::vector<std::uint32_t>>& port_flows = host_.cc_port_flows();
  step_pending_ = true;  // rates set below schedule no tick of their own
  const Tick now = sch_.now();
  const double dt = static_cast<double>(now - last_) / 1e12;
  last_ = now;
  const double pkt = static_cast<double>(p_.wire_bytes(p_.mtu));
  const std::size_t F = flows.size();
  if (marks_.size() < F) marks_.resize(F, 0.0);
  if (ahead_.size() < F) { ahead_.resize(F, 0.0); send_.resize(F, 0.0); unsent_.resize(F, 0.0); }
  if (last_cnp_.size() < rc_.qp_count()) last_cnp_.resize(rc_.qp_count(), kTickMax);
  auto followed = [&](std::uint32_t id) { return flows[id].active && !flows[id].tiny; };

  // 1. What each followed flow's sender would put on the wire over the step: its QP's DCQCN
  // rate, at most an equal share of its NIC, while it has bytes not yet sent (those ahead of its
  // departures sit in the queues).
  follow_.clear();
  auto want = [&](std::uint32_t id) {
    if (!followed(id) || send_[id] == -1) return;
    send_[id] = -1;
    follow_.push_back(id);
  };
  for (std::uint32_t g : ports_)
    for (std::uint32_t id : port_flows[g]) want(id);
  for (std::uint32_t id : limited_) want(id);
  for (std::uint32_t id : follow_) {
    const Flow& f = flows[id];
    double a = 0;
    if (ahead_[id] < f.left_at(now)) {
      const std::uint32_t nic = f.gports.p[0];
      const double fair = static_cast<double>(gport(nic).Bps) / static_cast<double>(std::max<std::size_t>(1, port_flows[nic].size()));
      a = std::min(rc_.cc().rate_Bps(f.qp), fair);
    }
    send_[id] = a;
  }

  // 2. The fabric, hop by hop. A port passes what arrives when it has no queue and can carry it;
  // else it sends at its line rate, each flow's part in proportion to what it brings (FIFO). A
  // flow arrives at its first hop at its sending rate and at each later one at what the previous
  // passed it; the paths are short and loop-free, so sweeping the hops as often as the longest
  // path is long settles them. Flows not followed arrive at their rates.
  const std::size_t P = gport_.size();
  if (rel_seen_.size() < P) { rel_seen_.resize(P, 0); in_.resize(P, 0.0); bg_.resize(P, 0.0); fac_.resize(P, 1.0); w_.resize(P, 0.0); }
  if (fol_.size() < F) fol_.resize(F, 0);
  if (q_.size() < P) { q_.resize(P, 0.0); watched_.resize(P, 0); fifo_.resize(P); }
  rel_.clear();
  std::uint32_t hops = 0;
  for (std::uint32_t id : follow_) {
    fol_[id] = 1;
    hops = std::max(hops, flows[id].gports.n);
    for (std::uint32_t h : flows[id].gports)
      if (!rel_seen_[h]) { rel_seen_[h] = 1; rel_.push_back(h); }
  }
  for (std::uint32_t g : ports_)  // a watched port drains even with no flow left on it
    if (!rel_seen_[g]) { rel_seen_[g] = 1; rel_.push_back(g); }
  std::sort(rel_.begin(), rel_.end());
  for (std::uint32_t h : rel_) {
    double bg = 0;
    for (std::uint32_t id : port_flows[h])
      if (!fol_[id]) bg += flows[id].rate;
    bg_[h] = bg;
  }
  const std::size_t n = follow_.size();
  arr_.assign(n * PortPath::kMax, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < PortPath::kMax; ++j) arr_[i * PortPath::kMax + j] = send_[follow_[i]];
  for (std::uint32_t sweep = 0; sweep < hops; ++sweep) {
    for (std::uint32_t h : rel_) in_[h] = bg_[h];
    for (std::size_t i = 0; i < n; ++i) {
      const Flow& f = flows[follow_[i]];
      for (std::uint32_t j = 0; j < f.gports.n; ++j) in_[f.gports.p[j]] += arr_[i * PortPath::kMax + j];
    }
    for (std::uint32_t h : rel_) {
      const double C = static_cast<double>(gport(h).Bps), in = in_[h];
      fac_[h] = in <= 0 ? 1.0 : (q_[h] > 0 ? C / in : std::min(1.0, C / in));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Flow& f = flows[follow_[i]];
      double* arr = &arr_[i * PortPath::kMax];
      for (std::uint32_t j = 0; j + 1 < f.gports.n; ++j) arr[j + 1] = arr[j] * fac_[f.gports.p[j]];
    }
  }
  for (std::uint32_t h : rel_) in_[h] = bg_[h];
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = flows[follow_[i]];
    for (std::uint32_t j = 0; j < f.gports.n; ++j) in_[f.gports.p[j]] += arr_[i * PortPath::kMax + j];
  }

  // The queues. PFC pauses what would take a queue past xoff per ingress port feeding it: the
  // senders that feed it send only what fits. Bytes are marked at enqueue by the queue they find
  // and reach their receivers in order (a FIFO of (bytes, marking probability) per port): the
  // marks that leave with a flow's bytes are its marks.
  for (std::uint32_t h : rel_) {
    rel_seen_[h] = 0;
    NetPort& Pt = gport(h);
    const double C = static_cast<double>(Pt.Bps);
    double in = in_[h], q = q_[h];
    if (q <= 0 && in <= C * (1 + 1e-9)) { fac_[h] = -1; continue; }  // nothing queues here
    if (!watched_[h]) { watched_[h] = 1; ports_.push_back(h); }
    std::uint32_t ingress[8];
    std::uint32_t n_in = 0;
    for (std::uint32_t id : port_flows[h]) {
      const auto& gp = flows[id].gports;
      const auto it = std::find(gp.begin(), gp.end(), h);
      if (it == gp.begin() || it == gp.end()) continue;
      const std::uint32_t ip = gport(*(it - 1)).peer_port;
      bool seen = false;
      for (std::uint32_t j = 0; j < n_in; ++j) seen = seen || ingress[j] == ip;
      if (!seen && n_in < 8) ingress[n_in++] = ip;
    }
    const double xoff = static_cast<double>(fabric_.flow_xoff(h));
    const double cap = p_.pfc.enabled && xoff > 0 ? xoff * std::max<std::uint32_t>(1, n_in) : 1e300;
    if (q + (in - C) * dt > cap && in > 0) {  // paused: the senders feeding it send what fits
      const double fit = std::max(0.0, (cap - q) / dt + C) / in;
      for (std::uint32_t id : port_flows[h])
        if (fol_[id]) send_[id] *= fit;
      in = std::max(0.0, (cap - q) / dt + C);
    }
    auto& fifo = fifo_[h];
    const double pm = policy::ecn_mark_probability(p_.ecn, q);
    const double add = in * dt;
    if (add > 0) {
      if (!fifo.empty() && fifo.back().p == pm) fifo.back().bytes += add;
      else fifo.push_back(Seg{add, pm});
    }
    const double out = std::min(q + add, C * dt);
    double marked = 0, taken = 0;
    while (taken < out && !fifo.empty()) {
      Seg& sg = fifo.front();
      const double t = std::min(sg.bytes, out - taken);
      marked += t * sg.p;
      taken += t;
      sg.bytes -= t;
      if (sg.bytes <= 1e-6) fifo.pop_front();
    }
    q = std::max(0.0, q + add - out);
    if (q < 1e-3) { q = 0; fifo.clear(); }
    q_[h] = q;
    Pt.st.max_queue_bytes = std::max(Pt.st.max_queue_bytes, static_cast<std::uint64_t>(q));
    fac_[h] = taken > 0 ? marked / taken : 0;  // now: the marked fraction of what left
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t id = follow_[i];
    const Flow& f = flows[id];
    for (std::uint32_t j = 0; j < f.gports.n; ++j) {
      const std::uint32_t h = f.gports.p[j];
      const double frac = fac_[h];
      if (frac > 0) marks_[id] += f.rate * dt / pkt * frac;  // its bytes that left the port
    }
  }
  std::size_t k = 0;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const std::uint32_t g = ports_[i];
    NetPort& Pt = gport(g);
    if (q_[g] > 0 || in_[g] > static_cast<double>(Pt.Bps) * (1 + 1e-9) || Pt.fanin_since != kTickMax) {
      ports_[k++] = g;
    } else {
      watched_[g] = 0;  // its flows' rates once more below, then only while DCQCN limits them
      recheck_.insert(recheck_.end(), port_flows[g].begin(), port_flows[g].end());
    }
  }
  ports_.resize(k);

  // 3. The senders: the DCQCN byte counter counts what they sent; bytes ahead of departures.
  // Marks become CNPs at the receivers, at most one per QP per cnp_interval, one path latency
  // from the sender.
  for (std::uint32_t id : follow_) {
    const Flow& f = flows[id];
    const double a = send_[id];
    // Packet by packet, as the packet tier's NIC reports them (a byte-counter period's remainder
    // carries over to the next); the part of a packet not yet sent waits for the next step.
    unsent_[id] += a * dt;
    const auto whole = static_cast<std::uint64_t>(unsent_[id] / pkt);
    for (std::uint64_t k2 = 0; k2 < whole && k2 < 4096; ++k2) rc_.cc().on_sent(f.qp, static_cast<std::uint64_t>(pkt));
    unsent_[id] -= static_cast<double>(whole) * pkt;
    ahead_[id] = std::clamp(ahead_[id] + (a - f.rate) * dt, 0.0, f.left_at(now));
    Tick& last = last_cnp_[f.qp];
    // Marks are Bernoulli per packet: at least one of the step's packets is marked with
    // probability 1 - exp(-expected marks), drawn from the network's seeded PRNG (as the packet
    // tier draws each packet's), so flows sharing a queue are not cut in lockstep.
    const double m = marks_[id];
    marks_[id] = 0;
    if (m > 0 && (last == kTickMax || now - last >= p_.dcqcn.cnp_interval_ps) && rng_.uniform() < 1 - std::exp(-m)) {
      last = now;
      // The CNP crosses the path's links backwards, behind whatever queues there (the switches
      // forward it in the data FIFOs): the queueing delay of the reverse ports.
      double back = 0;
      for (std::uint32_t h : f.gports) {
        const NetPort& pt = gport(h);
        const std::uint32_t r = fabric_.flow_port_id(pt.peer, pt.peer_port);
        if (r < q_.size() && q_[r] > 0) back += q_[r] / static_cast<double>(gport(r).Bps);
      }
      schedule(now + f.latency + static_cast<Tick>(back * 1e12), kCnp, f.qp);
    }
  }

  // 4. The rates. Where a flow's path has a queue, it leaves the last such port in proportion to
  // its bytes in the network (FIFO: a queue's departures are what it holds) out of what that port
  // sends for the followed flows; past it, and on a path with no queue, it moves at what its last
  // hop passes. No faster than it sends once nothing of it is queued.
  auto last_queued = [&](const Flow& f) {
    for (std::uint32_t j = f.gports.n; j-- > 0;)
      if (q_[f.gports.p[j]] > 0) return f.gports.p[j];
    return kNoPkt;
  };
  for (std::uint32_t h : rel_) w_[h] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = last_queued(flows[follow_[i]]);
    if (b != kNoPkt) w_[b] += ahead_[follow_[i]];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t id = follow_[i];
    const Flow& f = flows[id];
    const double* arr = &arr_[i * PortPath::kMax];
    const std::uint32_t last = f.gports.p[f.gports.n - 1], b = last_queued(f);
    double r;
    if (b != kNoPkt && w_[b] > 0) {
      r = std::max(0.0, static_cast<double>(gport(b).Bps) - bg_[b]) * ahead_[id] / w_[b];
    } else {
      const double C = static_cast<double>(gport(last).Bps), in = in_[last];
      r = in > 0 ? arr[f.gports.n - 1] * std::min(1.0, C / in) : 0;
    }
    if (ahead_[id] <= 0) r = std::min(r, send_[id]);
    r = std::min(r, static_cast<double>(gport(f.gports.p[0]).Bps));
    if (r <= 0) r = send_[id] > 0 ? send_[id] : host_.cc_share(id);  // never stalled
    if (r <= 0) r = static_cast<double>(gport(f.gports.p[0]).Bps);
    if (r != f.rate) host_.set_flow_rate(id, r);
  }
  for (std::uint32_t id : recheck_)
    if (followed(id) && !fol_[id]) {
      const double r = rate(id);
      if (r != flows[id].rate) host_.set_flow_rate(id, r);
    }
  for (std::uint32_t id : follow_) fol_[id] = 0;
  recheck_.clear();
  k = 0;
  for (std::size_t i = 0; i < limited_.size(); ++i) {
    const std::uint32_t id = limited_[i];
    if (flows[id].active && rc_.cc().next_rate_change(flows[id].qp) != kTickMax) limited_[k++] = id;
    else is_limited_[id] = 0;
  }
  limited_.resize(k);
  if (!ports_.empty() || !limited_.empty()) schedule(now + p_.flow_cc_step_ps, kStep, 0);
  else step_pending_ = false;
}

}  // namespace models
