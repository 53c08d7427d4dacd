// Internals of the topology loader (docs/topology-format.md), shared by its files: the schema
// reader (topology.cpp), the generators (topology_servers.cpp, topology_fabric.cpp), the server
// presets (topology_presets.cpp), the checks (topology_checks.cpp) and /as_built
// (topology_as_built.cpp). Plain C++.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "sim/config/topology.h"
#include "sim/config/units.h"

namespace sim::topology_detail {

constexpr std::uint64_t GBps(double x) { return static_cast<std::uint64_t>(x * 1e9); }
constexpr std::uint64_t kMaxNpus = 65536;

// Server presets: what "type" fills in before the file's own fields override it.
struct Preset {
  const char* type;
  std::uint32_t npus;
  const char* model;
  std::uint64_t hbm_bytes;
  const char* hccs_topology;
  std::uint64_t hccs_bw;
  models::Tick hccs_lat;
  bool pcie_switch;
  std::uint64_t pcie_bw;
  std::uint64_t nic_bw;
};
/// The preset of a server "type", or null.
const Preset* find_preset(const std::string& t);

// Device names: non-empty, printable ASCII (0x20..0x7e), unique. They appear in endpoints, the
// trace, DOT and SVG output. The reason a name is bad, or nullopt.
std::optional<std::string> bad_name(const std::string& n);
// A device or port index written in decimal: 1 to 9 digits, nothing else.
bool parse_index(const char* s, unsigned* out);

inline std::string bw_str(std::uint64_t Bps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.4gGb/s", static_cast<double>(Bps) * 8 / 1e9);
  return b;
}

inline const std::uint32_t kHccsLanes = models::LinkParams{}.lanes;        // 8
inline const std::uint32_t kPcieLanes = models::NpuParams{}.host_link.lanes;  // 16
constexpr models::Tick kMaxLatencyPs = models::kPsPerSec;                 // 1 s

class Builder {
 public:
  Builder(Diagnostics& d, Topology& t) : d_(d), t_(t) {}

  // topology_checks.cpp: value checks and port bookkeeping
    std::optional<std::uint64_t> laned(const ObjectReader& r, const char* key, std::uint32_t lanes);
    std::optional<models::Tick> latency(const ObjectReader& r, const char* key);
    void add_link(LinkSpec l, const std::string& ptr);
    void claim_generated_ports();

  // topology_servers.cpp: a server (or one of a group) and its generated NPUs, HCCS and PCIe links
    void server(const json& j, const std::string& ptr, std::uint64_t index_in_group, const std::string* name_pattern);

  // topology_fabric.cpp: a generated Clos fabric (leaves, spines, cores) and its RoCE links
  void fabric(const json& j, const std::string& ptr);

  // topology.cpp: the schema reader for explicit switches, links and overrides
    void switch_(const json& j, const std::string& ptr);
    std::optional<Endpoint> endpoint(const std::string& s, const std::string& ptr);
    void link(const json& j, const std::string& ptr);
    void override_(const json& j, const std::string& ptr);

 private:
    void ip_used(std::uint32_t ip, const std::string& ptr, const std::string& who);

  Diagnostics& d_;
  Topology& t_;
  std::unordered_map<std::string, char> names_;
  std::unordered_map<std::string, std::uint32_t> server_index_, switch_index_;
  std::unordered_map<std::uint32_t, std::string> ips_;
  std::unordered_set<std::uint64_t> ports_used_;  // hashed: 800k ports at 65,536 NPUs
};

/// Every NPU reaches every other one, and the RoCE network joins every cabled NIC; false (with the
/// error in `d`) if not. `fabric`: the topology has a generated fabric (where the error points).
bool check_reachable(const Topology& t, Diagnostics& d, bool fabric);

/// /as_built (topology_as_built.cpp): read after the links and the fabric, whose cables it names.
void read_as_built(const json& ab, Topology& t, Diagnostics& d);
/// /host_network (topology_host_network.cpp): the hosts' front-end network.
void read_host_network(const json& hn, Topology& t, Diagnostics& d);

}  // namespace sim::topology_detail
