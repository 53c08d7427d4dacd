// The flow tier (docs/models/roce-nic.md): each QP's head message is a fluid flow along its ECMP
// path at a max-min fair rate.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "models/event_queue.h"
#include "models/net/net_params.h"
#include "models/net/xorshift.h"
#include "models/net/switch.h"
#include "models/nic/rc_transport.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

/// The egress ports along a flow's path, as global port ids, kept inline: the refill walks them for
/// every flow it visits (a separate allocation per flow was its largest cache-miss cost at scale).
struct PortPath {
  static constexpr std::uint32_t kMax = 16;  ///< hops; a 3-tier Clos path has 6
  std::uint32_t n = 0;
  std::uint32_t p[kMax] = {};
  const std::uint32_t* begin() const { return p; }
  const std::uint32_t* end() const { return p + n; }
  bool operator==(const PortPath& o) const {
    if (n != o.n) return false;
    for (std::uint32_t i = 0; i < n; ++i)
      if (p[i] != o.p[i]) return false;
    return true;
  }
};

/// Cache-line aligned: the first line holds what a flow's events read (a stale completion reads
/// nothing else), the second its path, which the refill's component search walks for every flow
/// it visits (one miss per flow instead of two).
struct alignas(64) Flow {
  std::uint32_t qp = 0;
  bool active = false;
  bool tiny = false;                                  // at most one packet: not a fluid flow (flow_post)
  bool signaled = true;                               // false: no acknowledgement event (post_write)
  std::uint64_t stamp = 0;                            // identifies its current completion event
  std::uint64_t tag = 0, bytes = 0;
  double left = 0, rate = 0;                         // wire bytes still to send at t_set, rate since (bytes/s)
  Tick t_set = 0;
  Tick latency = 0;                                   // one-way path latency
  PortPath gports;                                    // egress ports along the path (offset 64)
  Tick t_end = 0;                                     // projected completion (valid when rate > 0)
  std::uint64_t sampled = 0;                          // payload bytes given to the port samples so far
};

static_assert(offsetof(Flow, gports) == 64, "a flow's path starts its second cache line");

/// What the flow tier reads of the fabric beyond the port records (bound by FlowTier::bind_ports).
class FlowFabric {
 public:
  virtual ~FlowFabric() = default;
  /// The egress ports (global ids) and one-way latency of the QP's data path now; false when a
  /// link on it is down or there is no route (routing).
  virtual bool flow_walk(std::uint32_t qp, PortPath& path, Tick& latency) const = 0;
  virtual std::uint32_t flow_hosts() const = 0;
  /// The global id of (node, port).
  virtual std::uint32_t flow_port_id(std::uint32_t node, std::uint32_t port) const = 0;
  /// The switch MMU's PFC pause threshold per ingress port at the switch of global port `g`.
  virtual std::uint64_t flow_xoff(std::uint32_t g) const = 0;
};

/// The flow tier (docs/models/roce-nic.md#flow-tier, net/flow_tier.cpp): each QP's messages in
/// order as fluid flows along their ECMP paths at max-min fair rates, and its optional DCQCN
/// model over fluid queues (net/flow_cc.cpp). It owns the flows, the path memo, the refill state
/// and the fluid queues; it takes posted messages from the RC transport (RcFlowTier) and moves
/// the QPs' records there; it reads and counts on the fabric's port records through the table
/// bind_ports gives it (the records stay the fabric's: one cache line per port for every tier).
class FlowTier final : public EventHandler, public RcFlowTier {
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
  std::uint64_t events() const { return events_; }
  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  using Port = NetPort;
  using Qp = RcQp;
  using Msg = RcMsg;
  using PortStats = NetPortStats;
  enum Ev : std::uint64_t { kFlowStart = 6, kFlowDone, kFlowDeliver, kFlowAck, kFlowRates, kFlowTinyDone, kFlowCc = 14, kFlowCnp };

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
  double flow_left(const Flow& f, Tick now) const { return std::max(0.0, f.left - f.rate * static_cast<double>(now - f.t_set) / 1e12); }
  void flow_settle(Flow& f, Tick now);                  // take its progress up to now (flow_sample, left, t_set)
  void flow_project(std::uint32_t id);                  // (re)project a flow's completion at its rate: a kFlowDone event with its stamp
  void flow_rates();                                    // max-min fair rates (progressive filling)
  void flow_fanin(std::uint32_t g, Tick now);          // fan-in bottleneck time of a refilled port (NetPortStats::fanin_ps)
  void flow_done(std::uint32_t id);

  // ---- flow tier's congestion control (net/flow_cc.cpp) ----
  bool fcc_on() const { return p_.flow && p_.flow_cc && p_.dcqcn.enabled && p_.ecn.enabled; }
  /// The rate flow `id` moves at: its max-min share, or below it the DCQCN rate its QP sends at
  /// while no port on its path has a fluid queue to drain.
  double fcc_rate(std::uint32_t id);
  void fcc_watch(std::uint32_t g);                      // a fan-in port: integrate its fluid queue
  void fcc_wake();                                      // steps from now on, unless they run
  void fcc_tick();                                      // one integration step
  void fcc_set_rate(std::uint32_t id, double rate);     // settle the flow's progress, then move at `rate`
  NetPort& gport(std::uint32_t g) { return *gport_[g]; }  // one load, not node -> its ports -> the port
  const NetPort& gport(std::uint32_t g) const { return *gport_[g]; }

  /// The flow's progress since t_set (at its rate) up to now, `left` wire bytes still to go.
  void flow_sample(Flow& f, double left);
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }
  // The DCQCN model's marks draw from the network's seed (the packet tiers' generator; no other
  // draw is made in this tier).
  double uniform() { return rng_.uniform(); }

  Scheduler& sch_;
  NetParams p_;
  RcTransport& rc_;
  FlowFabric& fabric_;
  Sampler& port_samples_;
  NetworkListener* listener_ = nullptr;
  XorShift64 rng_;
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
  // Flow tier congestion control (net/flow_cc.cpp): per global port its fluid queue (bytes) and
  // whether it is watched; per flow slot its max-min share and the marks not yet answered by a
  // CNP; per QP the last CNP its receiver sent.
  std::vector<double> fcc_q_;
  std::vector<std::uint8_t> fcc_watched_;
  std::vector<std::uint32_t> fcc_ports_, fcc_recheck_;
  std::vector<double> flow_share_, fcc_marks_;
  struct FccSeg { double bytes, p; };  // queued bytes that met marking probability p at enqueue
  std::vector<std::deque<FccSeg>> fcc_fifo_;
  std::vector<std::uint32_t> fcc_follow_;  // during a step: the flows it follows
  std::vector<std::uint8_t> fcc_fol_;      // per flow slot: followed in this step
  std::vector<std::uint32_t> fcc_rel_;     // during a step: the ports on the followed flows' paths
  std::vector<std::uint8_t> fcc_rel_seen_;
  std::vector<double> fcc_in_, fcc_bg_, fcc_fac_, fcc_w_;  // (fcc_w_: followed flows' bytes in the network, by their last queued port)  // per port during a step: arrivals, others' arrivals, output factor
  std::vector<double> fcc_arr_;            // during a step: per followed flow, its arrival rate at each hop
  std::vector<double> fcc_ahead_, fcc_send_, fcc_unsent_;  // (fcc_unsent_: wire bytes short of a whole packet, for the byte counter)  // per flow slot: bytes sent ahead of its departures; its sending rate this step
  std::vector<Tick> fcc_last_cnp_;
  std::vector<std::uint32_t> fcc_limited_;  // QPs with a DCQCN rate below the line (may be stale)
  std::vector<std::uint8_t> fcc_is_limited_;
  bool fcc_tick_pending_ = false;
  Tick fcc_last_ = 0;
  std::vector<std::uint32_t> flow_bneck_;  // flow tier: per flow slot, the port that set its rate at the last refill (kNoPkt: a tie or none)
};

}  // namespace models
