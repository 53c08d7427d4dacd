// The /host_network reader (docs/topology-format.md#host-network, docs/models/host-network.md):
// the hosts' front-end network that protocol TCP's point-to-point goes over — one NIC per server
// (a speed for all, per server by name), one switch (NIC-to-NIC latency) and the kernel stack's
// cost per send()/recv() call and per byte copied.
#include "topology_builder.h"

namespace sim::topology_detail {

namespace {
std::string pointer_token(const std::string& k) {  // RFC 6901: ~ -> ~0, / -> ~1
  std::string out;
  for (char c : k) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}
}  // namespace

void read_host_network(const json& hn, Topology& t, Diagnostics& d) {
  ObjectReader o(hn, "/host_network", d, {"nic", "servers", "latency", "send_cost", "recv_cost", "copy_bandwidth"});
  if (!o.valid()) return;
  HostNetwork& h = t.host_network;
  auto positive_bw = [&](const char* key, std::uint64_t* out) {
    if (auto v = o.bandwidth(key, false)) {
      if (*v == 0) d.error(o.child(key), "must be more than 0");
      else *out = *v;
    }
  };
  positive_bw("nic", &h.nic_Bps);
  positive_bw("copy_bandwidth", &h.copy_Bps);
  if (auto v = o.duration("latency", false)) h.latency_ps = *v;
  if (auto v = o.duration("send_cost", false)) h.send_ps = *v;
  if (auto v = o.duration("recv_cost", false)) h.recv_ps = *v;
  if (const json* s = o.get("servers", false)) {
    // {"<server name>": "<NIC speed>", ...}: servers whose NIC differs from "nic".
    if (!s->is_object()) { d.error(o.child("servers"), "expected an object of server name -> NIC bandwidth"); return; }
    h.server_nic_Bps.assign(t.servers.size(), 0);
    for (auto it = s->begin(); it != s->end(); ++it) {
      const std::string ptr = o.child("servers") + "/" + pointer_token(it.key());
      std::uint32_t idx = ~0u;
      for (std::uint32_t i = 0; i < t.servers.size(); ++i)
        if (t.servers[i].name == it.key()) idx = i;
      if (idx == ~0u) { d.error(ptr, "no server named \"" + it.key() + "\""); continue; }
      if (!it.value().is_string()) { d.error(ptr, std::string("expected a bandwidth string, got ") + it.value().type_name()); continue; }
      std::string why;
      auto v = parse_bandwidth(it.value().get<std::string>(), &why);
      if (!v) d.error(ptr, why);
      else if (*v == 0) d.error(ptr, "must be more than 0");
      else h.server_nic_Bps[idx] = *v;
    }
  }
}

}  // namespace sim::topology_detail
