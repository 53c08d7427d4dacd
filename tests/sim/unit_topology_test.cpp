// Topology descriptions: one malformed fixture per validation rule, generator counts against
// closed forms, bisection and diameter against hand computations, rank tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "sim/config/topology.h"

using namespace sim;

namespace {

const std::string kSrc = HCSIM_SOURCE_DIR;

Topology load(const std::string& rel) {
  Diagnostics d(rel);
  auto t = load_topology(kSrc + "/" + rel, d);
  EXPECT_TRUE(t) << (d.messages().empty() ? "" : d.messages()[0]);
  return t ? *t : Topology{};
}

json two_node() {  // a small explicit layout to mutate
  return json::parse(R"({"format":"hcsim-topology","version":1,"name":"t",
    "servers":[{"name":"a","type":"atlas800t-a2","host_ip":"10.0.0.1","nic":{"device_ip":"10.1.0.1"}},
               {"name":"b","type":"atlas800t-a2","host_ip":"10.0.0.2","nic":{"device_ip":"10.1.0.9"}}],
    "switches":[{"name":"sw","ports":16,"port_bandwidth":"200Gb/s"}],
    "links":[{"type":"roce","a":"a/npu0","b":"sw/0"},{"type":"roce","a":"b/npu0","b":"sw/1"}]})");
}

std::vector<std::string> errors(const json& j) {
  Diagnostics d("t.json");
  topology_from_json(j, d);
  return d.messages();
}

}  // namespace

struct RuleCase {
  const char* rule;
  std::function<void(json&)> mutate;
  const char* expect;
};

TEST(TopologyRules, EachRuleTripsWithFileAndPointer) {
  const RuleCase cases[] = {
      {"unknown key", [](json& j) { j["links"][0]["colour"] = "red"; }, "t.json: /links/0/colour: unknown key"},
      {"missing field", [](json& j) { j["switches"][0].erase("ports"); }, "t.json: /switches/0/ports: missing required key"},
      {"bad unit", [](json& j) { j["switches"][0]["port_bandwidth"] = "200Gbps"; }, "t.json: /switches/0/port_bandwidth: bandwidth needs a unit"},
      {"negative number", [](json& j) { j["switches"][0]["ports"] = -4; }, "t.json: /switches/0/ports: expected a non-negative integer"},
      {"huge number", [](json& j) { j["switches"][0]["ports"] = 1e30; }, "t.json: /switches/0/ports: expected a non-negative integer"},
      {"duplicate name", [](json& j) { j["switches"][0]["name"] = "a"; }, "t.json: /switches/0/name: duplicate device name \"a\""},
      {"duplicate host IP", [](json& j) { j["servers"][1]["host_ip"] = "10.0.0.1"; }, "t.json: /servers/1/host_ip: IP 10.0.0.1 of b is already used by a"},
      {"duplicate device IP", [](json& j) { j["servers"][1]["nic"]["device_ip"] = "10.1.0.5"; }, "t.json: /servers/1/nic/device_ip: IP 10.1.0.5 of b/npu0 is already used by a/npu4"},
      {"absent device", [](json& j) { j["links"][1]["b"] = "spine9/1"; }, "t.json: /links/1/b: no device named \"spine9\""},
      {"absent port", [](json& j) { j["links"][1]["b"] = "sw/16"; }, "t.json: /links/1/b: switch \"sw\" has no port \"16\" (0..15)"},
      {"absent NPU", [](json& j) { j["links"][1]["a"] = "b/npu8"; }, "t.json: /links/1/a: server \"b\" has no NPU \"npu8\""},
      {"port used twice", [](json& j) { j["links"][1]["b"] = "sw/0"; }, "t.json: /links/1: port 0 of switch \"sw\" is used by more than one link"},
      {"NIC used twice", [](json& j) { j["links"][1]["a"] = "a/npu0"; }, "t.json: /links/1: the NIC of a/npu0 is used by more than one link"},
      {"speed mismatch", [](json& j) { j["switches"][0]["port_bandwidth"] = "100Gb/s"; },
       "t.json: /links/0: link ends disagree on speed: a/npu0 runs at 200Gb/s, sw/0 at 100Gb/s"},
      {"unreachable NPUs", [](json& j) { j["links"].erase(1); }, "t.json: /: NPUs cannot reach each other: b/npu0 has no path to a/npu0"},
      {"bad IP", [](json& j) { j["servers"][0]["host_ip"] = "10.0.0"; }, "t.json: /servers/0/host_ip: not an IPv4 address"},
      {"wrong type", [](json& j) { j["servers"] = "many"; }, "t.json: /servers: expected an array of servers"},
      {"HCCS across servers", [](json& j) { j["links"].push_back({{"type", "hccs"}, {"a", "a/npu1"}, {"b", "b/npu1"}}); },
       "t.json: /links/2: an HCCS link joins two different NPUs of one server"},
      {"too small fabric", [](json& j) { j.erase("links"); j.erase("switches"); j["fabric"] = {{"type", "clos"}, {"tiers", 1}, {"switch_radix", 8}, {"link_bandwidth", "200Gb/s"}}; },
       "t.json: /fabric/switch_radix: one switch of radix 8 cannot hold 16 NICs"},
      {"fabric speed", [](json& j) { j.erase("links"); j.erase("switches"); j["fabric"] = {{"type", "clos"}, {"tiers", 1}, {"switch_radix", 16}, {"link_bandwidth", "400Gb/s"}}; },
       "t.json: /fabric/link_bandwidth: link ends disagree on speed"},
  };
  EXPECT_TRUE(errors(two_node()).empty()) << errors(two_node())[0];
  for (const auto& c : cases) {
    json j = two_node();
    c.mutate(j);
    auto e = errors(j);
    bool found = false;
    for (auto& m : e) found |= m.find(c.expect) != std::string::npos;
    EXPECT_TRUE(found) << c.rule << ": expected \"" << c.expect << "\", got: " << (e.empty() ? "(no error)" : e[0]);
  }
}

TEST(TopologyRules, PerDeviceOverrides) {
  json j = two_node();
  j["overrides"] = {{{"device", "b/npu3"}, {"hbm_capacity", "32GiB"}, {"nic_bandwidth", "100Gb/s"}}};
  Diagnostics d("t.json");
  auto t = topology_from_json(j, d);
  ASSERT_TRUE(t) << d.messages()[0];
  EXPECT_EQ(t->npus[11].params.hbm.capacity_bytes, 32ULL << 30);
  EXPECT_EQ(t->npus[11].nic_Bps, 12500000000ULL);
  EXPECT_EQ(t->npus[10].params.hbm.capacity_bytes, 64ULL << 30);  // only that NPU
  // An overridden NIC now disagrees with the switch it is cabled to.
  j["overrides"][0]["device"] = "b/npu0";
  auto e = errors(j);
  ASSERT_FALSE(e.empty());
  EXPECT_NE(e[0].find("/links/1: link ends disagree on speed: b/npu0 runs at 100Gb/s, sw/1 at 200Gb/s"), std::string::npos) << e[0];
  j["overrides"][0]["device"] = "b/npu9";
  e = errors(j);
  ASSERT_FALSE(e.empty());
  EXPECT_NE(e[0].find("/overrides/0/device: no NPU named \"b/npu9\""), std::string::npos) << e[0];
}

// /host_network (docs/topology-format.md#host-network): defaults when absent, values, per-server
// NICs, and errors at the key's pointer.
TEST(TopologyRules, HostNetwork) {
  Diagnostics d("t.json");
  auto t = topology_from_json(two_node(), d);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host_network.nic_Bps, 3125000000ULL);  // 25 GbE
  EXPECT_EQ(t->host_network.latency_ps, 1000000ULL);
  EXPECT_EQ(t->host_network.send_ps, 5000000ULL);
  EXPECT_EQ(t->host_network.recv_ps, 5000000ULL);
  EXPECT_EQ(t->host_network.copy_Bps, 2000000000ULL);
  json j = two_node();
  j["host_network"] = {{"nic", "100Gb/s"}, {"latency", "3us"}, {"send_cost", "7us"}, {"recv_cost", "6us"},
                       {"copy_bandwidth", "4GB/s"}, {"servers", {{"b", "10Gb/s"}}}};
  Diagnostics d2("t.json");
  t = topology_from_json(j, d2);
  ASSERT_TRUE(t) << d2.messages()[0];
  EXPECT_EQ(t->host_network.nic_of(0), 12500000000ULL);
  EXPECT_EQ(t->host_network.nic_of(1), 1250000000ULL);
  EXPECT_EQ(t->host_network.latency_ps, 3000000ULL);
  EXPECT_EQ(t->host_network.send_ps, 7000000ULL);
  EXPECT_EQ(t->host_network.recv_ps, 6000000ULL);
  EXPECT_EQ(t->host_network.copy_Bps, 4000000000ULL);
  const std::pair<std::function<void(json&)>, const char*> bad[] = {
      {[](json& x) { x["host_network"] = {{"nics", "25Gb/s"}}; }, "t.json: /host_network/nics: unknown key"},
      {[](json& x) { x["host_network"] = {{"nic", "25Gbps"}}; }, "t.json: /host_network/nic: bandwidth needs a unit"},
      {[](json& x) { x["host_network"] = {{"nic", "0Gb/s"}}; }, "t.json: /host_network/nic: bandwidth must be positive"},
      {[](json& x) { x["host_network"] = {{"servers", {{"c", "10Gb/s"}}}}; }, "t.json: /host_network/servers/c: no server named \"c\""},
      {[](json& x) { x["host_network"] = {{"servers", {{"a", 10}}}}; }, "t.json: /host_network/servers/a: expected a bandwidth string"},
      {[](json& x) { x["host_network"] = "fast"; }, "t.json: /host_network"},
  };
  for (const auto& [mutate, expect] : bad) {
    json x = two_node();
    mutate(x);
    auto e = errors(x);
    bool found = false;
    for (auto& m : e) found |= m.find(expect) != std::string::npos;
    EXPECT_TRUE(found) << "expected \"" << expect << "\", got: " << (e.empty() ? "(no error)" : e[0]);
  }
}

TEST(TopologyRules, JunkNeverCrashes) {
  for (const char* text : {"null", "42", "\"x\"", "[]", "{}", R"({"servers":[1,2,3]})", R"({"servers":[{"npus":{"count":1e999}}]})",
                           R"({"format":"hcsim-topology","version":1,"name":"x","server_groups":[{"name":"n{i}","count":99999}]})"}) {
    Diagnostics d("junk.json");
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) continue;
    EXPECT_FALSE(topology_from_json(j, d)) << text;
    EXPECT_FALSE(d.messages().empty()) << text;
  }
}

// Closed forms for a rail-optimised 2-tier Clos of radix R at 1:1 with S servers of 8 NPUs:
// down = up = R/2, leaves = 8 * ceil(S / down), spines = up, links = 8S (NICs) + leaves * up.
TEST(Generators, TwoTierClosCountsMatchClosedForm) {
  for (auto [S, R] : {std::pair<unsigned, unsigned>{16, 32}, {1024, 128}, {100, 64}}) {
    json j = {{"format", "hcsim-topology"}, {"version", 1}, {"name", "g"},
              {"server_groups", {{{"name", "n{i}"}, {"count", S}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.1"}}}},
              {"fabric", {{"type", "clos"}, {"tiers", 2}, {"switch_radix", R}, {"link_bandwidth", "200Gb/s"}}}};
    Diagnostics d("g");
    auto t = topology_from_json(j, d);
    ASSERT_TRUE(t) << d.messages()[0];
    const unsigned down = R / 2, leaves = 8 * ((S + down - 1) / down), spines = R / 2;
    auto s = summarize(*t);
    EXPECT_EQ(s.servers, S);
    EXPECT_EQ(s.npus, 8u * S);
    EXPECT_EQ(s.switches_by_tier[1], leaves);
    EXPECT_EQ(s.switches_by_tier[2], spines);
    EXPECT_EQ(s.roce_links, 8u * S + leaves * spines);
    EXPECT_EQ(s.hccs_links, 28u * S);
  }
}

// 3-tier, not rail-optimised, radix R: leaves = ceil(N / (R/2)), pods of R/2 leaves with R/2
// spines each, cores = (R/2) planes * ceil(pods * (R/2) / R).
TEST(Generators, ThreeTierClosCountsMatchClosedForm) {
  const unsigned S = 1024, R = 64, N = 8 * S, down = R / 2;
  json j = {{"format", "hcsim-topology"}, {"version", 1}, {"name", "g"},
            {"server_groups", {{{"name", "n{i}"}, {"count", S}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.1"}}}},
            {"fabric", {{"type", "clos"}, {"tiers", 3}, {"switch_radix", R}, {"rail_optimized", false}, {"link_bandwidth", "200Gb/s"}}}};
  Diagnostics d("g");
  auto t = topology_from_json(j, d);
  ASSERT_TRUE(t) << d.messages()[0];
  const unsigned leaves = N / down, pods = leaves / (R / 2), spines = pods * (R / 2), cores = (R / 2) * ((pods * (R / 2) + R - 1) / R);
  auto s = summarize(*t);
  EXPECT_EQ(s.switches_by_tier[1], leaves);
  EXPECT_EQ(s.switches_by_tier[2], spines);
  EXPECT_EQ(s.switches_by_tier[3], cores);
  EXPECT_EQ(s.roce_links, N + leaves * (R / 2) + spines * (R / 2));
  EXPECT_DOUBLE_EQ(s.bisection_Bps, N / 2 * 25e9);  // non-blocking: half the NICs at 25 GB/s
  EXPECT_EQ(s.diameter, 6u);                        // NPU-leaf-spine-core-spine-leaf-NPU
}

// Oversubscription 2:1 halves the bisection: 256 NICs on 8 leaves of radix 48 (32 down, 16 up);
// the first 128 ranks sit on leaves 0-3, whose 4 x 16 uplinks of 25 GB/s are the cut.
TEST(Generators, OversubscriptionCutsBisection) {
  json j = {{"format", "hcsim-topology"}, {"version", 1}, {"name", "g"},
            {"server_groups", {{{"name", "n{i}"}, {"count", 32}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.1"}}}},
            {"fabric", {{"type", "clos"}, {"tiers", 2}, {"switch_radix", 48}, {"oversubscription", "2:1"}, {"rail_optimized", false},
                        {"link_bandwidth", "200Gb/s"}}}};
  Diagnostics d("g");
  auto t = topology_from_json(j, d);
  ASSERT_TRUE(t) << d.messages()[0];
  auto s = summarize(*t);
  EXPECT_EQ(s.switches_by_tier[1], 8u);
  EXPECT_EQ(s.switches_by_tier[2], 16u);
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 4 * 16 * 25e9);
}

// k:1 where k + 1 does not divide the radix: u = floor(R / (k + 1)) up ports, k·u down, the rest
// dark. 256 A2 servers on radix 128, rail-optimised: 2:1 gives 42 up and 84 down per leaf,
// ceil(256 / 84) = 4 leaves per rail (32), 42 spines, 2048 + 32 x 42 RoCE links; 4:1 gives 25
// up and 100 down, 3 leaves per rail (24), 25 spines. No leaf port past down + up is cabled.
TEST(Generators, OversubscriptionLeavesDarkPortsWhenTheRadixDoesNotSplit) {
  struct C { const char* k; std::uint32_t up, down, leaves; } cases[] = {{"2:1", 42, 84, 32}, {"4:1", 25, 100, 24}, {"3:1", 32, 96, 24}};
  for (const C& c : cases) {
    json j = {{"format", "hcsim-topology"}, {"version", 1}, {"name", "g"},
              {"server_groups", {{{"name", "n{i}"}, {"count", 256}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.1"}}}},
              {"fabric", {{"type", "clos"}, {"tiers", 2}, {"switch_radix", 128}, {"oversubscription", c.k}, {"link_bandwidth", "200Gb/s"}}}};
    Diagnostics d("g");
    auto t = topology_from_json(j, d);
    ASSERT_TRUE(t) << c.k << ": " << d.messages()[0];
    auto s = summarize(*t);
    EXPECT_EQ(s.switches_by_tier[1], c.leaves) << c.k;
    EXPECT_EQ(s.switches_by_tier[2], c.up) << c.k;
    std::size_t roce = 0;
    std::uint32_t max_leaf_port = 0;
    for (const auto& l : t->links) {
      if (l.type != LinkType::Roce) continue;
      ++roce;
      for (const Endpoint& e : {l.a, l.b})
        if (e.is_switch && t->switches[e.index].tier == 1) max_leaf_port = std::max(max_leaf_port, e.port);
    }
    EXPECT_EQ(roce, 2048u + static_cast<std::size_t>(c.leaves) * c.up) << c.k;
    EXPECT_EQ(max_leaf_port, c.down + c.up - 1) << c.k;
  }
  // A radix with no up port at k:1 is refused, naming it.
  json j = {{"format", "hcsim-topology"}, {"version", 1}, {"name", "g"},
            {"server_groups", {{{"name", "n{i}"}, {"count", 2}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.1"}}}},
            {"fabric", {{"type", "clos"}, {"tiers", 2}, {"switch_radix", 4}, {"oversubscription", "4:1"}, {"link_bandwidth", "200Gb/s"}}}};
  Diagnostics d("g");
  EXPECT_FALSE(topology_from_json(j, d));
  ASSERT_FALSE(d.messages().empty());
  EXPECT_NE(d.messages()[0].find("/fabric/switch_radix: radix 4 has no up port at 4:1"), std::string::npos) << d.messages()[0];
}

// Bisection bandwidth (per direction) and diameter of every preset, computed by hand:
TEST(Presets, BisectionAndDiameterByHand) {
  struct P { const char* file; double bisection; unsigned diameter; std::size_t npus, switches; } presets[] = {
      // 4 | 4 split of a full mesh cuts 4 x 4 HCCS links of 28 GB/s.
      {"topologies/atlas800t-a2.json", 16 * 28e9, 1, 8, 0},
      // The two HCCS groups meet only in the PCIe switch: 4 NPU links of 31.5 GB/s.
      {"topologies/atlas800-910.json", 4 * 31.5e9, 2, 8, 1},
      // One non-blocking leaf: server 0's 8 NICs at 25 GB/s.
      {"topologies/a2-2node.json", 8 * 25e9, 2, 16, 1},
      // 8 rail leaves, each with 8 servers per half: 64 NICs at 25 GB/s cross; NPU-leaf-NPU-HCCS-NPU = 3 hops.
      {"topologies/a2-pod-16.json", 64 * 25e9, 3, 128, 24},
      // 4096 NICs at 25 GB/s; NPU-leaf-spine-leaf-NPU (spines reach every rail).
      {"topologies/clos-1024.json", 4096 * 25e9, 4, 8192, 192},
  };
  for (auto& p : presets) {
    Topology t = load(p.file);
    auto s = summarize(t);
    EXPECT_DOUBLE_EQ(s.bisection_Bps, p.bisection) << p.file;
    EXPECT_EQ(s.diameter, p.diameter) << p.file;
    EXPECT_EQ(s.npus, p.npus) << p.file;
    EXPECT_EQ(t.switches.size(), p.switches) << p.file;
  }
}

TEST(Pictures, LargeLayoutsCollapse) {
  Topology t = load("topologies/clos-1024.json");
  std::string dot = to_dot(t);
  EXPECT_NE(dot.find("node0 .. node63 (64 servers)"), std::string::npos);
  EXPECT_NE(dot.find("spine0 .. spine63 (64 switches)"), std::string::npos);
  EXPECT_LT(std::count(dot.begin(), dot.end(), '\n'), 200);  // readable: 33 nodes, a few dozen edges
  std::string svg = to_svg(t);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

// ---- rank tables ----

TEST(RankTable, ExportImportRoundTrips) {
  for (const char* v : {"1.0", "1.2"}) {
    Topology t = load("topologies/a2-pod-16.json");
    json rt = export_rank_table(t, v);
    EXPECT_EQ(rt["server_count"], "16");
    EXPECT_EQ(rt["server_list"][3]["device"][5]["rank_id"], "29");
    EXPECT_EQ(rt["server_list"][3]["device"][5]["device_ip"], "10.1.0.30");  // base + 3*8 + 5
    // Reverse the server order: ranks 0-7 now live on node15.
    json rev = rt;
    for (std::size_t s = 0; s < 16; ++s)
      for (std::size_t k = 0; k < 8; ++k) rev["server_list"][s]["device"][k]["rank_id"] = std::to_string((15 - s) * 8 + k);
    Diagnostics d("rt.json");
    Topology u = t;
    ASSERT_TRUE(import_rank_table(rev, u, d)) << d.messages()[0];
    EXPECT_EQ(u.npus[u.rank_to_npu[0]].name, "node15/npu0");
    EXPECT_EQ(u.npus[u.rank_to_npu[127]].name, "node0/npu7");
    // Exporting the re-ranked topology gives back the same assignment.
    json again = export_rank_table(u, v);
    Topology w = t;
    Diagnostics d2("again.json");
    ASSERT_TRUE(import_rank_table(again, w, d2)) << d2.messages()[0];
    EXPECT_EQ(w.rank_to_npu, u.rank_to_npu);
  }
}

TEST(RankTable, ValidatesAsHccl) {
  Topology base = load("topologies/a2-2node.json");
  const json good = export_rank_table(base, "1.2");
  struct C { const char* what; std::function<void(json&)> m; const char* expect; } cases[] = {
      {"interleaved", [](json& j) { std::swap(j["server_list"][0]["device"][7]["rank_id"], j["server_list"][1]["device"][0]["rank_id"]); },
       "rank ids of a server must be contiguous"},
      {"device id range", [](json& j) { j["server_list"][0]["device"][3]["device_id"] = "8"; }, "/server_list/0/device/3/device_id: device id 8 out of range"},
      {"device ip missing", [](json& j) { j["server_list"][1]["device"][2].erase("device_ip"); }, "/server_list/1/device/2/device_ip: missing required key"},
      {"device ip bad", [](json& j) { j["server_list"][1]["device"][2]["device_ip"] = ""; }, "device IP missing or not IPv4"},
      {"not a string", [](json& j) { j["server_list"][0]["device"][0]["rank_id"] = 0; }, "/server_list/0/device/0/rank_id: expected a string"},
      {"rank gap", [](json& j) { for (int k = 0; k < 8; ++k) j["server_list"][1]["device"][k]["rank_id"] = std::to_string(9 + k); }, "without gaps"},
      {"unknown server", [](json& j) { j["server_list"][1]["server_id"] = "1.2.3.4"; }, "no server of the topology has host_ip 1.2.3.4"},
      {"count", [](json& j) { j["server_count"] = "3"; }, "/server_count: says 3 servers, server_list has 2"},
      {"version", [](json& j) { j["version"] = "2.0"; }, "/version: unsupported rank table version"},
      {"super pod", [](json& j) { j["super_pod_list"][0]["server_list"][0]["server_id"] = "9.9.9.9"; }, "server 9.9.9.9 is not in server_list"},
      {"wrong ip", [](json& j) { j["server_list"][0]["device"][0]["device_ip"] = "10.9.9.9"; }, "differs from the topology's 192.168.100.101"},
  };
  {
    Topology t = base;
    Diagnostics d("rt.json");
    EXPECT_TRUE(import_rank_table(good, t, d)) << d.messages()[0];
  }
  for (auto& c : cases) {
    json j = good;
    c.m(j);
    Topology t = base;
    Diagnostics d("rt.json");
    EXPECT_FALSE(import_rank_table(j, t, d)) << c.what;
    bool found = false;
    for (auto& m : d.messages()) found |= m.find(c.expect) != std::string::npos;
    EXPECT_TRUE(found) << c.what << ": " << (d.messages().empty() ? "(none)" : d.messages()[0]);
  }
}
