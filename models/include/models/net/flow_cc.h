// The flow tier's congestion control (docs/models/roce-nic.md#flow-tier-congestion-control):
// DCQCN acting on the flow tier's fluid rates through fluid queues at the ports where flows meet.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "models/event_queue.h"
#include "models/net/flow.h"
#include "models/net/net_params.h"
#include "models/net/switch.h"
#include "models/net/xorshift.h"
#include "models/nic/rc_transport.h"
#include "models/time.h"

namespace models {

/// What the congestion control reads of the flow tier (its flows, the flows on each port, their
/// max-min shares) and the one thing it changes there: a flow's rate, through set_flow_rate
/// (which settles the flow's progress at the old rate and re-projects its completion).
class FlowCcHost {
 public:
  virtual ~FlowCcHost() = default;
  virtual const std::vector<Flow>& cc_flows() const = 0;
  /// Per global port: the active fluid flows on it, in start order.
  virtual const std::vector<std::vector<std::uint32_t>>& cc_port_flows() const = 0;
  /// Per flow slot: its max-min share (bytes/s) at the last refill.
  virtual double cc_share(std::uint32_t id) const = 0;
  virtual void set_flow_rate(std::uint32_t id, double rate) = 0;
};

/// DCQCN over fluid queues (flow_cc.cpp). It owns the fluid queues (bytes and their marking
/// FIFO per watched port), the per-flow marks, bytes sent ahead and byte-counter remainders, the
/// last CNP per QP, its integration step's working arrays, its random draws (from the network's
/// seed: no other draw is made in the flow tier) and its events (a step, a CNP reaching its QP).
/// It reads the flow tier through FlowCcHost, the ports through the fabric's table (writing
/// only their queue maxima), and acts on the QPs' DCQCN reaction points (RcTransport::cc).
class FlowCc final : public EventHandler {
 public:
  FlowCc(Scheduler& s, const NetParams& p, RcTransport& rc, FlowFabric& fabric, FlowCcHost& host,
         const std::vector<NetPort*>& gport);
  /// Whether the model runs (/network/flow_cc "dcqcn" with DCQCN and ECN on).
  bool on() const { return p_.flow && p_.flow_cc && p_.dcqcn.enabled && p_.ecn.enabled; }
  /// Flow slot `id` starts a new message: no marks, nothing sent ahead.
  void flow_reset(std::uint32_t id) {
    if (id < marks_.size()) marks_[id] = 0;
    if (id < ahead_.size()) ahead_[id] = 0;
    if (id < unsent_.size()) unsent_[id] = 0;
  }
  /// The rate flow `id` moves at: its max-min share, or below it the DCQCN rate its QP sends at
  /// while no port on its path has a fluid queue to drain.
  double rate(std::uint32_t id);
  /// A fan-in port (FlowTier::flow_fanin): integrate its fluid queue from now on.
  void watch(std::uint32_t g);
  std::uint64_t events() const { return events_; }
  void on_event(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kStep = 14, kCnp };
  void wake();  // steps from now on, unless they run
  void step();  // one integration step
  void schedule(Tick at, Ev e, std::uint64_t id) { sch_.schedule(at, this, e | (id << 8), 0); ++events_; }
  NetPort& gport(std::uint32_t g) { return *gport_[g]; }

  Scheduler& sch_;
  const NetParams& p_;
  RcTransport& rc_;
  FlowFabric& fabric_;
  FlowCcHost& host_;
  const std::vector<NetPort*>& gport_;  // the flow tier's table of the fabric's ports
  XorShift64 rng_;
  std::uint64_t events_ = 0;
  // Per global port: its fluid queue (bytes), whether it is watched, and the FIFO of queued
  // bytes by the marking probability they met at enqueue; the watched ports; flows to look at
  // again once a port stops being watched.
  std::vector<double> q_;
  std::vector<std::uint8_t> watched_;
  struct Seg { double bytes, p; };
  std::vector<std::deque<Seg>> fifo_;
  std::vector<std::uint32_t> ports_, recheck_;
  // Per flow slot: marks not yet answered by a CNP, bytes sent ahead of its departures, its
  // sending rate this step, wire bytes short of a whole packet (for the byte counter).
  std::vector<double> marks_, ahead_, send_, unsent_;
  std::vector<Tick> last_cnp_;  // per QP: the last CNP its receiver sent
  std::vector<std::uint32_t> limited_;  // flows whose QP DCQCN holds below the line (may be stale)
  std::vector<std::uint8_t> is_limited_;
  // During a step: the flows it follows (and a mark per slot), the ports on their paths (and a
  // mark per port), per port the arrivals, others' arrivals, output factor and the followed
  // flows' bytes in the network by their last queued port, per followed flow its arrival rate at
  // each hop.
  std::vector<std::uint32_t> follow_;
  std::vector<std::uint8_t> fol_;
  std::vector<std::uint32_t> rel_;
  std::vector<std::uint8_t> rel_seen_;
  std::vector<double> in_, bg_, fac_, w_;
  std::vector<double> arr_;
  bool step_pending_ = false;
  Tick last_ = 0;
};

}  // namespace models
