// Ascend rank tables (HCCL's RANK_TABLE_FILE), versions 1.0 and 1.2: every value is a string.
#include <map>
#include <set>

#include "sim/config/topology.h"

namespace sim {

json export_rank_table(const Topology& t, const std::string& version) {
  json rt;
  rt["version"] = version;
  rt["server_count"] = std::to_string(t.servers.size());
  json list = json::array();
  // Ranks of a server are contiguous (HCCL's rule), so walk the ranks in order.
  std::int64_t cur = -1;
  for (std::uint32_t r = 0; r < t.rank_to_npu.size(); ++r) {
    const NpuSpec& n = t.npus[t.rank_to_npu[r]];
    if (static_cast<std::int64_t>(n.server) != cur) {
      cur = n.server;
      list.push_back({{"server_id", format_ipv4(t.servers[n.server].host_ip)}, {"device", json::array()}});
    }
    json dev = {{"device_id", std::to_string(n.device_id)}, {"device_ip", format_ipv4(n.device_ip)}, {"rank_id", std::to_string(r)}};
    if (version == "1.2") dev["super_device_id"] = std::to_string(r);
    list.back()["device"].push_back(dev);
  }
  rt["server_list"] = list;
  if (version == "1.2") {
    json servers = json::array();
    for (auto& s : list) servers.push_back({{"server_id", s["server_id"]}});
    rt["super_pod_list"] = json::array({{{"super_pod_id", "0"}, {"server_list", servers}}});
  }
  rt["status"] = "completed";
  return rt;
}

namespace {
constexpr const char* kIpForm = " (four decimal fields 0-255, no leading zeros)";
std::optional<std::uint64_t> str_uint(const ObjectReader& o, const char* key, Diagnostics& d) {
  auto s = o.str(key, true);
  if (!s) return std::nullopt;
  if (s->empty() || s->size() > 9 || s->find_first_not_of("0123456789") != std::string::npos) {
    d.error(o.child(key), "expected a decimal number in a string, got \"" + *s + "\"");
    return std::nullopt;
  }
  return std::stoull(*s);
}
}  // namespace

bool import_rank_table(const json& rt, Topology& t, Diagnostics& d) {
  if (std::string why = wrong_kind(rt, "rank table"); !why.empty()) { d.error("", why); return false; }
  ObjectReader top(rt, "", d, {"version", "server_count", "server_list", "super_pod_list", "status"});
  if (!top.valid()) return false;
  auto version = top.str("version", true).value_or("");
  if (!version.empty() && version != "1.0" && version != "1.2") d.error(top.child("version"), "unsupported rank table version \"" + version + "\" (1.0, 1.2)");
  if (auto st = top.str("status", false); st && *st != "completed") d.error(top.child("status"), "status is \"" + *st + "\", not \"completed\"");
  auto count = str_uint(top, "server_count", d);
  const json* list = top.get("server_list", true);
  if (!list) return false;
  if (!list->is_array()) { d.error(top.child("server_list"), "expected an array"); return false; }
  if (count && *count != list->size())
    d.error(top.child("server_count"), "says " + std::to_string(*count) + " servers, server_list has " + std::to_string(list->size()));
  std::map<std::uint32_t, std::uint32_t> server_by_ip;
  for (std::uint32_t s = 0; s < t.servers.size(); ++s) server_by_ip[t.servers[s].host_ip] = s;
  std::map<std::uint64_t, std::uint32_t> rank_npu;  // rank -> NPU
  std::map<std::uint64_t, std::string> rank_where;
  std::set<std::uint32_t> dev_ips, servers_seen;
  std::vector<std::string> server_ids;
  std::vector<std::size_t> server_at;  // server_ids[k] is /server_list/server_at[k]
  struct Super { std::string server; std::uint64_t id; std::string ptr; };
  std::vector<Super> supers;  // every super_device_id, in file order
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string sp = "/server_list/" + std::to_string(i);
    ObjectReader s((*list)[i], sp, d, {"server_id", "host_nic_ip", "container_ip", "device"});
    if (!s.valid()) continue;
    auto sid = s.str("server_id", true);
    s.str("host_nic_ip", false);
    s.str("container_ip", false);
    if (!sid) continue;
    server_ids.push_back(*sid);
    server_at.push_back(i);
    auto ip = parse_ipv4(*sid);
    if (!ip) { d.error(s.child("server_id"), "not an IPv4 address" + std::string(kIpForm) + ": \"" + *sid + "\""); continue; }
    auto it = server_by_ip.find(*ip);
    if (it == server_by_ip.end()) { d.error(s.child("server_id"), "no server of the topology has host_ip " + *sid); continue; }
    if (!servers_seen.insert(it->second).second) d.error(s.child("server_id"), "server " + *sid + " is listed twice");
    const ServerSpec& srv = t.servers[it->second];
    const json* devs = s.get("device", true);
    if (!devs || !devs->is_array()) { if (devs) d.error(s.child("device"), "expected an array"); continue; }
    std::set<std::uint64_t> ids;
    std::uint64_t lo = ~0ULL, hi = 0;
    for (std::size_t k = 0; k < devs->size(); ++k) {
      std::string dp = sp + "/device/" + std::to_string(k);
      ObjectReader dv((*devs)[k], dp, d, {"device_id", "device_ip", "rank_id", "super_device_id", "backup_device_ip"});
      if (!dv.valid()) continue;
      auto did = str_uint(dv, "device_id", d);
      auto rid = str_uint(dv, "rank_id", d);
      auto dip = dv.str("device_ip", true);
      if (dv.get("super_device_id", false))
        if (auto sd = str_uint(dv, "super_device_id", d)) supers.push_back({*sid, *sd, dv.child("super_device_id")});
      if (dip) {
        auto v = parse_ipv4(*dip);
        if (!v) d.error(dv.child("device_ip"), "device IP missing or not IPv4" + std::string(kIpForm) + ": \"" + *dip + "\"");
        else if (!dev_ips.insert(*v).second) d.error(dv.child("device_ip"), "device IP " + *dip + " used twice");
        else if (did && *did < srv.npus.size() && t.npus[srv.npus[*did]].device_ip && t.npus[srv.npus[*did]].device_ip != *v)
          d.error(dv.child("device_ip"), "device IP " + *dip + " differs from the topology's " + format_ipv4(t.npus[srv.npus[*did]].device_ip) +
                                             " for " + t.npus[srv.npus[*did]].name);
      }
      if (did && *did >= srv.npus.size()) { d.error(dv.child("device_id"), "device id " + std::to_string(*did) + " out of range for " + srv.name + " (0.." + std::to_string(srv.npus.size() - 1) + ")"); did.reset(); }
      if (did && !ids.insert(*did).second) d.error(dv.child("device_id"), "device id " + std::to_string(*did) + " appears twice in this server");
      if (rid && did) {
        if (rank_npu.count(*rid)) d.error(dv.child("rank_id"), "rank " + std::to_string(*rid) + " appears twice (also at " + rank_where[*rid] + ")");
        rank_npu[*rid] = srv.npus[*did];
        rank_where[*rid] = dp;
        lo = std::min(lo, *rid);
        hi = std::max(hi, *rid);
      }
    }
    if (!ids.empty() && hi - lo + 1 != ids.size())
      d.error(s.child("device"), "rank ids of a server must be contiguous (HCCL: not interleaved across servers), got " +
                                     std::to_string(lo) + ".." + std::to_string(hi) + " for " + std::to_string(ids.size()) + " devices");
  }
  std::map<std::string, std::size_t> pod_of;  // server_id -> its super pod (all in pod 0 without a list)
  if (const json* sp = top.get("super_pod_list", false)) {
    if (version != "1.2") d.error(top.child("super_pod_list"), "super_pod_list needs version 1.2");
    else if (!sp->is_array()) d.error(top.child("super_pod_list"), "expected an array");
    else {
      std::set<std::string> in_pod;
      std::map<std::string, std::size_t> in_pod_of;
      for (std::size_t i = 0; i < sp->size(); ++i) {
        std::string pp = "/super_pod_list/" + std::to_string(i);
        ObjectReader p((*sp)[i], pp, d, {"super_pod_id", "server_list"});
        if (!p.valid()) continue;
        str_uint(p, "super_pod_id", d);
        const json* sl = p.get("server_list", true);
        if (!sl || !sl->is_array()) continue;
        for (std::size_t k = 0; k < sl->size(); ++k) {
          ObjectReader e((*sl)[k], pp + "/server_list/" + std::to_string(k), d, {"server_id"});
          auto sid = e.str("server_id", true);
          if (!sid) continue;
          if (std::find(server_ids.begin(), server_ids.end(), *sid) == server_ids.end()) d.error(e.child("server_id"), "server " + *sid + " is not in server_list");
          if (!in_pod.insert(*sid).second) d.error(e.child("server_id"), "server " + *sid + " is in two super pods");
          else in_pod_of[*sid] = i;
        }
      }
      // With super pods given, every server is in one (HCCL places a server by its pod).
      for (std::size_t k = 0; k < server_ids.size(); ++k)
        if (!in_pod.count(server_ids[k]))
          d.error(top.child("server_list") + "/" + std::to_string(server_at[k]) + "/server_id",
                  "server " + server_ids[k] + " is in no super pod of /super_pod_list");
      pod_of = std::move(in_pod_of);
    }
  }
  // A super_device_id names one NPU of its super pod: two NPUs of a pod with the same one collide.
  std::map<std::pair<std::size_t, std::uint64_t>, std::string> super_where;
  for (const Super& x : supers) {
    auto pod = pod_of.find(x.server);
    auto [at, fresh] = super_where.emplace(std::make_pair(pod == pod_of.end() ? 0 : pod->second, x.id), x.ptr);
    if (!fresh) d.error(x.ptr, "super_device_id " + std::to_string(x.id) + " appears twice in a super pod (also at " + at->second + ")");
  }
  if (!d.ok()) return false;
  if (rank_npu.size() != t.npus.size()) {
    d.error("/server_list", "the rank table has " + std::to_string(rank_npu.size()) + " ranks, the topology " + std::to_string(t.npus.size()) + " NPUs");
    return false;
  }
  std::uint64_t expect = 0;
  for (auto& [r, n] : rank_npu)
    if (r != expect++) { d.error(rank_where[r], "rank ids must be 0.." + std::to_string(t.npus.size() - 1) + " without gaps; rank " + std::to_string(expect - 1) + " is missing"); return false; }
  for (auto& [r, n] : rank_npu) t.rank_to_npu[r] = n;
  return true;
}

}  // namespace sim
