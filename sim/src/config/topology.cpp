#include "sim/topology.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>
#include <unordered_map>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>

#include "sim/units.h"

namespace sim {

const char* link_type_name(LinkType t) {
  switch (t) {
    case LinkType::Hccs: return "hccs";
    case LinkType::Pcie: return "pcie";
    case LinkType::Roce: return "roce";
  }
  return "?";
}

bool Topology::has_network() const {
  for (auto& l : links) if (l.type == LinkType::Roce) return true;
  return false;
}

namespace {

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
const Preset kPresets[] = {
    // Atlas 800T A2: 8 x 910B, HCCS full mesh 7 x 28 GB/s, 0.5 us; 64 GB HBM; PCIe Gen5 x16; 200GE per NPU.
    {"atlas800t-a2", 8, "ascend910b", 64ULL << 30, "full-mesh", GBps(28), 500 * models::kPsPerNs, false, GBps(63), GBps(25)},
    // Atlas 800 (910): two HCCS groups of 4 (3 links x 30 GB/s each), joined through a PCIe Gen4
    // switch; 32 GB HBM; 100GE per NPU.
    {"atlas800-910", 8, "ascend910", 32ULL << 30, "groups-of-4", GBps(30), 500 * models::kPsPerNs, true, GBps(31.5), GBps(12.5)},
    {"custom", 0, "ascend910b", 64ULL << 30, "none", GBps(28), 500 * models::kPsPerNs, false, GBps(63), GBps(25)},
};
const Preset* find_preset(const std::string& t) {
  for (auto& p : kPresets) if (t == p.type) return &p;
  return nullptr;
}

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

std::string bw_str(std::uint64_t Bps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.4gGb/s", static_cast<double>(Bps) * 8 / 1e9);
  return b;
}

const std::uint32_t kHccsLanes = models::LinkParams{}.lanes;        // 8
const std::uint32_t kPcieLanes = models::NpuParams{}.host_link.lanes;  // 16
constexpr models::Tick kMaxLatencyPs = models::kPsPerSec;                 // 1 s

class Builder {
 public:
  Builder(Diagnostics& d, Topology& t) : d_(d), t_(t) {}

  // A bandwidth of a laned link (HCCS, PCIe): the link model runs at (bandwidth / lanes) x active
  // lanes in whole bytes/s, so the bandwidth must split into whole bytes/s per lane within
  // kUnitRelTolerance (a rate that truncated to 0 per lane used to make transfers take "forever",
  // which overflowed the clock and came out as absurdly short times).
  std::optional<std::uint64_t> laned(const ObjectReader& r, const char* key, std::uint32_t lanes) {
    auto v = r.bandwidth(key, false);
    if (v && static_cast<double>(*v % lanes) > kUnitRelTolerance * static_cast<double>(*v)) {
      d_.error(r.child(key), "bandwidth of " + std::to_string(*v) + " B/s does not split into whole bytes/s over the link's " +
                                 std::to_string(lanes) + " lanes (the model would run it at " + std::to_string(*v / lanes * lanes) + " B/s)");
      return std::nullopt;
    }
    return v;
  }
  // Link, switch and host latencies: at most 1 s (credit-based rates divide by the round trip).
  std::optional<models::Tick> latency(const ObjectReader& r, const char* key) {
    auto v = r.duration(key, false);
    if (v && *v > kMaxLatencyPs) { d_.error(r.child(key), "latency above 1 s"); return std::nullopt; }
    return v;
  }

  void server(const json& j, const std::string& ptr, std::uint64_t index_in_group, const std::string* name_pattern) {
    ObjectReader s(j, ptr, d_, name_pattern ? std::initializer_list<const char*>{"name", "count", "type", "host_ip", "npus", "hccs", "pcie", "nic"}
                                            : std::initializer_list<const char*>{"name", "type", "host_ip", "npus", "hccs", "pcie", "nic"});
    if (!s.valid()) return;
    ServerSpec srv;
    if (name_pattern) {
      srv.name = *name_pattern;
      auto k = srv.name.find("{i}");
      if (k != std::string::npos) srv.name.replace(k, 3, std::to_string(index_in_group));
    } else {
      srv.name = s.str("name", true).value_or("");
    }
    if (!name_pattern && !s.get("name", false)) {
      // missing or not a string: already reported
    } else if (auto why = bad_name(srv.name)) d_.error(s.child("name"), *why);
    else if (!names_.emplace(srv.name, 's').second) d_.error(s.child("name"), "duplicate device name \"" + srv.name + "\"");
    srv.type = s.str("type", true).value_or("custom");
    const Preset* pre = find_preset(srv.type);
    if (!pre) {
      d_.error(s.child("type"), "unknown server type \"" + srv.type + "\" (known: atlas800t-a2, atlas800-910, custom)");
      pre = &kPresets[2];
    }
    if (auto ip = s.str("host_ip", true)) {
      auto v = parse_ipv4(*ip);
      if (!v) d_.error(s.child("host_ip"), "not an IPv4 address: \"" + *ip + "\"");
      else {
        std::uint64_t x = *v + index_in_group;
        if (x > 0xffffffffULL) d_.error(s.child("host_ip"), "host_ip range overflows");
        else ip_used(static_cast<std::uint32_t>(x), s.child("host_ip"), srv.name), srv.host_ip = static_cast<std::uint32_t>(x);
      }
    }
    models::NpuParams np;
    np.model = pre->model;
    np.hbm.capacity_bytes = pre->hbm_bytes;
    np.host_link.bandwidth_Bps = pre->pcie_bw;
    std::uint32_t count = pre->npus;
    if (const json* nj = s.get("npus", pre->npus == 0)) {
      ObjectReader n(*nj, s.child("npus"), d_, {"count", "model", "hbm_capacity", "hbm_bandwidth"});
      if (auto c = n.uint("count", pre->npus == 0, 1, 16)) count = static_cast<std::uint32_t>(*c);
      if (auto m = n.str("model", false)) {
        if (*m != "ascend910" && *m != "ascend910b") d_.error(n.child("model"), "unknown NPU model \"" + *m + "\" (ascend910, ascend910b)");
        else np.model = *m;
      }
      if (auto v = n.size("hbm_capacity", false)) {
        if (*v == 0 || *v > (1ULL << 40)) d_.error(n.child("hbm_capacity"), "HBM capacity must be in (0, 1 TiB]");
        else np.hbm.capacity_bytes = *v;
      }
      if (auto v = n.bandwidth("hbm_bandwidth", false)) np.hbm.bandwidth_Bps = *v;
    }
    bool pcie_switch = pre->pcie_switch;
    models::LinkParams pcie_lp = models::NpuParams{}.host_link;  // lanes, credits: PCIe defaults
    pcie_lp.bandwidth_Bps = pre->pcie_bw;
    if (const json* pj = s.get("pcie", false)) {
      ObjectReader p(*pj, s.child("pcie"), d_, {"bandwidth", "latency", "switch", "root_complex", "root_complex_latency"});
      if (auto v = laned(p, "bandwidth", kPcieLanes)) pcie_lp.bandwidth_Bps = *v;
      if (auto v = latency(p, "latency")) pcie_lp.latency_ps = *v;
      if (auto v = p.boolean("switch", false)) pcie_switch = *v;
      if (auto v = laned(p, "root_complex", kPcieLanes)) srv.root_complex_Bps = *v;
      if (auto v = latency(p, "root_complex_latency")) srv.root_complex_latency_ps = *v;
    }
    np.host_link = pcie_lp;
    std::string hccs_topo = pre->hccs_topology;
    models::LinkParams lp{pre->hccs_bw, pre->hccs_lat};
    if (const json* hj = s.get("hccs", false)) {
      ObjectReader h(*hj, s.child("hccs"), d_, {"topology", "bandwidth", "latency"});
      if (auto v = h.str("topology", false)) {
        if (*v != "full-mesh" && *v != "groups-of-4" && *v != "none")
          d_.error(h.child("topology"), "unknown HCCS topology \"" + *v + "\" (full-mesh, groups-of-4, none)");
        else hccs_topo = *v;
      }
      if (auto v = laned(h, "bandwidth", kHccsLanes)) lp.bandwidth_Bps = *v;
      if (auto v = latency(h, "latency")) lp.latency_ps = *v;
    }
    std::uint64_t nic_bw = pre->nic_bw;
    std::optional<std::uint32_t> dev_ip;
    if (const json* cj = s.get("nic", false)) {
      ObjectReader c(*cj, s.child("nic"), d_, {"bandwidth", "device_ip"});
      if (auto v = c.bandwidth("bandwidth", false)) nic_bw = *v;
      if (auto v = c.str("device_ip", false)) {
        if (auto ip = parse_ipv4(*v)) dev_ip = *ip;
        else d_.error(c.child("device_ip"), "not an IPv4 address: \"" + *v + "\"");
      }
    }
    if (hccs_topo == "groups-of-4" && count % 4 != 0)
      d_.error(s.child("npus") + "/count", "HCCS groups-of-4 needs a multiple of 4 NPUs, got " + std::to_string(count));
    if (t_.npus.size() + count > kMaxNpus) { d_.error(ptr, "more than 65536 NPUs"); return; }
    auto sidx = static_cast<std::uint32_t>(t_.servers.size());
    for (std::uint32_t i = 0; i < count; ++i) {
      NpuSpec n;
      n.name = srv.name + "/npu" + std::to_string(i);
      n.server = sidx;
      n.device_id = i;
      n.params = np;
      n.nic_Bps = nic_bw;
      if (dev_ip) {
        std::uint64_t x = static_cast<std::uint64_t>(*dev_ip) + index_in_group * count + i;
        n.device_ip = static_cast<std::uint32_t>(x);
        ip_used(n.device_ip, s.child("nic") + "/device_ip", n.name);
      }
      srv.npus.push_back(static_cast<std::uint32_t>(t_.npus.size()));
      t_.npus.push_back(std::move(n));
    }
    for (std::uint32_t a = 0; a < count; ++a)
      for (std::uint32_t b = a + 1; b < count; ++b) {
        if (!(hccs_topo == "full-mesh" || (hccs_topo == "groups-of-4" && a / 4 == b / 4))) continue;
        LinkSpec l;
        l.type = LinkType::Hccs;
        l.a = Endpoint{false, srv.npus[a], b};
        l.b = Endpoint{false, srv.npus[b], a};
        l.params = lp;
        l.name = srv.name + "/hccs" + std::to_string(a) + "-" + std::to_string(b);
        t_.links.push_back(std::move(l));
      }
    if (pcie_switch) {
      SwitchSpec sw;
      sw.name = srv.name + "/pcie-switch";
      sw.kind = SwitchKind::Pcie;
      sw.ports = count + 1;  // one per NPU and the upstream port to the root complex
      sw.port_Bps = pcie_lp.bandwidth_Bps;
      sw.latency_ps = 500 * models::kPsPerNs;  // PCIe P2P = 1 + 0.5 + 1 us = 5 x HCCS 0.5 us (HCOMM docs: HCCS ~1/5 of PCIe P2P)
      sw.tier = 0;
      sw.server = sidx;
      srv.pcie_switch = static_cast<std::int64_t>(t_.switches.size());
      names_.emplace(sw.name, 'w');
      switch_index_[sw.name] = static_cast<std::uint32_t>(t_.switches.size());
      t_.switches.push_back(sw);
      for (std::uint32_t i = 0; i < count; ++i) {
        LinkSpec l;
        l.type = LinkType::Pcie;
        l.a = Endpoint{false, srv.npus[i], 0};
        l.b = Endpoint{true, static_cast<std::uint32_t>(srv.pcie_switch), i};
        l.params = pcie_lp;
        l.name = srv.name + "/pcie" + std::to_string(i);
        t_.links.push_back(std::move(l));
      }
    }
    server_index_[srv.name] = sidx;
    t_.servers.push_back(std::move(srv));
  }

  void switch_(const json& j, const std::string& ptr) {
    ObjectReader s(j, ptr, d_, {"name", "type", "ports", "port_bandwidth", "latency", "buffer", "tier"});
    if (!s.valid()) return;
    SwitchSpec sw;
    sw.name = s.str("name", true).value_or("");
    if (auto why = bad_name(sw.name)) { if (s.get("name", false)) d_.error(s.child("name"), *why); }
    else if (!names_.emplace(sw.name, 'w').second) d_.error(s.child("name"), "duplicate device name \"" + sw.name + "\"");
    std::string type = s.str("type", false).value_or("ethernet");
    if (type == "pcie") { sw.kind = SwitchKind::Pcie; sw.tier = 0; }
    else if (type != "ethernet") d_.error(s.child("type"), "unknown switch type \"" + type + "\" (ethernet, pcie)");
    sw.ports = static_cast<std::uint32_t>(s.uint("ports", true, 1, 1024).value_or(1));
    if (sw.kind == SwitchKind::Pcie) {
      if (!s.get("port_bandwidth", true)) sw.port_Bps = 1;
      else sw.port_Bps = laned(s, "port_bandwidth", kPcieLanes).value_or(1);
    } else {
      sw.port_Bps = s.bandwidth("port_bandwidth", true).value_or(1);
    }
    sw.latency_ps = latency(s, "latency").value_or(600 * models::kPsPerNs);
    sw.buffer_bytes = s.size("buffer", false).value_or(32ULL << 20);
    if (auto tier = s.uint("tier", false, 1, 3)) sw.tier = static_cast<std::uint32_t>(*tier);
    switch_index_[sw.name] = static_cast<std::uint32_t>(t_.switches.size());
    t_.switches.push_back(std::move(sw));
  }

  // "server0/npu3" (the NPU's NIC, or its PCIe/HCCS port) or "leaf0/5" (switch port 5).
  std::optional<Endpoint> endpoint(const std::string& s, const std::string& ptr) {
    auto k = s.rfind('/');
    if (k == std::string::npos || k == 0 || k + 1 == s.size()) {
      d_.error(ptr, "expected \"<server>/npu<k>\" or \"<switch>/<port>\", got \"" + s + "\"");
      return std::nullopt;
    }
    std::string dev = s.substr(0, k), port = s.substr(k + 1);
    auto sv = server_index_.find(dev);
    if (sv != server_index_.end()) {
      const auto& srv = t_.servers[sv->second];
      unsigned idx = 0;
      if (port.rfind("npu", 0) != 0 || !parse_index(port.c_str() + 3, &idx) || idx >= srv.npus.size()) {
        d_.error(ptr, "server \"" + dev + "\" has no NPU \"" + port + "\" (npu0..npu" + std::to_string(srv.npus.size() - 1) + ")");
        return std::nullopt;
      }
      return Endpoint{false, srv.npus[idx], 0};
    }
    auto sw = switch_index_.find(dev);
    if (sw == switch_index_.end()) {
      d_.error(ptr, "no device named \"" + dev + "\"");
      return std::nullopt;
    }
    unsigned p = 0;
    if (!parse_index(port.c_str(), &p) || p >= t_.switches[sw->second].ports) {
      d_.error(ptr, "switch \"" + dev + "\" has no port \"" + port + "\" (0.." + std::to_string(t_.switches[sw->second].ports - 1) + ")");
      return std::nullopt;
    }
    return Endpoint{true, sw->second, p};
  }

  void link(const json& j, const std::string& ptr) {
    ObjectReader s(j, ptr, d_, {"type", "a", "b", "bandwidth", "latency"});
    if (!s.valid()) return;
    LinkSpec l;
    std::string type = s.str("type", true).value_or("");
    if (type == "roce" || type == "ethernet") l.type = LinkType::Roce;
    else if (type == "pcie") l.type = LinkType::Pcie;
    else if (type == "hccs") l.type = LinkType::Hccs;
    else if (!type.empty()) { d_.error(s.child("type"), "unknown link type \"" + type + "\" (roce, pcie, hccs)"); return; }
    auto as = s.str("a", true), bs = s.str("b", true);
    if (!as || !bs) return;
    auto a = endpoint(*as, s.child("a")), b = endpoint(*bs, s.child("b"));
    if (!a || !b) return;
    l.a = *a;
    l.b = *b;
    l.name = *as + "<->" + *bs;
    auto bw = l.type == LinkType::Roce ? s.bandwidth("bandwidth", false) : laned(s, "bandwidth", l.params.lanes);
    if (s.get("bandwidth", false) && !bw) return;
    l.params.latency_ps = latency(s, "latency").value_or(500 * models::kPsPerNs);
    if (l.type == LinkType::Hccs) {
      if (a->is_switch || b->is_switch || t_.npus[a->index].server != t_.npus[b->index].server || a->index == b->index) {
        d_.error(ptr, "an HCCS link joins two different NPUs of one server");
        return;
      }
      l.a.port = t_.npus[b->index].device_id;
      l.b.port = t_.npus[a->index].device_id;
      l.params.bandwidth_Bps = bw.value_or(GBps(28));
    } else {
      if (!a->is_switch && !b->is_switch) { d_.error(ptr, "a " + type + " link needs a switch at one end"); return; }
      // The ends' speeds: NIC line rate (RoCE) or the NPU's PCIe rate; switch port speed.
      auto speed = [&](const Endpoint& e) {
        if (e.is_switch) return t_.switches[e.index].port_Bps;
        return l.type == LinkType::Roce ? t_.npus[e.index].nic_Bps : t_.npus[e.index].params.host_link.bandwidth_Bps;
      };
      std::uint64_t sa = speed(*a), sb = speed(*b);
      if (sa != sb) {
        d_.error(ptr, "link ends disagree on speed: " + *as + " runs at " + bw_str(sa) + ", " + *bs + " at " + bw_str(sb));
        return;
      }
      if (bw && *bw != sa) {
        d_.error(s.child("bandwidth"), "link bandwidth " + bw_str(*bw) + " differs from its ends' " + bw_str(sa));
        return;
      }
      for (auto* e : {&*a, &*b})
        if (e->is_switch && (t_.switches[e->index].kind == SwitchKind::Pcie) != (l.type == LinkType::Pcie)) {
          d_.error(ptr, std::string("a ") + type + " link cannot attach to " + (t_.switches[e->index].kind == SwitchKind::Pcie ? "PCIe" : "Ethernet") +
                            " switch \"" + t_.switches[e->index].name + "\"");
          return;
        }
      l.params.bandwidth_Bps = sa;
    }
    add_link(std::move(l), ptr);
  }

  // Every port carries at most one link: a NIC, an NPU's PCIe port, an HCCS port, a switch port.
  void add_link(LinkSpec l, const std::string& ptr) {
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

  void fabric(const json& j, const std::string& ptr);

  // Per-device overrides: {"device": "node3/npu5", "hbm_capacity": "32GiB", ...}.
  void override_(const json& j, const std::string& ptr) {
    ObjectReader o(j, ptr, d_, {"device", "hbm_capacity", "hbm_bandwidth", "nic_bandwidth", "pcie_bandwidth", "sdma_engines"});
    if (!o.valid()) return;
    auto dev = o.str("device", true);
    if (!dev) return;
    auto k = dev->rfind('/');
    auto sv = k == std::string::npos ? server_index_.end() : server_index_.find(dev->substr(0, k));
    unsigned idx = 0;
    if (sv == server_index_.end() || dev->compare(k + 1, 3, "npu") != 0 ||
        !parse_index(dev->c_str() + k + 4, &idx) || idx >= t_.servers[sv->second].npus.size()) {
      d_.error(o.child("device"), "no NPU named \"" + *dev + "\" (overrides name one NPU: \"<server>/npu<k>\")");
      return;
    }
    NpuSpec& n = t_.npus[t_.servers[sv->second].npus[idx]];
    if (auto v = o.size("hbm_capacity", false)) {
      if (*v == 0 || *v > (1ULL << 40)) d_.error(o.child("hbm_capacity"), "HBM capacity must be in (0, 1 TiB]");
      else n.params.hbm.capacity_bytes = *v;
    }
    if (auto v = o.bandwidth("hbm_bandwidth", false)) n.params.hbm.bandwidth_Bps = *v;
    if (auto v = o.bandwidth("nic_bandwidth", false)) n.nic_Bps = *v;
    if (auto v = laned(o, "pcie_bandwidth", kPcieLanes)) n.params.host_link.bandwidth_Bps = *v;
    if (auto v = o.uint("sdma_engines", false, 1, 64)) n.params.sdma_engines = static_cast<std::uint32_t>(*v);
  }

  // Generated HCCS/PCIe links of the servers claim their ports too.
  void claim_generated_ports() {
    ports_used_.reserve(2 * t_.links.size() + 2 * t_.npus.size());
    for (auto& l : t_.links)
      for (const Endpoint* e : {&l.a, &l.b})
        ports_used_.insert((static_cast<std::uint64_t>(e->is_switch) << 63) | (static_cast<std::uint64_t>(e->index) << 24) |
                           (static_cast<std::uint64_t>(l.type) << 20) | e->port);
  }

 private:
  void ip_used(std::uint32_t ip, const std::string& ptr, const std::string& who) {
    auto [it, fresh] = ips_.emplace(ip, who);
    if (!fresh) d_.error(ptr, "IP " + format_ipv4(ip) + " of " + who + " is already used by " + it->second);
  }

  Diagnostics& d_;
  Topology& t_;
  std::unordered_map<std::string, char> names_;
  std::unordered_map<std::string, std::uint32_t> server_index_, switch_index_;
  std::unordered_map<std::uint32_t, std::string> ips_;
  std::unordered_set<std::uint64_t> ports_used_;  // hashed: 800k ports at 65,536 NPUs
};

void Builder::fabric(const json& j, const std::string& ptr) {
  ObjectReader f(j, ptr, d_, {"type", "tiers", "switch_radix", "oversubscription", "rail_optimized", "link_bandwidth", "link_latency",
                              "switch_latency", "switch_buffer"});
  if (!f.valid()) return;
  auto type = f.str("type", true).value_or("clos");
  if (type != "clos") { d_.error(f.child("type"), "unknown fabric type \"" + type + "\" (clos)"); return; }
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
      d_.error(f.child("oversubscription"), "expected \"k:1\" with k in 1..16, got \"" + *o + "\"");
    else over = k;
  }
  const bool rail = f.boolean("rail_optimized", false).value_or(true);
  auto bw = f.bandwidth("link_bandwidth", true);
  const models::Tick lat = latency(f, "link_latency").value_or(500 * models::kPsPerNs);
  const models::Tick sw_lat = latency(f, "switch_latency").value_or(600 * models::kPsPerNs);
  const std::uint64_t buf = f.size("switch_buffer", false).value_or(32ULL << 20);
  if (!bw || !d_.ok()) return;
  if (R % (over + 1) != 0 && tiers > 1) {
    d_.error(f.child("switch_radix"), "radix " + std::to_string(R) + " does not split " + std::to_string(over) + ":1 into down and up ports");
    return;
  }
  const std::uint32_t down = tiers == 1 ? R : R * over / (over + 1), up = tiers == 1 ? 0 : R - down;
  t_.fabric = FabricInfo{"clos", tiers, R, down, up, rail};
  for (auto& n : t_.npus)
    if (n.nic_Bps != *bw) {
      d_.error(f.child("link_bandwidth"), "link ends disagree on speed: fabric links run at " + bw_str(*bw) + ", the NIC of " + n.name +
                                               " at " + bw_str(n.nic_Bps));
      return;
    }
  // NIC order: rail-optimised fabrics put NIC k of every server on the leaves of rail k.
  std::uint32_t rails = 0;
  for (auto& s : t_.servers) rails = std::max<std::uint32_t>(rails, static_cast<std::uint32_t>(s.npus.size()));
  const std::uint32_t S = static_cast<std::uint32_t>(t_.servers.size());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> nic_leaf;  // (leaf, port) per NPU
  std::uint32_t leaves = 0;
  nic_leaf.resize(t_.npus.size());
  if (rail && tiers > 1) {
    const std::uint32_t per_rail = (S + down - 1) / down;
    leaves = per_rail * rails;
    for (std::uint32_t s = 0; s < S; ++s)
      for (std::uint32_t k = 0; k < t_.servers[s].npus.size(); ++k) nic_leaf[t_.servers[s].npus[k]] = {k * per_rail + s / down, s % down};
  } else {
    const std::uint32_t n = static_cast<std::uint32_t>(t_.npus.size());
    leaves = (n + down - 1) / down;
    for (std::uint32_t i = 0; i < n; ++i) nic_leaf[i] = {i / down, i % down};
  }
  if (tiers == 1 && leaves > 1) {
    d_.error(f.child("switch_radix"), "one switch of radix " + std::to_string(R) + " cannot hold " + std::to_string(t_.npus.size()) + " NICs");
    return;
  }
  if (tiers == 2 && leaves > R) {
    d_.error(f.child("tiers"), "a 2-tier Clos of radix " + std::to_string(R) + " holds at most " + std::to_string(R) + " leaves (" +
                                   std::to_string(leaves) + " needed); use tiers: 3 or a larger radix");
    return;
  }
  const std::uint32_t pod_leaves = R / 2;  // 3-tier: spines split R/2 down (leaves of the pod), R/2 up (cores)
  const std::uint32_t pods = tiers == 3 ? (leaves + pod_leaves - 1) / pod_leaves : 1;
  if (tiers == 3 && R % 2) { d_.error(f.child("switch_radix"), "a 3-tier Clos needs an even radix"); return; }
  auto add_switch = [&](const std::string& name, std::uint32_t tier) {
    SwitchSpec sw;
    sw.name = name;
    sw.ports = R;
    sw.port_Bps = *bw;
    sw.latency_ps = sw_lat;
    sw.buffer_bytes = buf;
    sw.tier = tier;
    if (!names_.emplace(name, 'w').second) d_.error(ptr, "generated switch name \"" + name + "\" clashes with a device");
    switch_index_[name] = static_cast<std::uint32_t>(t_.switches.size());
    t_.switches.push_back(std::move(sw));
    return static_cast<std::uint32_t>(t_.switches.size() - 1);
  };
  auto wire = [&](Endpoint a, Endpoint b) {
    LinkSpec l;
    l.type = LinkType::Roce;
    l.a = a;
    l.b = b;
    l.params = models::LinkParams{*bw, lat};
    l.name = (a.is_switch ? t_.switches[a.index].name + "/" + std::to_string(a.port) : t_.npus[a.index].name) + "<->" +
             t_.switches[b.index].name + "/" + std::to_string(b.port);
    add_link(std::move(l), ptr);
  };
  {
    const std::size_t more = t_.npus.size() + 2 * static_cast<std::size_t>(leaves) * up;  // NIC links + leaf and spine uplinks
    t_.links.reserve(t_.links.size() + more);
    ports_used_.reserve(ports_used_.size() + 2 * more);
  }
  std::vector<std::uint32_t> leaf(leaves);
  for (std::uint32_t i = 0; i < leaves; ++i) leaf[i] = add_switch(tiers == 1 ? "switch0" : "leaf" + std::to_string(i), 1);
  for (std::uint32_t n = 0; n < t_.npus.size(); ++n) wire(Endpoint{false, n, 0}, Endpoint{true, leaf[nic_leaf[n].first], nic_leaf[n].second});
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
      d_.error(f.child("switch_radix"), "a 3-tier Clos of radix " + std::to_string(R) + " cannot join " + std::to_string(pods) +
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
        d_.error(f.child("switch_radix"), "a 3-tier Clos of " + std::to_string(pods) + " pods needs " + std::to_string(need[c]) +
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

}  // namespace

std::optional<Topology> topology_from_json(const json& j, Diagnostics& d, const std::string& base_dir) {
  ObjectReader top(j, "", d, {"format", "version", "name", "description", "servers", "server_groups", "overrides", "switches", "links", "fabric", "rank_table"});
  if (!top.valid()) return std::nullopt;
  Topology t;
  t.file = d.file();
  auto fmt = top.str("format", true);
  if (fmt && *fmt != "hcsim-topology") d.error(top.child("format"), "expected \"hcsim-topology\", got \"" + *fmt + "\"");
  top.uint("version", true, 1, 1);
  t.name = top.str("name", true).value_or("");
  t.description = top.str("description", false).value_or("");
  Builder b(d, t);
  const json* servers = top.get("servers", false);
  const json* groups = top.get("server_groups", false);
  if (!servers && !groups) d.error("/servers", "missing required key (or give server_groups)");
  if (servers) {
    if (!servers->is_array()) d.error(top.child("servers"), "expected an array of servers");
    else
      for (std::size_t i = 0; i < servers->size() && i < 65536; ++i) b.server((*servers)[i], "/servers/" + std::to_string(i), 0, nullptr);
  }
  if (groups) {
    if (!groups->is_array()) d.error(top.child("server_groups"), "expected an array");
    else
      for (std::size_t g = 0; g < groups->size(); ++g) {
        std::string gp = "/server_groups/" + std::to_string(g);
        ObjectReader gr((*groups)[g], gp, d, {"name", "count", "type", "host_ip", "npus", "hccs", "pcie", "nic"});
        if (!gr.valid()) continue;
        auto name = gr.str("name", true);
        auto count = gr.uint("count", true, 1, 8192);
        if (!name || !count) continue;
        if (name->find("{i}") == std::string::npos && *count > 1) { d.error(gr.child("name"), "a group of several servers needs \"{i}\" in its name"); continue; }
        // A problem of the group's template (or of one generated server) is reported once, with
        // the group's pointer: expansion stops at the first server that adds an error.
        for (std::uint64_t i = 0; i < *count; ++i) {
          const std::size_t before = d.count();
          b.server((*groups)[g], gp, i, &*name);
          if (d.count() != before) break;
        }
      }
  }
  if (t.servers.empty() && d.ok()) d.error("/servers", "no servers");
  b.claim_generated_ports();
  if (const json* ov = top.get("overrides", false)) {
    if (!ov->is_array()) d.error(top.child("overrides"), "expected an array");
    else for (std::size_t i = 0; i < ov->size(); ++i) b.override_((*ov)[i], "/overrides/" + std::to_string(i));
  }
  if (const json* sw = top.get("switches", false)) {
    if (!sw->is_array()) d.error(top.child("switches"), "expected an array");
    else for (std::size_t i = 0; i < sw->size(); ++i) b.switch_((*sw)[i], "/switches/" + std::to_string(i));
  }
  if (const json* ln = top.get("links", false)) {
    if (!ln->is_array()) d.error(top.child("links"), "expected an array");
    else for (std::size_t i = 0; i < ln->size(); ++i) b.link((*ln)[i], "/links/" + std::to_string(i));
  }
  if (const json* fj = top.get("fabric", false)) b.fabric(*fj, "/fabric");
  auto rt_path = top.str("rank_table", false);
  if (!d.ok()) return std::nullopt;

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
      return std::nullopt;
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
        d.error(top.get("fabric", false) ? "/fabric" : "/links", "the RoCE network is split: the NIC of " + t.npus[i].name +
                                                                     " cannot reach the NIC of " + t.npus[first].name + " over RoCE links and switches");
        return std::nullopt;
      }
    }
  }
  t.rank_to_npu.resize(N);
  for (std::uint32_t i = 0; i < N; ++i) t.rank_to_npu[i] = i;
  if (rt_path) {
    std::string p = (!rt_path->empty() && (*rt_path)[0] == '/') ? *rt_path : base_dir + *rt_path;
    Diagnostics rd(p);
    auto rj = read_json_file(p, rd);
    if (!rj || !import_rank_table(*rj, t, rd)) {
      for (auto& m : rd.messages()) d.error(top.child("rank_table"), m);
      return std::nullopt;
    }
    t.rank_table = p;
  }
  return t;
}

std::optional<Topology> load_topology(const std::string& path, Diagnostics& d) {
  auto j = read_json_file(path, d);
  if (!j) return std::nullopt;
  auto k = path.find_last_of('/');
  return topology_from_json(*j, d, k == std::string::npos ? "" : path.substr(0, k + 1));
}

}  // namespace sim
