#include "sim/counters.h"

#include "models/machine.h"
#include "models/network.h"

namespace sim {
namespace {

using Read = double (*)(const models::Machine&, const models::Network*);

// Sums over the HCCS (or PCIe) ports, over the QPs and over every switch/host port.
template <typename F>
double over_ports(const models::Machine& m, models::LinkKind kind, F f) {
  double v = 0;
  for (const auto& p : m.ports())
    if (p.kind == kind) v += f(p);
  return v;
}
template <typename F>
double over_qps(const models::Network* net, F f) {
  double v = 0;
  if (net)
    for (std::uint32_t q = 0; q < net->qp_count(); ++q) v += f(net->qp_stats(q));
  return v;
}
template <typename F>
double over_net_ports(const models::Network* net, F f) {
  double v = 0;
  if (net)
    for (std::uint32_t n = 0; n < net->nodes(); ++n)
      for (std::uint32_t k = 0; k < net->node_ports(n); ++k) v += f(net->port_stats(n, k));
  return v;
}
template <typename T>
double d(T x) { return static_cast<double>(x); }

struct Counter {
  const char* name;
  Read read;
};
const Counter kCounters[] = {
    {"hccs_rx_retry_cnt", [](const models::Machine& m, const models::Network*) {
       return over_ports(m, models::LinkKind::Hccs, [](const auto& p) { return d(p.rx_retry); }); }},
    {"hccs_frames", [](const models::Machine& m, const models::Network*) {
       return over_ports(m, models::LinkKind::Hccs, [](const auto& p) { return d(p.frames); }); }},
    {"hccs_credit_stall_ns", [](const models::Machine& m, const models::Network*) {
       return over_ports(m, models::LinkKind::Hccs, [](const auto& p) { return d(p.credit_stall_ps) / 1e3; }); }},
    {"rdma_cnp_rcv", [](const models::Machine&, const models::Network* n) {
       return over_qps(n, [](const auto& s) { return d(s.cnp_rcv); }); }},
    {"rdma_retransmits", [](const models::Machine&, const models::Network* n) {
       return over_qps(n, [](const auto& s) { return d(s.retransmits); }); }},
    {"rdma_timeouts", [](const models::Machine&, const models::Network* n) {
       return over_qps(n, [](const auto& s) { return d(s.timeouts); }); }},
    {"pfc_pause_sent", [](const models::Machine&, const models::Network* n) {
       return over_net_ports(n, [](const auto& s) { return d(s.pause_sent); }); }},
    {"drops", [](const models::Machine&, const models::Network* n) {
       return over_net_ports(n, [](const auto& s) { return d(s.drops); }); }},
    {"pfcwd_storms", [](const models::Machine&, const models::Network* n) {  // pause storms the switches' PFC watchdogs acted on
       return over_net_ports(n, [](const auto& s) { return d(s.pfcwd_storms); }); }},
    {"fcs_errors", [](const models::Machine&, const models::Network* n) {  // packet_corruption: dropped by the receiver's FCS check
       return over_net_ports(n, [](const auto& s) { return d(s.fcs_errors); }); }},
    {"ecn_marked", [](const models::Machine&, const models::Network* n) {
       return over_net_ports(n, [](const auto& s) { return d(s.ecn_marked); }); }},
    {"rdma_access_errors", [](const models::Machine& m, const models::Network*) { return d(m.rdma_access_errors()); }},
    {"borrow_forward_drops", [](const models::Machine& m, const models::Network*) { return d(m.forward_drops()); }},
    {"pcie_flow_ctrl_ns", [](const models::Machine& m, const models::Network*) {  // time stalled on PCIe credits
       return over_ports(m, models::LinkKind::Pcie, [](const auto& p) { return d(p.credit_stall_ps) / 1e3; }); }},
    {"npu_interrupts", [](const models::Machine& m, const models::Network*) { return d(m.interrupts()); }},
    {"rdma_qps", [](const models::Machine&, const models::Network* n) {  // QPs the NICs made (at their first write)
       return n ? d(n->qp_count()) : 0.0; }},
};

}  // namespace

const std::vector<std::string>& counter_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : kCounters) v.push_back(c.name);
    return v;
  }();
  return names;
}

std::map<std::string, double> read_counters(const models::Machine& m, const models::Network* net) {
  std::map<std::string, double> c;
  for (const auto& k : kCounters) c[k.name] = k.read(m, net);
  return c;
}

}  // namespace sim
