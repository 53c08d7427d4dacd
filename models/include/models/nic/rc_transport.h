// Reliable-connected transport of the RoCE NIC (docs/models/roce-nic.md): per-QP send state
// (messages, PSNs, go-back-N, retransmit timer) and receive state (expected PSN, ACK coalescing,
// CNP generation). The pacing rate comes from the congestion control (models/nic/congestion_control.h).
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "models/block_store.h"
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
  std::uint32_t pos = 0;           // index in its host's QP list (and its bit in NetNode::qp_active)
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


}  // namespace models
