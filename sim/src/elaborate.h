// Elaboration (docs/architecture.md#sim): the ONLY place that maps a Topology to models — NPUs,
// HCCS and PCIe links, PCIe switches and root complexes, the RoCE network — on a SystemC-driven
// scheduler. tests/layering_test.sh fails if models are constructed anywhere else in sim/.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/machine.h"
#include "models/network.h"
#include "sim/kernel.h"
#include "sim/config/topology.h"

namespace sim {

struct Elaboration {
  /// Builds every model of `t`; must run while a SystemC module is being constructed (the
  /// scheduler is its child module "fabric").
  Elaboration(const Topology& t, const models::NetParams& net, bool store_bytes, std::uint64_t piece_bytes);

  ScScheduler sched;
  models::Machine machine;
  std::unique_ptr<models::Network> net;  ///< null without RoCE links
  std::vector<std::uint32_t> hccs_link;  ///< topology link index -> machine link id (HCCS only, else ~0)
  std::vector<std::uint32_t> nic;        ///< NPU -> network host node (~0 when not cabled)

 private:
  void build_network(const Topology& t, const models::NetParams& p);
};

}  // namespace sim
