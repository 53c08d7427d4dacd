#include "sim/topology.h"

#include <map>
#include <set>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>

namespace sim {
namespace {

// Server presets: what "type" fills in before the file's own fields override it.
struct Preset {
  const char* type;
  std::uint32_t npus;
  const char* model;
  std::uint64_t hbm_bytes;
  const char* hccs_topology;
  std::uint64_t hccs_bw;
  models::Tick hccs_lat;
};
const Preset kPresets[] = {
    // Atlas 800T A2: 8 x 910B, HCCS full mesh, 7 links x 28 GB/s per direction, ~0.5 us, 64 GB HBM.
    {"atlas800t-a2", 8, "ascend910b", 64ULL << 30, "full-mesh", 28ULL * 1000 * 1000 * 1000, 500 * models::kPsPerNs},
    // Atlas 800 (910): two HCCS groups of 4 (full mesh inside a group), 30 GB/s links, 32 GB HBM.
    {"atlas800-910", 8, "ascend910", 32ULL << 30, "groups-of-4", 30ULL * 1000 * 1000 * 1000, 500 * models::kPsPerNs},
    {"custom", 0, "ascend910b", 64ULL << 30, "none", 28ULL * 1000 * 1000 * 1000, 500 * models::kPsPerNs},
};

const Preset* find_preset(const std::string& t) {
  for (auto& p : kPresets) if (t == p.type) return &p;
  return nullptr;
}

}  // namespace

std::optional<Topology> topology_from_json(const json& j, Diagnostics& d) {
  ObjectReader top(j, "", d, {"format", "version", "name", "description", "servers"});
  if (!top.valid()) return std::nullopt;
  Topology t;
  t.file = d.file();
  auto fmt = top.str("format", true);
  if (fmt && *fmt != "hcsim-topology")
    d.error(top.child("format"), "expected \"hcsim-topology\", got \"" + *fmt + "\"");
  top.uint("version", true, 1, 1);
  t.name = top.str("name", true).value_or("");
  t.description = top.str("description", false).value_or("");
  const json* servers = top.get("servers", true);
  if (servers && (!servers->is_array() || servers->empty())) {
    d.error(top.child("servers"), "expected a non-empty array of servers");
    servers = nullptr;
  }
  std::set<std::string> names;
  std::map<std::uint32_t, std::string> ips;
  if (servers) {
    if (servers->size() > 4096) d.error(top.child("servers"), "more than 4096 servers");
    for (std::size_t si = 0; si < servers->size() && si < 4096; ++si) {
      std::string sp = top.child("servers") + "/" + std::to_string(si);
      ObjectReader s((*servers)[si], sp, d, {"name", "type", "host_ip", "npus", "hccs", "pcie"});
      if (!s.valid()) continue;
      ServerSpec srv;
      srv.name = s.str("name", true).value_or("");
      if (!srv.name.empty() && !names.insert(srv.name).second)
        d.error(s.child("name"), "duplicate server name \"" + srv.name + "\"");
      srv.type = s.str("type", true).value_or("custom");
      const Preset* pre = find_preset(srv.type);
      if (!pre) {
        d.error(s.child("type"), "unknown server type \"" + srv.type + "\" (known: atlas800t-a2, atlas800-910, custom)");
        pre = &kPresets[2];
      }
      if (auto ip = s.str("host_ip", true)) {
        auto v = parse_ipv4(*ip);
        if (!v) d.error(s.child("host_ip"), "not an IPv4 address: \"" + *ip + "\"");
        else if (ips.count(*v)) d.error(s.child("host_ip"), "host_ip " + *ip + " already used by server \"" + ips[*v] + "\"");
        else { ips[*v] = srv.name; srv.host_ip = *v; }
      }
      models::NpuParams np;
      np.model = pre->model;
      np.hbm.capacity_bytes = pre->hbm_bytes;
      std::uint32_t count = pre->npus;
      if (const json* nj = s.get("npus", pre->npus == 0)) {
        ObjectReader n(*nj, s.child("npus"), d, {"count", "model", "hbm_capacity", "hbm_bandwidth"});
        if (auto c = n.uint("count", pre->npus == 0, 1, 16)) count = static_cast<std::uint32_t>(*c);
        if (auto m = n.str("model", false)) {
          if (*m != "ascend910" && *m != "ascend910b") d.error(n.child("model"), "unknown NPU model \"" + *m + "\"");
          else np.model = *m;
        }
        if (auto v = n.size("hbm_capacity", false)) {
          if (*v == 0 || *v > (1ULL << 40)) d.error(n.child("hbm_capacity"), "HBM capacity must be in (0, 1 TiB]");
          else np.hbm.capacity_bytes = *v;
        }
        if (auto v = n.bandwidth("hbm_bandwidth", false)) np.hbm.bandwidth_Bps = *v;
      }
      if (const json* pj = s.get("pcie", false)) {
        ObjectReader p(*pj, s.child("pcie"), d, {"bandwidth", "latency"});
        if (auto v = p.bandwidth("bandwidth", false)) np.host_link.bandwidth_Bps = *v;
        if (auto v = p.duration("latency", false)) np.host_link.latency_ps = *v;
      }
      std::string hccs_topo = pre->hccs_topology;
      models::LinkParams lp{pre->hccs_bw, pre->hccs_lat};
      if (const json* hj = s.get("hccs", false)) {
        ObjectReader h(*hj, s.child("hccs"), d, {"topology", "bandwidth", "latency"});
        if (auto v = h.str("topology", false)) {
          if (*v != "full-mesh" && *v != "groups-of-4" && *v != "none")
            d.error(h.child("topology"), "unknown HCCS topology \"" + *v + "\" (full-mesh, groups-of-4, none)");
          else hccs_topo = *v;
        }
        if (auto v = h.bandwidth("bandwidth", false)) lp.bandwidth_Bps = *v;
        if (auto v = h.duration("latency", false)) lp.latency_ps = *v;
      }
      if (hccs_topo == "groups-of-4" && count % 4 != 0)
        d.error(s.child("npus") + "/count", "HCCS groups-of-4 needs a multiple of 4 NPUs, got " + std::to_string(count));
      auto sidx = static_cast<std::uint32_t>(t.servers.size());
      for (std::uint32_t i = 0; i < count; ++i) {
        NpuSpec n;
        n.name = srv.name + "/npu" + std::to_string(i);
        n.server = sidx;
        n.device_id = i;
        n.params = np;
        srv.npus.push_back(static_cast<std::uint32_t>(t.npus.size()));
        t.npus.push_back(n);
      }
      for (std::uint32_t a = 0; a < count; ++a)
        for (std::uint32_t b = a + 1; b < count; ++b) {
          bool link = hccs_topo == "full-mesh" || (hccs_topo == "groups-of-4" && a / 4 == b / 4);
          if (!link) continue;
          LinkSpec l;
          l.kind = models::LinkKind::Hccs;
          l.a = srv.npus[a];
          l.b = srv.npus[b];
          l.params = lp;
          l.name = srv.name + "/hccs" + std::to_string(a) + "-" + std::to_string(b);
          t.links.push_back(l);
        }
      t.servers.push_back(srv);
    }
  }
  if (!d.ok()) return std::nullopt;
  // Every NPU must reach every other one: HCCS links inside a server; between servers only a
  // network would do, and this format version has none yet.
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  G g(t.npus.size());
  for (auto& l : t.links) boost::add_edge(l.a, l.b, g);
  std::vector<int> comp(t.npus.size());
  int ncomp = t.npus.empty() ? 0 : boost::connected_components(g, comp.data());
  if (ncomp > 1) {
    // Name the first NPU not reachable from NPU 0.
    for (std::size_t i = 0; i < comp.size(); ++i)
      if (comp[i] != comp[0]) {
        d.error("/servers", "NPUs cannot reach each other: " + t.npus[i].name + " has no path to " + t.npus[0].name +
                                " (" + std::to_string(ncomp) + " disconnected groups; no network between them)");
        break;
      }
    return std::nullopt;
  }
  return t;
}

std::optional<Topology> load_topology(const std::string& path, Diagnostics& d) {
  auto j = read_json_file(path, d);
  if (!j) return std::nullopt;
  return topology_from_json(*j, d);
}

}  // namespace sim
