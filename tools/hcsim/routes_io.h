// Route decisions as hcsim routes prints them and hcsim diff compares them (docs/routing.md#cli):
// read from a trace's `routes` table, from a routes file (`hcsim routes` output, e.g. a golden
// file under tests/golden/), or from a scenario run for the purpose.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hcsim {

/// One decision. The key is (comm, src, dst, qp, n): n counts earlier decisions of the same
/// (comm, src, dst, qp), so a re-route is a second decision, not a change of the first.
struct RouteLine {
  std::uint32_t comm = 0, src = 0, dst = 0, qp = 0, n = 0;
  std::string transport, nic, hops, reason, trigger;
  std::uint32_t udp_sport = 0;
  double t_ns = 0, bandwidth_GBps = 0, latency_us = 0, congestion = 0, cost = 0;  ///< not in routes files
  std::string key() const;
  /// What a regression compares: transport, NIC, source port, hops and reason.
  std::string decision() const;
};

/// What a set of decisions loads (docs/tools.md#diff). Every decision counts (a re-routed
/// stripe's earlier decisions too). `ports`: per switch egress port ("leaf0:4", from a hop
/// "leaf0:0>4") or other link a hop names ("node0/hccs0-1"), the decisions crossing it.
/// `uplinks`: per switch the uplink ports that carry at least one decision — on a path through k
/// switches the egress ports of the first ⌊(k−1)/2⌋ (a Clos path climbs to its middle switch,
/// then descends).
struct RouteLoad {
  std::map<std::string, std::size_t> ports;
  std::map<std::string, std::set<std::string>> uplinks;
};
RouteLoad route_load(const std::vector<RouteLine>& rs);

/// Header line of a routes file.
extern const char* const kRoutesHeader;

/// Load from FILE: a trace database (SQLite), a routes file, or (with `allow_scenario`) a scenario
/// that is run with `hcsim run` into a temporary trace first (with --inherit-env when
/// `inherit_env`). False + `why` on failure.
bool load_routes(const std::string& file, bool allow_scenario, std::vector<RouteLine>* out, std::string* why,
                 std::string* db_path = nullptr, bool inherit_env = false);

/// The routes file text of `rs` (sorted by key; tab-separated).
std::string routes_text(const std::vector<RouteLine>& rs);
std::string routes_json(const std::vector<RouteLine>& rs);

}  // namespace hcsim
