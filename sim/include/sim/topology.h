// Cluster descriptions (docs/topology-format.md): servers of Ascend NPUs with HCCS links and host
// PCIe, loaded strictly from JSON and validated as a graph.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/machine.h"
#include "sim/json_reader.h"

namespace sim {

struct NpuSpec {
  std::string name;          ///< "server0/npu3"
  std::uint32_t server = 0, device_id = 0;
  models::NpuParams params;
};

struct LinkSpec {
  std::string name;
  models::LinkKind kind = models::LinkKind::Hccs;
  std::uint32_t a = 0, b = 0;  ///< NPU indices
  models::LinkParams params;
};

struct ServerSpec {
  std::string name, type;
  std::uint32_t host_ip = 0;
  std::vector<std::uint32_t> npus;  ///< NPU indices in device-id order
};

struct Topology {
  std::string file, name, description;
  std::vector<ServerSpec> servers;
  std::vector<NpuSpec> npus;    ///< rank i runs on npus[i]
  std::vector<LinkSpec> links;  ///< HCCS links (host PCIe links are implied per NPU)
};

/// Load and validate; on failure returns nullopt with every problem in `d`.
std::optional<Topology> load_topology(const std::string& path, Diagnostics& d);
/// Validate an already-parsed document (used by load_topology and by tests).
std::optional<Topology> topology_from_json(const json& j, Diagnostics& d);

}  // namespace sim
