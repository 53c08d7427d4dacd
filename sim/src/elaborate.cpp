#include "elaborate.h"

namespace sim {

Elaboration::Elaboration(const Topology& t, const models::NetParams& netp, bool store_bytes, std::uint64_t piece_bytes)
    : sched("fabric"), machine(sched, piece_bytes) {
  for (const auto& npu : t.npus) {
    models::NpuParams p = npu.params;
    p.hbm.store_bytes = store_bytes;
    machine.add_npu(p, npu.name);  // the one name of the device (docs/trace-schema.md)
  }
  hccs_link.assign(t.links.size(), ~0u);
  // HCCS cables as built (/as_built): a swap exchanges the b-ends of two links; each end keeps
  // its port number (the device id the description cables it to).
  std::vector<Endpoint> bend(t.links.size());
  for (std::size_t k = 0; k < t.links.size(); ++k) bend[k] = t.links[k].b;
  for (const auto& sw : t.as_built.hccs_swaps) std::swap(bend[sw.first], bend[sw.second]);
  std::vector<bool> down(t.links.size(), false);
  for (std::uint32_t k : t.as_built.hccs_down) down[k] = true;
  for (std::size_t k = 0; k < t.links.size(); ++k) {
    const auto& l = t.links[k];
    if (l.type != LinkType::Hccs) continue;
    if (down[k]) {  // down from the start: the ports are cabled but never train; no link (hccs_link ~0)
      machine.set_hccs_port(l.a.index, l.a.port, models::Machine::kHccsUntrained);
      machine.set_hccs_port(bend[k].index, bend[k].port, models::Machine::kHccsUntrained);
      continue;
    }
    hccs_link[k] = machine.add_link(models::LinkKind::Hccs, l.a.index, bend[k].index, l.params, l.name);
    machine.set_hccs_port(l.a.index, l.a.port, machine.links()[hccs_link[k]].port_ab);
    machine.set_hccs_port(bend[k].index, bend[k].port, machine.links()[hccs_link[k]].port_ba);
  }

  // PCIe switches joining NPUs of a server (peer-to-peer DMA), and their links.
  std::vector<std::uint32_t> pcie_sw(t.switches.size(), ~0u);
  for (std::size_t i = 0; i < t.switches.size(); ++i)
    if (t.switches[i].kind == SwitchKind::Pcie) pcie_sw[i] = machine.add_pcie_switch(t.switches[i].name, t.switches[i].latency_ps);
  for (const auto& l : t.links)
    if (l.type == LinkType::Pcie && !l.a.is_switch && l.b.is_switch && pcie_sw[l.b.index] != ~0u)
      machine.add_pcie_switch_link(l.a.index, pcie_sw[l.b.index], l.params, l.name);
  // One root complex per server carries the host-memory side of its NPUs' host DMA; a server's
  // PCIe switch reaches it over its upstream port (a link at the switch's port bandwidth).
  for (const auto& srv : t.servers) {
    models::LinkParams rp{srv.root_complex_Bps, srv.root_complex_latency_ps, 16, 256, 0, 0};  // no credit limit
    const std::uint32_t rc = machine.add_root_complex(srv.name + "/root-complex", rp);
    if (srv.pcie_switch >= 0 && pcie_sw[static_cast<std::size_t>(srv.pcie_switch)] != ~0u) {
      const auto& sw = t.switches[static_cast<std::size_t>(srv.pcie_switch)];
      models::LinkParams up = models::NpuParams{}.host_link;
      up.bandwidth_Bps = sw.port_Bps;
      up.latency_ps = 0;  // the switch's own latency is charged on the path
      machine.add_pcie_switch_upstream(pcie_sw[static_cast<std::size_t>(srv.pcie_switch)], rc, up, sw.name + "/upstream");
    }
    for (std::uint32_t n : srv.npus) machine.attach_host(n, rc);
  }
  if (t.has_network()) build_network(t, netp);
}

// The RoCE network: one host node per cabled NIC, the topology's Ethernet switches, its links.
void Elaboration::build_network(const Topology& t, const models::NetParams& p) {
  net = std::make_unique<models::Network>(sched, p);
  std::vector<std::uint32_t> sw_node(t.switches.size(), ~0u);
  nic.assign(t.npus.size(), ~0u);
  for (std::size_t i = 0; i < t.switches.size(); ++i)
    if (t.switches[i].kind == SwitchKind::Ethernet)
      sw_node[i] = net->add_switch(t.switches[i].name, t.switches[i].ports, t.switches[i].buffer_bytes, t.switches[i].latency_ps);
  auto node = [&](const Endpoint& e) {
    if (e.is_switch) return sw_node[e.index];
    if (nic[e.index] == ~0u) nic[e.index] = net->add_host(t.npus[e.index].name);
    return nic[e.index];
  };
  // As built (/as_built nic_port_swap): two NICs' cables exchanged at the switch end.
  std::vector<Endpoint> sw_end(t.links.size());
  for (std::size_t k = 0; k < t.links.size(); ++k) sw_end[k] = t.links[k].a.is_switch ? t.links[k].a : t.links[k].b;
  for (const auto& s : t.as_built.nic_swaps) std::swap(sw_end[s.first], sw_end[s.second]);
  // As built (/as_built cable_missing, cable_degraded): a cable left out (its ports stay uncabled,
  // so the routes built below avoid it from the start), or one running below its rate.
  std::vector<std::uint64_t> Bps(t.links.size());
  for (std::size_t k = 0; k < t.links.size(); ++k) Bps[k] = t.links[k].params.bandwidth_Bps;
  for (std::uint32_t k : t.as_built.cables_missing) Bps[k] = 0;
  for (const auto& c : t.as_built.cables_degraded) Bps[c.first] = c.second;
  for (std::size_t k = 0; k < t.links.size(); ++k) {
    const auto& l = t.links[k];
    if (l.type != LinkType::Roce || Bps[k] == 0) continue;
    Endpoint ea = l.a, eb = l.b;
    if (ea.is_switch != eb.is_switch) (ea.is_switch ? ea : eb) = sw_end[k];
    std::uint32_t a = node(ea), b = node(eb);
    net->connect(a, ea.is_switch ? ea.port : 0, b, eb.is_switch ? eb.port : 0, Bps[k], l.params.latency_ps);
  }
  net->build_forwarding();
  machine.attach_network(net.get(), nic);
}

}  // namespace sim
