// Cluster descriptions (docs/topology-format.md): servers of Ascend NPUs (HCCS, PCIe switch, one
// RoCE NIC per NPU), Ethernet/PCIe switches and typed links, written explicitly or generated
// (server groups, Clos fabrics); loaded strictly from JSON and validated as a graph.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/machine.h"
#include "sim/config/json_reader.h"

namespace sim {

struct NpuSpec {
  std::string name;          ///< "server0/npu3"
  std::uint32_t server = 0, device_id = 0;
  models::NpuParams params;
  std::uint64_t nic_Bps = 0; ///< integrated RoCE NIC line rate, bytes/s (0: none)
  std::uint32_t device_ip = 0;
};

enum class SwitchKind : std::uint8_t { Ethernet, Pcie };

struct SwitchSpec {
  std::string name;
  SwitchKind kind = SwitchKind::Ethernet;
  std::uint32_t ports = 0;
  std::uint64_t port_Bps = 0;
  models::Tick latency_ps = 0;
  std::uint64_t buffer_bytes = 0;
  std::uint32_t tier = 1;            ///< 1 leaf, 2 spine, 3 core (Ethernet); 0 PCIe
  std::int64_t server = -1;          ///< a PCIe switch inside a server
};

enum class LinkType : std::uint8_t { Hccs, Pcie, Roce };
const char* link_type_name(LinkType t);

struct Endpoint {
  bool is_switch = false;
  std::uint32_t index = 0;  ///< NPU or switch index
  std::uint32_t port = 0;   ///< switch port; for NPUs: 0 NIC/PCIe, HCCS uses the peer's device id
};

struct LinkSpec {
  std::string name;
  LinkType type = LinkType::Hccs;
  Endpoint a, b;
  models::LinkParams params;
};

struct ServerSpec {
  std::string name, type;
  std::uint32_t host_ip = 0;
  std::vector<std::uint32_t> npus;  ///< NPU indices in device-id order
  std::int64_t pcie_switch = -1;
  std::uint64_t root_complex_Bps = 750ULL * 1000 * 1000 * 1000;  ///< host memory behind the root complex, per direction (pcie/root_complex)
  models::Tick root_complex_latency_ps = 0;                      ///< added to host DMA (pcie/root_complex_latency)
};

struct FabricInfo {
  std::string type;  ///< "" when no generator was used, else "clos"
  std::uint32_t tiers = 0, radix = 0, down = 0, up = 0;
  bool rail_optimized = false;
};

/// The hardware as built where it differs from the description (docs/topology-format.md#as-built):
/// the models are elaborated as built; the description stays what should be. `hcsim discover`
/// reports the differences the library's discovery finds.
struct AsBuilt {
  std::vector<std::uint32_t> hccs_down;                               ///< HCCS link indices down at start
  std::vector<std::pair<std::uint32_t, std::uint32_t>> hccs_swaps;    ///< HCCS links whose b-end cables are swapped
  std::vector<std::uint32_t> npus_missing;                            ///< NPUs that never join (their rank does not start)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> nic_swaps;     ///< RoCE links whose switch ends are swapped
  std::vector<std::pair<std::uint32_t, std::uint32_t>> device_ips;    ///< (NPU, IPv4) the NIC is configured with instead
  std::vector<std::uint32_t> cables_missing;                          ///< RoCE links not cabled (routes avoid them from the start)
  std::vector<std::pair<std::uint32_t, std::uint64_t>> cables_degraded;  ///< (RoCE link, bytes/s it runs at, below its rate)
  bool empty() const {
    return hccs_down.empty() && hccs_swaps.empty() && npus_missing.empty() && nic_swaps.empty() && device_ips.empty() && cables_missing.empty() &&
           cables_degraded.empty();
  }
};

/// The hosts' front-end network (docs/models/host-network.md): one NIC per server, all on one
/// switch; what protocol TCP's point-to-point goes over. Defaults when /host_network is absent.
struct HostNetwork {
  std::uint64_t nic_Bps = 3125ULL * 1000 * 1000;        ///< every server's NIC (25 GbE), bytes/s per direction
  std::vector<std::uint64_t> server_nic_Bps;            ///< per server (index) when /host_network/servers names it; 0: nic_Bps
  models::Tick latency_ps = 1 * models::kPsPerUs;       ///< NIC to NIC through the switch (cables, switch)
  models::Tick send_ps = 5 * models::kPsPerUs;          ///< kernel stack per send() call
  models::Tick recv_ps = 5 * models::kPsPerUs;          ///< kernel stack per recv() call
  std::uint64_t copy_Bps = 2000ULL * 1000 * 1000;       ///< the stack's copy user <-> kernel, per side, bytes/s
  std::uint64_t nic_of(std::uint32_t server) const {
    return server < server_nic_Bps.size() && server_nic_Bps[server] ? server_nic_Bps[server] : nic_Bps;
  }
};

struct Topology {
  std::string file, name, description;
  std::vector<ServerSpec> servers;
  std::vector<NpuSpec> npus;
  std::vector<SwitchSpec> switches;
  std::vector<LinkSpec> links;
  std::vector<std::uint32_t> rank_to_npu;  ///< rank r runs on npus[rank_to_npu[r]]
  FabricInfo fabric;
  std::string rank_table;                  ///< imported rank table file, if any
  AsBuilt as_built;                        ///< /as_built: deviations of the hardware from this description
  HostNetwork host_network;                ///< /host_network (defaults when absent)
  bool has_network() const;
};

/// Load and validate; on failure returns nullopt with every problem in `d`.
std::optional<Topology> load_topology(const std::string& path, Diagnostics& d);
/// Validate an already-parsed document. `base_dir` resolves a relative rank_table path.
std::optional<Topology> topology_from_json(const json& j, Diagnostics& d, const std::string& base_dir = "");

// ---- analysis (hcsim topo) ----
struct TopologySummary {
  std::size_t servers = 0, npus = 0, eth_switches = 0, pcie_switches = 0;
  std::size_t hccs_links = 0, pcie_links = 0, roce_links = 0;
  std::size_t switches_by_tier[4] = {0, 0, 0, 0};
  double bisection_Bps = 0;   ///< max flow from the first half of the ranks to the second, per direction
  std::uint32_t diameter = 0; ///< hops between the farthest pair of NPUs
  double bisection_as_built_Bps = -1;  ///< the same with /as_built's RoCE cables missing or degraded; -1 when none is
};
TopologySummary summarize(const Topology& t);
std::string format_summary(const Topology& t, const TopologySummary& s);
/// Graphviz DOT / self-contained SVG; layouts with more than `max_nodes` nodes are collapsed
/// (servers with the same switches, switches with the same neighbours) so large pictures stay readable.
std::string to_dot(const Topology& t, std::size_t max_nodes = 64);
std::string to_svg(const Topology& t, std::size_t max_nodes = 64);

// ---- Ascend rank tables ----
/// Export rank table "1.0" or "1.2" for the topology's current rank order.
json export_rank_table(const Topology& t, const std::string& version);
/// Validate a rank table as HCCL does and apply its rank order to `t`. Errors go to `d`.
bool import_rank_table(const json& rt, Topology& t, Diagnostics& d);

}  // namespace sim
