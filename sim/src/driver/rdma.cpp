// The device's RoCE NIC as the library sees it (sim/driver/rdma.h; docs/routing.md): what the NIC
// and the network let the library see — the NIC's state and LLDP neighbour, its counters, path
// probes that carry a flow's 5-tuple, a QP's UDP source port — and memory registration.
#include <algorithm>
#include <functional>

#include "sim/driver/rdma.h"

namespace sim {

using hcomm::DrvStatus;

DrvStatus SimRdma::nic_info(std::uint32_t device, hcomm::NicInfo* out) {
  if (device >= m_.npu_count() || !out) return DrvStatus::Invalid;
  *out = hcomm::NicInfo{};
  if (!m_.has_nic(device)) return DrvStatus::Ok;
  const models::Network& net = *m_.network();
  const models::NetPort& p = net.port(m_.nic_node(device), 0);
  out->present = true;
  out->link_up = p.cabled && p.up;
  out->speed_bps = p.Bps * 8;
  out->ip = device < topo_.npus.size() ? topo_.npus[device].device_ip : 0;
  for (const auto& ip : topo_.as_built.device_ips)  // discovery: the NIC as configured (/as_built device_ip)
    if (ip.first == device) out->ip = ip.second;
  if (p.cabled) {  // LLDP: the neighbour announces its name and port
    out->neighbor = net.node_name(p.peer);
    out->neighbor_port = p.peer_port;
    if (net.is_switch(p.peer)) {  // its management interface: cabled bandwidth toward hosts and switches
      if (switch_bw_.size() <= p.peer) switch_bw_.resize(p.peer + 1, {~0ULL, 0});
      auto& bw = switch_bw_[p.peer];
      if (bw.first == ~0ULL) {
        bw = {0, 0};
        for (std::uint32_t i = 0; i < net.node_ports(p.peer); ++i) {
          const models::NetPort& q = net.port(p.peer, i);
          if (!q.cabled) continue;
          (net.is_switch(q.peer) ? bw.second : bw.first) += q.Bps;
        }
      }
      out->neighbor_down_Bps = bw.first;
      out->neighbor_up_Bps = bw.second;
    }
  }
  return DrvStatus::Ok;
}

DrvStatus SimRdma::nic_counters(std::uint32_t device, hcomm::NicCounters* out) {
  if (device >= m_.npu_count() || !out) return DrvStatus::Invalid;
  *out = hcomm::NicCounters{};
  const std::vector<std::uint32_t>* qps = m_.nic_qps(device);
  if (!qps) return DrvStatus::Ok;
  for (std::uint32_t q : *qps) {
    const models::QpStats& st = m_.network()->qp_stats(q);
    out->cnp_rcv += st.cnp_rcv;
    out->retransmits += st.retransmits;
    out->timeouts += st.timeouts;
    out->tx_bytes += st.tx_bytes;
  }
  return DrvStatus::Ok;
}

// Path probes: probe i traced with source port sports[i] (on_reply(i, the switches) when it comes
// back), then the host waits for the slowest reply.
DrvStatus SimRdma::trace_probes(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                  const std::function<void(std::uint32_t, const std::vector<models::Network::Hop>&)>& on_reply) {
  if (device >= m_.npu_count() || (n && (!sports || !targets))) return DrvStatus::Invalid;
  if (!m_.has_nic(device)) return DrvStatus::NotSupported;
  for (std::uint32_t i = 0; i < n; ++i)
    if (targets[i] >= m_.npu_count()) return DrvStatus::Invalid;
  const models::Network& net = *m_.network();
  std::vector<models::Network::Hop>& hops = probe_hops_;
  models::Tick rtt_max = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    models::Tick rtt = 0;
    if (m_.has_nic(targets[i]) && net.trace_path(m_.nic_node(device), m_.nic_node(targets[i]), sports[i], &hops, &rtt)) {
      rtt_max = std::max(rtt_max, rtt);
      on_reply(i, hops);
    }  // else lost on the way: no reply
  }
  // The probes go out together; the host waits for the slowest reply.
  host_.host_delay(n * kProbeHostNs + rtt_max / models::kPsPerNs);
  return DrvStatus::Ok;
}

DrvStatus SimRdma::probe_paths(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                 std::vector<hcomm::PathHop>* out, std::vector<std::uint32_t>* start) {
  if (!out || !start) return DrvStatus::Invalid;
  out->clear();
  start->assign(n + 1, 0);
  out->reserve(static_cast<std::size_t>(n) * 3);  // a two-tier Clos path: leaf, spine, leaf
  std::uint32_t last = 0;  // probes up to here have their start entry
  const DrvStatus st = trace_probes(device, targets, sports, n, [&](std::uint32_t i, const std::vector<models::Network::Hop>& hops) {
    for (; last <= i; ++last) (*start)[last] = static_cast<std::uint32_t>(out->size());
    for (const auto& h : hops) out->push_back(hcomm::PathHop{h.node, h.in_port, h.out_port});
  });
  for (; last <= n; ++last) (*start)[last] = static_cast<std::uint32_t>(out->size());
  return st;
}

DrvStatus SimRdma::probe_egress(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                  std::vector<hcomm::ProbeEgress>* out) {
  if (!out) return DrvStatus::Invalid;
  out->assign(n, hcomm::ProbeEgress{});
  return trace_probes(device, targets, sports, n, [out](std::uint32_t i, const std::vector<models::Network::Hop>& hops) {
    if (!hops.empty()) (*out)[i] = hcomm::ProbeEgress{hops.front().out_port, static_cast<std::uint32_t>(hops.size())};
  });
}

DrvStatus SimRdma::qp_connect(std::uint32_t device, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) {
  if (device >= m_.npu_count() || target >= m_.npu_count() || qp > 0xffff) return DrvStatus::Invalid;
  if (!m_.has_nic(device) || !m_.has_nic(target)) return DrvStatus::NotSupported;
  m_.set_qp_sport(device, target, qp, sport);
  return DrvStatus::Ok;
}

DrvStatus SimRdma::mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                               std::uint32_t* key) {
  if (device >= m_.npu_count() || !key || bytes == 0 || models::addr_npu(addr) != device ||
      !m_.hbm(device).in_range(models::addr_offset(addr), bytes))
    return DrvStatus::Invalid;
  *key = m_.register_mr(device, addr, bytes, access);
  return DrvStatus::Ok;
}

DrvStatus SimRdma::mr_deregister(std::uint32_t device, std::uint32_t key) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  return m_.deregister_mr(device, key) ? DrvStatus::Ok : DrvStatus::Invalid;
}

}  // namespace sim
