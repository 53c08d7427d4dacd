// Checks of the topology loader (docs/topology-format.md): device names and indices, laned
// bandwidths and latencies, one link per port, unique host IPs, and reachability (every NPU reaches
// every other one; the RoCE network is not split).
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>

#include "topology_builder.h"

namespace sim::topology_detail {

// Device names: non-empty, printable ASCII (0x20..0x7e), unique. They appear in endpoints, the
// trace, DOT and SVG output.
std::optional<std::string> bad_name(const std::string& n) {
  if (n.empty()) return std::string("a device name must not be empty");
  for (unsigned char c : n)
    if (c < 0x20 || c > 0x7e) {
      char b[8];
      std::snprintf(b, sizeof b, "0x%02x", c);
      return "device name contains the non-printable byte " + std::string(b) + " (names are printable ASCII)";
    }
  return std::nullopt;
}

// A device or port index written in decimal: 1 to 9 digits, nothing else (sscanf's %u would
// accept signs and spaces and wrap "4294967296" around to 0).
bool parse_index(const char* s, unsigned* out) {
  std::size_t n = 0;
  unsigned x = 0;
  for (; s[n]; ++n) {
    if (s[n] < '0' || s[n] > '9' || n == 9) return false;
    x = x * 10 + static_cast<unsigned>(s[n] - '0');
  }
  *out = x;
  return n > 0;
}

// A bandwidth of a laned link (HCCS, PCIe): the link model runs at (bandwidth / lanes) x active
// lanes in whole bytes/s, so the bandwidth must split into whole bytes/s per lane within
// kUnitRelTolerance (a rate that truncated to 0 per lane used to make transfers take "forever",
// which overflowed the clock and came out as absurdly short times).
std::optional<std::uint64_t> laned(Diagnostics& d, const ObjectReader& r, const char* key, std::uint32_t lanes) {
  auto v = r.bandwidth(key, false);
  if (v && static_cast<double>(*v % lanes) > kUnitRelTolerance * static_cast<double>(*v)) {
    d.error(r.child(key), "bandwidth of " + std::to_string(*v) + " B/s does not split into whole bytes/s over the link's " +
                               std::to_string(lanes) + " lanes (the model would run it at " + std::to_string(*v / lanes * lanes) + " B/s)");
    return std::nullopt;
  }
  return v;
}

// Link, switch and host latencies: at most 1 s (credit-based rates divide by the round trip).
std::optional<models::Tick> latency(Diagnostics& d, const ObjectReader& r, const char* key) {
  auto v = r.duration(key, false);
  if (v && *v > kMaxLatencyPs) { d.error(r.child(key), "latency above 1 s"); return std::nullopt; }
  return v;
}

// Every port carries at most one link: a NIC, an NPU's PCIe port, an HCCS port, a switch port.
void Registry::claim_link(LinkSpec l, const std::string& ptr) {
  for (const Endpoint* e : {&l.a, &l.b})
    if (e->is_switch && e->port >= t_.switches[e->index].ports) {
      d_.error(ptr, "switch \"" + t_.switches[e->index].name + "\" has " + std::to_string(t_.switches[e->index].ports) +
                        " ports; a link needs port " + std::to_string(e->port));
      return;
    }
  for (const Endpoint* e : {&l.a, &l.b}) {
    std::uint64_t key = (static_cast<std::uint64_t>(e->is_switch) << 63) | (static_cast<std::uint64_t>(e->index) << 24) |
                        (static_cast<std::uint64_t>(l.type) << 20) | e->port;
    if (!ports_used_.insert(key).second) {
      std::string what = e->is_switch ? "port " + std::to_string(e->port) + " of switch \"" + t_.switches[e->index].name + "\""
                                      : std::string(l.type == LinkType::Roce ? "the NIC" : l.type == LinkType::Pcie ? "the PCIe port" : "an HCCS port") +
                                            " of " + t_.npus[e->index].name;
      d_.error(ptr, what + " is used by more than one link");
      return;
    }
  }
  t_.links.push_back(std::move(l));
}

// Generated HCCS/PCIe links of the servers claim their ports too.
void Registry::claim_generated_ports() {
  ports_used_.reserve(2 * t_.links.size() + 2 * t_.npus.size());
  for (auto& l : t_.links)
    for (const Endpoint* e : {&l.a, &l.b})
      ports_used_.insert((static_cast<std::uint64_t>(e->is_switch) << 63) | (static_cast<std::uint64_t>(e->index) << 24) |
                         (static_cast<std::uint64_t>(l.type) << 20) | e->port);
}

void Registry::ip_used(std::uint32_t ip, const std::string& ptr, const std::string& who) {
  auto [it, fresh] = ips_.emplace(ip, who);
  if (!fresh) d_.error(ptr, "IP " + format_ipv4(ip) + " of " + who + " is already used by " + it->second);
}

bool check_reachable(const Topology& t, Diagnostics& d, bool fabric) {
  // Every NPU must reach every other one (Boost.Graph connected components over all links).
  const std::size_t N = t.npus.size(), V = N + t.switches.size();
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  G g(V);
  auto vid = [&](const Endpoint& e) { return e.is_switch ? N + e.index : e.index; };
  for (auto& l : t.links) boost::add_edge(vid(l.a), vid(l.b), g);
  std::vector<int> comp(V);
  boost::connected_components(g, comp.data());
  for (std::size_t i = 1; i < N; ++i)
    if (comp[i] != comp[0]) {
      d.error("/", "NPUs cannot reach each other: " + t.npus[i].name + " has no path to " + t.npus[0].name +
                       (t.servers.size() > 1 && !t.has_network() ? " (no network joins the servers: add links or a fabric)" : ""));
      return false;
    }
  // The RoCE network itself must join every cabled NIC: HCCS joins the NPUs of one server only, so
  // a split network (a fabric whose pods share no core) validates above yet fails every transfer
  // across the split at run time.
  {
    std::vector<std::uint32_t> parent(V);
    for (std::uint32_t i = 0; i < V; ++i) parent[i] = i;
    auto root = [&](std::uint32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    std::vector<char> cabled(N, 0);
    for (auto& l : t.links)
      if (l.type == LinkType::Roce) {
        for (const Endpoint* e : {&l.a, &l.b}) if (!e->is_switch) cabled[e->index] = 1;
        parent[root(static_cast<std::uint32_t>(vid(l.a)))] = root(static_cast<std::uint32_t>(vid(l.b)));
      }
    std::int64_t first = -1;
    for (std::uint32_t i = 0; i < N; ++i) {
      if (!cabled[i]) continue;
      if (first < 0) { first = i; continue; }
      if (root(i) != root(static_cast<std::uint32_t>(first))) {
        d.error(fabric ? "/fabric" : "/links", "the RoCE network is split: the NIC of " + t.npus[i].name +
                                                 " cannot reach the NIC of " + t.npus[first].name + " over RoCE links and switches");
        return false;
      }
    }
  }
  return true;
}

}  // namespace sim::topology_detail
