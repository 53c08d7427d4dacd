// PCIe switches and root complexes (Links) (docs/models/links.md): peer-to-peer routes
// through a shared switch, the switch's upstream link, the host root complex.
#include "models/link/links.h"

namespace models {

std::uint32_t Links::add_root_complex(std::string name, const LinkParams& p) {
  const std::uint32_t l = add_link(LinkKind::Pcie, kHost, kHost, p, std::move(name));
  rcs_.push_back(RootComplex{links_[l].port_ab, links_[l].port_ba});
  return static_cast<std::uint32_t>(rcs_.size() - 1);
}

std::uint32_t Links::add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name) {
  const std::uint32_t l = add_link(LinkKind::Pcie, kHost, kHost - 1 - sw, p, std::move(name));
  pcie_switches_.at(sw).down = static_cast<int>(links_[l].port_ab);
  pcie_switches_.at(sw).up = static_cast<int>(links_[l].port_ba);
  (void)rcs_.at(rc);
  return l;
}

std::uint32_t Links::add_pcie_switch(std::string name, Tick latency_ps) {
  pcie_switches_.push_back(PcieSwitch{std::move(name), latency_ps});
  return static_cast<std::uint32_t>(pcie_switches_.size() - 1);
}

std::uint32_t Links::add_pcie_switch_link(std::uint32_t npu, std::uint32_t sw, const LinkParams& p, std::string name) {
  auto id = static_cast<std::uint32_t>(links_.size());
  auto pa = static_cast<std::uint32_t>(ports_.size());
  Port pt{LinkKind::Pcie, id, npu, kHost - 1 - sw, p};
  pt.active_lanes = p.lanes ? p.lanes : 1;
  pt.rng ^= (static_cast<std::uint64_t>(id) + 1) * 0x9e3779b97f4a7c15ULL;
  ports_.push_back(pt);
  std::swap(pt.from, pt.to);
  ports_.push_back(pt);
  links_.push_back(LinkInfo{LinkKind::Pcie, npu, kHost - 1 - sw, pa, pa + 1, std::move(name)});
  if (npu_switch_.size() < adj_.size()) npu_switch_.resize(adj_.size());
  npu_switch_.at(npu) = SwitchPorts{sw, pa, pa + 1};
  return id;
}

LinkPath Links::path(std::uint32_t a, std::uint32_t b) const {
  LinkPath r;
  r.p1 = port_between(a, b);
  if (r.p1 >= 0) return r;
  if (a < npu_switch_.size() && b < npu_switch_.size() && npu_switch_[a].sw >= 0 && npu_switch_[a].sw == npu_switch_[b].sw) {
    r.p1 = static_cast<int>(npu_switch_[a].up);
    r.p2 = static_cast<int>(npu_switch_[b].down);
    r.extra_ps = pcie_switches_[static_cast<std::size_t>(npu_switch_[a].sw)].latency;
  }
  return r;
}

}  // namespace models
