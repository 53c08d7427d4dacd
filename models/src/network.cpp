// Network: composes the NIC transport (models::RcTransport), the Ethernet fabric (models::Fabric)
// and the flow tier (models::FlowTier) (docs/models/README.md). This file holds only what spans
// them: their construction, building the topology and the routes, link faults, and the QPs'
// flow keys.
#include "models/network.h"

#include "models/net/policies.h"

namespace models {

namespace {
RcParams rc_params(const NetParams& p) {
  RcParams r;
  r.flow = p.flow;
  r.flow_cc = p.flow && p.flow_cc && p.dcqcn.enabled && p.ecn.enabled;  // Network::fcc_on
  r.mtu = p.mtu;
  r.unit_bytes = p.unit_bytes;
  r.header_bytes = p.header_bytes;
  r.ctrl_bytes = p.ctrl_bytes;
  r.ack_every = p.ack_every;
  r.timeout_exp = p.timeout_exp;
  r.retry_count = p.retry_count;
  r.nic_latency_ps = p.nic_latency_ps;
  r.dcqcn = p.dcqcn;
  return r;
}
}  // namespace

// The fabric is built first and refers to the transport built after it (it calls it only once
// events run); the transport and the flow tier reach the fabric through NicPort and FlowFabric.
Network::Network(Scheduler& s, NetParams p)
    : sch_(s),
      fabric_(s, p, rc_),
      rc_(s, rc_params(fabric_.params()), static_cast<NicPort&>(fabric_)),
      flow_(s, fabric_.params(), rc_, static_cast<FlowFabric&>(fabric_), fabric_.samples()) {
  if (fabric_.params().flow) rc_.set_flow_tier(&flow_);
}

std::uint32_t Network::create_qp(std::uint32_t src, std::uint32_t dst, std::uint16_t sport) {
  const NetParams& p = fabric_.params();
  const double line = static_cast<double>(fabric_.nodes().at(src).ports[0].Bps);
  return rc_.create_qp(src, dst, sport, policy::ecmp_flow_key(p.ecmp_hash, src, dst, sport, p.ecmp_salt), line);
}

std::uint32_t Network::add_host(std::string name) {
  const std::uint32_t id = fabric_.add_host(std::move(name));
  rc_.add_node();
  return id;
}

std::uint32_t Network::add_switch(std::string name, std::uint32_t ports, std::uint64_t buffer, Tick latency) {
  const std::uint32_t id = fabric_.add_switch(std::move(name), ports, buffer, latency);
  rc_.add_node();
  return id;
}

void Network::connect(std::uint32_t a, std::uint32_t pa, std::uint32_t b, std::uint32_t pb, std::uint64_t Bps, Tick lat) {
  fabric_.connect(a, pa, b, pb, Bps, lat);
  flow_.paths_changed();
}

void Network::build_forwarding() {
  flow_.paths_changed();
  flow_.bind_ports(fabric_.index_ports());  // global port ids; the flow tier reads the ports by them
  fabric_.set_pfc_thresholds();             // switch MMU
  fabric_.build_forwarding();                   // routing tables and path probes (after the port ids)
}

void Network::set_link_up(std::uint32_t node, std::uint32_t port, bool up) {
  fabric_.set_link_up(node, port, up);
  flow_.paths_changed();  // the flow tier's memo of QPs' paths (flow_path)
  if (up) fabric_.restart_link(node, port);
}

bool Network::trace_path(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::vector<Hop>* hops, Tick* rtt_ps) const {
  const NetParams& p = fabric_.params();
  return fabric_.forwarding().trace_path(src, dst, policy::ecmp_flow_key(p.ecmp_hash, src, dst, sport, p.ecmp_salt), hops, rtt_ps);
}

std::uint32_t Network::ecmp_port(std::uint32_t sw, std::uint32_t qp) const {
  return fabric_.forwarding().ecmp_port_for(sw, rc_.qp(qp).dst, rc_.qp(qp).hash);
}

// The Network's static names for the policies (callers in sim/ and tests use them).
double Network::ecn_mark_probability(const EcnParams& e, double q) { return policy::ecn_mark_probability(e, q); }
std::uint64_t Network::ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint32_t salt) {
  return policy::ecmp_flow_key(h, src, dst, sport, salt);
}
void Network::pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                             std::uint64_t* xoff, std::uint64_t* xon) {
  policy::pfc_thresholds(buffer, ports, headroom, unit_wire, xoff, xon);
}

}  // namespace models
