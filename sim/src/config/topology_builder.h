// Internals of the topology loader (docs/topology-format.md), shared by its files: the schema
// reader (topology.cpp), the generators (topology_servers.cpp, topology_fabric.cpp), the server
// presets (topology_presets.cpp), the registry of names, addresses and ports and the checks
// (topology_checks.cpp) and /as_built (topology_as_built.cpp). Plain C++.
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

/// What the loader has named so far: device names, the servers' and switches' indexes by name,
/// IP addresses, and the ports links use (each port carries at most one link). The readers below
/// add to the topology through it, so every name, address and port is claimed once
/// (topology_checks.cpp).
class Registry {
 public:
  Registry(Diagnostics& d, Topology& t) : d_(d), t_(t) {}
  Diagnostics& diag() { return d_; }
  Topology& topology() { return t_; }
  /// Claim a device name (`kind`: 's' server, 'w' switch); false when it is taken.
  bool claim_name(const std::string& name, char kind) { return names_.emplace(name, kind).second; }
  void index_server(const std::string& name, std::uint32_t index) { server_index_[name] = index; }
  void index_switch(const std::string& name, std::uint32_t index) { switch_index_[name] = index; }
  /// The index of the server or switch named `name`, or null.
  const std::uint32_t* server(const std::string& name) const { return find(server_index_, name); }
  const std::uint32_t* switch_(const std::string& name) const { return find(switch_index_, name); }
  /// `who` uses IP `ip` (an error at `ptr` when another device has it).
  void ip_used(std::uint32_t ip, const std::string& ptr, const std::string& who);
  /// Add the link when both its ports are free (else an error at `ptr`).
  void claim_link(LinkSpec l, const std::string& ptr);
  /// The servers' generated HCCS and PCIe links claim their ports.
  void claim_generated_ports();
  /// Room for `more` port claims.
  void reserve_ports(std::size_t more) { ports_used_.reserve(ports_used_.size() + more); }

 private:
  static const std::uint32_t* find(const std::unordered_map<std::string, std::uint32_t>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
  }
  Diagnostics& d_;
  Topology& t_;
  std::unordered_map<std::string, char> names_;
  std::unordered_map<std::string, std::uint32_t> server_index_, switch_index_;
  std::unordered_map<std::uint32_t, std::string> ips_;
  std::unordered_set<std::uint64_t> ports_used_;  // hashed: 800k ports at 65,536 NPUs
};

// Value checks (topology_checks.cpp): a laned link's bandwidth, a latency (nullopt, with the
// error in `d`, when the value is given and wrong).
std::optional<std::uint64_t> laned(Diagnostics& d, const ObjectReader& r, const char* key, std::uint32_t lanes);
std::optional<models::Tick> latency(Diagnostics& d, const ObjectReader& r, const char* key);

/// A server (or server `index_in_group` of a group whose names follow `name_pattern`) with its
/// generated NPUs, HCCS and PCIe links (topology_servers.cpp).
void read_server(Registry& reg, const json& j, const std::string& ptr, std::uint64_t index_in_group, const std::string* name_pattern);
/// A generated Clos fabric: leaves, spines, cores and their RoCE links (topology_fabric.cpp).
void read_fabric(Registry& reg, const json& j, const std::string& ptr);

/// Every NPU reaches every other one, and the RoCE network joins every cabled NIC; false (with the
/// error in `d`) if not. `fabric`: the topology has a generated fabric (where the error points).
bool check_reachable(const Topology& t, Diagnostics& d, bool fabric);

/// /as_built (topology_as_built.cpp): read after the links and the fabric, whose cables it names.
void read_as_built(const json& ab, Topology& t, Diagnostics& d);
/// /host_network (topology_host_network.cpp): the hosts' front-end network.
void read_host_network(const json& hn, Topology& t, Diagnostics& d);

}  // namespace sim::topology_detail
