// The links (docs/models/links.md): HCCS, PCIe and HBM ports, adjacency, link faults, timing a
// cut-through leg over a path's ports, and the PCIe topology (switches, their upstream links, the
// host root complexes) with the paths between NPUs through a shared switch.
#include "models/link/links.h"

#include <algorithm>

namespace models {

std::uint32_t Links::add_link(LinkKind kind, std::uint32_t a, std::uint32_t b, const LinkParams& p, std::string name) {
  auto id = static_cast<std::uint32_t>(links_.size());
  auto pa = static_cast<std::uint32_t>(ports_.size());
  Port pt{kind, id, a, b, p};
  pt.active_lanes = p.lanes ? p.lanes : 1;
  pt.rng ^= (static_cast<std::uint64_t>(id) + 1) * 0x9e3779b97f4a7c15ULL;  // seeded per link: deterministic
  ports_.push_back(pt);
  std::swap(pt.from, pt.to);
  pt.rng ^= 0x2545f4914f6cdd1dULL;
  ports_.push_back(pt);
  links_.push_back(LinkInfo{kind, a, b, pa, pa + 1, std::move(name)});
  if (kind == LinkKind::Hccs) {
    auto ins = [&](std::uint32_t x, std::uint32_t y, std::uint32_t port) {
      auto& adj = adj_.at(x);
      adj.insert(std::lower_bound(adj.begin(), adj.end(), std::make_pair(y, 0u)), {y, port});
    };
    ins(a, b, pa);
    ins(b, a, pa + 1);
  }
  return id;
}

int Links::port_between(std::uint32_t a, std::uint32_t b) const {
  const auto& adj = adj_[a];
  auto it = std::lower_bound(adj.begin(), adj.end(), std::make_pair(b, 0u));
  if (it == adj.end() || it->first != b) return -1;
  return static_cast<int>(it->second);
}

void Links::set_up(std::uint32_t link, bool up) {
  const LinkInfo& l = links_.at(link);
  ports_[l.port_ab].up = ports_[l.port_ba].up = up;
}

std::uint32_t Links::set_lanes(std::uint32_t link, std::uint32_t lanes) {
  const LinkInfo& l = links_.at(link);
  for (auto p : {l.port_ab, l.port_ba}) ports_[p].active_lanes = std::max<std::uint32_t>(1, std::min(lanes, ports_[p].p.lanes));
  return ports_[l.port_ab].active_lanes;
}

void Links::set_crc_rate(std::uint32_t link, double rate) {
  const LinkInfo& l = links_.at(link);
  ports_[l.port_ab].p.crc_error_rate = ports_[l.port_ba].p.crc_error_rate = rate;
}

// A lender's NIC writes what it received for `to` on into to's HBM (RdmaHost::forward_leg): a DMA
// over the from-to HCCS link (or PCIe), whose ports serve it in order with the SDMA traffic at their
// own rates (as send_piece reserves them), landing one path latency plus the HBM's access
// latency after its last byte left. The NIC writes each packet on as it arrives, so a port that
// was free carries the bytes while they were being received (cut-through at this granularity: a
// chunk or a whole flow-tier message is delivered here at its last byte); a busy port queues
// them. The notify write takes the same path, after the data.
Tick Links::cut_through(std::uint32_t from, std::uint32_t to, std::uint32_t last, Tick last_latency_ps, std::uint64_t len, Tick now) {
  const LinkPath rt = path(from, to);
  if (!rt.ok()) return 0;
  Tick end = now, lat = rt.extra_ps + last_latency_ps;
  for (int pi : {rt.p1, rt.p2, static_cast<int>(last)}) {
    if (pi < 0) continue;
    Port& p = ports_[pi];
    if (!p.up) return 0;
    const Tick own = serialization_ps(len, p.rate());
    const Tick from = std::max(p.busy_until, now > own ? now - own : 0);
    p.busy_until = from + own;
    if (samples_.on()) samples_.busy(static_cast<std::uint32_t>(pi), std::max(from, now), std::max(p.busy_until, now), own, len);
    end = std::max(end, p.busy_until);
    p.busy_ps += own;
    p.bytes += len;
    ++p.pieces;
    if (pi != static_cast<int>(last)) lat += p.p.latency_ps;
  }
  return end + lat;
}

// ---- PCIe switches and root complexes ----
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
