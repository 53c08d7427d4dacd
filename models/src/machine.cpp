// Machine: wires the NPUs' components, the links and the NPU side of the NIC together
// (docs/models/README.md). This file holds only what spans the components: adding an NPU,
// crashes and link faults (both ends are told), backdoor access, and the RdmaHost calls that
// reach more than one component.
#include "models/machine.h"

#include <stdexcept>

namespace models {

std::uint32_t Machine::add_npu(const NpuParams& p, std::string name) {
  if (p.sdma_engines == 0) throw std::invalid_argument("NPU needs at least one SDMA engine");
  const std::uint32_t n = devs_.add(p, std::move(name));
  links_.add_npu();
  rdma_.add_npu();
  notify_.add_npu();
  streams_.add_npu();
  sdma_.add_npu(p.sdma_engines);
  mmio_.add_npu(p.msi_latency_ps);
  // Host PCIe link of this NPU.
  const std::uint32_t l = add_link(LinkKind::Pcie, kHost, n, p.host_link, devs_.name(n) + "/host");
  host_dma_.add_npu(l, links_.link(l).port_ab, links_.link(l).port_ba);
  // HBM bandwidth as a port (reads and writes share it; no lanes, credits or latency here).
  const std::uint32_t h = add_link(LinkKind::Hbm, n, n, LinkParams{p.hbm.bandwidth_Bps, 0, 1, 0, 0, 0}, devs_.name(n) + "/hbm");
  devs_.set_hbm_port(n, links_.link(h).port_ab);
  return n;
}

void Machine::rdma_task_done(std::uint32_t s, Tick at) {
  if (at <= sch_.now()) streams_.task_done(s);
  else streams_.task_done_at(s, at);
}

Tick Machine::forward_leg(std::uint32_t lender, std::uint32_t target, std::uint64_t len) {
  return links_.cut_through(lender, target, devs_.hbm_port(target), devs_.params(target).hbm.access_latency_ps, len, sch_.now());
}

// A link fault: the Links change state; both ends' NPUs raise their link interrupt; the listener records it.
void Machine::set_link_up(std::uint32_t link, bool up) {
  links_.set_up(link, up);
  const LinkInfo& l = links_.link(link);
  for (std::uint32_t end : {l.a, l.b})
    if (end < devs_.count()) raise(end, 2);
  if (listener_) listener_->on_link_event(link, up ? "up" : "down");
}

void Machine::set_link_lanes(std::uint32_t link, std::uint32_t lanes) {
  const std::uint32_t active = links_.set_lanes(link, lanes);
  if (listener_) listener_->on_link_event(link, "lanes " + std::to_string(active) + "/" + std::to_string(links_.port(links_.link(link).port_ab).p.lanes));
}

void Machine::set_link_crc_rate(std::uint32_t link, double rate) {
  links_.set_crc_rate(link, rate);
  if (listener_) listener_->on_link_event(link, "crc error rate " + std::to_string(rate));
}

void Machine::crash_npu(std::uint32_t npu) {
  const std::vector<LinkInfo>& ls = links_.links();
  for (std::uint32_t l = 0; l < ls.size(); ++l)
    if ((ls[l].a == npu || ls[l].b == npu) && ls[l].kind != LinkKind::Hbm) set_link_up(l, false);
  streams_.crash(npu, devs_.name(npu) + " crashed");
}

void Machine::backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len) {
  if (addr_npu(addr) >= devs_.count()) throw std::out_of_range("backdoor write to no NPU's memory");
  devs_.hbm(addr_npu(addr)).write(addr_offset(addr), src, len);
}

void Machine::backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const {
  if (addr_npu(addr) >= devs_.count()) throw std::out_of_range("backdoor read of no NPU's memory");
  devs_.hbm(addr_npu(addr)).read(addr_offset(addr), dst, len);
}

}  // namespace models
