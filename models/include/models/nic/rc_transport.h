// Reliable-connected transport of the RoCE NIC (docs/models/roce-nic.md): RcTransport owns the QPs,
// their send state (messages, PSNs, go-back-N, retransmit timer), receive state (expected PSN, ACK
// coalescing, CNP generation), each host's egress arbitration and the congestion control
// (models/nic/congestion_control.h) that paces it. It reaches the fabric only through NicPort (its
// host's port: state, enqueue, send) and, in the flow tier, hands messages to an RcFlowTier.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "models/block_store.h"
#include "models/event_queue.h"
#include "models/nic/congestion_control.h"
#include "models/nic/dcqcn_params.h"
#include "models/packet.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

class NetworkListener {
 public:
  virtual ~NetworkListener() = default;
  /// A posted write is fully acknowledged (or failed: the QP exhausted its retries).
  virtual void on_write_done(std::uint32_t qp, std::uint64_t tag, bool ok) = 0;
  /// Bytes of a write arrived in order at the receiver: [offset, offset+len) of write `tag`.
  virtual void on_data(std::uint32_t qp, std::uint64_t tag, std::uint64_t offset, std::uint64_t len) {}
  /// on_data for write `tag` of `len` bytes would change nothing (no bytes kept, no notify, no
  /// forwarding), whenever it came: the flow tier then schedules no delivery event for it.
  virtual bool data_is_silent(std::uint64_t /*tag*/, std::uint64_t /*len*/) const { return false; }
  /// A successful on_write_done for write `tag` would change nothing anyone sees, whenever it
  /// came (no task waits for it): the flow tier then reports it at the delivery instead of
  /// spending an event on the acknowledgement one path latency later.
  virtual bool ack_is_silent(std::uint64_t /*tag*/) const { return false; }
  /// on_write_done reported ahead, at the delivery, for an acknowledgement that would come at
  /// `acked_at` (ack_is_silent): what waits on acknowledgement times (an RDMA fence) reads it.
  virtual void on_write_done_ahead(std::uint32_t qp, std::uint64_t tag, Tick /*acked_at*/) { on_write_done(qp, tag, true); }
  /// An event about write `tag` runs next: start loading what on_data / on_write_done will read
  /// (a cache hint only).
  virtual void prefetch_tag(std::uint64_t /*tag*/) const {}
};

struct QpStats {
  std::uint64_t tx_bytes = 0, rx_bytes = 0, retransmits = 0, timeouts = 0, naks = 0, cnp_rcv = 0, cnp_sent = 0;
};

/// A posted write: `npkts` units from PSN `first_psn`.
struct RcMsg {
  std::uint64_t tag, bytes, first_psn, npkts;
  bool signaled = true;  // false: its completion is reported only when it fails (post_write)
};

/// A QP's posted messages, oldest first: a vector and the index of its head. Allocates nothing
/// until the first post (a std::deque allocates ~600 bytes per QP up front, and clos-1024's
/// all-reduce makes hundreds of thousands of QPs); emptied in place, compacted when the popped
/// head is most of it. References are invalidated by push_back (the network holds none across one).
class RcMsgQueue {
 public:
  bool empty() const { return head_ == v_.size(); }
  std::size_t size() const { return v_.size() - head_; }
  RcMsg& front() { return v_[head_]; }
  const RcMsg& front() const { return v_[head_]; }
  void push_back(const RcMsg& m) {
    if (head_ >= 16 && 2 * head_ >= v_.size()) { v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_)); head_ = 0; }
    v_.push_back(m);
  }
  void pop_front() { if (++head_ == v_.size()) clear(); }
  void pop_back() { v_.pop_back(); if (head_ == v_.size()) clear(); }
  void clear() { v_.clear(); head_ = 0; }
  const RcMsg* begin() const { return v_.data() + head_; }
  const RcMsg* end() const { return v_.data() + v_.size(); }

 private:
  std::vector<RcMsg> v_;
  std::size_t head_ = 0;
};

/// What every tier keeps of a QP (the flow tier keeps only this): 120 bytes, fields by size, no
/// padding holes. clos-1024's all-to-all makes tens of millions of QPs; the packet and chunk
/// tiers' go-back-N, ACK and CNP state is a separate RcQpTx that the flow tier never allocates.
struct RcQp {
  std::uint64_t hash = 0;
  RcMsgQueue msgs;                 // posted, not yet fully acknowledged
  std::uint64_t end_psn = 0;       // PSN after the last posted packet
  Tick next_tx = 0;                // rate limiter: earliest next packet start; flow tier: the end of
                                   // the one-packet message last sent ahead (flow_send_ahead)
  Tick ready_at = 0;               // WQE processing of the head message
  std::uint64_t cap_Bps = 0;       // cap_set: what set_qp_rate_cap was given last
  std::uint64_t tx_bytes = 0, rx_bytes = 0, timeouts = 0;  // QpStats
  std::uint32_t src = 0, dst = 0;
  std::uint32_t pos = 0;           // index in its host's QP list (and its bit in RcHost::qp_active)
  std::uint32_t retry_limit = ~0u; // ~0u: NetParams::retry_count
  std::uint16_t sport = 0;
  bool failed = false;
  bool cap_set = false;            // set_qp_rate_cap was called
  std::uint8_t flow_retries = 0;   // flow tier: timeouts in a row of the head message (its path down)
  std::uint8_t flow_epoch = 0;     // flow tier: a start event of another epoch (before a reset) is stale
};

/// The packet and chunk tiers' transport state of a QP (96 bytes): PSNs, the retransmit timer,
/// the receiver's expected PSN and ACK coalescing, CNP pacing, and the counters only they move.
struct RcQpTx {
  std::uint64_t next_psn = 0;      // next PSN to transmit
  std::uint64_t acked = 0;         // all PSNs below are acknowledged
  Tick rto_at = kTickMax;          // retransmit deadline (kTickMax: not armed); moves on with every ACK
  // Receiver side
  std::uint64_t expected = 0, unacked = 0;
  Tick last_cnp = 0, last_rx = 0;  // last CNP sent, last data unit received
  std::uint64_t retransmits = 0, naks = 0, cnp_rcv = 0, cnp_sent = 0;  // QpStats
  std::uint32_t retries = 0;
  double pace_Bps = 0;             // the rate the gap to next_tx was paced at (rate limiter)
  bool rto_queued = false;         // one timer event of this QP is in the event queue (at or before rto_at)
  bool nak_sent = false;
  bool any_cnp = false, seen_rx = false;
};



/// What the transport reads of the network's configuration (filled from NetParams by the network).
struct RcParams {
  bool flow = false;                 ///< flow tier: messages go to the RcFlowTier as fluid flows
  bool flow_cc = false;              ///< flow tier with DCQCN: the congestion control keeps QP state
  std::uint32_t mtu = 4096, unit_bytes = 0, header_bytes = 58, ctrl_bytes = 64, ack_every = 4;
  std::uint32_t timeout_exp = 20, retry_count = 7;
  Tick nic_latency_ps = 0;
  DcqcnParams dcqcn;
  // Framing, as NetParams's (models/net/net_params.h).
  std::uint32_t unit() const { return unit_bytes > mtu ? unit_bytes : mtu; }
  std::uint64_t packets(std::uint64_t payload) const { return payload <= mtu ? 1 : (payload + mtu - 1) / mtu; }
  std::uint64_t wire_bytes(std::uint64_t payload) const { return payload + packets(payload) * header_bytes; }
  std::uint64_t packets_per_unit() const { return packets(unit()); }
};

/// A host's NIC port as the transport sees it (the packet and chunk tiers); the network
/// implements it over its switch fabric.
class NicPort {
 public:
  enum class State : std::uint8_t { kDown, kBlocked, kQueued, kIdle };  // down / busy or paused / has a queue / free and empty
  virtual ~NicPort() = default;
  virtual State nic_state(std::uint32_t host) const = 0;
  virtual std::uint64_t nic_line_Bps(std::uint32_t host) const = 0;
  /// Put `k` on the port's egress queue: at its head (`ahead`: control frames) or its tail.
  virtual void nic_enqueue(std::uint32_t host, const Pkt& k, bool ahead) = 0;
  /// Start sending what is queued (the port is free).
  virtual void nic_send(std::uint32_t host) = 0;
  /// Counters over time (models/sampler.h) of the host's port.
  virtual void nic_count(std::uint32_t host, SampleCount c, std::uint64_t n) = 0;
  virtual void nic_prefetch(std::uint32_t /*host*/) const {}
};

/// The flow tier (models/net/flow_tier.h): it takes the QPs' messages as fluid flows.
class RcFlowTier {
 public:
  virtual ~RcFlowTier() = default;
  /// A write was posted on `qp` and is its only message: start it.
  virtual void flow_posted(std::uint32_t qp) = 0;
};

/// A host's QPs and their egress arbitration (round-robin over the QPs with work).
struct RcHost {
  std::vector<std::uint32_t> qps;        // QPs sending from here
  std::uint32_t rr = 0;                  // round-robin pointer over qps
  std::vector<std::uint64_t> qp_active;  // bit i set when qps[i] may have packets to send
};

class RcTransport final : public EventHandler, private CcHost {
 public:
  RcTransport(Scheduler& s, const RcParams& p, NicPort& port);
  ~RcTransport() override;
  void set_listener(NetworkListener* l) { listener_ = l; }
  void set_flow_tier(RcFlowTier* f) { flow_ = f; }
  /// A network node was added (hosts and switches share the numbering).
  void add_node() { hosts_.emplace_back(); }

  std::uint32_t create_qp(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint64_t hash, double line_Bps);
  void post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag, bool signaled);
  void set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps);
  void set_qp_retry_count(std::uint32_t qp, std::uint32_t n) { qps_.at(qp).retry_limit = n; }
  void reset_qp(std::uint32_t qp);
  /// The QP enters the error state: every write posted on it fails (reported in order).
  void fail_qp(std::uint32_t qp);
  QpStats qp_stats(std::uint32_t qp) const;
  std::uint32_t qp_count() const { return static_cast<std::uint32_t>(qps_.size()); }
  /// The QP's record (the flow tier moves its messages and counters).
  RcQp& qp(std::uint32_t id) { return qps_[id]; }
  const RcQp& qp(std::uint32_t id) const { return qps_[id]; }
  const std::vector<std::uint32_t>& host_qps(std::uint32_t host) const { return hosts_[host].qps; }
  CongestionControl& cc() const { return *cc_; }  // (its reads may apply timer ticks due by now)
  /// Retries after which the QP fails: its own limit, else RcParams::retry_count.
  std::uint32_t retry_limit(const RcQp& q) const { return q.retry_limit == ~0u ? p_.retry_count : q.retry_limit; }
  /// The retransmit timeout: 4.096 us x 2^timeout_exp.
  Tick rto_ps() const { return static_cast<Tick>(4096) * kPsPerNs * (1ULL << std::min<std::uint32_t>(p_.timeout_exp, 31)); }

  // From the fabric (packet and chunk tiers).
  /// A packet arrived at host `host`'s NIC.
  void on_rx(std::uint32_t host, const Pkt& k);
  /// The host's port may send: egress arbitration picks the next packet.
  void kick(std::uint32_t host);
  /// A kick of `host` is next: start loading what its arbitration reads first (the active-QP
  /// bits and QP list at its round-robin pointer), which at 8192 NPUs miss cache.
  void prefetch_kick(std::uint32_t host) const;
  /// A packet of QP `qp` reaches its host next: start loading the QP's records.
  void prefetch_rx(std::uint32_t qp) const {
    if (qp >= qps_.size()) return;
    __builtin_prefetch(&qps_[qp]);
    if (qp < qtx_.size()) __builtin_prefetch(&qtx_[qp]);
  }

  std::uint64_t events() const { return events_; }
  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kHostKick = 3, kRto = 4 };
  Tick cc_now() const override { return sch_.now(); }
  void stalled_rtos(std::uint32_t host);  // the host port is down: its QPs with work arm their retransmit timers
  void qp_activate(std::uint32_t qp);     // the QP may have packets to send: its host's arbitration visits it
  void send_ctrl(std::uint32_t host, PktKind k, std::uint32_t qp, std::uint64_t psn);
  void arm_rto(std::uint32_t qp);
  void on_rto(std::uint32_t qp);
  /// Chunk tier: the CNPs a packet-tier receiver would have sent for a unit's marked packets.
  void chunk_cnp(std::uint32_t host, std::uint32_t qp, const Pkt& k, Tick now);
  std::uint64_t psn_bytes(const RcQp& q, std::uint64_t psn, std::uint64_t* tag, std::uint64_t* off, bool* last) const;
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }

  Scheduler& sch_;
  RcParams p_;
  NicPort& port_;
  RcFlowTier* flow_ = nullptr;
  NetworkListener* listener_ = nullptr;
  std::unique_ptr<CongestionControl> cc_;
  BlockStore<RcQp> qps_;    // growing never moves the QPs (their message queues)
  BlockStore<RcQpTx> qtx_;  // the packet and chunk tiers' transport state, by QP id (empty in the flow tier)
  std::vector<RcHost> hosts_;  // by network node
  std::uint64_t events_ = 0;
};

}  // namespace models
