// The Ethernet fabric (docs/models/ethernet-switch.md): hosts' ports and switches, the packets
// (units) on them and their forwarding and transmission (fabric.cpp), with, as members that own
// their state, the switches' MMU (models::SwitchMmu, switch_mmu.h: shared buffer, ECN, PFC and
// its watchdog, a stuck NIC's pause storm, the chunk tier's marking) and the routing
// (models::Forwarding: read per packet). The NICs' RC transport
// reaches a host's port through NicPort, which the fabric implements, and the fabric hands it
// what arrives at a host (RcTransport::on_rx) and wakes it when the port frees (kick); the flow
// tier reads it through FlowFabric.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/net/flow_tier.h"
#include "models/net/net_params.h"
#include "models/net/forwarding.h"
#include "models/net/switch.h"
#include "models/net/switch_mmu.h"
#include "models/net/xorshift.h"
#include "models/nic/rc_transport.h"
#include "models/packet.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

class Fabric final : public EventHandler, public NicPort, public FlowFabric, private MmuFabric {
 public:
  /// `rc`: the transport of the hosts' NICs (only referred to here; it may be constructed after).
  Fabric(Scheduler& s, NetParams p, RcTransport& rc) : sch_(s), p_(p), rc_(rc), rng_(p.seed ? p.seed : 1) {}
  const NetParams& params() const { return p_; }
  void set_drop_rate(double r) { p_.drop_rate = r; }

  // ---- topology ----
  std::uint32_t add_host(std::string name);
  std::uint32_t add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer_bytes, Tick latency_ps);
  void connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick latency_ps);
  /// Global port ids (after all connects): returns every port by id, for the flow tier.
  std::vector<NetPort*> index_ports();
  void set_pfc_thresholds() { mmu_.set_pfc_thresholds(); }  // after all connects
  void build_forwarding() { fwd_.build(); }  // after index_ports
  /// Set the cable at (node, port) up or down (both ends); restart_link then sends what waits.
  void set_link_up(std::uint32_t node, std::uint32_t port, bool up);
  void restart_link(std::uint32_t node, std::uint32_t port);
  void set_link_corruption(std::uint32_t node, std::uint32_t port, double rate);
  void pfc_storm(std::uint32_t host, Tick duration) { mmu_.pfc_storm(host, duration); }  // models::Network::pfc_storm

  // ---- observation ----
  const Forwarding& forwarding() const { return fwd_; }
  const std::vector<NetNode>& nodes() const { return nodes_; }
  const NetPort& port(std::uint32_t node, std::uint32_t p) const { return nodes_[node].ports[p]; }
  std::uint32_t port_id(std::uint32_t node, std::uint32_t port) const { return port_base_[node] + port; }
  std::uint32_t port_node(std::uint32_t id) const { return port_node_[id]; }
  /// The global id of (node, port), ~0u for a node without one (before index_ports).
  std::uint32_t port_id_if(std::uint32_t node, std::uint32_t port) const { return node + 1 < port_base_.size() ? port_base_[node] + port : ~0u; }
  std::uint32_t port_count() const { return port_base_.empty() ? 0 : port_base_.back(); }
  std::uint64_t total_drops() const;
  std::uint64_t events() const { return events_ + mmu_.events(); }
  Sampler& samples() { return port_samples_; }

  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

  // NicPort: a host's port as the RC transport sees it.
  State nic_state(std::uint32_t host) const override;
  std::uint64_t nic_line_Bps(std::uint32_t host) const override { return nodes_[host].ports[0].Bps; }
  void nic_enqueue(std::uint32_t host, const Pkt& k, bool ahead) override;
  void nic_send(std::uint32_t host) override { try_tx(host, 0); }
  void nic_count(std::uint32_t host, SampleCount c, std::uint64_t n) override { sample(host, 0, c, n); }
  void nic_prefetch(std::uint32_t host) const override;

  // FlowFabric: what the flow tier reads of the fabric.
  bool flow_walk(std::uint32_t qp, PortPath& path, Tick& latency) const override;
  std::uint32_t flow_hosts() const override { return fwd_.hosts(); }
  std::uint32_t flow_port_id(std::uint32_t node, std::uint32_t port) const override { return port_base_[node] + port; }
  std::uint64_t flow_xoff(std::uint32_t g) const override { return nodes_[port_node_[g]].xoff; }

 private:
  using Port = NetPort;
  using Node = NetNode;
  void add_node(Node&& n);  // nodes are numbered in kNodeBits bits (below)
  enum Ev : std::uint64_t { kTxDone = 1, kArrive };  // 5, 12, 13: SwitchMmu's
  // An event's id field: the node in its low kNodeBits bits; an arrival at a host carries the
  // packet's QP + 1 above them, so the event before it prefetches the QP's records.
  static constexpr unsigned kNodeBits = 24;
  static constexpr std::uint64_t kNodeMask = (std::uint64_t{1} << kNodeBits) - 1;

  // ---- forwarding and transmission ----
  std::uint32_t alloc_pkt(const Pkt& p);
  void free_pkt(std::uint32_t id) { free_pkts_.push_back(id); }
  // A port's egress FIFO (NetPort::qhead/qtail, linked through Pkt::next).
  static bool q_empty(const Port& p) { return p.qhead == kNoPkt; }
  void q_push_back(Port& p, std::uint32_t id) {
    pkts_[id].next = kNoPkt;
    if (p.qtail == kNoPkt) p.qhead = id; else pkts_[p.qtail].next = id;
    p.qtail = id;
  }
  void q_push_front(Port& p, std::uint32_t id) {
    pkts_[id].next = p.qhead;
    p.qhead = id;
    if (p.qtail == kNoPkt) p.qtail = id;
  }
  std::uint32_t q_pop_front(Port& p) {
    const std::uint32_t id = p.qhead;
    p.qhead = pkts_[id].next;
    if (p.qhead == kNoPkt) p.qtail = kNoPkt;
    return id;
  }
  void enqueue(std::uint32_t node, std::uint32_t port, std::uint32_t pkt);
  void try_tx(std::uint32_t node, std::uint32_t port);
  void arrive(std::uint32_t node, std::uint32_t port, std::uint32_t pkt);

  void send_waiting(std::uint32_t node, std::uint32_t port);  // the port may send (switch: try_tx; host: its NIC)
  // MmuFabric: what the MMU asks of the forwarding.
  void mmu_resume(std::uint32_t node, std::uint32_t port) override;
  void mmu_drop_queue(std::uint32_t node, std::uint32_t port) override;

  /// Counters over time: an event counted on (node, port) now.
  void sample(std::uint32_t node, std::uint32_t port, SampleCount c, std::uint64_t n) {
    if (port_samples_.on()) port_samples_.count(port_base_[node] + port, sch_.now(), c, n);
  }
  double uniform() { return rng_.uniform(); }
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }

  Scheduler& sch_;
  NetParams p_;
  RcTransport& rc_;  // the NICs' transport: takes what arrives at a host, is woken when its port frees
  std::vector<Node> nodes_;
  std::vector<Pkt> pkts_;
  std::vector<std::uint32_t> free_pkts_;
  XorShift64 rng_;
  std::uint64_t events_ = 0;
  Sampler port_samples_;
  std::vector<std::uint32_t> port_base_;  // node -> first global port id
  std::vector<std::uint32_t> port_node_;  // global port id -> node
  std::vector<NetPort*> port_ptr_;        // node -> its ports (prefetch: no wait for the node's line)
  Forwarding fwd_{nodes_, port_base_};    // routing tables, ECMP, path probes (forwarding.cpp)
  SwitchMmu mmu_{sch_, p_, nodes_, port_base_, port_samples_, rng_, *this};  // the switches' MMU (switch_mmu.cpp)
};

}  // namespace models
