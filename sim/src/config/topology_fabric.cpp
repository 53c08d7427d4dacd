// Fabric generator (docs/topology-format.md "fabric"): a Clos network of leaves, spines and cores
// sized to the cabled NICs, rail-optimized or not, and its RoCE links.
#include <algorithm>
#include <map>
#include <set>

#include "topology_builder.h"

namespace sim::topology_detail {

void read_fabric(Registry& reg, const json& j, const std::string& ptr) {
  Diagnostics& d = reg.diag();
  Topology& t = reg.topology();
  ObjectReader f(j, ptr, d, {"type", "tiers", "switch_radix", "oversubscription", "rail_optimized", "link_bandwidth", "link_latency",
                              "switch_latency", "switch_buffer"});
  if (!f.valid()) return;
  auto type = f.str("type", true).value_or("clos");
  if (type != "clos") { d.error(f.child("type"), "unknown fabric type \"" + type + "\" (clos)"); return; }
  const auto tiers = static_cast<std::uint32_t>(f.uint("tiers", true, 1, 3).value_or(2));
  const auto R = static_cast<std::uint32_t>(f.uint("switch_radix", true, 2, 1024).value_or(64));
  std::uint32_t over = 1;
  if (auto o = f.str("oversubscription", false)) {
    // Digits only, no sign or spaces; at most 3 digits per side, so nothing can wrap around.
    auto num = [](const std::string& t, std::size_t b, std::size_t e) -> std::uint32_t {
      if (e <= b || e - b > 3) return 0;
      std::uint32_t x = 0;
      for (std::size_t i = b; i < e; ++i) {
        if (t[i] < '0' || t[i] > '9') return 0;
        x = x * 10 + static_cast<std::uint32_t>(t[i] - '0');
      }
      return x;
    };
    const auto colon = o->find(':');
    const std::uint32_t k = colon == std::string::npos ? 0 : num(*o, 0, colon);
    const std::uint32_t one = colon == std::string::npos ? 0 : num(*o, colon + 1, o->size());
    if (one != 1 || k == 0 || k > 16)
      d.error(f.child("oversubscription"), "expected \"k:1\" with k in 1..16, got \"" + *o + "\"");
    else over = k;
  }
  const bool rail = f.boolean("rail_optimized", false).value_or(true);
  auto bw = f.bandwidth("link_bandwidth", true);
  const models::Tick lat = latency(d, f, "link_latency").value_or(500 * models::kPsPerNs);
  const models::Tick sw_lat = latency(d, f, "switch_latency").value_or(600 * models::kPsPerNs);
  auto buf_opt = f.size("switch_buffer", false);
  if (!bw || !d.ok()) return;
  // Default shared buffer: 3.125 MB per Tb/s of switching capacity (radix x link speed), the
  // ratio of NVIDIA's Spectrum-4 (160 MB at 51.2 Tb/s; Spectrum-3 64 MB at 12.8, Spectrum-2 42 MB
  // at 6.4 have more per Tb/s), at least 1 MiB: a radix-64 switch of 200 Gb/s ports gets 40 MB
  // (docs/models/ethernet-switch.md#parameters).
  const std::uint64_t buf =
      buf_opt.value_or(std::max<std::uint64_t>(1ULL << 20, static_cast<std::uint64_t>(static_cast<double>(R) * static_cast<double>(*bw) * 8.0 / 1e12 * 3.125e6)));
  // k:1 on a leaf of radix R: u = floor(R / (k + 1)) up ports and k·u down ports; when k + 1 does
  // not divide R the other ports stay dark, as 2:1 is built from 128-port switches (84 down, 42 up).
  if (tiers > 1 && R / (over + 1) == 0) {
    d.error(f.child("switch_radix"), "radix " + std::to_string(R) + " has no up port at " + std::to_string(over) + ":1");
    return;
  }
  const std::uint32_t up = tiers == 1 ? 0 : R / (over + 1), down = tiers == 1 ? R : up * over;
  t.fabric = FabricInfo{"clos", tiers, R, down, up, rail};
  for (auto& n : t.npus)
    if (n.nic_Bps != *bw) {
      d.error(f.child("link_bandwidth"), "link ends disagree on speed: fabric links run at " + bw_str(*bw) + ", the NIC of " + n.name +
                                               " at " + bw_str(n.nic_Bps));
      return;
    }
  // NIC order: rail-optimised fabrics put NIC k of every server on the leaves of rail k.
  std::uint32_t rails = 0;
  for (auto& s : t.servers) rails = std::max<std::uint32_t>(rails, static_cast<std::uint32_t>(s.npus.size()));
  const std::uint32_t S = static_cast<std::uint32_t>(t.servers.size());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> nic_leaf;  // (leaf, port) per NPU
  std::uint32_t leaves = 0;
  nic_leaf.resize(t.npus.size());
  if (rail && tiers > 1) {
    const std::uint32_t per_rail = (S + down - 1) / down;
    leaves = per_rail * rails;
    for (std::uint32_t s = 0; s < S; ++s)
      for (std::uint32_t k = 0; k < t.servers[s].npus.size(); ++k) nic_leaf[t.servers[s].npus[k]] = {k * per_rail + s / down, s % down};
  } else {
    const std::uint32_t n = static_cast<std::uint32_t>(t.npus.size());
    leaves = (n + down - 1) / down;
    for (std::uint32_t i = 0; i < n; ++i) nic_leaf[i] = {i / down, i % down};
  }
  if (tiers == 1 && leaves > 1) {
    d.error(f.child("switch_radix"), "one switch of radix " + std::to_string(R) + " cannot hold " + std::to_string(t.npus.size()) + " NICs");
    return;
  }
  if (tiers == 2 && leaves > R) {
    d.error(f.child("tiers"), "a 2-tier Clos of radix " + std::to_string(R) + " holds at most " + std::to_string(R) + " leaves (" +
                                   std::to_string(leaves) + " needed); use tiers: 3 or a larger radix");
    return;
  }
  const std::uint32_t pod_leaves = R / 2;  // 3-tier: spines split R/2 down (leaves of the pod), R/2 up (cores)
  const std::uint32_t pods = tiers == 3 ? (leaves + pod_leaves - 1) / pod_leaves : 1;
  if (tiers == 3 && R % 2) { d.error(f.child("switch_radix"), "a 3-tier Clos needs an even radix"); return; }
  auto add_switch = [&](const std::string& name, std::uint32_t tier) {
    SwitchSpec sw;
    sw.name = name;
    sw.ports = R;
    sw.port_Bps = *bw;
    sw.latency_ps = sw_lat;
    sw.buffer_bytes = buf;
    sw.tier = tier;
    if (!reg.claim_name(name, 'w')) d.error(ptr, "generated switch name \"" + name + "\" clashes with a device");
    reg.index_switch(name, static_cast<std::uint32_t>(t.switches.size()));
    t.switches.push_back(std::move(sw));
    return static_cast<std::uint32_t>(t.switches.size() - 1);
  };
  auto wire = [&](Endpoint a, Endpoint b) {
    LinkSpec l;
    l.type = LinkType::Roce;
    l.a = a;
    l.b = b;
    l.params = models::LinkParams{*bw, lat};
    l.name = (a.is_switch ? t.switches[a.index].name + "/" + std::to_string(a.port) : t.npus[a.index].name) + "<->" +
             t.switches[b.index].name + "/" + std::to_string(b.port);
    reg.claim_link(std::move(l), ptr);
  };
  {
    const std::size_t more = t.npus.size() + 2 * static_cast<std::size_t>(leaves) * up;  // NIC links + leaf and spine uplinks
    t.links.reserve(t.links.size() + more);
    reg.reserve_ports(2 * more);
  }
  std::vector<std::uint32_t> leaf(leaves);
  for (std::uint32_t i = 0; i < leaves; ++i) leaf[i] = add_switch(tiers == 1 ? "switch0" : "leaf" + std::to_string(i), 1);
  for (std::uint32_t n = 0; n < t.npus.size(); ++n) wire(Endpoint{false, n, 0}, Endpoint{true, leaf[nic_leaf[n].first], nic_leaf[n].second});
  if (tiers == 2) {
    // Every leaf has one link to every spine: spines = up ports per leaf, spine port = leaf index.
    std::vector<std::uint32_t> spine(up);
    for (std::uint32_t s = 0; s < up; ++s) spine[s] = add_switch("spine" + std::to_string(s), 2);
    for (std::uint32_t l = 0; l < leaves; ++l)
      for (std::uint32_t s = 0; s < up; ++s) wire(Endpoint{true, leaf[l], down + s}, Endpoint{true, spine[s], l});
  } else if (tiers == 3) {
    // Pods of R/2 leaves and `up` spines (full bipartite inside the pod); spine j of every pod
    // belongs to plane j, whose C = ceil(pods·(R/2) / R) cores take the spines' R/2 uplinks.
    // Uplink u of a spine goes to core u mod C of its plane when that fits every core in R ports
    // (each core then sees every pod). Otherwise (more pods than one core has ports) uplink u of
    // pod p goes to core (p + u) mod C: pods p and p+1 share cores, so the plane stays connected,
    // and C grows until no core needs more than R ports.
    const std::uint32_t spine_up = R - pod_leaves;
    std::uint32_t cores_per_plane = (pods * spine_up + R - 1) / R;
    const bool per_uplink = static_cast<std::uint64_t>(pods) * ((spine_up + cores_per_plane - 1) / cores_per_plane) <= R;
    auto core_of = [&](std::uint32_t p, std::uint32_t u) { return per_uplink ? u % cores_per_plane : (p + u) % cores_per_plane; };
    if (!per_uplink && spine_up < 2) {
      d.error(f.child("switch_radix"), "a 3-tier Clos of radix " + std::to_string(R) + " cannot join " + std::to_string(pods) +
                                            " pods (a core holds " + std::to_string(R) + " spines, a spine has one uplink); use a larger radix");
      return;
    }
    // Port budget of every core, checked before anything is wired (the generator must fit).
    std::vector<std::uint32_t> need;
    for (;; ++cores_per_plane) {
      need.assign(cores_per_plane, 0);
      for (std::uint32_t p = 0; p < pods; ++p)
        for (std::uint32_t u = 0; u < spine_up; ++u) ++need[core_of(p, u)];
      if (*std::max_element(need.begin(), need.end()) <= R || per_uplink) break;
    }
    for (std::uint32_t c = 0; c < cores_per_plane; ++c)
      if (need[c] > R) {
        d.error(f.child("switch_radix"), "a 3-tier Clos of " + std::to_string(pods) + " pods needs " + std::to_string(need[c]) +
                                              " ports on core " + std::to_string(c) + ", more than the radix " + std::to_string(R));
        return;
      }
    std::vector<std::uint32_t> spine(pods * up), core(up * cores_per_plane), core_port(up * cores_per_plane, 0);
    for (std::uint32_t p = 0; p < pods; ++p)
      for (std::uint32_t j = 0; j < up; ++j) spine[p * up + j] = add_switch("spine" + std::to_string(p * up + j), 2);
    for (std::uint32_t c = 0; c < core.size(); ++c) core[c] = add_switch("core" + std::to_string(c), 3);
    for (std::uint32_t l = 0; l < leaves; ++l)
      for (std::uint32_t j = 0; j < up; ++j) wire(Endpoint{true, leaf[l], down + j}, Endpoint{true, spine[(l / pod_leaves) * up + j], l % pod_leaves});
    for (std::uint32_t p = 0; p < pods; ++p)
      for (std::uint32_t j = 0; j < up; ++j)
        for (std::uint32_t u = 0; u < spine_up; ++u) {
          std::uint32_t c = j * cores_per_plane + core_of(p, u);
          wire(Endpoint{true, spine[p * up + j], pod_leaves + u}, Endpoint{true, core[c], core_port[c]++});
        }
  }
}

}  // namespace sim::topology_detail
