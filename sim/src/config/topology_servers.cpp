// Server generator (docs/topology-format.md "servers", "server_groups"): a server from its preset
// and fields — its NPUs, its HCCS links (full mesh or groups), its PCIe switch and links, its NIC.
#include "topology_builder.h"

namespace sim::topology_detail {

void read_server(Registry& reg, const json& j, const std::string& ptr, std::uint64_t index_in_group, const std::string* name_pattern) {
  Diagnostics& d = reg.diag();
  Topology& t = reg.topology();
  ObjectReader s(j, ptr, d, name_pattern ? std::initializer_list<const char*>{"name", "count", "type", "host_ip", "npus", "hccs", "pcie", "nic"}
                                          : std::initializer_list<const char*>{"name", "type", "host_ip", "npus", "hccs", "pcie", "nic"});
  if (!s.valid()) return;
  ServerSpec srv;
  if (name_pattern) {
    srv.name = *name_pattern;
    auto k = srv.name.find("{i}");
    if (k != std::string::npos) srv.name.replace(k, 3, std::to_string(index_in_group));
  } else {
    srv.name = s.str("name", true).value_or("");
  }
  if (!name_pattern && !s.get("name", false)) {
    // missing or not a string: already reported
  } else if (auto why = bad_name(srv.name)) d.error(s.child("name"), *why);
  else if (!reg.claim_name(srv.name, 's')) d.error(s.child("name"), "duplicate device name \"" + srv.name + "\"");
  srv.type = s.str("type", true).value_or("custom");
  const Preset* pre = find_preset(srv.type);
  if (!pre) {
    d.error(s.child("type"), "unknown server type \"" + srv.type + "\" (known: atlas800t-a2, atlas800-910, custom)");
    pre = find_preset("custom");
  }
  if (auto ip = s.str("host_ip", true)) {
    auto v = parse_ipv4(*ip);
    if (!v) d.error(s.child("host_ip"), "not an IPv4 address (four decimal fields 0-255, no leading zeros): \"" + *ip + "\"");
    else {
      std::uint64_t x = *v + index_in_group;
      if (x > 0xffffffffULL) d.error(s.child("host_ip"), "host_ip range overflows");
      else reg.ip_used(static_cast<std::uint32_t>(x), s.child("host_ip"), srv.name), srv.host_ip = static_cast<std::uint32_t>(x);
    }
  }
  models::NpuParams np;
  np.model = pre->model;
  np.hbm.capacity_bytes = pre->hbm_bytes;
  np.host_link.bandwidth_Bps = pre->pcie_bw;
  std::uint32_t count = pre->npus;
  if (const json* nj = s.get("npus", pre->npus == 0)) {
    ObjectReader n(*nj, s.child("npus"), d, {"count", "model", "hbm_capacity", "hbm_bandwidth"});
    if (auto c = n.uint("count", pre->npus == 0, 1, 16)) count = static_cast<std::uint32_t>(*c);
    if (auto m = n.str("model", false)) {
      if (*m != "ascend910" && *m != "ascend910b") d.error(n.child("model"), "unknown NPU model \"" + *m + "\" (ascend910, ascend910b)");
      else np.model = *m;
    }
    if (auto v = n.size("hbm_capacity", false)) {
      if (*v == 0 || *v > (1ULL << 40)) d.error(n.child("hbm_capacity"), "HBM capacity must be in (0, 1 TiB]");
      else np.hbm.capacity_bytes = *v;
    }
    if (auto v = n.bandwidth("hbm_bandwidth", false)) np.hbm.bandwidth_Bps = *v;
  }
  if (np.model == "ascend910") {  // the first Ascend 910: 256 TFLOPS FP16, no BF16 (docs/models/npu.md#compute)
    np.peak_fp16_flops = 256e12;
    np.peak_bf16_flops = 0;
    np.peak_int8_ops = 0;
  }
  bool pcie_switch = pre->pcie_switch;
  models::LinkParams pcie_lp = models::NpuParams{}.host_link;  // lanes, credits: PCIe defaults
  pcie_lp.bandwidth_Bps = pre->pcie_bw;
  if (const json* pj = s.get("pcie", false)) {
    ObjectReader p(*pj, s.child("pcie"), d, {"bandwidth", "latency", "switch", "root_complex", "root_complex_latency"});
    if (auto v = laned(d, p, "bandwidth", kPcieLanes)) pcie_lp.bandwidth_Bps = *v;
    if (auto v = latency(d, p, "latency")) pcie_lp.latency_ps = *v;
    if (auto v = p.boolean("switch", false)) pcie_switch = *v;
    if (auto v = laned(d, p, "root_complex", kPcieLanes)) srv.root_complex_Bps = *v;
    if (auto v = latency(d, p, "root_complex_latency")) srv.root_complex_latency_ps = *v;
  }
  np.host_link = pcie_lp;
  std::string hccs_topo = pre->hccs_topology;
  models::LinkParams lp{pre->hccs_bw, pre->hccs_lat};
  if (const json* hj = s.get("hccs", false)) {
    ObjectReader h(*hj, s.child("hccs"), d, {"topology", "bandwidth", "latency"});
    if (auto v = h.str("topology", false)) {
      if (*v != "full-mesh" && *v != "groups-of-4" && *v != "none")
        d.error(h.child("topology"), "unknown HCCS topology \"" + *v + "\" (full-mesh, groups-of-4, none)");
      else hccs_topo = *v;
    }
    if (auto v = laned(d, h, "bandwidth", kHccsLanes)) lp.bandwidth_Bps = *v;
    if (auto v = latency(d, h, "latency")) lp.latency_ps = *v;
  }
  std::uint64_t nic_bw = pre->nic_bw;
  std::optional<std::uint32_t> dev_ip;
  if (const json* cj = s.get("nic", false)) {
    ObjectReader c(*cj, s.child("nic"), d, {"bandwidth", "device_ip"});
    if (auto v = c.bandwidth("bandwidth", false)) nic_bw = *v;
    if (auto v = c.str("device_ip", false)) {
      if (auto ip = parse_ipv4(*v)) dev_ip = *ip;
      else d.error(c.child("device_ip"), "not an IPv4 address (four decimal fields 0-255, no leading zeros): \"" + *v + "\"");
    }
  }
  if (hccs_topo == "groups-of-4" && count % 4 != 0)
    d.error(s.child("npus") + "/count", "HCCS groups-of-4 needs a multiple of 4 NPUs, got " + std::to_string(count));
  if (t.npus.size() + count > kMaxNpus) { d.error(ptr, "more than 65536 NPUs"); return; }
  auto sidx = static_cast<std::uint32_t>(t.servers.size());
  for (std::uint32_t i = 0; i < count; ++i) {
    NpuSpec n;
    n.name = srv.name + "/npu" + std::to_string(i);
    n.server = sidx;
    n.device_id = i;
    n.params = np;
    n.nic_Bps = nic_bw;
    if (dev_ip) {
      std::uint64_t x = static_cast<std::uint64_t>(*dev_ip) + index_in_group * count + i;
      n.device_ip = static_cast<std::uint32_t>(x);
      reg.ip_used(n.device_ip, s.child("nic") + "/device_ip", n.name);
    }
    srv.npus.push_back(static_cast<std::uint32_t>(t.npus.size()));
    t.npus.push_back(std::move(n));
  }
  for (std::uint32_t a = 0; a < count; ++a)
    for (std::uint32_t b = a + 1; b < count; ++b) {
      if (!(hccs_topo == "full-mesh" || (hccs_topo == "groups-of-4" && a / 4 == b / 4))) continue;
      LinkSpec l;
      l.type = LinkType::Hccs;
      l.a = Endpoint{false, srv.npus[a], b};
      l.b = Endpoint{false, srv.npus[b], a};
      l.params = lp;
      l.name = srv.name + "/hccs" + std::to_string(a) + "-" + std::to_string(b);
      t.links.push_back(std::move(l));
    }
  if (pcie_switch) {
    SwitchSpec sw;
    sw.name = srv.name + "/pcie-switch";
    sw.kind = SwitchKind::Pcie;
    sw.ports = count + 1;  // one per NPU and the upstream port to the root complex
    sw.port_Bps = pcie_lp.bandwidth_Bps;
    sw.latency_ps = 500 * models::kPsPerNs;  // PCIe P2P = 1 + 0.5 + 1 us = 5 x HCCS 0.5 us (HCOMM docs: HCCS ~1/5 of PCIe P2P)
    sw.tier = 0;
    sw.server = sidx;
    srv.pcie_switch = static_cast<std::int64_t>(t.switches.size());
    reg.claim_name(sw.name, 'w');
    reg.index_switch(sw.name, static_cast<std::uint32_t>(t.switches.size()));
    t.switches.push_back(sw);
    for (std::uint32_t i = 0; i < count; ++i) {
      LinkSpec l;
      l.type = LinkType::Pcie;
      l.a = Endpoint{false, srv.npus[i], 0};
      l.b = Endpoint{true, static_cast<std::uint32_t>(srv.pcie_switch), i};
      l.params = pcie_lp;
      l.name = srv.name + "/pcie" + std::to_string(i);
      t.links.push_back(std::move(l));
    }
  }
  reg.index_server(srv.name, sidx);
  t.servers.push_back(std::move(srv));
}

}  // namespace sim::topology_detail
