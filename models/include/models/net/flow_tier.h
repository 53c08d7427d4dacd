// The flow tier (docs/models/roce-nic.md): each QP's head message is a fluid flow along its ECMP
// path at a max-min fair rate.
#pragma once
#include <cstdint>
#include <vector>

#include "models/event_queue.h"
#include "models/net/flow.h"
#include "models/net/flow_cc.h"
#include "models/net/net_params.h"
#include "models/net/switch.h"
#include "models/nic/rc_transport.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

/// The flow tier (docs/models/roce-nic.md#flow-tier, net/flow_tier.cpp): each QP's messages in
/// order as fluid flows along their ECMP paths at max-min fair rates, and, as a member, its
/// optional DCQCN model over fluid queues (FlowCc, flow_cc.h). It owns the flows, the path memo
/// and the refill state; it takes posted messages from the RC transport (RcFlowTier) and moves
/// the QPs' records there; it reads and counts on the fabric's port records through the table
/// bind_ports gives it (the records stay the fabric's: one cache line per port for every tier).
class FlowTier final : public EventHandler, public RcFlowTier, private FlowCcHost {
 public:
  FlowTier(Scheduler& s, const NetParams& p, RcTransport& rc, FlowFabric& fabric, Sampler& samples);
  void set_listener(NetworkListener* l) { listener_ = l; }
  /// The fabric's ports by global id (after the routes are built); `gport` is the fabric's table.
  void bind_ports(std::vector<NetPort*> gport);
  /// A port was cabled or went up or down: every memoised path is stale.
  void paths_changed() { ++path_epoch_; }
  /// Adds the one-packet messages' counts at global port `g` (kept apart from the port record).
  void add_tiny_tx(std::uint32_t g, NetPortStats& st) const {
    if (g < tiny_tx_.size()) {
      st.tx_bytes += tiny_tx_[g].bytes;
      st.tx_packets += tiny_tx_[g].packets;
    }
  }
  void flow_posted(std::uint32_t qp) override;
  std::uint64_t events() const { return events_ + cc_.events(); }
  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  using Port = NetPort;
  using Qp = RcQp;
  using Msg = RcMsg;
  using PortStats = NetPortStats;
  enum Ev : std::uint64_t { kFlowStart = 6, kFlowDone, kFlowDeliver, kFlowAck, kFlowRates, kFlowTinyDone };  // 14, 15: FlowCc's

  void flow_rates_soon();                               // recompute once, after every change at this time
  /// Start the QP's head message as a flow; `after` (a flow of the QP that just ended) lends its
  /// rate when the new flow takes the same path: the set of paths, hence every max-min rate, is
  /// unchanged and no recomputation is needed.
  void flow_post(std::uint32_t qp, std::int64_t after = -1);
  /// A one-packet message that is its QP's only one, starting at `start`: taken whole now (its
  /// path, its end, its delivery and acknowledgement scheduled), with no start or end event;
  /// false (nothing done) when it is not one packet, has no path now, or port samples are on.
  bool flow_send_ahead(std::uint32_t qp, Tick start);
  /// The path of the QP's flow `f` from here: its egress ports and one-way latency; false when a
  /// link on it is down or there is no route.
  bool flow_path(std::uint32_t qp, Flow& f, double* min_Bps = nullptr) const;
  /// The tiny flow `id`, ending at `end`, is done with as its end would: counted at its ports,
  /// delivered one path latency after its end, its QP's head popped, the QP busy until `end`.
  void flow_taken(std::uint32_t id, Tick end);
  bool flow_land(std::uint32_t id, Tick at);
  std::uint32_t flow_alloc();                           // a free flow slot (reused or new)
  double path_min_Bps(const PortPath& path) const;      // the slowest line rate along a path
  /// Wire bytes the flow still has to send at `now`, at its rate since t_set.
  double flow_left(const Flow& f, Tick now) const { return f.left_at(now); }
  void flow_settle(Flow& f, Tick now);                  // take its progress up to now (flow_sample, left, t_set)
  void flow_project(std::uint32_t id);                  // (re)project a flow's completion at its rate: a kFlowDone event with its stamp
  void flow_rates();                                    // max-min fair rates (progressive filling)
  void flow_fanin(std::uint32_t g, Tick now);          // fan-in bottleneck time of a refilled port (NetPortStats::fanin_ps)
  void flow_done(std::uint32_t id);

  // FlowCcHost: what the congestion control reads of the flows, and a flow's rate it sets.
  const std::vector<Flow>& cc_flows() const override { return flows_; }
  const std::vector<std::vector<std::uint32_t>>& cc_port_flows() const override { return port_flows_; }
  double cc_share(std::uint32_t id) const override { return flow_share_[id]; }
  void set_flow_rate(std::uint32_t id, double rate) override;  // settle its progress, then move at `rate`
  NetPort& gport(std::uint32_t g) { return *gport_[g]; }  // one load, not node -> its ports -> the port
  const NetPort& gport(std::uint32_t g) const { return *gport_[g]; }

  /// The flow's progress since t_set (at its rate) up to now, `left` wire bytes still to go.
  void flow_sample(Flow& f, double left);
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }
  Scheduler& sch_;
  NetParams p_;
  RcTransport& rc_;
  FlowFabric& fabric_;
  Sampler& port_samples_;
  NetworkListener* listener_ = nullptr;
  std::uint64_t events_ = 0;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  // A flow's projected completion is a kFlowDone event carrying its stamp; a re-projection bumps the
  // stamp, so the earlier event is stale and dropped when it comes due.
  std::uint64_t flow_stamp_ = 0;
  bool flow_rates_pending_ = false;                     // a recomputation is scheduled for now
  // The flow tier's paths by QP, direct-mapped (flow_path): a QP's path changes only when a port
  // goes up or down or is cabled, which bumps path_epoch_ and so drops every entry. A ring step's
  // three one-packet messages walked 3-5 hops of nodes, ports and next-hop tables each, a cache
  // miss per hop at 8192 endpoints; an entry is two lines.
  struct alignas(64) PathMemo {
    std::uint32_t qp = ~0u, epoch = 0;
    Tick latency = 0;
    double min_Bps = 0;
    bool ok = false;
    PortPath path;
  };
  mutable std::vector<PathMemo> path_memo_;
  // The flow tier's one-packet messages' bytes and packets per egress port, by global port index:
  // 16 bytes a port in one array (about 650 KiB at clos-1024) instead of a line of each port's
  // record per hop; port_stats() adds them in.
  struct TinyTx {
    std::uint64_t bytes = 0, packets = 0;
  };
  std::vector<TinyTx> tiny_tx_;
  std::uint32_t path_epoch_ = 1;
  std::vector<NetPort*> gport_;                         // global port id -> the port (the fabric's record)
  // Max-min rates decompose over connected components of the flow-port graph: a change only
  // refills the component of the ports it touched (flow_seeds_).
  std::vector<std::vector<std::uint32_t>> port_flows_;  // global port -> active flows on it, in start order
  std::vector<std::uint32_t> flow_seeds_;
  std::vector<double> fill_cap_;
  std::vector<double> fill_old_rate_;  // during a refill: each refilled flow's rate before it
  std::vector<double> port_alloc_;  // flow tier: per global port, the sum of its flows' current rates
  std::vector<std::uint32_t> fill_open_;  // during a refill: ports that still have unfrozen flows
  std::vector<std::uint32_t> fill_cnt_, fill_ports_, fill_flows_;
  std::vector<std::uint8_t> port_seen_, flow_seen_, fill_frozen_;
  std::vector<double> flow_share_;  // per flow slot: its max-min share at the last refill
  std::vector<std::uint32_t> flow_bneck_;  // flow tier: per flow slot, the port that set its rate at the last refill (kNoPkt: a tie or none)
  FlowCc cc_{sch_, p_, rc_, fabric_, *this, gport_};  // its DCQCN model (after what it refers to)
};

}  // namespace models
