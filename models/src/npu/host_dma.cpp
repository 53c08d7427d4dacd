// Host DMA of the NPUs (models/npu/host_dma.h, docs/models/npu.md): everything specific to
// host <-> device copies is in this file: the paths, the checks when a copy starts, and the
// bytes landing at either end.
#include "models/npu/host_dma.h"

#include "models/link/links.h"
#include "models/npu/address_map.h"
#include "models/npu/npu_devices.h"

namespace models {

void HostDma::add_npu(std::uint32_t link, std::uint32_t port_h2d, std::uint32_t port_d2h) {
  Npu n;
  n.link = link;
  n.h2d[0] = static_cast<int>(port_h2d);
  n.d2h[0] = static_cast<int>(port_d2h);
  npus_.push_back(n);
}

void HostDma::attach(std::uint32_t npu, std::uint32_t rc) {
  Npu& n = npus_.at(npu);
  const RootComplex& r = links_.root_complex(rc);
  const SwitchPorts* sp = links_.switch_ports(npu);
  const PcieSwitch* sw = sp ? &links_.pcie_switch(sp->sw) : nullptr;
  if (sw && sw->up >= 0) {  // device -> switch -> upstream -> root complex
    n.d2h[0] = static_cast<int>(sp->up); n.d2h[1] = sw->up; n.d2h[2] = static_cast<int>(r.up);
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = sw->down; n.h2d[2] = static_cast<int>(sp->down);
  } else {
    n.d2h[0] = static_cast<int>(links_.link(n.link).port_ba); n.d2h[1] = static_cast<int>(r.up); n.d2h[2] = -1;
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = static_cast<int>(links_.link(n.link).port_ab); n.h2d[2] = -1;
  }
}

bool HostDma::prepare(std::uint32_t npu, const Task& t, Transfer& x, Tick& lat, std::string& why) const {
  const std::uint64_t dev = t.kind == TaskKind::HostToDevice ? t.dst : t.src;
  if (!devs_.check_range(dev, t.bytes, why)) return false;
  if (addr_npu(dev) != npu) { why = "host DMA must target the stream's own NPU"; return false; }
  if (t.bytes && !t.host) { why = "null host pointer"; return false; }
  const int* path = t.kind == TaskKind::HostToDevice ? npus_[npu].h2d : npus_[npu].d2h;
  x.port = path[0];
  x.port2 = path[1];
  x.port3 = path[2];
  if (x.port3 >= 0) lat += links_.pcie_switch(links_.pcie_switch_of(npu)).latency;
  return true;
}

// A host in another process (HostMemory) is read or written through its accessor by way of a
// bounce buffer of one piece.
bool HostDma::land(const Task& t, std::uint64_t off, std::uint64_t len) {
  const bool h2d = t.kind == TaskKind::HostToDevice;
  const std::uint64_t dev = h2d ? t.dst : t.src;
  SparseMemory& hbm = devs_.hbm(addr_npu(dev));
  HostMemory* hm = npus_[addr_npu(dev)].mem;
  const std::uint64_t host = reinterpret_cast<std::uintptr_t>(t.host) + off;
  if (h2d) {
    if (!hm) { hbm.write(addr_offset(dev) + off, static_cast<const std::uint8_t*>(t.host) + off, len); return true; }
    if (!hbm.stores_bytes()) {  // nothing kept: the host's bytes are still read (a bad pointer fails)
      bounce_.resize(len);
      return hm->read(host, bounce_.data(), len);
    }
    // Straight into the HBM store's pages: no bounce copy of the bulk bytes.
    std::uint64_t at = host;
    return hbm.write_with(addr_offset(dev) + off, len, [&](std::uint8_t* dst, std::uint64_t k) {
      const bool ok = hm->read(at, dst, k);
      at += k;
      return ok;
    });
  }
  if (!hbm.stores_bytes()) return true;  // timing-only HBM has no bytes to give: the host buffer is left alone
  if (!hm) { hbm.read(addr_offset(dev) + off, static_cast<std::uint8_t*>(t.host) + off, len); return true; }
  std::uint64_t at = host;
  return hbm.read_with(addr_offset(dev) + off, len, [&](const std::uint8_t* src, std::uint64_t k) {
    const bool ok = hm->write(at, src, k);
    at += k;
    return ok;
  });
}

}  // namespace models
