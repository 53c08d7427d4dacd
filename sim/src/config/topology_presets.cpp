// Server presets (docs/topology-format.md "type"): what a server type fills in before the file's
// own fields override it.
#include "topology_builder.h"

namespace sim::topology_detail {

const Preset kPresets[] = {
    // Atlas 800T A2: 8 x 910B, HCCS full mesh 7 x 28 GB/s, 0.5 us; 64 GB HBM; PCIe Gen5 x16; 200GE per NPU.
    {"atlas800t-a2", 8, "ascend910b", 64ULL << 30, "full-mesh", GBps(28), 500 * models::kPsPerNs, false, GBps(63), GBps(25)},
    // Atlas 800 (910): two HCCS groups of 4 (3 links x 30 GB/s each), joined through a PCIe Gen4
    // switch; 32 GB HBM; 100GE per NPU.
    {"atlas800-910", 8, "ascend910", 32ULL << 30, "groups-of-4", GBps(30), 500 * models::kPsPerNs, true, GBps(31.5), GBps(12.5)},
    {"custom", 0, "ascend910b", 64ULL << 30, "none", GBps(28), 500 * models::kPsPerNs, false, GBps(63), GBps(25)},
};

const Preset* find_preset(const std::string& t) {
  for (auto& p : kPresets) if (t == p.type) return &p;
  return nullptr;
}

}  // namespace sim::topology_detail
