// The NIC's reliable-connected transport (docs/models/roce-nic.md): QPs, posting writes, egress
// arbitration paced by the congestion control, cumulative ACKs, NAK and timeout driven
// go-back-N, retry exhaustion, and CNP generation at the receiver.
#include <algorithm>

#include "models/nic/rc_transport.h"

#include "models/nic/dcqcn.h"

namespace models {

RcTransport::RcTransport(Scheduler& s, const RcParams& p, NicPort& port)
    : sch_(s), p_(p), port_(port), cc_(std::make_unique<Dcqcn>(p_.dcqcn, static_cast<CcHost&>(*this))) {}

RcTransport::~RcTransport() = default;

std::uint32_t RcTransport::create_qp(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint64_t hash, double line) {
  RcQp& q = qps_.emplace_back();
  q.src = src;
  q.dst = dst;
  q.sport = sport;
  q.hash = hash;  // the ECMP policy's flow key (the network computes it)
  auto id = static_cast<std::uint32_t>(qps_.size() - 1);
  // The packet and chunk tiers' transport and congestion-control state; the flow tier's rates
  // are max-min fair, and it keeps neither.
  if (!p_.flow) qtx_.emplace_back();
  if (!p_.flow || p_.flow_cc) cc_->add_qp(id, line);  // the flow tier's DCQCN acts on fluid rates (net/flow_cc.cpp)
  RcHost& n = hosts_[src];
  qps_.back().pos = static_cast<std::uint32_t>(n.qps.size());
  n.qps.push_back(id);
  n.qp_active.resize((n.qps.size() + 63) / 64, 0);
  return id;
}

void RcTransport::set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps) {
  RcQp& q = qps_.at(qp);
  // Every RDMA task sets its QP's cap, nearly always to what it was: then the congestion
  // control's state is left as it is (set_line_rate with the same line changes nothing) without
  // reading the host's port and that state (two cache misses per task at 8192 ranks).
  if (q.cap_set && q.cap_Bps == Bps) return;
  q.cap_set = true;
  q.cap_Bps = Bps;
  const double port = static_cast<double>(port_.nic_line_Bps(q.src));
  const double line = Bps ? std::min(port, static_cast<double>(Bps)) : port;
  if (!p_.flow) cc_->set_line_rate(qp, line);
}

void RcTransport::post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag, bool signaled) {
  RcQp& q = qps_.at(qp);
  const std::uint64_t unit = p_.unit();
  std::uint64_t npkts = bytes == 0 ? 1 : (bytes + unit - 1) / unit;  // units (packets in the packet tier)
  if (q.msgs.empty()) q.ready_at = sch_.now() + p_.nic_latency_ps;
  q.msgs.push_back(RcMsg{tag, bytes, q.end_psn, npkts, signaled});
  q.end_psn += npkts;
  qp_activate(qp);
  if (q.failed) { if (listener_) listener_->on_write_done(qp, tag, false); q.msgs.pop_back(); return; }
  if (flow_) {  // the flow tier starts the head message; later ones when it is sent
    if (q.msgs.size() == 1) flow_->flow_posted(qp);
    return;
  }
  schedule(std::max(sch_.now(), q.ready_at), kHostKick, q.src);
}

void RcTransport::fail_qp(std::uint32_t qp) {
  RcQp& q = qps_[qp];
  q.failed = true;
  while (!q.msgs.empty()) {
    const RcMsg m = q.msgs.front();
    q.msgs.pop_front();
    if (listener_) listener_->on_write_done(qp, m.tag, false);
  }
}

void RcTransport::reset_qp(std::uint32_t qp) {
  RcQp& q = qps_.at(qp);
  std::vector<std::uint64_t> flushed;
  // The flow tier's head may be on the wire, unless it waits to try again (its path was down).
  const std::size_t keep = p_.flow && !q.msgs.empty() && q.flow_retries == 0 ? 1 : 0;
  if (p_.flow && q.flow_retries) {
    q.flow_retries = 0;
    ++q.flow_epoch;  // its pending retry is void
  }
  if (q.msgs.size() > keep) {
    RcMsgQueue left;
    for (const RcMsg& m : q.msgs) {
      if (left.size() < keep) left.push_back(m);
      else if (m.signaled) flushed.push_back(m.tag);
    }
    q.msgs = std::move(left);
  }
  if (!p_.flow) {
    RcQpTx& x = qtx_[qp];
    x.next_psn = x.acked = x.expected = q.end_psn;  // what is still on the wire is a duplicate now
    x.unacked = 0;
    x.rto_at = kTickMax;
    x.retries = 0;
    x.nak_sent = false;
  }
  if (listener_)
    for (std::uint64_t tag : flushed) listener_->on_write_done(qp, tag, false);
}

std::uint64_t RcTransport::psn_bytes(const RcQp& q, std::uint64_t psn, std::uint64_t* tag, std::uint64_t* off, bool* last) const {
  for (const RcMsg& m : q.msgs)
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

void RcTransport::send_ctrl(std::uint32_t host, PktKind kind, std::uint32_t qp, std::uint64_t psn) {
  Pkt k;
  k.kind = kind;
  k.qp = qp;
  k.src = host;
  k.dst = qps_[qp].src;
  k.psn = psn;
  k.hash = qps_[qp].hash;
  k.bytes = p_.ctrl_bytes;
  port_.nic_enqueue(host, k, true);  // control frames go ahead of queued data
  kick(host);
}

// A QP with unsent work on a host whose port is down arms its retransmit timer as if its next
// packet had gone out (the port drops it): go-back-N then retries until the retry count is
// exhausted and the QP fails, reporting its writes, as a real RC QP does behind a dead port. A
// port that comes back up before sends on.
void RcTransport::stalled_rtos(std::uint32_t host) {
  const RcHost& n = hosts_[host];
  for (std::size_t w = 0; w < n.qp_active.size(); ++w)
    for (std::uint64_t m = n.qp_active[w]; m != 0; m &= m - 1) {
      const std::uint32_t qi = n.qps[(w << 6) + static_cast<std::size_t>(__builtin_ctzll(m))];
      const RcQp& q = qps_[qi];
      const RcQpTx& x = qtx_[qi];
      if (!q.failed && std::max(x.next_psn, x.acked) < q.end_psn && x.rto_at == kTickMax) arm_rto(qi);
    }
}

void RcTransport::kick(std::uint32_t host) {
  if (p_.flow) return;  // the flow tier sends messages as flows (net/flow_tier.cpp), never packets
  switch (port_.nic_state(host)) {
    case NicPort::State::kDown:  // the NIC's port is down: what it sends is lost, so its QPs' retransmit timers run
      stalled_rtos(host);
      return;
    case NicPort::State::kBlocked: return;  // busy or paused
    case NicPort::State::kQueued: port_.nic_send(host); return;
    case NicPort::State::kIdle: break;
  }
  RcHost& n = hosts_[host];
  // Egress arbitration: round-robin over QPs whose rate limiter and WQE processing allow a packet.
  // Only the QPs marked active are visited (set when a write is posted or a go-back-N rewinds,
  // cleared here when found with nothing to send): the same choice as scanning them all, in
  // time that follows the QPs with work, not every QP the host ever connected.
  const Tick now = sch_.now();
  Tick wake = kTickMax;
  const std::size_t nq = n.qps.size();
  const std::size_t start = n.rr < nq ? n.rr : 0;
  for (int pass = 0; pass < 2; ++pass) {
    const std::size_t lo = pass == 0 ? start : 0, hi = pass == 0 ? nq : start;
    for (std::size_t w = lo >> 6; lo < hi && w <= (hi - 1) >> 6; ++w) {
      std::uint64_t m = n.qp_active[w];
      if (w == (lo >> 6)) m &= ~0ULL << (lo & 63);
      if (w == ((hi - 1) >> 6) && (hi & 63) != 0) m &= (1ULL << (hi & 63)) - 1;
      for (; m != 0; m &= m - 1) {
        const std::size_t pos = (w << 6) + static_cast<std::size_t>(__builtin_ctzll(m));
        const std::uint32_t qi = n.qps[pos];
        RcQp& q = qps_[qi];
        RcQpTx& x = qtx_[qi];
        // Never resend what is acknowledged; an ACK of packets sent before a go-back-N rewind can
        // leave next_psn behind acked, and when that ACK covers everything, nothing is left to send
        // (clamping after this check would send a packet past the last message).
        if (x.next_psn < x.acked) x.next_psn = x.acked;
        if (q.failed || x.next_psn >= q.end_psn) { n.qp_active[w] &= ~(1ULL << (pos & 63)); continue; }
        Tick t = std::max(q.next_tx, q.ready_at);
        if (q.next_tx > now && q.next_tx >= q.ready_at) {
          // The rate limiter's gap in progress: a rate changed since the last packet (a timer
          // tick) shortens or stretches what is left of it, as a token bucket refilled at the new rate.
          const double r = cc_->rate_Bps(qi);
          if (r != x.pace_Bps && x.pace_Bps > 0) {
            q.next_tx = now + static_cast<Tick>(static_cast<double>(q.next_tx - now) * x.pace_Bps / r);
            x.pace_Bps = r;
            t = std::max(q.next_tx, q.ready_at);
          }
          if (t > now) { wake = std::min({wake, t, cc_->next_rate_change(qi)}); continue; }
        } else if (t > now) {
          wake = std::min(wake, t);
          continue;
        }
        n.rr = static_cast<std::uint32_t>((pos + 1) % nq);
        const double rc = cc_->rate_Bps(qi);
        x.pace_Bps = rc;
        Pkt k;
        k.kind = kData;
        k.qp = qi;
        k.src = host;
        k.dst = q.dst;
        k.hash = q.hash;
        k.psn = x.next_psn;
        k.payload = psn_bytes(q, x.next_psn, &k.msg_tag, &k.msg_off, &k.last);
        k.npk = static_cast<std::uint32_t>(p_.packets(k.payload));
        k.sent_at = now;
        k.bytes = p_.wire_bytes(k.payload);
        k.rate = rc;
        ++x.next_psn;
        q.tx_bytes += k.payload;
        q.next_tx = now + serialization_ps(k.bytes, static_cast<std::uint64_t>(rc));
        cc_->on_sent(qi, k.bytes);
        if (x.rto_at == kTickMax) arm_rto(qi);
        port_.nic_enqueue(host, k, false);
        port_.nic_send(host);
        return;
      }
    }
  }
  if (wake != kTickMax) schedule(wake, kHostKick, host);
}

void RcTransport::qp_activate(std::uint32_t qi) {
  const RcQp& q = qps_[qi];
  hosts_[q.src].qp_active[q.pos >> 6] |= 1ULL << (q.pos & 63);
}

// The retransmit timer is a per-QP deadline with at most one queued event: arming moves the
// deadline, and the event, when it finds the deadline moved on, re-queues itself there. (An event
// per arm left one record per ACK in the queue, none of which ever expired before the run ended.)
void RcTransport::arm_rto(std::uint32_t qi) {
  RcQpTx& q = qtx_[qi];
  const Tick rto = rto_ps();
  q.rto_at = sch_.now() + rto;
  if (!q.rto_queued) {
    q.rto_queued = true;
    schedule(q.rto_at, kRto, qi);
  }
}

void RcTransport::on_rto(std::uint32_t qi) {
  RcQp& q = qps_[qi];
  RcQpTx& x = qtx_[qi];
  x.rto_queued = false;
  if (x.rto_at == kTickMax) return;  // disarmed since
  if (sch_.now() < x.rto_at) {       // re-armed since: wait for the current deadline
    x.rto_queued = true;
    schedule(x.rto_at, kRto, qi);
    return;
  }
  x.rto_at = kTickMax;  // fired
  if (x.acked >= x.next_psn && x.acked >= q.end_psn) return;
  ++q.timeouts;
  if (++x.retries > retry_limit(q)) {
    fail_qp(qi);
    x.next_psn = q.end_psn = x.acked;
    return;
  }
  x.retransmits += (x.next_psn - x.acked) * p_.packets_per_unit();
  port_.nic_count(q.src, SampleCount::Retransmit, (x.next_psn - x.acked) * p_.packets_per_unit());
  x.next_psn = x.acked;
  qp_activate(qi);
  arm_rto(qi);
  kick(q.src);
}

void RcTransport::on_rx(std::uint32_t host, const Pkt& k) {
  RcQp& q = qps_[k.qp];
  RcQpTx& x = qtx_[k.qp];
  const std::uint32_t qi = k.qp;
  switch (k.kind) {
    case kData: {
      // A QP in the error state (retries exhausted) takes nothing: a packet of it still on the
      // wire, e.g. queued behind a port that came up again, belongs to a write already failed.
      if (q.failed) break;
      if (k.psn == x.expected) {
        ++x.expected;
        x.nak_sent = false;
        q.rx_bytes += k.payload;
        if (listener_) listener_->on_data(qi, k.msg_tag, k.msg_off, k.payload);
        x.unacked += k.npk;
        if (x.unacked >= p_.ack_every || k.last) { x.unacked = 0; send_ctrl(host, kAck, qi, x.expected); }
      } else if (k.psn > x.expected) {
        if (!x.nak_sent) { x.nak_sent = true; send_ctrl(host, kNak, qi, x.expected); }
      } else {
        send_ctrl(host, kAck, qi, x.expected);  // duplicate: re-acknowledge
      }
      // CNP generation (DCQCN's notification point): at most one CNP per QP per interval.
      const Tick now = sch_.now(), iv = p_.dcqcn.cnp_interval_ps;
      if (k.ecn && p_.dcqcn.enabled && k.npk > 1) {
        chunk_cnp(host, qi, k, now);  // the chunk tier's units stand for several packets
      } else if (k.ecn && p_.dcqcn.enabled && (!x.any_cnp || now - x.last_cnp >= iv)) {
        x.any_cnp = true;
        x.last_cnp = now;
        ++x.cnp_sent;
        send_ctrl(host, kCnp, qi, 1);
      }
      x.seen_rx = true;
      x.last_rx = now;
      break;
    }
    case kAck:
    case kNak: {
      if (k.kind == kNak) ++x.naks;
      if (k.psn > x.acked) {
        x.acked = k.psn;
        if (x.next_psn < x.acked) x.next_psn = x.acked;  // never behind what is acknowledged
        x.retries = 0;
        while (!q.msgs.empty() && q.msgs.front().first_psn + q.msgs.front().npkts <= x.acked) {
          RcMsg m = q.msgs.front();
          q.msgs.pop_front();
          if (!q.msgs.empty()) q.ready_at = std::max(q.ready_at, sch_.now());
          if (listener_ && m.signaled) listener_->on_write_done(qi, m.tag, true);
        }
        if (x.acked < x.next_psn) arm_rto(qi);
        else x.rto_at = kTickMax;  // disarm
      }
      if (k.kind == kNak && k.psn < x.next_psn) {  // go-back-N from the receiver's expected PSN
        x.retransmits += (x.next_psn - std::max(k.psn, x.acked)) * p_.packets_per_unit();
        port_.nic_count(host, SampleCount::Retransmit, (x.next_psn - std::max(k.psn, x.acked)) * p_.packets_per_unit());
        x.next_psn = std::max(k.psn, x.acked);
        qp_activate(qi);
      }
      kick(host);
      break;
    }
    case kCnp:  // carries the number of CNPs it stands for (1 in the packet tier)
      port_.nic_count(host, SampleCount::Cnp, std::max<std::uint64_t>(k.psn, 1));
      x.cnp_rcv += std::max<std::uint64_t>(k.psn, 1);
      if (k.psn > 1) cc_->on_cnps(qi, k.psn, p_.dcqcn.cnp_interval_ps);
      else cc_->on_cnp(qi);
      break;
    default: break;
  }
}

// Chunk tier: the unit's packets stand for a stream that a packet-tier receiver would have seen
// spread since this QP's previous unit, but not before the unit left its sender (a QP that sat
// idle, between steps or waiting for its peer, sent no packets in between: its first unit after
// the pause stands for its own packets only); the receiver would have sent a CNP for a marked
// packet once per interval of that window, at most one per marked packet. One CNP frame carries them.
void RcTransport::chunk_cnp(std::uint32_t host, std::uint32_t qi, const Pkt& k, Tick now) {
  RcQpTx& q = qtx_[qi];
  const Tick iv = p_.dcqcn.cnp_interval_ps;
  const Tick ws = q.seen_rx ? std::max(q.last_rx, std::min(k.sent_at, now)) : now;
  const Tick from = q.any_cnp ? std::max(ws, q.last_cnp + iv) : ws;
  if (now >= from) {
    const std::uint64_t c = std::min<std::uint64_t>(k.marks, 1 + (now - from) / iv);
    q.any_cnp = true;
    q.last_cnp = from + (c - 1) * iv;
    q.cnp_sent += c;
    send_ctrl(host, kCnp, qi, c);
  }
}

QpStats RcTransport::qp_stats(std::uint32_t qp) const {
  const RcQp& q = qps_[qp];
  QpStats st;
  st.tx_bytes = q.tx_bytes;
  st.rx_bytes = q.rx_bytes;
  st.timeouts = q.timeouts;
  if (!p_.flow) {
    const RcQpTx& x = qtx_[qp];
    st.retransmits = x.retransmits;
    st.naks = x.naks;
    st.cnp_rcv = x.cnp_rcv;
    st.cnp_sent = x.cnp_sent;
  }
  return st;
}

void RcTransport::on_event(std::uint64_t a, std::uint64_t) {
  const std::uint64_t type = a & 0xff;
  const auto id = static_cast<std::uint32_t>(a >> 8);
  if (type == kHostKick) kick(id);
  else if (type == kRto) on_rto(id);
}

void RcTransport::prefetch(std::uint64_t a, std::uint64_t) {
  if ((a & 0xff) == kHostKick) {
    const std::uint32_t host = static_cast<std::uint32_t>(a >> 8);
    __builtin_prefetch(&hosts_[host]);
    port_.nic_prefetch(host);
  }
}

void RcTransport::prefetch_kick(std::uint32_t host) const {
  if (host >= hosts_.size()) return;
  const RcHost& n = hosts_[host];
  if (n.rr < n.qps.size()) {
    __builtin_prefetch(&n.qp_active[n.rr >> 6]);
    __builtin_prefetch(&n.qps[n.rr]);
  }
}

}  // namespace models
