// The NIC's sender-side congestion control behind one interface (docs/models/roce-nic.md): the
// RC transport asks it for each QP's pacing rate and tells it what was sent and which CNPs came
// back; it reads the time from its host. It has no timer events: DCQCN (models/nic/dcqcn.h), the
// one implementation, applies its timers' ticks where the rate or alpha is read.
#pragma once
#include <cstdint>

#include "models/time.h"

namespace models {

/// What a congestion control needs from the transport that owns it.
class CcHost {
 public:
  virtual ~CcHost() = default;
  virtual Tick cc_now() const = 0;
};

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  /// A new QP (ids are dense, in creation order) whose line rate is `line_Bps`.
  virtual void add_qp(std::uint32_t qp, double line_Bps) = 0;
  /// The QP's ceiling changed (a rate cap, or none: the port's line rate).
  virtual void set_line_rate(std::uint32_t qp, double line_Bps) = 0;
  /// Current pacing rate of the QP (bytes/s), read when the NIC sends (it may apply timer
  /// ticks due by now first).
  virtual double rate_Bps(std::uint32_t qp) = 0;
  /// The next instant after `now` at which the QP's rate may rise without a CNP or a send (a
  /// timer tick), or kTickMax: a paced QP waiting for its next packet re-reads its rate then.
  virtual Tick next_rate_change(std::uint32_t qp) const = 0;
  /// `wire_bytes` of the QP left the NIC.
  virtual void on_sent(std::uint32_t qp, std::uint64_t wire_bytes) = 0;
  /// A congestion notification packet for the QP arrived.
  virtual void on_cnp(std::uint32_t qp) = 0;
  /// `count` CNPs for the QP that a packet-level receiver would have sent `spacing_ps` apart, the
  /// last of them now (the chunk tier's units stand for trains of packets; one frame carries
  /// the CNPs of a unit's marked packets). Each reacts as its own CNP would have.
  virtual void on_cnps(std::uint32_t qp, std::uint64_t count, Tick spacing_ps) = 0;
};

}  // namespace models
