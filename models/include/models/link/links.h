// The links of a server group (docs/models/links.md): HCCS, PCIe and HBM ports (two directional
// Ports per link, models/link/port.h), the HCCS adjacency between NPUs, PCIe switches and root
// complexes (models/link/pcie.h), link faults, and the counters over time of every port. Links
// owns this state; the engines that move bytes (SDMA, notify writes, host DMA, a lender's
// forwarding leg) reserve its ports through port() and route(). What a link fault does to the NPUs
// (an interrupt, the listener's record) is the composer's (models/machine.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/link/link_params.h"
#include "models/link/pcie.h"
#include "models/link/port.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

/// Path between two NPUs: a direct HCCS port, or two PCIe ports through a shared switch.
struct LinkPath {
  int p1 = -1, p2 = -1;  ///< ports in order (p2 = -1 for one hop)
  Tick extra_ps = 0;     ///< switch latency
  bool ok() const { return p1 >= 0; }
};

class Links {
 public:
  /// One more NPU (the composer adds them in order, before their links).
  void add_npu() { adj_.emplace_back(); }

  // ---- links and ports (link/links.cpp) ----
  /// A link between a and b (NPU ids, kHost, or kHost - 1 - sw for a PCIe switch): ports a->b
  /// and b->a. An HCCS link joins the two NPUs' adjacency.
  std::uint32_t add_link(LinkKind kind, std::uint32_t a, std::uint32_t b, const LinkParams& p, std::string name);
  const std::vector<LinkInfo>& links() const { return links_; }
  const LinkInfo& link(std::uint32_t l) const { return links_[l]; }
  const std::vector<Port>& ports() const { return ports_; }
  Port& port(std::size_t i) { return ports_[i]; }
  const Port& port(std::size_t i) const { return ports_[i]; }
  /// Directional port from NPU a to NPU b over a direct link, or -1.
  int port_between(std::uint32_t a, std::uint32_t b) const;
  // Link faults (both directions).
  void set_up(std::uint32_t link, bool up);
  /// Returns the lanes now active.
  std::uint32_t set_lanes(std::uint32_t link, std::uint32_t lanes);
  void set_crc_rate(std::uint32_t link, double rate);

  // ---- PCIe switches and root complexes (link/links.cpp) ----
  std::uint32_t add_pcie_switch(std::string name, Tick latency_ps);
  std::uint32_t add_pcie_switch_link(std::uint32_t npu, std::uint32_t sw, const LinkParams& p, std::string name);
  std::uint32_t add_root_complex(std::string name, const LinkParams& p);
  std::uint32_t add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name);
  /// The path between NPUs a and b (not ok when they share no HCCS link or PCIe switch).
  LinkPath path(std::uint32_t a, std::uint32_t b) const;
  std::int64_t pcie_switch_of(std::uint32_t npu) const { return npu < npu_switch_.size() ? npu_switch_[npu].sw : -1; }
  const RootComplex& root_complex(std::uint32_t rc) const { return rcs_.at(rc); }
  const PcieSwitch& pcie_switch(std::int64_t sw) const { return pcie_switches_[static_cast<std::size_t>(sw)]; }
  /// The cable of `npu` to its PCIe switch, or nullptr (directly under its root complex).
  const SwitchPorts* switch_ports(std::uint32_t npu) const {
    return npu < npu_switch_.size() && npu_switch_[npu].sw >= 0 ? &npu_switch_[npu] : nullptr;
  }

  // ---- counters over time of every port (models/sampler.h) ----
  void enable_sampling(Tick interval_ps) { samples_.enable(interval_ps, ports_.size()); }
  Sampler& samples() { return samples_; }

  /// Time `len` bytes from NPU `from` to NPU `to` on the ports of their path and then `last`
  /// (the target's HBM port), cut-through: a free port carries them as they were being received
  /// until `now`. Returns when they land (`last_latency_ps` after their last byte), or 0 when the
  /// path is down or there is none.
  Tick cut_through(std::uint32_t from, std::uint32_t to, std::uint32_t last, Tick last_latency_ps, std::uint64_t len, Tick now);

 private:
  std::vector<Port> ports_;
  std::vector<LinkInfo> links_;
  std::vector<RootComplex> rcs_;
  std::vector<PcieSwitch> pcie_switches_;
  std::vector<SwitchPorts> npu_switch_;  // per NPU (grown when one is cabled to a switch)
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> adj_;  // per NPU, HCCS: (peer, port) sorted by peer
  Sampler samples_;
};

}  // namespace models
