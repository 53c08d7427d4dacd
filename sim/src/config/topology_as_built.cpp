// The /as_built reader (docs/topology-format.md#as-built): how the hardware deviates from the
// description — HCCS cables down or swapped, NPUs missing, NIC cables swapped, device IPs, and
// RoCE cables (of a generated fabric or of /links) missing or running at a lower rate.
#include <algorithm>
#include <map>

#include "topology_builder.h"

namespace sim::topology_detail {

namespace {

// The RoCE cables by their switch end and by their NPU end, for the cable kinds' addressing (the
// same as the switch_link_down fault's: "switch" + "port", or "npu", docs/scenario-format.md).
struct CableIndex {
  explicit CableIndex(const Topology& t) {
    for (std::uint32_t s = 0; s < t.switches.size(); ++s) switch_by_name.emplace(t.switches[s].name, s);
    for (std::uint32_t n = 0; n < t.npus.size(); ++n) npu_by_name.emplace(t.npus[n].name, n);
    for (std::uint32_t k = 0; k < t.links.size(); ++k) {
      const LinkSpec& l = t.links[k];
      if (l.type != LinkType::Roce) continue;
      for (const Endpoint* e : {&l.a, &l.b}) {
        if (e->is_switch) at_port.emplace(std::make_pair(e->index, e->port), k);
        else at_npu.emplace(e->index, k);
      }
    }
  }
  std::map<std::string, std::uint32_t> switch_by_name, npu_by_name;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> at_port;  // (switch, port) -> link
  std::map<std::uint32_t, std::uint32_t> at_npu;                             // NPU -> its NIC's link
  std::map<std::uint32_t, std::string> named;                                // link -> the entry that named it
};

// {"kind": "cable_missing" | "cable_degraded", "switch": NAME, "port": N | "npu": NAME,
//  cable_degraded: "bandwidth": BW | "factor": F}.
void cable_entry(const json& j, const std::string& ptr, bool missing, Topology& t, Diagnostics& d, CableIndex& c) {
  ObjectReader o(j, ptr, d, missing ? std::initializer_list<const char*>{"kind", "switch", "port", "npu"}
                                    : std::initializer_list<const char*>{"kind", "switch", "port", "npu", "bandwidth", "factor"});
  if (!o.valid()) return;
  std::int64_t k = -1;
  if (o.get("switch", false) || o.get("port", false)) {
    if (o.get("npu", false)) { d.error(o.child("npu"), "name the cable by switch + port or by npu, not both"); return; }
    auto sw = o.str("switch", true);
    auto port = o.uint("port", true, 0, 1u << 20);
    if (!sw || !port) return;
    auto s = c.switch_by_name.find(*sw);
    if (s == c.switch_by_name.end() || t.switches[s->second].kind != SwitchKind::Ethernet) {
      d.error(o.child("switch"), "no Ethernet switch named \"" + *sw + "\"");
      return;
    }
    auto l = c.at_port.find({s->second, static_cast<std::uint32_t>(*port)});
    if (l == c.at_port.end()) {
      d.error(o.child("port"), "port " + std::to_string(*port) + " of " + *sw + " is not cabled (" + std::to_string(t.switches[s->second].ports) + " ports)");
      return;
    }
    k = l->second;
  } else if (auto n = o.str("npu", false)) {
    auto s = c.npu_by_name.find(*n);
    if (s == c.npu_by_name.end()) { d.error(o.child("npu"), "no NPU named \"" + *n + "\""); return; }
    auto l = c.at_npu.find(s->second);
    if (l == c.at_npu.end()) { d.error(o.child("npu"), *n + " has no cabled NIC"); return; }
    k = l->second;
  } else {
    d.error(ptr, "name the cable: \"switch\" and \"port\", or \"npu\" (its NIC's cable)");
    return;
  }
  const LinkSpec& l = t.links[static_cast<std::size_t>(k)];
  auto [prev, fresh] = c.named.emplace(static_cast<std::uint32_t>(k), ptr);
  if (!fresh) { d.error(ptr, "cable " + l.name + " is already named by " + prev->second); return; }
  if (missing) { t.as_built.cables_missing.push_back(static_cast<std::uint32_t>(k)); return; }
  const bool by_bw = o.get("bandwidth", false) != nullptr, by_factor = o.get("factor", false) != nullptr;
  if (by_bw == by_factor) { d.error(ptr, "give the degraded cable's rate as \"bandwidth\" (\"100Gb/s\") or as \"factor\" (0 < f < 1), one of them"); return; }
  std::uint64_t Bps = 0;
  if (by_bw) {
    auto v = o.bandwidth("bandwidth", true);
    if (!v) return;
    if (*v >= l.params.bandwidth_Bps) {
      d.error(o.child("bandwidth"), "a degraded cable runs below its rate: " + l.name + " runs at " + bw_str(l.params.bandwidth_Bps) + ", got " + bw_str(*v));
      return;
    }
    Bps = *v;
  } else {
    auto f = o.number("factor", true, 0, 1);
    if (!f) return;
    if (*f <= 0 || *f >= 1) { d.error(o.child("factor"), "factor must be above 0 and below 1 (the share of the cable's rate it runs at)"); return; }
    Bps = static_cast<std::uint64_t>(static_cast<double>(l.params.bandwidth_Bps) * *f);
    if (Bps < 1000) { d.error(o.child("factor"), "the degraded rate is below 1 KB/s"); return; }
  }
  t.as_built.cables_degraded.emplace_back(static_cast<std::uint32_t>(k), Bps);
}

// The RoCE network without the missing cables must still join every cabled NIC: a NIC whose only
// cable is missing, or a fabric split in two, is an error (the NPU would be unreachable over RoCE;
// a NIC without a cable is described by npu_missing, or a nic_down fault at time 0).
void check_cables_missing(const Topology& t, Diagnostics& d, const CableIndex& c) {
  const std::size_t N = t.npus.size(), V = N + t.switches.size();
  std::vector<char> gone(t.links.size(), 0);
  for (std::uint32_t k : t.as_built.cables_missing) gone[k] = 1;
  std::vector<std::uint32_t> parent(V);
  for (std::uint32_t i = 0; i < V; ++i) parent[i] = i;
  auto root = [&](std::uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto vid = [&](const Endpoint& e) { return static_cast<std::uint32_t>(e.is_switch ? N + e.index : e.index); };
  std::vector<char> cabled(N, 0), left(N, 0);
  for (std::size_t k = 0; k < t.links.size(); ++k) {
    const LinkSpec& l = t.links[k];
    if (l.type != LinkType::Roce) continue;
    for (const Endpoint* e : {&l.a, &l.b})
      if (!e->is_switch) {
        cabled[e->index] = 1;
        if (!gone[k]) left[e->index] = 1;
      }
    if (!gone[k]) parent[root(vid(l.a))] = root(vid(l.b));
  }
  for (std::uint32_t i = 0; i < N; ++i)
    if (cabled[i] && !left[i]) {
      d.error(c.named.at(c.at_npu.at(i)), "the NIC of " + t.npus[i].name + " has no cable left: it would be unreachable over RoCE (describe the NPU as npu_missing, or inject a nic_down fault)");
      return;
    }
  std::int64_t first = -1;
  for (std::uint32_t i = 0; i < N; ++i) {
    if (!left[i]) continue;
    if (first < 0) { first = i; continue; }
    if (root(i) != root(static_cast<std::uint32_t>(first))) {
      d.error("/as_built", "without the missing cables the RoCE network is split: the NIC of " + t.npus[i].name + " cannot reach the NIC of " +
                               t.npus[first].name);
      return;
    }
  }
}

}  // namespace

// /as_built: [{"kind": "hccs_down", "link": NAME} | {"kind": "hccs_swap", "links": [NAME, NAME]} |
// {"kind": "npu_missing", "npu": NAME} | {"kind": "nic_port_swap", "links": [NAME, NAME]} |
// {"kind": "device_ip", "npu": NAME, "ip": IP} | the cable kinds above] (docs/topology-format.md#as-built).
void read_as_built(const json& ab, Topology& t, Diagnostics& d) {
  if (!ab.is_array()) { d.error("/as_built", "expected an array"); return; }
  CableIndex cables(t);
  auto hccs_link = [&](const std::string& name, const std::string& ptr) -> std::optional<std::uint32_t> {
    for (std::uint32_t k = 0; k < t.links.size(); ++k)
      if (t.links[k].name == name) {
        if (t.links[k].type == LinkType::Hccs) return k;
        d.error(ptr, "link \"" + name + "\" is not an HCCS link");
        return std::nullopt;
      }
    d.error(ptr, "no link named \"" + name + "\"");
    return std::nullopt;
  };
  for (std::size_t i = 0; i < ab.size(); ++i) {
    const std::string ptr = "/as_built/" + std::to_string(i);
    const std::string kind_of = ab[i].is_object() && ab[i].contains("kind") && ab[i]["kind"].is_string() ? ab[i]["kind"].get<std::string>() : "";
    if (kind_of == "cable_missing" || kind_of == "cable_degraded") {
      cable_entry(ab[i], ptr, kind_of == "cable_missing", t, d, cables);
      continue;
    }
    ObjectReader o(ab[i], ptr, d, {"kind", "link", "links", "npu", "ip"});
    if (!o.valid()) continue;
    const std::string kind = o.str("kind", true).value_or("");
    if (kind == "hccs_down") {
      if (auto name = o.str("link", true))
        if (auto k = hccs_link(*name, o.child("link"))) t.as_built.hccs_down.push_back(*k);
    } else if (kind == "hccs_swap") {
      const json* ls = o.get("links", true);
      if (!ls) continue;
      if (!ls->is_array() || ls->size() != 2 || !(*ls)[0].is_string() || !(*ls)[1].is_string()) {
        d.error(o.child("links"), "expected two HCCS link names");
        continue;
      }
      auto a = hccs_link((*ls)[0].get<std::string>(), o.child("links") + "/0");
      auto b = hccs_link((*ls)[1].get<std::string>(), o.child("links") + "/1");
      if (!a || !b) continue;
      if (*a == *b || t.npus[t.links[*a].a.index].server != t.npus[t.links[*b].a.index].server) {
        d.error(o.child("links"), "a swap exchanges the cables of two different HCCS links of one server");
        continue;
      }
      t.as_built.hccs_swaps.emplace_back(*a, *b);
    } else if (kind == "nic_port_swap") {
      const json* ls = o.get("links", true);
      if (!ls) continue;
      if (!ls->is_array() || ls->size() != 2 || !(*ls)[0].is_string() || !(*ls)[1].is_string()) {
        d.error(o.child("links"), "expected two RoCE link names");
        continue;
      }
      std::int64_t k[2] = {-1, -1};
      for (int e = 0; e < 2; ++e) {
        const std::string name = (*ls)[e].get<std::string>();
        for (std::uint32_t x = 0; x < t.links.size() && k[e] < 0; ++x)
          if (t.links[x].name == name) k[e] = x;
        const std::string p = o.child("links") + "/" + std::to_string(e);
        if (k[e] < 0) d.error(p, "no link named \"" + name + "\"");
        else if (t.links[k[e]].type != LinkType::Roce || t.links[k[e]].a.is_switch == t.links[k[e]].b.is_switch) {
          d.error(p, "link \"" + name + "\" is not a RoCE link between an NPU and a switch");
          k[e] = -1;
        }
      }
      if (k[0] >= 0 && k[1] >= 0) {
        if (k[0] == k[1]) d.error(o.child("links"), "a swap exchanges the switch ends of two different links");
        else t.as_built.nic_swaps.emplace_back(static_cast<std::uint32_t>(k[0]), static_cast<std::uint32_t>(k[1]));
      }
    } else if (kind == "device_ip") {
      auto name = o.str("npu", true);
      auto ip = o.str("ip", true);
      if (!name || !ip) continue;
      auto v = parse_ipv4(*ip);
      if (!v) { d.error(o.child("ip"), "expected an IPv4 address (four decimal fields 0-255, no leading zeros), got \"" + *ip + "\""); continue; }
      bool found = false;
      for (std::uint32_t n = 0; n < t.npus.size() && !found; ++n)
        if (t.npus[n].name == *name) { t.as_built.device_ips.emplace_back(n, *v); found = true; }
      if (!found) d.error(o.child("npu"), "no NPU named \"" + *name + "\"");
    } else if (kind == "npu_missing") {
      auto name = o.str("npu", true);
      if (!name) continue;
      bool found = false;
      for (std::uint32_t n = 0; n < t.npus.size() && !found; ++n)
        if (t.npus[n].name == *name) { t.as_built.npus_missing.push_back(n); found = true; }
      if (!found) d.error(o.child("npu"), "no NPU named \"" + *name + "\"");
    } else if (!kind.empty()) {
      d.error(o.child("kind"), "unknown kind \"" + kind + "\" (hccs_down, hccs_swap, npu_missing, nic_port_swap, device_ip, cable_missing, cable_degraded)");
    }
  }
  if (d.ok() && !t.as_built.cables_missing.empty()) check_cables_missing(t, d, cables);
}

}  // namespace sim::topology_detail
