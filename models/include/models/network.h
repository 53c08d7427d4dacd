// The RoCE v2 network (docs/architecture.md#models, docs/models/roce-nic.md,
// docs/models/ethernet-switch.md) at one of three tiers: packets, chunks (a large unit standing
// for a train of MTU packets), or fluid flows. It composes the NIC transport (models/nic: RC QPs
// with go-back-N and CNP generation, congestion control behind models/nic/congestion_control.h
// with DCQCN its implementation) and the Ethernet fabric (models/net: switch forwarding with ECMP,
// the switch MMU — shared buffer, PFC, ECN — apart from forwarding, routing tables, policies, the
// flow-tier solver and the chunk tier). Plain C++ on the fabric's Scheduler; no kernel events of
// its own. It holds three classes that own their state and forwards to them: the RC transport
// (models::RcTransport, nic/rc_transport.cpp), the fabric (models::Fabric, net/fabric.h: nodes,
// ports, packets, forwarding, the switch MMU, the chunk tier's marking, and its routing,
// models::Forwarding) and the flow tier (models::FlowTier, net/flow_tier.h). The transport reaches
// the fabric through NicPort, the flow tier through FlowFabric, both of which the fabric
// implements; network.cpp holds only what spans them (docs/models/README.md).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "models/event_queue.h"
#include "models/net/fabric.h"
#include "models/net/flow_tier.h"
#include "models/net/net_params.h"
#include "models/net/forwarding.h"
#include "models/net/switch.h"
#include "models/nic/dcqcn_params.h"
#include "models/nic/rdma_network.h"
#include "models/nic/rc_transport.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

class Network final : public RdmaNetwork {
 public:
  using PortStats = NetPortStats;
  using QpStats = models::QpStats;

  Network(Scheduler& s, NetParams p);
  void set_listener(NetworkListener* l) override { rc_.set_listener(l); flow_.set_listener(l); }
  const NetParams& params() const { return fabric_.params(); }

  // ---- topology (network.cpp, models::Fabric), forwarding tables (models::Forwarding, net/forwarding.cpp) ----
  std::uint32_t add_host(std::string name);
  std::uint32_t add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer_bytes, Tick latency_ps);
  /// Cable node a's port pa to node b's port pb (hosts have one port, 0).
  void connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick latency_ps);
  /// Compute ECMP next-hop sets (call after all connects).
  void build_forwarding();

  // ---- RC transport (models::RcTransport, nic/rc_transport.cpp) ----
  std::uint32_t create_qp(std::uint32_t src_host, std::uint32_t dst_host, std::uint16_t udp_sport) override;
  /// RDMA write of `bytes` on the QP; completes through the listener with `tag`. An unsignaled
  /// write (`signaled` false, as an RDMA WQE without a completion) reports only a failure: its
  /// success is implied by a later signaled write on the QP completing (RC completes in order).
  /// The flow tier then spends no event on its acknowledgement.
  void post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag, bool signaled) override { rc_.post_write(qp, bytes, tag, signaled); }
  void post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag) { post_write(qp, bytes, tag, true); }
  bool qp_failed(std::uint32_t qp) const { return rc_.qp(qp).failed; }
  std::uint16_t qp_sport(std::uint32_t qp) const override { return rc_.qp(qp).sport; }
  /// Cap a QP's sending rate (bytes/s; 0 = the port's line rate), e.g. a communicator's bandwidth_limit.
  void set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps) override { rc_.set_qp_rate_cap(qp, Bps); }
  /// Retransmit-timeout retries before the QP fails (default: NetParams::retry_count).
  void set_qp_retry_count(std::uint32_t qp, std::uint32_t n) override { rc_.set_qp_retry_count(qp, n); }
  /// Reset the QP (both ends, fresh PSNs), as a retry that stops its operation does: its posted
  /// writes are flushed (each reported failed, as IBV_WC_WR_FLUSH_ERR) and what is still on the
  /// wire is taken as a duplicate when it arrives. The flow tier keeps the head message (unless it waits to retry), which may
  /// be on the wire already. A QP in the error state stays in it.
  void reset_qp(std::uint32_t qp) override { rc_.reset_qp(qp); }

  // Faults.
  void set_link_up(std::uint32_t node, std::uint32_t port, bool up);
  void set_drop_rate(double r) { fabric_.set_drop_rate(r); }
  /// Packet corruption on the cable at (node, port), both directions: each data packet arrives
  /// corrupted with probability `rate` and the receiver's FCS check drops it (fcs_errors, drops);
  /// go-back-N recovers it. Packet and chunk tiers (a unit of n packets is lost with 1-(1-rate)^n).
  void set_link_corruption(std::uint32_t node, std::uint32_t port, double rate) { fabric_.set_link_corruption(node, port, rate); }
  /// PFC pause storm (a stuck receiver): host `host`'s NIC sends pause frames to its switch port
  /// from now for `duration`, one every pause_quantum_ps of its link (a refreshed maximal pause),
  /// then a resume. The switch port stays paused unless its PFC watchdog acts. A storm already
  /// running is extended. Packet and chunk tiers with PFC on; nothing otherwise.
  void pfc_storm(std::uint32_t host, Tick duration) { fabric_.pfc_storm(host, duration); }
  /// A PFC pause frame's longest pause: 65535 quanta of 512 bit times at the line rate (IEEE
  /// 802.1Qbb), 335.5 us at 100 Gb/s.
  static Tick pause_quantum_ps(std::uint64_t Bps) { return SwitchMmu::pause_quantum_ps(Bps); }

  // Observation.
  std::uint32_t nodes() const { return static_cast<std::uint32_t>(fabric_.nodes().size()); }
  const std::string& node_name(std::uint32_t n) const { return fabric_.nodes()[n].name; }
  bool is_switch(std::uint32_t n) const { return fabric_.nodes()[n].is_switch; }
  std::uint32_t node_ports(std::uint32_t n) const { return static_cast<std::uint32_t>(fabric_.nodes()[n].ports.size()); }
  PortStats port_stats(std::uint32_t node, std::uint32_t port) const {
    const NetPort& p = fabric_.port(node, port);
    PortStats st = p.st;
    if (p.fanin_since != kTickMax) st.fanin_ps += sch_.now() - p.fanin_since;  // still one
    // the flow tier's one-packet messages, counted apart (FlowTier::flow_taken)
    flow_.add_tiny_tx(fabric_.port_id_if(node, port), st);
    return st;
  }
  std::uint64_t queue_bytes(std::uint32_t node, std::uint32_t port) const { return fabric_.port(node, port).qbytes; }
  QpStats qp_stats(std::uint32_t qp) const { return rc_.qp_stats(qp); }
  std::uint32_t qp_count() const { return rc_.qp_count(); }
  /// The QP's sending rate (flow tier: its port's line rate; the congestion control keeps no state there).
  double qp_rate_Bps(std::uint32_t qp) const {
    return params().flow ? static_cast<double>(fabric_.port(rc_.qp(qp).src, 0).Bps) : rc_.cc().rate_Bps(qp);
  }
  std::uint64_t total_drops() const { return fabric_.total_drops(); }
  std::uint64_t events() const { return fabric_.events() + rc_.events() + flow_.events(); }
  /// Counters over time of every port (models/sampler.h), objects numbered by port_id(); call
  /// after build_forwarding, before the run. 0: off.
  void enable_sampling(Tick interval_ps) { fabric_.samples().enable(interval_ps, fabric_.port_count()); }
  Sampler& port_samples() { return fabric_.samples(); }
  std::uint32_t port_id(std::uint32_t node, std::uint32_t port) const { return fabric_.port_id(node, port); }
  std::uint32_t port_node(std::uint32_t id) const { return fabric_.port_node(id); }
  /// Equal-cost egress ports of switch `sw` towards host `dst` (for tests and route dumps).
  std::vector<std::uint32_t> next_hops(std::uint32_t sw, std::uint32_t dst_host) const { return fabric_.forwarding().next_hops(sw, dst_host); }
  std::uint32_t ecmp_port(std::uint32_t sw, std::uint32_t qp) const;
  /// The egress port switch `sw` picks toward host node `dst` for a flow whose ECMP key is `hash` (~0u: none).
  std::uint32_t ecmp_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const { return fabric_.forwarding().ecmp_port_for(sw, dst, hash); }
  /// QPs sending from host node `host`.
  const std::vector<std::uint32_t>& host_qps(std::uint32_t host) const override { return rc_.host_qps(host); }
  /// A node's port (cabling, state, line rate, latency).
  const NetPort& port(std::uint32_t node, std::uint32_t p) const { return fabric_.port(node, p); }
  /// One switch on a traced path: the port the flow came in on and the one it leaves by.
  using Hop = PathHop;
  /// The switches a data packet of the flow (src host, dst host, UDP source port) crosses, as the
  /// forwarding would pick them. False when the path is broken (a port down, no route): `hops`
  /// then ends where the probe was lost; also when the reply's way back (the flow's ACK path,
  /// ctrl_path_up) crosses a port that is down. `rtt_ps`: links and switch latencies both ways.
  bool trace_path(std::uint32_t src, std::uint32_t dst, std::uint16_t udp_sport, std::vector<Hop>* hops, Tick* rtt_ps) const;
  /// The port a control frame (ACK, NAK, CNP) of a flow with ECMP key `hash` leaves switch `sw` by
  /// towards host `dst` (hashed apart from the flow's data), kNone when there is no route.
  std::uint32_t ctrl_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const { return fabric_.forwarding().ctrl_port_for(sw, dst, hash); }
  /// Whether control frames from host `from` reach host `to` along ctrl_port_for's choices (every port up).
  bool ctrl_path_up(std::uint32_t from, std::uint32_t to, std::uint64_t hash) const { return fabric_.forwarding().ctrl_path_up(from, to, hash); }

  // Policies, apart from the forwarding mechanism (models/net/policies.h; kept here for callers).
  static double ecn_mark_probability(const EcnParams& e, double queue_bytes);
  static std::uint64_t ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t udp_sport, std::uint32_t salt = 0);
  static void pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                             std::uint64_t* xoff, std::uint64_t* xon);

 private:
  Scheduler& sch_;
  Fabric fabric_;   // nodes, ports, packets, forwarding, MMU, routing (the NicPort and FlowFabric the others reach)
  RcTransport rc_;  // the NICs' RC transport: QPs, go-back-N, congestion control
  FlowTier flow_;   // the flow tier: flows, max-min refills, its DCQCN model (idle in the packet and chunk tiers)
};

}  // namespace models
