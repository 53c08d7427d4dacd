// hcsim topo: counts, bisection bandwidth (max flow), diameter, and pictures (DOT, SVG).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include "sim/config/topology.h"
#include "sim/config/units.h"

namespace sim {

namespace {

// Bisection: maximum flow from the first half of the ranks to the second half, every link
// carrying its bandwidth in each direction. For the symmetric layouts hcsim generates (servers in
// rank order, Clos fabrics) this is the bisection bandwidth.
double bisection(const Topology& t) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, long long,
                      boost::property<boost::edge_residual_capacity_t, long long, boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t N = t.npus.size();
  if (N < 2) return 0;
  const std::size_t V = N + t.switches.size() + 2, src = V - 2, dst = V - 1;
  Graph g(V);
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  auto arc = [&](std::size_t u, std::size_t v, long long c) {
    auto e1 = boost::add_edge(u, v, g).first, e2 = boost::add_edge(v, u, g).first;
    cap[e1] = c;
    cap[e2] = 0;
    rev[e1] = e2;
    rev[e2] = e1;
  };
  auto vid = [&](const Endpoint& e) { return e.is_switch ? N + e.index : e.index; };
  // Capacities in MB/s keep sums far from overflow.
  std::vector<long long> incident(N, 0);
  for (auto& l : t.links) {
    long long c = static_cast<long long>(l.params.bandwidth_Bps / 1000000);
    arc(vid(l.a), vid(l.b), c);
    arc(vid(l.b), vid(l.a), c);
    for (const Endpoint* e : {&l.a, &l.b}) if (!e->is_switch) incident[e->index] += c;
  }
  // The source and sink arcs carry at most what an NPU's own links carry, so that capacity is as
  // good as infinite and keeps the solver's sums (the source's excess is the sum of its arcs) in
  // range: a fixed 2^50 per arc overflowed 64 bits from 8192 NPUs per half on.
  for (std::size_t r = 0; r < N; ++r) {
    const std::uint32_t n = t.rank_to_npu[r];
    if (r < N / 2) arc(src, n, incident[n]);
    else arc(n, dst, incident[n]);
  }
  long long f = boost::push_relabel_max_flow(g, src, dst);
  return static_cast<double>(f) * 1e6;
}

// Diameter in hops between NPUs, exact, with the bounding-diameters method (Takes and Kosters,
// 2011) instead of a BFS from every NPU (which is N·(V+E): minutes at 65,536 NPUs). With ecc(w) the
// largest distance from w to any NPU, a BFS from any vertex w bounds every vertex v:
// ecc(v) <= d(v,w) + ecc(w), ecc(v) >= ecc(w) - d(v,w), and ecc(v) >= d(v,w) when w is an NPU.
// BFS sources alternate between the vertex with the smallest lower bound (a central vertex, often a
// switch, which tightens every upper bound) and the NPU with the largest upper bound; the loop ends
// when no NPU's upper bound exceeds the largest NPU eccentricity proven. Worst case: one BFS per
// vertex, as before; on the layouts here, a handful.
std::uint32_t diameter(const Topology& t) {
  const std::size_t N = t.npus.size(), V = N + t.switches.size();
  if (N < 2) return 0;
  std::vector<std::uint32_t> deg(V + 1, 0), adj;
  auto vid = [&](const Endpoint& e) { return static_cast<std::uint32_t>(e.is_switch ? N + e.index : e.index); };
  for (auto& l : t.links) { ++deg[vid(l.a) + 1]; ++deg[vid(l.b) + 1]; }
  for (std::size_t i = 0; i < V; ++i) deg[i + 1] += deg[i];
  adj.resize(deg[V]);
  std::vector<std::uint32_t> fill(deg.begin(), deg.end() - 1);
  for (auto& l : t.links) { adj[fill[vid(l.a)]++] = vid(l.b); adj[fill[vid(l.b)]++] = vid(l.a); }
  constexpr std::uint32_t kInf = ~0u;
  std::vector<std::uint32_t> dist(V), queue(V);
  // BFS from s; returns ecc(s) over NPUs, or kInf if some NPU is unreachable.
  auto bfs = [&](std::uint32_t s) {
    std::fill(dist.begin(), dist.end(), kInf);
    std::size_t head = 0, tail = 0;
    queue[tail++] = s;
    dist[s] = 0;
    while (head < tail) {
      std::uint32_t u = queue[head++];
      for (std::uint32_t k = deg[u]; k < deg[u + 1]; ++k) {
        std::uint32_t v = adj[k];
        if (dist[v] == kInf) { dist[v] = dist[u] + 1; queue[tail++] = v; }
      }
    }
    std::uint32_t e = 0;
    for (std::size_t v = 0; v < N; ++v) {
      if (dist[v] == kInf) return kInf;
      e = std::max(e, dist[v]);
    }
    return e;
  };
  std::vector<std::uint32_t> lo(V, 0), hi(V, kInf);
  std::vector<char> done(V, 0);
  std::uint32_t best = 0;  // the largest NPU eccentricity proven so far (a lower bound on the diameter)
  std::uint32_t s = 0;
  for (bool central = true;; central = !central) {
    const std::uint32_t e = bfs(s);
    if (e == kInf) return kInf;  // disconnected: validation rejects this before any summary
    done[s] = 1;
    lo[s] = hi[s] = e;
    if (s < N) best = std::max(best, e);
    for (std::uint32_t v = 0; v < V; ++v) {
      if (dist[v] == kInf) continue;
      const std::uint32_t d = dist[v];
      std::uint32_t l = e > d ? e - d : 0;
      if (s < N) l = std::max(l, d);
      lo[v] = std::max(lo[v], l);
      hi[v] = std::min(hi[v], d + e);
      if (v < N) best = std::max(best, lo[v]);  // lo[v] <= ecc(v) <= diameter
    }
    // Open NPUs: those whose eccentricity could still exceed `best`.
    std::uint32_t pick_hi = kInf, pick_lo = kInf;
    for (std::uint32_t v = 0; v < N; ++v)
      if (!done[v] && hi[v] > best && (pick_hi == kInf || hi[v] > hi[pick_hi] || (hi[v] == hi[pick_hi] && lo[v] > lo[pick_hi]))) pick_hi = v;
    if (pick_hi == kInf) return best;
    for (std::uint32_t v = 0; v < V; ++v)
      if (!done[v] && (pick_lo == kInf || lo[v] < lo[pick_lo] || (lo[v] == lo[pick_lo] && deg[v + 1] - deg[v] > deg[pick_lo + 1] - deg[pick_lo])))
        pick_lo = v;
    s = central && pick_lo != kInf ? pick_lo : pick_hi;
  }
}

std::string gbps(double Bps) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f GB/s (%.0f Gb/s)", Bps / 1e9, Bps * 8 / 1e9);
  return b;
}

// ---- collapsed view for pictures ----
struct View {
  struct Node { std::string label; int tier; std::size_t members; };  // tier 0 = servers
  struct Edge { std::size_t a, b, count; std::uint64_t Bps; std::string type; };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  bool devices = false;  ///< one node per NPU and switch, one edge per link (a one-server layout)
};

// A one-server layout: its NPUs, its switches (the PCIe switch, any Ethernet switch) and every link
// on its own (HCCS between NPUs, PCIe to the switch), not one box for the server.
constexpr double kPi = 3.14159265358979323846;

View device_view(const Topology& t) {
  View view;
  view.devices = true;
  for (auto& n : t.npus) view.nodes.push_back({n.name, 0, 1});
  for (auto& sw : t.switches)
    view.nodes.push_back({sw.name, sw.kind == SwitchKind::Pcie ? 1 : static_cast<int>(1 + std::max<std::uint32_t>(1, sw.tier)), 1});
  auto node_of = [&](const Endpoint& e) { return e.is_switch ? t.npus.size() + e.index : static_cast<std::size_t>(e.index); };
  for (auto& l : t.links) {
    std::size_t a = node_of(l.a), b = node_of(l.b);
    if (a > b) std::swap(a, b);
    view.edges.push_back({a, b, 1, l.params.bandwidth_Bps, link_type_name(l.type)});
  }
  return view;
}

View make_view(const Topology& t, std::size_t max_nodes) {
  if (t.servers.size() == 1 && t.npus.size() + t.switches.size() <= std::max<std::size_t>(max_nodes, 64)) return device_view(t);
  // Base nodes: servers (their NPUs and in-server PCIe switch merged in), then the other switches.
  const std::size_t S = t.servers.size();
  std::vector<std::size_t> sw_node(t.switches.size(), SIZE_MAX);
  std::size_t base = S;
  for (std::size_t i = 0; i < t.switches.size(); ++i)
    sw_node[i] = t.switches[i].server >= 0 ? static_cast<std::size_t>(t.switches[i].server) : base++;
  auto node_of = [&](const Endpoint& e) { return e.is_switch ? sw_node[e.index] : static_cast<std::size_t>(t.npus[e.index].server); };
  std::vector<std::set<std::size_t>> nbr(base);
  for (auto& l : t.links) {
    std::size_t a = node_of(l.a), b = node_of(l.b);
    if (a != b) { nbr[a].insert(b); nbr[b].insert(a); }
  }
  std::vector<int> tier(base, 0);
  std::vector<std::string> name(base);
  for (std::size_t s = 0; s < S; ++s) name[s] = t.servers[s].name;
  for (std::size_t i = 0; i < t.switches.size(); ++i)
    if (t.switches[i].server < 0) { tier[sw_node[i]] = static_cast<int>(std::max<std::uint32_t>(1, t.switches[i].tier)); name[sw_node[i]] = t.switches[i].name; }
  // Group: identity when small; otherwise servers by their switches, then switches tier by tier
  // by the groups of their lower-tier neighbours.
  std::vector<std::size_t> group(base);
  for (std::size_t i = 0; i < base; ++i) group[i] = i;
  if (base > max_nodes) {
    std::map<std::pair<int, std::vector<std::size_t>>, std::size_t> key_group;
    std::size_t next = 0;
    for (std::size_t s = 0; s < S; ++s) {
      std::vector<std::size_t> k(nbr[s].begin(), nbr[s].end());
      auto it = key_group.emplace(std::make_pair(0, k), next).first;
      if (it->second == next) ++next;
      group[s] = it->second;
    }
    for (int tr = 1; tr <= 3; ++tr)
      for (std::size_t v = S; v < base; ++v) {
        if (tier[v] != tr) continue;
        std::vector<std::size_t> k;
        for (auto u : nbr[v]) if (tier[u] < tr) k.push_back(group[u]);
        std::sort(k.begin(), k.end());
        k.erase(std::unique(k.begin(), k.end()), k.end());
        auto it = key_group.emplace(std::make_pair(tr, k), next).first;
        if (it->second == next) ++next;
        group[v] = it->second;
      }
  }
  View view;
  std::map<std::size_t, std::size_t> gnode;
  std::map<std::size_t, std::vector<std::size_t>> members;
  for (std::size_t v = 0; v < base; ++v) members[group[v]].push_back(v);
  for (auto& [g, m] : members) {
    gnode[g] = view.nodes.size();
    std::string label = name[m.front()];
    if (m.size() > 1) {
      const bool contiguous = m.back() - m.front() + 1 == m.size();
      label += (contiguous || m.size() == 2 ? " .. " : ", " + name[m[1]] + " .. ") + name[m.back()] + " (" + std::to_string(m.size()) +
               (tier[m.front()] == 0 ? " servers)" : " switches)");
    }
    view.nodes.push_back({label, tier[m.front()], m.size()});
  }
  std::map<std::tuple<std::size_t, std::size_t, std::string>, std::pair<std::size_t, std::uint64_t>> agg;
  for (auto& l : t.links) {
    std::size_t a = gnode[group[node_of(l.a)]], b = gnode[group[node_of(l.b)]];
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    auto& e = agg[{a, b, link_type_name(l.type)}];
    ++e.first;
    e.second += l.params.bandwidth_Bps;
  }
  for (auto& [k, v] : agg) view.edges.push_back({std::get<0>(k), std::get<1>(k), v.first, v.second, std::get<2>(k)});
  return view;
}

// A DOT double-quoted string: quotes and backslashes escaped, control characters dropped to a
// space (DOT strings cannot hold raw newlines portably).
std::string dot_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) o += ' ';  // not allowed in XML 1.0 text
    else if (c == '<') o += "&lt;"; else if (c == '>') o += "&gt;"; else if (c == '&') o += "&amp;"; else if (c == '"') o += "&quot;"; else o += c;
  }
  return o;
}

}  // namespace

TopologySummary summarize(const Topology& t) {
  TopologySummary s;
  s.servers = t.servers.size();
  s.npus = t.npus.size();
  for (auto& sw : t.switches) {
    if (sw.kind == SwitchKind::Pcie) ++s.pcie_switches;
    else { ++s.eth_switches; ++s.switches_by_tier[std::min<std::uint32_t>(sw.tier, 3)]; }
  }
  for (auto& l : t.links) {
    if (l.type == LinkType::Hccs) ++s.hccs_links;
    else if (l.type == LinkType::Pcie) ++s.pcie_links;
    else ++s.roce_links;
  }
  s.bisection_Bps = bisection(t);
  s.diameter = diameter(t);
  if (!t.as_built.cables_missing.empty() || !t.as_built.cables_degraded.empty()) {
    // The fabric as built: missing cables carry nothing, degraded ones their lower rate.
    Topology b = t;
    for (std::uint32_t k : t.as_built.cables_missing) b.links[k].params.bandwidth_Bps = 0;
    for (const auto& c : t.as_built.cables_degraded) b.links[c.first].params.bandwidth_Bps = c.second;
    s.bisection_as_built_Bps = bisection(b);
  }
  return s;
}

std::string format_summary(const Topology& t, const TopologySummary& s) {
  std::ostringstream os;
  os << "topology " << t.name << " (" << t.file << ")\n";
  os << "  servers          " << s.servers << "\n";
  os << "  NPUs             " << s.npus << "\n";
  os << "  Ethernet switches " << s.eth_switches;
  if (s.eth_switches) os << " (leaf " << s.switches_by_tier[1] << ", spine " << s.switches_by_tier[2] << ", core " << s.switches_by_tier[3] << ")";
  os << "\n  PCIe switches    " << s.pcie_switches << "\n";
  os << "  links            HCCS " << s.hccs_links << ", PCIe " << s.pcie_links << ", RoCE " << s.roce_links << "\n";
  if (!t.fabric.type.empty())
    os << "  fabric           " << t.fabric.tiers << "-tier Clos, radix " << t.fabric.radix << ", " << t.fabric.down << " down / " << t.fabric.up
       << " up per leaf" << (t.fabric.rail_optimized ? ", rail-optimised" : "") << "\n";
  os << "  bisection        " << gbps(s.bisection_Bps) << " per direction (ranks 0.." << (s.npus / 2 ? s.npus / 2 - 1 : 0) << " vs the rest)\n";
  os << "  diameter         " << s.diameter << " hops between NPUs\n";
  if (!t.as_built.empty()) {  // docs/topology-format.md#as-built
    const AsBuilt& ab = t.as_built;
    std::string what;
    auto add = [&](std::size_t n, const char* one, const char* many) {
      if (n) what += (what.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
    };
    add(ab.cables_missing.size(), "RoCE cable missing", "RoCE cables missing");
    add(ab.cables_degraded.size(), "RoCE cable degraded", "RoCE cables degraded");
    add(ab.hccs_down.size(), "HCCS link down", "HCCS links down");
    add(ab.hccs_swaps.size(), "HCCS cable swap", "HCCS cable swaps");
    add(ab.npus_missing.size(), "NPU missing", "NPUs missing");
    add(ab.nic_swaps.size(), "NIC cable swap", "NIC cable swaps");
    add(ab.device_ips.size(), "device IP changed", "device IPs changed");
    os << "  as built         " << what << "\n";
    // The cables by name, while the list stays short.
    if (ab.cables_missing.size() + ab.cables_degraded.size() <= 8) {
      for (std::uint32_t k : ab.cables_missing) os << "                     missing  " << t.links[k].name << "\n";
      for (const auto& c : ab.cables_degraded)
        os << "                     degraded " << t.links[c.first].name << ": " << gbps(static_cast<double>(c.second)) << " of "
           << gbps(static_cast<double>(t.links[c.first].params.bandwidth_Bps)) << "\n";
    }
    if (s.bisection_as_built_Bps >= 0) os << "  bisection as built " << gbps(s.bisection_as_built_Bps) << " per direction\n";
  }
  if (!t.rank_table.empty()) os << "  rank table       " << t.rank_table << "\n";
  return os.str();
}

std::string to_dot(const Topology& t, std::size_t max_nodes) {
  View v = make_view(t, max_nodes);
  std::ostringstream os;
  os << "graph \"" << dot_escape(t.name) << "\" {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  for (std::size_t i = 0; i < v.nodes.size(); ++i)
    os << "  n" << i << " [label=\"" << dot_escape(v.nodes[i].label) << "\", shape=" << (v.nodes[i].tier == 0 ? "box" : "ellipse") << "];\n";
  for (auto& e : v.edges)
    os << "  n" << e.a << " -- n" << e.b << " [label=\"" << (e.count == 1 ? std::string() : std::to_string(e.count) + " x ") << e.type << ", " << std::llround(static_cast<double>(e.Bps) * 8 / 1e9)
       << " Gb/s\"];\n";
  os << "}\n";
  return os.str();
}

static std::string svg_document(const Topology& t, const View& v, const std::vector<double>& x, const std::vector<double>& y, double W, double H,
                         double bw, double bh, double gap);

std::string to_svg(const Topology& t, std::size_t max_nodes) {
  View v = make_view(t, max_nodes);
  std::map<int, std::vector<std::size_t>> rows;
  for (std::size_t i = 0; i < v.nodes.size(); ++i) rows[v.nodes[i].tier].push_back(i);
  const double bw = 170, bh = 40, gap = 20, rowgap = 110;
  std::size_t widest = 1;
  for (auto& [tr, r] : rows) widest = std::max(widest, r.size());
  const double W = widest * (bw + gap) + gap, H = rows.size() * (bh + rowgap) + 60;
  std::vector<double> x(v.nodes.size()), y(v.nodes.size());
  int ri = 0;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it, ++ri) {
    const auto& r = it->second;
    double off = (W - r.size() * (bw + gap) + gap) / 2;
    for (std::size_t k = 0; k < r.size(); ++k) { x[r[k]] = off + k * (bw + gap); y[r[k]] = 50 + ri * (bh + rowgap); }
  }
  if (v.devices && rows.count(0)) {
    // One server: its NPUs on a circle (a full mesh's links would lie on top of each other in a
    // row), its switches in a row above.
    const auto& npus = rows[0];
    const double R = std::max(140.0, npus.size() * (bw + gap) / (2 * kPi)), Wd = 2 * R + bw + 2 * gap, cx = Wd / 2;
    const double top = 50 + (rows.size() - 1) * (bh + rowgap);
    for (std::size_t k = 0; k < npus.size(); ++k) {
      const double a = 2 * kPi * k / npus.size() - kPi / 2;
      x[npus[k]] = cx + R * std::cos(a) - bw / 2;
      y[npus[k]] = top + R + R * std::sin(a);
    }
    for (auto& [tr, r] : rows)
      if (tr != 0)
        for (std::size_t k = 0; k < r.size(); ++k) x[r[k]] = (Wd - r.size() * (bw + gap) + gap) / 2 + k * (bw + gap);
    return svg_document(t, v, x, y, Wd, top + 2 * R + bh + 40, bw, bh, gap);
  }
  return svg_document(t, v, x, y, W, H, bw, bh, gap);
}

static std::string svg_document(const Topology& t, const View& v, const std::vector<double>& x, const std::vector<double>& y, double W, double H,
                         double bw, double bh, double gap) {
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" font-family=\"Helvetica,Arial\" font-size=\"11\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << gap << "\" y=\"24\" font-size=\"15\">" << xml_escape(t.name) << ": " << t.servers.size() << " servers, " << t.npus.size()
     << " NPUs, " << t.switches.size() << " switches</text>\n";
  for (auto& e : v.edges) {
    double w = std::min(8.0, 1 + std::log2(static_cast<double>(e.count)));
    const char* col = e.type == "hccs" ? "#c0392b" : e.type == "pcie" ? "#8e44ad" : "#2c3e50";
    os << "<line x1=\"" << x[e.a] + bw / 2 << "\" y1=\"" << y[e.a] + bh / 2 << "\" x2=\"" << x[e.b] + bw / 2 << "\" y2=\"" << y[e.b] + bh / 2
       << "\" stroke=\"" << col << "\" stroke-opacity=\"0.5\" stroke-width=\"" << w << "\"><title>" << e.count << " x " << e.type << ", "
       << std::llround(static_cast<double>(e.Bps) * 8 / 1e9) << " Gb/s</title></line>\n";
  }
  for (std::size_t i = 0; i < v.nodes.size(); ++i) {
    const char* fill = v.nodes[i].tier == 0 ? "#eaf2f8" : v.nodes[i].tier == 1 ? "#fef9e7" : v.nodes[i].tier == 2 ? "#fdebd0" : "#f6ddcc";
    os << "<rect x=\"" << x[i] << "\" y=\"" << y[i] << "\" width=\"" << bw << "\" height=\"" << bh << "\" rx=\"6\" fill=\"" << fill
       << "\" stroke=\"#555\"/>\n";
    std::string label = v.nodes[i].label;
    std::string l1 = label, l2;
    auto k = label.find(" (");
    if (k != std::string::npos) { l1 = label.substr(0, k); l2 = label.substr(k + 1); }
    os << "<text x=\"" << x[i] + bw / 2 << "\" y=\"" << y[i] + (l2.empty() ? 24 : 17) << "\" text-anchor=\"middle\">" << xml_escape(l1) << "</text>\n";
    if (!l2.empty()) os << "<text x=\"" << x[i] + bw / 2 << "\" y=\"" << y[i] + 32 << "\" text-anchor=\"middle\" fill=\"#555\">" << xml_escape(l2) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace sim
