// RoCE v2 network at packet granularity (the packet tier; with a large MTU it is the chunk tier):
// NICs with reliable-connected QPs, per-QP DCQCN rate control, go-back-N retransmission and CNP
// generation; Ethernet switches with output queues on a shared buffer, RED/ECN marking, PFC
// pause/resume with headroom, and ECMP over equal-cost next hops by hashing the flow's 5-tuple.
// Policies (ECMP hash, ECN marking, PFC thresholds) are separate from the forwarding mechanism.
// Plain C++ on the fabric's Scheduler; no kernel events of its own.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <tuple>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/time.h"

namespace models {

/// DCQCN (Zhu et al., SIGCOMM 2015; parameters as in the authors' ns-3 code).
struct DcqcnParams {
  bool enabled = true;
  double g = 1.0 / 256;                        ///< alpha gain
  Tick alpha_timer_ps = 55 * kPsPerUs;         ///< alpha decays once per period without CNPs
  Tick rate_increase_timer_ps = 55 * kPsPerUs; ///< rate-increase timer period
  std::uint64_t byte_counter = 10ULL << 20;    ///< bytes between byte-counter increase events
  std::uint32_t fast_recovery_stages = 5;      ///< F
  std::uint64_t rai_Bps = 5ULL * 1000 * 1000;  ///< additive increase: 40 Mb/s
  std::uint64_t rhai_Bps = 50ULL * 1000 * 1000;  ///< hyper increase step: 400 Mb/s
  std::uint64_t min_rate_Bps = 12500000;       ///< floor: 100 Mb/s
  Tick cnp_interval_ps = 50 * kPsPerUs;        ///< receiver: at most one CNP per QP per interval
};

/// ECN marking policy on an egress queue. RED: mark if q > Kmax, else with probability
/// Pmax (q-Kmin)/(Kmax-Kmin) above Kmin. Step (DCTCP's K): mark every packet while q > Kmin.
struct EcnParams {
  enum class Mode : std::uint8_t { Red, Step };
  bool enabled = true;
  Mode mode = Mode::Red;
  std::uint64_t kmin_bytes = 5 * 1000;
  std::uint64_t kmax_bytes = 200 * 1000;
  double pmax = 0.01;
};

/// PFC, one priority: an ingress queue above xoff pauses the upstream sender, below xon resumes it.
/// Thresholds are derived: headroom = 3 x rate x link delay + 2 MTU per ingress port (HPCC's ns-3
/// setup); xoff = (buffer - ports x headroom) / ports; xon = xoff - 2 MTU.
struct PfcParams {
  bool enabled = false;
};

/// ECMP policy: which header fields choose among equal-cost next hops. FiveTuple: source,
/// destination, UDP source port (one per QP), 4791, UDP — QPs of one pair spread. SrcDst: source
/// and destination only — every QP of a pair takes one path (hash polarisation).
enum class EcmpHash : std::uint8_t { FiveTuple, SrcDst };

struct NetParams {
  bool flow = false;                     ///< flow tier: messages as fluid flows at max-min fair rates
  EcmpHash ecmp_hash = EcmpHash::FiveTuple;
  std::uint32_t mtu = 4096;              ///< payload bytes per packet
  /// Chunk tier: payload bytes per simulated unit (a train of back-to-back MTU packets that moves
  /// as one; wire bytes, ECN, drops and ACKs still count its packets). 0: one packet (packet tier).
  std::uint32_t unit_bytes = 0;
  std::uint32_t unit() const { return unit_bytes > mtu ? unit_bytes : mtu; }
  /// MTU packets that carry `payload` bytes (at least one), and their bytes on the wire.
  std::uint64_t packets(std::uint64_t payload) const { return payload <= mtu ? 1 : (payload + mtu - 1) / mtu; }
  std::uint64_t wire_bytes(std::uint64_t payload) const { return payload + packets(payload) * header_bytes; }
  std::uint64_t packets_per_unit() const { return packets(unit()); }
  std::uint32_t header_bytes = 58;       ///< Eth + IP + UDP + BTH + ICRC on the wire
  std::uint32_t ctrl_bytes = 64;         ///< ACK / NAK / CNP / PFC frame size
  std::uint32_t ack_every = 4;           ///< receiver coalesces ACKs over this many packets
  Tick nic_latency_ps = 500 * kPsPerNs;  ///< WQE processing before a message's first packet
  std::uint32_t timeout_exp = 20;        ///< retransmit timeout = 4.096 us x 2^timeout_exp (HCCL_RDMA_TIMEOUT)
  std::uint32_t retry_count = 7;         ///< timeouts before the QP errors out (HCCL_RDMA_RETRY_CNT)
  std::uint64_t seed = 1;                ///< ECN marking and drop PRNG
  double drop_rate = 0;                  ///< random loss per data packet on every link (fault injection)
  DcqcnParams dcqcn;
  EcnParams ecn;
  PfcParams pfc;
};

class NetworkListener {
 public:
  virtual ~NetworkListener() = default;
  /// A posted write is fully acknowledged (or failed: the QP exhausted its retries).
  virtual void on_write_done(std::uint32_t qp, std::uint64_t tag, bool ok) = 0;
  /// Bytes of a write arrived in order at the receiver: [offset, offset+len) of write `tag`.
  virtual void on_data(std::uint32_t qp, std::uint64_t tag, std::uint64_t offset, std::uint64_t len) {}
};

class Network final : public EventHandler {
 public:
  struct PortStats {
    std::uint64_t tx_bytes = 0, tx_packets = 0, drops = 0, ecn_marked = 0, pause_sent = 0, pause_rcv = 0;
    std::uint64_t max_queue_bytes = 0;
    Tick paused_ps = 0;
  };
  struct QpStats {
    std::uint64_t tx_bytes = 0, rx_bytes = 0, retransmits = 0, timeouts = 0, naks = 0, cnp_rcv = 0, cnp_sent = 0;
  };

  Network(Scheduler& s, NetParams p) : sch_(s), p_(p), rng_(p.seed ? p.seed : 1) {}
  void set_listener(NetworkListener* l) { listener_ = l; }
  const NetParams& params() const { return p_; }

  std::uint32_t add_host(std::string name);
  std::uint32_t add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer_bytes, Tick latency_ps);
  /// Cable node a's port pa to node b's port pb (hosts have one port, 0).
  void connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick latency_ps);
  /// Compute ECMP next-hop sets (call after all connects).
  void build_routes();

  std::uint32_t create_qp(std::uint32_t src_host, std::uint32_t dst_host, std::uint16_t udp_sport);
  /// RDMA write of `bytes` on the QP; completes through the listener with `tag`.
  void post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag);
  bool qp_failed(std::uint32_t qp) const { return qps_[qp].failed; }
  /// Cap a QP's sending rate (bytes/s; 0 = the port's line rate), e.g. a communicator's bandwidth_limit.
  void set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps);
  /// Retransmit-timeout retries before the QP fails (default: NetParams::retry_count).
  void set_qp_retry_count(std::uint32_t qp, std::uint32_t n) { qps_.at(qp).retry_limit = n; }

  // Faults.
  void set_link_up(std::uint32_t node, std::uint32_t port, bool up);
  void set_drop_rate(double r) { p_.drop_rate = r; }

  // Observation.
  std::uint32_t nodes() const { return static_cast<std::uint32_t>(nodes_.size()); }
  const std::string& node_name(std::uint32_t n) const { return nodes_[n].name; }
  std::uint32_t node_ports(std::uint32_t n) const { return static_cast<std::uint32_t>(nodes_[n].ports.size()); }
  const PortStats& port_stats(std::uint32_t node, std::uint32_t port) const { return nodes_[node].ports[port].st; }
  std::uint64_t queue_bytes(std::uint32_t node, std::uint32_t port) const { return nodes_[node].ports[port].qbytes; }
  const QpStats& qp_stats(std::uint32_t qp) const { return qps_[qp].st; }
  std::uint32_t qp_count() const { return static_cast<std::uint32_t>(qps_.size()); }
  double qp_rate_Bps(std::uint32_t qp) const { return qps_[qp].rc; }
  std::uint64_t total_drops() const;
  std::uint64_t events() const { return events_; }
  /// Equal-cost egress ports of switch `sw` towards host `dst` (for tests and route dumps).
  std::vector<std::uint32_t> next_hops(std::uint32_t sw, std::uint32_t dst_host) const;
  std::uint32_t ecmp_port(std::uint32_t sw, std::uint32_t qp) const;

  // Policies, apart from the forwarding mechanism (pure functions of their parameters).
  /// Probability that a packet entering an egress queue of `queue_bytes` is ECN-marked.
  static double ecn_mark_probability(const EcnParams& e, double queue_bytes);
  /// The flow key ECMP hashes for a QP (salted per switch when a next hop is chosen).
  static std::uint64_t ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t udp_sport);
  /// PFC thresholds of a switch: xoff/xon per ingress port from its shared buffer and headroom.
  static void pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                             std::uint64_t* xoff, std::uint64_t* xon);

  void on_event(std::uint64_t a, std::uint64_t b) override;

 private:
  enum PktKind : std::uint8_t { kData, kAck, kNak, kCnp, kPause, kResume };
  struct Pkt {
    PktKind kind = kData;
    bool ecn = false, last = false;
    std::uint32_t qp = 0, src = 0, dst = 0, in_port = 0;
    std::uint32_t npk = 1;            // MTU packets this unit stands for (1 in the packet tier)
    std::uint32_t marks = 0;          // chunk tier: how many of them carry ECN marks
    Tick tail_at = 0;                 // when its last byte reaches the node it is travelling to
    double rate = 0;                  // chunk tier: the sender's paced rate (bytes/s) when it left
    std::uint64_t psn = 0, bytes = 0, payload = 0, msg_tag = 0, msg_off = 0;
  };
  struct Port {
    std::uint32_t peer = 0, peer_port = 0;
    std::uint64_t Bps = 0;
    Tick latency = 0;
    bool cabled = false, up = true, busy = false, paused = false;
    Tick paused_since = 0;
    std::deque<std::uint32_t> q;  // packet slots
    // Chunk tier, ECN: the queue a packet-tier port would hold. Units reach it as fluid at their
    // senders' paced rates (ending at the Tick), and it drains at the line rate.
    double vq = 0;
    Tick vq_t = 0;
    std::vector<std::pair<Tick, double>> vin;
    std::uint64_t qbytes = 0;
    // PFC ingress accounting (switch ports): bytes buffered that arrived on this port.
    std::uint64_t in_bytes = 0;
    bool upstream_paused = false;
    PortStats st;
  };
  struct Node {
    std::string name;
    bool is_switch = false;
    std::uint64_t buffer = 0, used = 0;
    Tick latency = 0;
    std::vector<Port> ports;
    std::vector<std::uint32_t> qps;   // hosts: QPs sending from here, for egress arbitration
    std::uint32_t rr = 0;             // round-robin pointer over qps
    std::uint64_t xoff = 0, xon = 0;
  };
  struct Msg { std::uint64_t tag, bytes, first_psn, npkts; };
  struct Qp {
    std::uint32_t src = 0, dst = 0;
    std::uint16_t sport = 0;
    std::uint64_t hash = 0;
    std::deque<Msg> msgs;            // posted, not yet fully acknowledged
    std::uint64_t next_psn = 0;      // next PSN to transmit
    std::uint64_t end_psn = 0;       // PSN after the last posted packet
    std::uint64_t acked = 0;         // all PSNs below are acknowledged
    Tick next_tx = 0;                // rate limiter: earliest next packet start
    Tick ready_at = 0;               // WQE processing of the head message
    bool failed = false;
    // DCQCN sender state
    double rc = 0, rt = 0, alpha = 1, line = 0;
    std::uint32_t t_stage = 0, bc_stage = 0;
    std::uint64_t bytes_since = 0;
    bool limited = false, cnp_this_period = false;
    std::uint64_t timer_gen = 0, alpha_gen = 0;
    // Retransmission
    std::uint64_t rto_gen = 0;
    std::uint32_t retries = 0, retry_limit = ~0u;  // ~0u: NetParams::retry_count
    // Receiver side
    std::uint64_t expected = 0, unacked = 0;
    bool nak_sent = false;
    Tick last_cnp = 0, last_rx = 0;  // last CNP sent, last data unit received
    bool any_cnp = false, seen_rx = false;
    QpStats st;
  };
  enum Ev : std::uint64_t { kTxDone = 1, kArrive, kHostKick, kRto, kRateTimer, kAlphaTimer, kPfcFrame, kFlowStart, kFlowDone, kFlowDeliver, kFlowAck, kFlowRates };

  // ---- flow tier ----
  struct Flow {
    std::uint32_t qp = 0;
    std::uint64_t tag = 0, bytes = 0;
    double left = 0, rate = 0;                         // wire bytes still to send at t_set, rate since (bytes/s)
    Tick t_set = 0;
    std::uint64_t stamp = 0;                            // identifies its current entry in flow_heap_
    std::vector<std::uint32_t> gports;                  // egress ports along the path, as global port ids
    Tick latency = 0;                                   // one-way path latency
    bool active = false;
  };
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  // Projected completions (time, flow, stamp); entries whose stamp is no longer the flow's are stale.
  std::priority_queue<std::tuple<Tick, std::uint32_t, std::uint64_t>, std::vector<std::tuple<Tick, std::uint32_t, std::uint64_t>>,
                      std::greater<>> flow_heap_;
  std::uint64_t flow_stamp_ = 0;
  std::uint64_t flow_gen_ = 0;
  bool flow_rates_pending_ = false;                     // a recomputation is scheduled for now
  std::vector<std::uint32_t> port_base_;                // node -> first global port id
  std::vector<std::uint32_t> port_node_;                // global port id -> node
  Port& gport(std::uint32_t g) { return nodes_[port_node_[g]].ports[g - port_base_[port_node_[g]]]; }
  // Max-min rates decompose over connected components of the flow-port graph: a change only
  // refills the component of the ports it touched (flow_seeds_).
  std::vector<std::vector<std::uint32_t>> port_flows_;  // global port -> active flows on it, in start order
  std::vector<std::uint32_t> flow_seeds_;
  std::vector<double> fill_cap_;
  std::vector<std::uint32_t> fill_cnt_, fill_ports_, fill_flows_;
  std::vector<std::uint8_t> port_seen_, flow_seen_, fill_frozen_;
  void flow_rates_soon();                               // recompute once, after every change at this time
  /// Start the QP's head message as a flow; `after` (a flow of the QP that just ended) lends its
  /// rate when the new flow takes the same path: the set of paths, hence every max-min rate, is
  /// unchanged and no recomputation is needed.
  void flow_post(std::uint32_t qp, std::int64_t after = -1);
  void flow_project(std::uint32_t id);                  // (re)project a flow's completion at its rate
  void flow_rates();                                    // max-min fair rates (progressive filling)
  void flow_next();                                     // schedule the next completion

  void flow_done(std::uint32_t id);

  std::uint32_t alloc_pkt(const Pkt& p);
  void free_pkt(std::uint32_t id) { free_pkts_.push_back(id); }
  void enqueue(std::uint32_t node, std::uint32_t port, std::uint32_t pkt);
  void try_tx(std::uint32_t node, std::uint32_t port);
  void arrive(std::uint32_t node, std::uint32_t port, std::uint32_t pkt);
  void host_rx(std::uint32_t host, std::uint32_t pkt);
  void host_kick(std::uint32_t host);
  void send_ctrl(std::uint32_t host, PktKind k, std::uint32_t qp, std::uint64_t psn);
  void pfc_frame(std::uint32_t node, std::uint32_t port, bool pause);
  void arm_rto(std::uint32_t qp);
  double virtual_queue(Port& p, Tick now);
  void on_cnp(std::uint32_t qp);
  void rate_increase(std::uint32_t qp);
  std::uint64_t psn_bytes(const Qp& q, std::uint64_t psn, std::uint64_t* tag, std::uint64_t* off, bool* last) const;
  double uniform() { rng_ ^= rng_ << 13; rng_ ^= rng_ >> 7; rng_ ^= rng_ << 17; return static_cast<double>(rng_ >> 11) / 9007199254740992.0; }
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }

  Scheduler& sch_;
  NetParams p_;
  NetworkListener* listener_ = nullptr;
  std::vector<Node> nodes_;
  std::vector<Qp> qps_;
  std::vector<Pkt> pkts_;
  std::vector<std::uint32_t> free_pkts_;
  std::vector<std::vector<std::uint32_t>> hop_start_;  // per switch: offsets into hops_ by attachment switch
  std::vector<std::vector<std::uint32_t>> hops_;       // per switch: egress ports toward each attachment switch
  std::vector<std::uint32_t> attach_, attach_port_;    // host ordinal -> its switch (or ~0) and that switch's port to it
  std::vector<std::uint32_t> att_index_, att_nodes_;   // switch node <-> attachment ordinal
  /// Equal-cost egress ports of switch `sw` toward host node `dst`: count, and *first points at them.
  std::uint32_t route_choices(std::uint32_t sw, std::uint32_t dst, const std::uint32_t** first) const;
  std::vector<std::uint32_t> host_index_;              // node -> host ordinal (or ~0)
  std::vector<std::uint32_t> hosts_;                   // host ordinal -> node
  std::uint64_t rng_;
  std::uint64_t events_ = 0;
};

}  // namespace models
