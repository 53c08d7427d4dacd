// Host DMA of the NPU (docs/models/npu.md, docs/models/links.md): HostToDevice / DeviceToHost
// over the NPU's PCIe link, or through its PCIe switch and upstream link, and the host root
// complex. Everything specific to host <-> device copies is in this file: the paths, the checks
// when a copy starts, and the bytes landing at either end.
#include "models/machine.h"

namespace models {

void Machine::attach_host(std::uint32_t npu, std::uint32_t rc) {
  NpuState& n = npus_.at(npu);
  const RootComplex& r = links_.root_complex(rc);
  const SwitchPorts* sp = links_.switch_ports(npu);
  const PcieSwitch* sw = sp ? &links_.pcie_switch(sp->sw) : nullptr;
  if (sw && sw->up >= 0) {  // device -> switch -> upstream -> root complex
    n.d2h[0] = static_cast<int>(sp->up); n.d2h[1] = sw->up; n.d2h[2] = static_cast<int>(r.up);
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = sw->down; n.h2d[2] = static_cast<int>(sp->down);
  } else {
    n.d2h[0] = static_cast<int>(links_.link(n.host_link).port_ba); n.d2h[1] = static_cast<int>(r.up); n.d2h[2] = -1;
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = static_cast<int>(links_.link(n.host_link).port_ab); n.h2d[2] = -1;
  }
}

// A host DMA task starting on stream s: check it and set the transfer's path (ports in travel
// order) and the switch latency. False when the stream was failed.
bool Machine::host_dma_path(std::uint32_t s, const Task& t, Transfer& x, Tick& lat) {
  const std::uint32_t e_npu = streams_[s].npu;
  const NpuState& me = npus_[e_npu];
  std::string why;
  std::uint64_t dev = t.kind == TaskKind::HostToDevice ? t.dst : t.src;
  if (!check_range(dev, t.bytes, why)) { fail(s, why); return false; }
  if (addr_npu(dev) != e_npu) { fail(s, "host DMA must target the stream's own NPU"); return false; }
  if (t.bytes && !t.host) { fail(s, "null host pointer"); return false; }
  const int* path = t.kind == TaskKind::HostToDevice ? me.h2d : me.d2h;
  x.port = path[0];
  x.port2 = path[1];
  x.port3 = path[2];
  if (x.port3 >= 0) lat += links_.pcie_switch(links_.pcie_switch_of(e_npu)).latency;
  return true;
}

// A piece of a host DMA lands: [off, off + len) of the task's buffer. A host in another process
// (HostMemory) is read or written through its accessor by way of a bounce buffer of one piece.
bool Machine::host_dma_land(const Task& t, std::uint64_t off, std::uint64_t len) {
  const bool h2d = t.kind == TaskKind::HostToDevice;
  const std::uint64_t dev = h2d ? t.dst : t.src;
  NpuState& n = npus_[addr_npu(dev)];
  HostMemory* hm = n.host_mem;
  const std::uint64_t host = reinterpret_cast<std::uintptr_t>(t.host) + off;
  if (h2d) {
    if (!hm) { n.hbm.write(addr_offset(dev) + off, static_cast<const std::uint8_t*>(t.host) + off, len); return true; }
    if (!n.hbm.stores_bytes()) {  // nothing kept: the host's bytes are still read (a bad pointer fails)
      bounce_.resize(len);
      return hm->read(host, bounce_.data(), len);
    }
    // Straight into the HBM store's pages: no bounce copy of the bulk bytes.
    std::uint64_t at = host;
    return n.hbm.write_with(addr_offset(dev) + off, len, [&](std::uint8_t* dst, std::uint64_t k) {
      const bool ok = hm->read(at, dst, k);
      at += k;
      return ok;
    });
  }
  if (!n.hbm.stores_bytes()) return true;  // timing-only HBM has no bytes to give: the host buffer is left alone
  if (!hm) { n.hbm.read(addr_offset(dev) + off, static_cast<std::uint8_t*>(t.host) + off, len); return true; }
  std::uint64_t at = host;
  return n.hbm.read_with(addr_offset(dev) + off, len, [&](const std::uint8_t* src, std::uint64_t k) {
    const bool ok = hm->write(at, src, k);
    at += k;
    return ok;
  });
}

}  // namespace models
