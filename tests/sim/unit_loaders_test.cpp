// Loader robustness: unit conversions that must not round silently or overflow, the JSON depth
// limit checked before parsing, generated fabrics that must elaborate, names, ratios, hcomm_env
// values checked with the library's own table, workloads the layout cannot run, and the exact
// diameter against a BFS from every NPU.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>

#include "hcomm/hcomm.h"
#include "models/event_queue.h"
#include "models/network.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"

using namespace sim;

namespace {

const std::string kSrc = HCSIM_SOURCE_DIR;

std::optional<std::uint64_t> bw(const std::string& s, std::string* why = nullptr) {
  std::string w;
  auto v = parse_bandwidth(s, &w);
  if (why) *why = w;
  return v;
}

std::vector<std::string> topo_errors(const json& j, Topology* out = nullptr) {
  Diagnostics d("t.json");
  auto t = topology_from_json(j, d);
  if (t && out) *out = *t;
  return d.messages();
}

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  for (auto& m : v) if (m.find(s) != std::string::npos) return true;
  return false;
}

std::string join(const std::vector<std::string>& v) {
  std::string o;
  for (auto& m : v) o += m + "\n";
  return o;
}

// What the runner does with a topology's RoCE part (sim/src/runner.cpp build_network): if this
// throws, a topology that validated could not be run.
void elaborate_network(const Topology& t) {
  models::StandaloneScheduler sch;
  models::Network net(sch, models::NetParams{});
  std::vector<std::uint32_t> sw(t.switches.size(), ~0u), nic(t.npus.size(), ~0u);
  for (std::size_t i = 0; i < t.switches.size(); ++i)
    if (t.switches[i].kind == SwitchKind::Ethernet) sw[i] = net.add_switch(t.switches[i].name, t.switches[i].ports, t.switches[i].buffer_bytes, t.switches[i].latency_ps);
  auto node = [&](const Endpoint& e) {
    if (e.is_switch) return sw[e.index];
    if (nic[e.index] == ~0u) nic[e.index] = net.add_host(t.npus[e.index].name);
    return nic[e.index];
  };
  for (const auto& l : t.links)
    if (l.type == LinkType::Roce)
      net.connect(node(l.a), l.a.is_switch ? l.a.port : 0, node(l.b), l.b.is_switch ? l.b.port : 0, l.params.bandwidth_Bps, l.params.latency_ps);
  net.build_forwarding();
}

json clos(std::uint32_t servers, std::uint32_t npus, std::uint32_t tiers, std::uint32_t radix, std::uint32_t over, bool rail) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"g"})");
  j["server_groups"] = json::array({{{"name", "n{i}"}, {"count", servers}, {"type", "custom"}, {"host_ip", "10.0.0.1"},
                                     {"npus", {{"count", npus}}}}});
  j["fabric"] = {{"type", "clos"}, {"tiers", tiers}, {"switch_radix", radix}, {"link_bandwidth", "200Gb/s"},
                 {"oversubscription", std::to_string(over) + ":1"}, {"rail_optimized", rail}};
  return j;
}

std::string write_tmp(const std::string& name, const std::string& text) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/hcsim_loaders_XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  std::string p = dir + "/" + name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

// ---- units ----

TEST(UnitConversions, BandwidthMustBeRepresentable) {
  std::string why;
  EXPECT_FALSE(bw("1b/s", &why));  // 0.125 B/s used to round to 0 B/s
  EXPECT_NE(why.find("out of range"), std::string::npos) << why;
  EXPECT_FALSE(bw("7B/s"));          // positive, but a 1 MiB transfer would outlast the clock's useful range
  EXPECT_FALSE(bw("999B/s"));
  EXPECT_EQ(bw("1KB/s"), 1000u);     // the floor
  EXPECT_EQ(bw("8Kb/s"), 1000u);
  EXPECT_FALSE(bw("1000.5B/s", &why));  // not a whole number of bytes/s
  EXPECT_NE(why.find("not a whole number of B/s"), std::string::npos) << why;
  EXPECT_EQ(bw("9Kb/s"), 1125u);
  EXPECT_FALSE(bw("1001b/s"));       // 125.125 B/s: below the floor
  EXPECT_FALSE(bw("10001b/s"));      // 1250.125 B/s: not whole
  EXPECT_EQ(bw("1000TB/s"), 1000000000000000u);  // the ceiling, 1 PB/s
  EXPECT_FALSE(bw("1001TB/s"));
  EXPECT_FALSE(bw(std::string(400, '9') + "GB/s"));  // strtod gives inf
  EXPECT_FALSE(bw("0GB/s"));
  EXPECT_FALSE(bw("-1GB/s"));
  EXPECT_FALSE(bw("nanGB/s"));
  EXPECT_FALSE(bw("1e3GB/s"));  // no exponents
  EXPECT_EQ(bw("12.5Gb/s"), 1562500000u);
  EXPECT_EQ(bw("1.6TB/s"), 1600000000000u);
  EXPECT_EQ(bw("31.5GB/s"), 31500000000u);
}

TEST(UnitConversions, SizesAndDurationsAreWholeUnitsWithoutOverflow) {
  std::string why;
  EXPECT_EQ(parse_size("1.1KB", &why), 1100u);  // 1100.0000000000002 in binary: within 1e-6
  EXPECT_EQ(parse_size("0.5KiB", &why), 512u);
  EXPECT_FALSE(parse_size("1.5B", &why));
  EXPECT_NE(why.find("not a whole number of B"), std::string::npos) << why;
  EXPECT_FALSE(parse_size("0.1B", &why));         // used to round to 0
  EXPECT_EQ(parse_size("0B", &why), 0u);
  EXPECT_EQ(parse_size("8191PiB", &why), std::nullopt);  // unknown unit
  EXPECT_FALSE(parse_size("8388608TiB", &why));   // 2^63 bytes: out of range (llround overflowed here)
  EXPECT_TRUE(parse_size("8388607TiB", &why));
  EXPECT_FALSE(parse_size("99999999999999999999B", &why));
  EXPECT_FALSE(parse_duration("0.1ps", &why));
  EXPECT_NE(why.find("not a whole number of ps"), std::string::npos) << why;
  EXPECT_EQ(parse_duration("0.5ns", &why), 500u);
  EXPECT_EQ(parse_duration("1.3ms", &why), 1300000000u);
  EXPECT_FALSE(parse_duration("10000000s", &why));  // 1e19 ps > 2^63
  EXPECT_FALSE(parse_duration(std::string(320, '1') + "s", &why));
  EXPECT_FALSE(parse_duration("-1ns", &why));
  EXPECT_FALSE(parse_duration(".ns", &why));
}

// ---- JSON reading ----

TEST(JsonText, DepthIsCheckedOnTheRawText) {
  EXPECT_EQ(max_json_depth(R"({"a":[1,{"b":"[[[[{{{"}],"c":"\"[["}])"), 3u);
  EXPECT_EQ(max_json_depth("]]]}}"), 0u);
  std::string ok(64, '['), deep(65, '[');
  ok += std::string(64, ']');
  deep += std::string(65, ']');
  Diagnostics d1("ok.json"), d2("deep.json");
  EXPECT_TRUE(parse_json_text(ok, d1));
  EXPECT_FALSE(parse_json_text(deep, d2));
  ASSERT_FALSE(d2.messages().empty());
  EXPECT_EQ(d2.messages()[0], "deep.json: /: nesting deeper than 64 levels");
  // Unterminated input is the parser's to report, not the pre-scan's.
  Diagnostics d3("bad.json");
  EXPECT_FALSE(parse_json_text("[\"abc", d3));
  EXPECT_TRUE(any_contains(d3.messages(), "not valid JSON at byte"));
}

TEST(JsonText, ADirectoryIsNamedAsSuch) {
  Diagnostics d(kSrc + "/tests");
  EXPECT_FALSE(read_json_file(kSrc + "/tests", d));
  ASSERT_EQ(d.messages().size(), 1u);
  EXPECT_NE(d.messages()[0].find(": /: is a directory, not a JSON file"), std::string::npos) << d.messages()[0];
  Diagnostics e("/dev/null");
  EXPECT_FALSE(read_json_file("/dev/null", e));
  EXPECT_TRUE(any_contains(e.messages(), "not a regular file"));
}

// ---- generated fabrics elaborate ----

TEST(Fabrics, ThreeTierClosOfThreeA2ServersFitsItsCores) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"c3",
    "server_groups":[{"name":"node{i}","count":3,"type":"atlas800t-a2","host_ip":"10.0.0.1"}],
    "fabric":{"type":"clos","tiers":3,"switch_radix":4,"link_bandwidth":"200Gb/s"}})");
  Topology t;
  auto errs = topo_errors(j, &t);
  ASSERT_TRUE(errs.empty()) << join(errs);
  EXPECT_NO_THROW(elaborate_network(t));
}

// Every generated layout that validates elaborates: every switch port used at most once and
// within the switch's port count, and the network model accepts the cabling.
TEST(Fabrics, EveryValidatingGeneratedLayoutElaborates) {
  std::size_t valid = 0, rejected = 0;
  for (std::uint32_t tiers = 1; tiers <= 3; ++tiers)
    for (std::uint32_t radix : {2u, 4u, 6u, 8u, 12u, 16u})
      for (std::uint32_t over : {1u, 2u, 3u})
        for (bool rail : {true, false})
          for (std::uint32_t servers : {1u, 2u, 3u, 5u, 9u, 17u})
            for (std::uint32_t npus : {1u, 2u, 8u}) {
              Topology t;
              auto errs = topo_errors(clos(servers, npus, tiers, radix, over, rail), &t);
              if (!errs.empty()) {
                ++rejected;
                for (auto& e : errs) EXPECT_NE(e.find("t.json: /fabric"), std::string::npos) << e;  // a reason with a pointer
                continue;
              }
              ++valid;
              std::set<std::pair<std::uint32_t, std::uint32_t>> used;
              for (auto& l : t.links)
                for (const Endpoint* e : {&l.a, &l.b})
                  if (e->is_switch) {
                    EXPECT_LT(e->port, t.switches[e->index].ports) << t.switches[e->index].name;
                    EXPECT_TRUE(used.insert({e->index, e->port}).second) << t.switches[e->index].name << " port " << e->port;
                  }
              EXPECT_NO_THROW(elaborate_network(t)) << tiers << " tiers, radix " << radix << ", " << servers << " x " << npus;
            }
  EXPECT_GT(valid, 300u);
  EXPECT_GT(rejected, 0u);
}

TEST(Fabrics, HandWrittenSwitchPortsAreCheckedToo) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"h",
    "servers":[{"name":"a","type":"custom","host_ip":"10.0.0.1","npus":{"count":2}}],
    "switches":[{"name":"sw","ports":1,"port_bandwidth":"200Gb/s"}],
    "links":[{"type":"roce","a":"a/npu0","b":"sw/0"},{"type":"roce","a":"a/npu1","b":"sw/1"}]})");
  auto errs = topo_errors(j);
  EXPECT_TRUE(any_contains(errs, "t.json: /links/1/b: switch \"sw\" has no port \"1\" (0..0)")) << join(errs);
}

// ---- names, ratios, groups, pictures ----

TEST(Names, MustBeNonEmptyPrintableAndUnique) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"n",
    "servers":[{"name":"","type":"custom","host_ip":"10.0.0.1","npus":{"count":1}},
               {"name":"a\u0000b","type":"custom","host_ip":"10.0.0.2","npus":{"count":1}},
               {"name":"ok","type":"custom","host_ip":"10.0.0.3","npus":{"count":1}},
               {"name":"ok","type":"custom","host_ip":"10.0.0.4","npus":{"count":1}}],
    "switches":[{"name":"\u00e9","ports":4,"port_bandwidth":"200Gb/s"}]})");
  auto errs = topo_errors(j);
  EXPECT_TRUE(any_contains(errs, "t.json: /servers/0/name: a device name must not be empty")) << join(errs);
  EXPECT_TRUE(any_contains(errs, "t.json: /servers/1/name: device name contains the non-printable byte 0x00")) << join(errs);
  EXPECT_TRUE(any_contains(errs, "t.json: /servers/3/name: duplicate device name \"ok\"")) << join(errs);
  EXPECT_TRUE(any_contains(errs, "t.json: /switches/0/name: device name contains the non-printable byte 0xc3")) << join(errs);
}

TEST(Ratios, OversubscriptionDoesNotWrapAround) {
  for (const char* bad : {"4294967297:1", "1:4294967297", "17:1", "0:1", "-1:1", " 2:1", "2:1 ", "2:01x", ":1", "2:", "2"}) {
    json j = clos(2, 8, 2, 16, 1, true);
    j["fabric"]["oversubscription"] = bad;
    auto errs = topo_errors(j);
    EXPECT_TRUE(any_contains(errs, "t.json: /fabric/oversubscription: expected \"k:1\" with k in 1..16")) << bad << "\n" << join(errs);
  }
  json j = clos(2, 8, 2, 16, 3, true);
  Topology t;
  auto errs = topo_errors(j, &t);
  ASSERT_TRUE(errs.empty()) << join(errs);
  EXPECT_EQ(t.fabric.down, 12u);
  EXPECT_EQ(t.fabric.up, 4u);
}

TEST(Groups, AProblemOfTheTemplateIsReportedOnce) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"g",
    "server_groups":[{"name":"n{i}","count":64,"type":"atlas800t-a2","host_ip":"10.0.0.1","hccs":{"bandwidth":"fast"}},
                     {"name":"m{i}","count":3,"type":"atlas800t-a2","host_ip":"255.255.255.254"}]})");
  auto errs = topo_errors(j);
  std::size_t g0 = 0, g1 = 0;
  for (auto& e : errs) { g0 += e.find("/server_groups/0") != std::string::npos; g1 += e.find("/server_groups/1") != std::string::npos; }
  EXPECT_EQ(g0, 1u) << join(errs);
  EXPECT_EQ(g1, 1u) << join(errs);  // host_ip overflows at the third server: once
}

TEST(Pictures, DotEscapesQuotesAndBackslashes) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"say \"hi\"",
    "servers":[{"name":"rack\"1\"\\a","type":"atlas800t-a2","host_ip":"10.0.0.1"}]})");
  Topology t;
  auto errs = topo_errors(j, &t);
  ASSERT_TRUE(errs.empty()) << join(errs);
  std::string dot = to_dot(t);
  EXPECT_NE(dot.find(R"(graph "say \"hi\"" {)"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="rack\"1\"\\a/npu0")"), std::string::npos) << dot;  // one server: drawn NPU by NPU
}

// ---- the exact diameter against a BFS from every NPU ----

static std::uint32_t brute_diameter(const Topology& t) {
  const std::size_t N = t.npus.size(), V = N + t.switches.size();
  std::vector<std::vector<std::uint32_t>> adj(V);
  auto vid = [&](const Endpoint& e) { return static_cast<std::uint32_t>(e.is_switch ? N + e.index : e.index); };
  for (auto& l : t.links) { adj[vid(l.a)].push_back(vid(l.b)); adj[vid(l.b)].push_back(vid(l.a)); }
  std::uint32_t best = 0;
  for (std::uint32_t s = 0; s < N; ++s) {
    std::vector<std::uint32_t> dist(V, ~0u), q{s};
    dist[s] = 0;
    for (std::size_t h = 0; h < q.size(); ++h)
      for (auto v : adj[q[h]]) if (dist[v] == ~0u) { dist[v] = dist[q[h]] + 1; q.push_back(v); }
    for (std::size_t v = 0; v < N; ++v) best = std::max(best, dist[v]);
  }
  return best;
}

TEST(Summary, DiameterMatchesBfsFromEveryNpu) {
  std::vector<Topology> ts;
  for (const char* f : {"topologies/atlas800t-a2.json", "topologies/atlas800-910.json", "topologies/a2-2node.json", "topologies/a2-pod-16.json",
                        "tests/fixtures/clos3-small.json"}) {
    Diagnostics d(f);
    auto t = load_topology(kSrc + "/" + f, d);
    ASSERT_TRUE(t) << join(d.messages());
    ts.push_back(*t);
  }
  for (std::uint32_t tiers = 1; tiers <= 3; ++tiers)
    for (std::uint32_t servers : {1u, 3u, 7u}) {
      Topology t;
      if (topo_errors(clos(servers, 4, tiers, 8, 1, servers % 2 == 1), &t).empty()) ts.push_back(t);
    }
  // A chain of switches: eccentricities differ along it, so the bounds have work to do.
  json chain = json::parse(R"({"format":"hcsim-topology","version":1,"name":"chain",
    "servers":[{"name":"a","type":"custom","host_ip":"10.0.0.1","npus":{"count":2}},
               {"name":"b","type":"custom","host_ip":"10.0.0.2","npus":{"count":1}},
               {"name":"c","type":"custom","host_ip":"10.0.0.3","npus":{"count":3},"hccs":{"topology":"full-mesh"}}],
    "switches":[{"name":"s0","ports":4,"port_bandwidth":"200Gb/s"},{"name":"s1","ports":4,"port_bandwidth":"200Gb/s"},
                {"name":"s2","ports":4,"port_bandwidth":"200Gb/s"},{"name":"s3","ports":4,"port_bandwidth":"200Gb/s"}],
    "links":[{"type":"roce","a":"a/npu0","b":"s0/0"},{"type":"roce","a":"a/npu1","b":"s0/1"},{"type":"roce","a":"s0/2","b":"s1/0"},
             {"type":"roce","a":"s1/1","b":"s2/0"},{"type":"roce","a":"b/npu0","b":"s2/1"},{"type":"roce","a":"s2/2","b":"s3/0"},
             {"type":"roce","a":"c/npu2","b":"s3/1"}]})");
  Topology t;
  auto errs = topo_errors(chain, &t);
  ASSERT_TRUE(errs.empty()) << join(errs);
  ts.push_back(t);
  for (auto& x : ts) EXPECT_EQ(summarize(x).diameter, brute_diameter(x)) << x.name;
}

// ---- hcomm_env: the library's table ----

TEST(HcommEnv, ConfigCheckFollowsTheLibrarysRanges) {
  char why[160];
  struct C { const char* name; const char* value; hcomm_result_t rc; };
  const C cases[] = {
      {"HCOMM_TIMEOUT_MS", "0", HCOMM_E_PARA},         {"HCOMM_TIMEOUT_MS", "1000", HCOMM_SUCCESS},
      {"HCOMM_TIMEOUT_MS", "300000", HCOMM_SUCCESS},   {"HCOMM_TIMEOUT_MS", "300001", HCOMM_E_PARA},
      {"HCOMM_NUM_QP", "100000", HCOMM_E_PARA},        {"HCOMM_NUM_QP", "32", HCOMM_SUCCESS},
      {"HCOMM_NUM_QP", "0", HCOMM_E_PARA},             {"HCOMM_BUFFSIZE_MB", "0", HCOMM_E_PARA},
      {"HCOMM_BUFFSIZE_MB", "1 ", HCOMM_E_PARA},       {"HCOMM_BUFFSIZE_MB", "4096", HCOMM_SUCCESS},
      {"HCOMM_DEBUG", "abc", HCOMM_E_PARA},            {"HCOMM_DEBUG", "-1", HCOMM_E_PARA},
      {"HCOMM_DEBUG", "3", HCOMM_SUCCESS},             {"HCOMM_DEBUG", "", HCOMM_SUCCESS},  // empty: the default
      {"HCOMM_PROTOCOL", "SHM", HCOMM_SUCCESS},        {"HCOMM_PROTOCOL", "2", HCOMM_SUCCESS},
      {"HCOMM_PROTOCOL", "3", HCOMM_E_PARA},           {"HCOMM_PROTOCOL", "shm", HCOMM_E_PARA},
      {"HCOMM_MODE", "LARGE_MSG", HCOMM_SUCCESS},      {"HCOMM_BUFFER_SIZE", "1048575", HCOMM_E_PARA},
      {"HCOMM_BUFFER_SIZE", "67108864", HCOMM_SUCCESS}, {"HCOMM_SYM_SLOTS", "0", HCOMM_SUCCESS},
      {"HCOMM_SYM_SLOTS", "65", HCOMM_E_PARA},         {"HCOMM_BANDWIDTH_LIMIT", "18446744073709551616", HCOMM_E_PARA},
      {"HCOMM_FROBNICATE", "1", HCOMM_E_NOT_FOUND},
  };
  for (auto& c : cases) EXPECT_EQ(hcomm_config_check(c.name, c.value, why, sizeof why), c.rc) << c.name << "=" << c.value << ": " << why;
  EXPECT_EQ(hcomm_config_check("HCOMM_NUM_QP", "100000", why, sizeof why), HCOMM_E_PARA);
  EXPECT_STREQ(why, "HCOMM_NUM_QP=\"100000\" is out of range [1, 32]");
  EXPECT_EQ(hcomm_config_check("HCOMM_NUM_QP", "x", nullptr, 0), HCOMM_E_PARA);  // no buffer: still answers
  EXPECT_EQ(hcomm_config_check(nullptr, "1", why, sizeof why), HCOMM_E_PTR);
}

// ---- scenarios the layout cannot run ----

TEST(Workloads, EveryOpIsCheckedAgainstTheLayout) {
  const std::string one = kSrc + "/tests/fixtures/one-npu.json", a2 = kSrc + "/topologies/atlas800t-a2.json";
  struct C { std::string topo, step, expect; };
  const C cases[] = {
      {one, R"({"op":"incast","bytes":"1MiB"})", "/workload/0/op: incast needs at least 2 ranks"},
      {a2, R"({"op":"incast","bytes":"1MiB","root":8})", "/workload/0/root: rank 8 does not exist (8 ranks)"},
      {a2, R"({"op":"incast","bytes":"1MiB","senders":"remote"})", "/workload/0/senders: \"remote\" senders: no rank is on another server"},
      {a2, R"({"op":"incast","bytes":"1MiB","senders":"remote:8"})", "/workload/0/senders: \"remote\" senders: no rank is on another server"},
      {a2, R"({"op":"incast","bytes":"1MiB","senders":"remote:0"})", "/workload/0/senders: \"remote:N\" takes N as a decimal number of senders, 1 or more"},
      {a2, R"({"op":"incast","bytes":"1MiB","senders":"remote:x"})", "/workload/0/senders: \"remote:N\" takes N as a decimal number of senders, 1 or more"},
      {a2, R"({"op":"incast","bytes":"256MiB"})", "/workload/0/bytes: incast writes bytes x ranks = 2 GiB into the root's symmetric region of 1 GiB"},
      {one, R"({"op":"sendrecv","bytes":"1MiB"})", "/workload/0/op: sendrecv pairs ranks and needs an even number of ranks, the topology has 1"},
      {a2, R"({"op":"sendrecv","bytes":"0B"})", "/workload/0/bytes: must be at least one element"},
      {a2, R"({"op":"incast","bytes":"0B"})", "/workload/0/bytes: must be at least one element"},
      {a2, R"({"op":"h2d","bytes":"0B"})", "/workload/0/bytes: must be at least one element"},
      {a2, R"({"op":"d2h","bytes":"0B"})", "/workload/0/bytes: must be at least one element"},
      {a2, R"({"op":"allreduce","bytes":"0B"})", "/workload/0/bytes: must be at least one element"},
      {a2, R"({"op":"allreduce","bytes":"6B","dtype":"fp32"})", "/workload/0/bytes: not a multiple of the fp32 element size"},
  };
  int k = 0;
  for (auto& c : cases) {
    std::string p = write_tmp("w" + std::to_string(k++) + ".json",
                              R"({"format":"hcsim-scenario","version":1,"name":"w","topology":")" + c.topo + R"(","workload":[)" + c.step + "]}");
    std::vector<std::string> errs;
    EXPECT_FALSE(load_scenario(p, &errs)) << c.step;
    EXPECT_TRUE(any_contains(errs, p + ": " + c.expect)) << c.step << "\n" << join(errs);
  }
  // What the layout can run still loads: barrier and allreduce on one NPU, incast with a bigger
  // symmetric region.
  std::string ok = write_tmp("ok.json", R"({"format":"hcsim-scenario","version":1,"name":"w","topology":")" + a2 +
                                            R"(","hcomm_env":{"HCOMM_SYM_SLOTS":"8","HCOMM_FROBNICATE":"1"},"workload":[{"op":"incast","bytes":"256MiB"}]})");
  std::vector<std::string> errs, warns;
  auto sc = load_scenario(ok, &errs, &warns);
  ASSERT_TRUE(sc) << join(errs);
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_EQ(warns[0], ok + ": /hcomm_env/HCOMM_FROBNICATE: warning: hcomm reads no variable HCOMM_FROBNICATE (docs/config.md); it is set but has no effect");
  std::string solo = write_tmp("solo.json", R"({"format":"hcsim-scenario","version":1,"name":"w","topology":")" + one +
                                                R"(","workload":[{"op":"barrier"},{"op":"allreduce","bytes":"4KiB"},{"op":"h2d","bytes":"4KiB"}]})");
  EXPECT_TRUE(load_scenario(solo, &errs)) << join(errs);
}

// Indices and addresses are parsed strictly: no wrap-around of 2^32 to 0, no signs or spaces.
TEST(Indices, NoWrapAroundSignsOrSpaces) {
  const std::pair<const char*, const char*> cases[] = {
      {"sw/4294967296", "t.json: /links/1/b: switch \"sw\" has no port \"4294967296\""},
      {"sw/+1", "t.json: /links/1/b: switch \"sw\" has no port \"+1\""},
      {"sw/ 1", "t.json: /links/1/b: switch \"sw\" has no port \" 1\""},
      {"a/npu4294967296", "t.json: /links/1/b: server \"a\" has no NPU \"npu4294967296\""},
      {"a/npu-1", "t.json: /links/1/b: server \"a\" has no NPU \"npu-1\""},
  };
  for (auto& [end, expect] : cases) {
    json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"i",
      "servers":[{"name":"a","type":"custom","host_ip":"10.0.0.1","npus":{"count":2}}],
      "switches":[{"name":"sw","ports":4,"port_bandwidth":"200Gb/s"}],
      "links":[{"type":"roce","a":"a/npu0","b":"sw/0"},{"type":"roce","a":"a/npu1","b":"sw/1"}]})");
    j["links"][1]["b"] = end;
    auto errs = topo_errors(j);
    EXPECT_TRUE(any_contains(errs, expect)) << end << "\n" << join(errs);
  }
  EXPECT_EQ(parse_ipv4("10.0.0.1"), 0x0a000001u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xffffffffu);
  for (const char* bad : {" 10.0.0.1", "10.0.0.1 ", "10.0.0.256", "10.0.0", "10.0.0.1.2", "+1.0.0.1", "1..0.1", "0001.0.0.1", "10.0.0.-1", ""})
    EXPECT_FALSE(parse_ipv4(bad)) << bad;
}

// The HCCS/PCIe link model runs at (bandwidth / lanes) x active lanes in integers: a bandwidth
// must split into whole bytes/s per lane, and latencies are bounded (credit rate = buffer / RTT).
TEST(UnitConversions, LanedBandwidthsAndLatencies) {
  auto server = [](const char* section, const char* key, const char* value) {
    json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"l",
      "servers":[{"name":"s","type":"atlas800t-a2","host_ip":"10.0.0.1"}]})");
    j["servers"][0][section][key] = value;
    return topo_errors(j);
  };
  EXPECT_TRUE(server("hccs", "bandwidth", "28GB/s").empty());
  EXPECT_TRUE(server("hccs", "bandwidth", "8KB/s").empty());  // 1000 B/s per lane
  auto e = server("hccs", "bandwidth", "1001B/s");               // 125 B/s per lane, 1 B/s lost
  EXPECT_TRUE(any_contains(e, "t.json: /servers/0/hccs/bandwidth: bandwidth of 1001 B/s does not split into whole bytes/s over the link's 8 lanes"))
      << join(e);
  EXPECT_TRUE(server("hccs", "bandwidth", "1000000001B/s").empty());  // 1 B/s in 1e9: within 1e-6
  e = server("pcie", "bandwidth", "1000B/s");  // 62.5 B/s per PCIe lane
  EXPECT_TRUE(any_contains(e, "/servers/0/pcie/bandwidth: bandwidth of 1000 B/s does not split")) << join(e);
  e = server("pcie", "root_complex", "1000B/s");
  EXPECT_TRUE(any_contains(e, "/servers/0/pcie/root_complex: bandwidth of 1000 B/s does not split")) << join(e);
  e = server("hccs", "latency", "2s");
  EXPECT_TRUE(any_contains(e, "t.json: /servers/0/hccs/latency: latency above 1 s")) << join(e);
  EXPECT_TRUE(server("hccs", "latency", "1s").empty());
  e = server("pcie", "latency", "1.000000000001s");
  EXPECT_TRUE(any_contains(e, "/servers/0/pcie/latency: latency above 1 s")) << join(e);
}

TEST(Workloads, DcqcnTimersAndNicLatencyAreBounded) {
  const std::string a2 = kSrc + "/topologies/a2-2node.json";
  const std::pair<const char*, const char*> cases[] = {
      {R"({"dcqcn":{"alpha_timer":"0ns"}})", "/network/dcqcn/alpha_timer: timer period must be 1 us .. 1 s"},
      {R"({"dcqcn":{"rate_increase_timer":"999ns"}})", "/network/dcqcn/rate_increase_timer: timer period must be 1 us .. 1 s"},
      {R"({"dcqcn":{"rate_increase_timer":"2s"}})", "/network/dcqcn/rate_increase_timer: timer period must be 1 us .. 1 s"},
      {R"({"nic_latency":"2s"})", "/network/nic_latency: latency above 1 s"},
      {R"({"dcqcn":{"rai":"1b/s"}})", "/network/dcqcn/rai: bandwidth \"1b/s\" is out of range"},
  };
  int k = 0;
  for (auto& [net, expect] : cases) {
    std::string p = write_tmp("n" + std::to_string(k++) + ".json", R"({"format":"hcsim-scenario","version":1,"name":"n","topology":")" + a2 +
                                                                      R"(","network":)" + net + R"(,"workload":[{"op":"barrier"}]})");
    std::vector<std::string> errs;
    EXPECT_FALSE(load_scenario(p, &errs)) << net;
    EXPECT_TRUE(any_contains(errs, p + ": " + expect)) << net << "\n" << join(errs);
  }
  std::string ok = write_tmp("n-ok.json", R"({"format":"hcsim-scenario","version":1,"name":"n","topology":")" + a2 +
                                              R"(","network":{"dcqcn":{"alpha_timer":"1us","rate_increase_timer":"1s"}},"workload":[{"op":"barrier"}]})");
  std::vector<std::string> errs;
  EXPECT_TRUE(load_scenario(ok, &errs)) << join(errs);
}

// The NIC port event's keys (docs/failover.md#nic-port-event): bounded, "off", the debounce not
// above the delay; defaults 100 us / 50 us, a faster event lowers the default debounce to it.
TEST(Workloads, PortEventKeysAreBounded) {
  const std::string a2 = kSrc + "/topologies/a2-2node.json";
  auto load = [&](const std::string& name, const std::string& net, std::vector<std::string>* errs) {
    std::string p = write_tmp(name, R"({"format":"hcsim-scenario","version":1,"name":"n","topology":")" + a2 + R"(","network":)" + net +
                                        R"(,"workload":[{"op":"barrier"}]})");
    return std::make_pair(p, load_scenario(p, errs));
  };
  const std::pair<const char*, const char*> cases[] = {
      {R"({"port_event":"0us"})", "/network/port_event: port_event must be 1 us .. 1 s, or \"off\""},
      {R"({"port_event":"2s"})", "/network/port_event: port_event must be 1 us .. 1 s, or \"off\""},
      {R"({"port_event":"soon"})", "/network/port_event: "},
      {R"({"port_event":5})", "/network/port_event: "},
      {R"({"port_debounce":"101us"})", "/network/port_debounce: port_debounce must not exceed port_event"},
      {R"({"port_event":"20us","port_debounce":"30us"})", "/network/port_debounce: port_debounce must not exceed port_event"},
      {R"({"port_debounce":"-1us"})", "/network/port_debounce: "},
  };
  int k = 0;
  for (auto& [net, expect] : cases) {
    std::vector<std::string> errs;
    auto [p, sc] = load("pe" + std::to_string(k++) + ".json", net, &errs);
    EXPECT_FALSE(sc) << net;
    EXPECT_TRUE(any_contains(errs, p + ": " + expect)) << net << "\n" << join(errs);
  }
  std::vector<std::string> errs;
  auto d = load("pe-default.json", "{}", &errs).second;
  ASSERT_TRUE(d) << join(errs);
  EXPECT_TRUE(d->net.port_events);
  EXPECT_EQ(d->net.port_event_ps, 100 * models::kPsPerUs);
  EXPECT_EQ(d->net.port_debounce_ps, 50 * models::kPsPerUs);
  auto off = load("pe-off.json", R"({"port_event":"off"})", &errs).second;
  ASSERT_TRUE(off) << join(errs);
  EXPECT_FALSE(off->net.port_events);
  auto fast = load("pe-fast.json", R"({"port_event":"20us"})", &errs).second;
  ASSERT_TRUE(fast) << join(errs);
  EXPECT_EQ(fast->net.port_event_ps, 20 * models::kPsPerUs);
  EXPECT_EQ(fast->net.port_debounce_ps, 20 * models::kPsPerUs);
  auto set = load("pe-set.json", R"({"port_event":"1ms","port_debounce":"0us"})", &errs).second;
  ASSERT_TRUE(set) << join(errs);
  EXPECT_EQ(set->net.port_event_ps, 1000 * models::kPsPerUs);
  EXPECT_EQ(set->net.port_debounce_ps, 0u);
}

// The PFC watchdog's keys (docs/models/ethernet-switch.md#pfc-watchdog): bounded, errors naming
// the key's pointer; defaults SONiC's (on, 200 ms, 200 ms, drop).
TEST(Workloads, PfcWatchdogKeysAreBounded) {
  const std::string a2 = kSrc + "/topologies/a2-2node.json";
  auto load = [&](const std::string& name, const std::string& net, std::vector<std::string>* errs) {
    std::string p = write_tmp(name, R"({"format":"hcsim-scenario","version":1,"name":"n","topology":")" + a2 + R"(","network":)" + net +
                                        R"(,"workload":[{"op":"barrier"}]})");
    return std::make_pair(p, load_scenario(p, errs));
  };
  const std::pair<const char*, const char*> cases[] = {
      {R"({"pfc":{"watchdog":"yes"}})", "/network/pfc/watchdog: expected \"on\" or \"off\", got \"yes\""},
      {R"({"pfc":{"watchdog":true}})", "/network/pfc/watchdog: "},
      {R"({"pfc":{"detect":"999ns"}})", "/network/pfc/detect: detect must be 1 us .. 5 s"},
      {R"({"pfc":{"detect":"6s"}})", "/network/pfc/detect: detect must be 1 us .. 5 s"},
      {R"({"pfc":{"detect":"soon"}})", "/network/pfc/detect: "},
      {R"({"pfc":{"restore":"0ms"}})", "/network/pfc/restore: restore must be 1 us .. 60 s"},
      {R"({"pfc":{"restore":"61s"}})", "/network/pfc/restore: restore must be 1 us .. 60 s"},
      {R"({"pfc":{"action":"alert"}})", "/network/pfc/action: expected \"drop\" or \"forward\", got \"alert\""},
      {R"({"pfc":{"quantum":"1ms"}})", "/network/pfc/quantum: unknown key (allowed: enabled, watchdog, detect, restore, action)"},
  };
  int k = 0;
  for (auto& [net, expect] : cases) {
    std::vector<std::string> errs;
    auto [p, sc] = load("pfc" + std::to_string(k++) + ".json", net, &errs);
    EXPECT_FALSE(sc) << net;
    EXPECT_TRUE(any_contains(errs, p + ": " + expect)) << net << "\n" << join(errs);
  }
  std::vector<std::string> errs;
  auto d = load("pfc-default.json", "{}", &errs).second;
  ASSERT_TRUE(d) << join(errs);
  EXPECT_TRUE(d->net.pfc.enabled);
  EXPECT_TRUE(d->net.pfc.watchdog);
  EXPECT_EQ(d->net.pfc.detect_ps, 200 * 1000 * models::kPsPerUs);
  EXPECT_EQ(d->net.pfc.restore_ps, 200 * 1000 * models::kPsPerUs);
  EXPECT_EQ(d->net.pfc.action, models::PfcParams::WdAction::Drop);
  auto set = load("pfc-set.json", R"({"pfc":{"enabled":true,"watchdog":"off","detect":"1us","restore":"60s","action":"forward"}})", &errs).second;
  ASSERT_TRUE(set) << join(errs);
  EXPECT_FALSE(set->net.pfc.watchdog);
  EXPECT_EQ(set->net.pfc.detect_ps, models::kPsPerUs);
  EXPECT_EQ(set->net.pfc.restore_ps, 60 * models::kPsPerSec);
  EXPECT_EQ(set->net.pfc.action, models::PfcParams::WdAction::Forward);
}

// 16,384 NPUs: 8192 per half. The max flow's source arcs were 2^50 each, whose sum (the source's
// excess) overflowed 64 bits (UBSan: signed overflow in push_relabel); now each is the NPU's own
// link capacity. Bisection = 8192 NICs x 25 GB/s.
TEST(Summary, BisectionOfSixteenThousandNpus) {
  json j = json::parse(R"({"format":"hcsim-topology","version":1,"name":"big",
    "server_groups":[{"name":"n{i}","count":2048,"type":"atlas800t-a2","host_ip":"10.0.0.1"}],
    "fabric":{"type":"clos","tiers":3,"switch_radix":64,"link_bandwidth":"200Gb/s"}})");
  Topology t;
  auto errs = topo_errors(j, &t);
  ASSERT_TRUE(errs.empty()) << join(errs);
  auto s = summarize(t);
  EXPECT_DOUBLE_EQ(s.bisection_Bps, 8192 * 25e9);
  EXPECT_EQ(s.diameter, 6u);
}

// ---- the wrong kind of file, and every problem in one pass ----

TEST(WrongKind, DocumentsAreToldApartByTheirTopLevel) {
  EXPECT_EQ(document_kind(json::parse(R"({"format":"hcsim-scenario"})")), "scenario");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"x","workload":[]})")), "scenario");
  EXPECT_EQ(document_kind(json::parse(R"({"format":"hcsim-topology","workload":[]})")), "topology");  // the format wins
  EXPECT_EQ(document_kind(json::parse(R"({"name":"x","servers":[]})")), "topology");
  EXPECT_EQ(document_kind(json::parse(R"({"version":"1.0","server_list":[]})")), "rank table");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"x"})")), "");
  EXPECT_EQ(document_kind(json::parse(R"({"servers":[],"workload":[]})")), "");  // a mixture: the reader lists the keys
  EXPECT_EQ(document_kind(json::parse("[1]")), "");
  // A scenario given as a topology is named as one, not reported key by key.
  auto errs = topo_errors(json::parse(R"({"format":"hcsim-scenario","version":1,"name":"q","topology":"t.json","workload":[]})"));
  ASSERT_EQ(errs.size(), 1u) << join(errs);
  EXPECT_EQ(errs[0], "t.json: /: is a scenario, not a topology: pass it to hcsim run / hcsim validate");
  // A topology given as a scenario, and a scenario named in a scenario's topology slot.
  const std::string topo = kSrc + "/topologies/atlas800t-a2.json";
  std::vector<std::string> e2;
  EXPECT_FALSE(load_scenario(topo, &e2));
  ASSERT_EQ(e2.size(), 1u) << join(e2);
  EXPECT_EQ(e2[0], topo + ": /: is a topology, not a scenario: pass it to hcsim topo / hcsim validate, or name it in a scenario's \"topology\"");
  const std::string qs = kSrc + "/scenarios/quickstart.json";
  std::string p = write_tmp("slot.json", R"({"format":"hcsim-scenario","version":1,"name":"s","topology":")" + qs +
                                             R"(","workload":[{"op":"barrier"}]})");
  std::vector<std::string> e3;
  EXPECT_FALSE(load_scenario(p, &e3));
  EXPECT_TRUE(any_contains(e3, p + ": /topology: topology file is invalid")) << join(e3);
  EXPECT_TRUE(any_contains(e3, qs + ": /: is a scenario, not a topology")) << join(e3);
}

TEST(OnePass, FieldAndReferenceErrorsTogether) {
  const std::string a2 = kSrc + "/topologies/atlas800t-a2.json";
  std::string p = write_tmp("onepass.json", R"({"format":"hcsim-scenario","version":1,"name":"p","topology":")" + a2 + R"(",
    "workload":[{"op":"allreduce","bytes":"1MiB","dtype":"fp33"},{"op":"incast","bytes":"1MiB","root":8}],
    "faults":[{"type":"lane_degrade","at":"1us","a":"server0/npu0","b":"server0/npu9","lanes":9},
              {"type":"lane_degrade","at":"1us","a":"server0/npu0","b":"server0/npu1","lanes":0},
              {"type":"lane_degrade","at":"1us","a":"server0/npu0","b":"server0/npu1","lanes":8},
              {"type":"rank_crash","at":"1us","rank":8}]})");
  std::vector<std::string> errs;
  EXPECT_FALSE(load_scenario(p, &errs));
  for (const char* want : {"/workload/0/dtype: unknown dtype \"fp33\"",                       // a field
                           "/workload/1/root: rank 8 does not exist (8 ranks)",              // the layout
                           "/faults/0/lanes: lanes 9 out of range [1, 8]",                  // a field
                           "/faults/0/b: no NPU named \"server0/npu9\"",                    // a device
                           "/faults/1/lanes: lanes 0 out of range [1, 8]",
                           "/faults/3/rank: rank 8 does not exist (8 ranks)"})               // a rank
    EXPECT_TRUE(any_contains(errs, p + ": " + want)) << want << "\n" << join(errs);
  EXPECT_FALSE(any_contains(errs, "/faults/2/")) << join(errs);  // 8 of 8 lanes is allowed
}

TEST(Faults, CommandLineStringsAreTheJsonObjects) {
  std::string why;
  auto f = parse_fault_text("link_flap a=node0/npu0 b=node0/npu1 at.step=1 at.after=40% duration=5us count=2", &why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->dump(), R"({"a":"node0/npu0","at":{"after":"40%","step":1},"b":"node0/npu1","count":2,"duration":"5us","type":"link_flap"})");
  EXPECT_EQ(fault_text(*f), "link_flap a=node0/npu0 at.after=40% at.step=1 b=node0/npu1 count=2 duration=5us");
  for (const char* bad : {"", "a=1", "link_down a", "link_down =1", "link_down a=1 a=2", "link_down at=1us at.step=0", "link_down .x=1"})
    EXPECT_FALSE(parse_fault_text(bad, &why)) << bad;
}

TEST(Faults, OverridesAreCheckedLikeTheFileAndNameTheOption) {
  const std::string p = kSrc + "/tests/fixtures/faults-2node.json";
  ScenarioOverrides ov;
  ov.sets = {{"/network/ecmp_hash", "src-dst"}, {"/workload/1/bytes", "2MiB"}, {"/seed", "7"}};
  std::string why;
  ov.faults.push_back({"nic_flap npu=node0/npu0 at.step=1 at.rep=1 at.after=25% duration=5us count=3 period=20us",
                       *parse_fault_text("nic_flap npu=node0/npu0 at.step=1 at.rep=1 at.after=25% duration=5us count=3 period=20us", &why)});
  std::vector<std::string> errs;
  auto sc = load_scenario(p, ov, &errs);
  ASSERT_TRUE(sc) << join(errs);
  EXPECT_EQ(sc->net.ecmp_hash, models::EcmpHash::SrcDst);
  EXPECT_EQ(sc->workload[1].bytes, 2u << 20);
  EXPECT_EQ(sc->seed, 7u);
  ASSERT_EQ(sc->faults.size(), 1u);
  const Fault& f = sc->faults[0];
  EXPECT_EQ(f.kind, FaultKind::NicFlap);
  EXPECT_EQ(f.at_step, 1);
  EXPECT_EQ(f.at_rep, 1u);
  EXPECT_DOUBLE_EQ(f.after_pct, 25);
  EXPECT_EQ(f.count, 3u);
  EXPECT_EQ(f.duration_ps, 5'000'000u);
  EXPECT_EQ(f.period_ps, 20'000'000u);
  EXPECT_GE(f.roce_link, 0);
  ScenarioOverrides bad;
  bad.sets = {{"/workload/0/bogus", "1"}};
  bad.faults.push_back({"crc_rate a=node0/npu0 b=node0/npu1 at=1us rate=0.9", *parse_fault_text("crc_rate a=node0/npu0 b=node0/npu1 at=1us rate=0.9", &why)});
  EXPECT_FALSE(load_scenario(p, bad, &errs));
  EXPECT_TRUE(any_contains(errs, "--set /workload/0/bogus=1: /workload/0/bogus: unknown key")) << join(errs);
  EXPECT_TRUE(any_contains(errs, "--fault 'crc_rate a=node0/npu0 b=node0/npu1 at=1us rate=0.9': rate:")) << join(errs);
}

TEST(Faults, ChaosIsAFunctionOfItsSeed) {
  std::vector<std::string> errs;
  auto sc = load_scenario(kSrc + "/tests/fixtures/faults-2node.json", &errs);
  ASSERT_TRUE(sc) << join(errs);
  const auto a = chaos_faults(*sc, 7, 20), b = chaos_faults(*sc, 7, 20), c = chaos_faults(*sc, 8, 20);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_EQ(a.size(), 20u);
  // Every drawn fault loads: a valid fault of the layout, timed inside a step.
  ScenarioOverrides ov;
  std::string why;
  for (const auto& t : a) ov.faults.push_back({t, *parse_fault_text(t, &why)});
  auto with = load_scenario(kSrc + "/tests/fixtures/faults-2node.json", ov, &errs);
  ASSERT_TRUE(with) << join(errs);
  for (const Fault& f : with->faults) EXPECT_GE(f.at_step, 0);
}

// ---- issue 46: lenient inputs refused ----

namespace {
const std::string kFaults2 = kSrc + "/tests/fixtures/faults-2node.json";

// faults-2node.json with --fault strings (and --set pairs): the errors and warnings.
bool load_with(const std::vector<std::string>& faults, std::vector<std::string>* errs, std::vector<std::string>* warns = nullptr,
               const std::vector<std::pair<std::string, std::string>>& sets = {}, std::optional<Scenario>* out = nullptr) {
  ScenarioOverrides ov;
  ov.sets = sets;
  for (const auto& t : faults) {
    std::string why;
    auto f = parse_fault_text(t, &why);
    if (!f) { errs->assign(1, "parse_fault_text: " + why); return false; }
    ov.faults.push_back({t, *f});
  }
  auto sc = load_scenario(kFaults2, ov, errs, warns);
  if (out) *out = sc;
  return sc.has_value();
}
}  // namespace

TEST(Numbers, FaultStringValuesFollowTheGrammar) {
  std::string why;
  // Integers [0-9]+ up to 2^64 - 1 and decimals [0-9]+.[0-9]+; the largest integer is exact.
  auto f = parse_fault_text("hbm_bitflip rank=18446744073709551615 byte=007 rate=0.0012", &why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ((*f)["rank"].get<std::uint64_t>(), 18446744073709551615ULL);
  EXPECT_EQ((*f)["byte"].get<std::uint64_t>(), 7u);
  EXPECT_DOUBLE_EQ((*f)["rate"].get<double>(), 0.0012);
  // Signs, exponents, hex, lone dots and overflow are errors, not numbers or clamped values.
  for (const char* bad : {"rank=18446744073709551616", "rank=99999999999999999999999", "rank=1e2", "rank=1E2", "rank=-1", "rank=+1",
                          "rank=0x10", "rank=.5", "rank=5.", "rate=1e-3", "rate=-0.5", "rate=1.2.3", "bit=-0"}) {
    why.clear();
    EXPECT_FALSE(parse_fault_text(std::string("hbm_bitflip ") + bad, &why)) << bad;
    EXPECT_NE(why.find(std::string(bad).substr(0, std::string(bad).find('=') + 1)), std::string::npos) << bad << ": " << why;
  }
}

TEST(Numbers, PercentagesAndDurationsFollowTheGrammar) {
  std::vector<std::string> errs;
  EXPECT_TRUE(load_with({"nic_flap npu=node0/npu0 at.step=1 at.after=12.5% duration=5us"}, &errs)) << join(errs);
  for (const char* after : {"0x10%", "1e2%", "1E1%", "+5%", "-0%", ".5%", "5.%", " 5%", "5%%", "inf%", "nan%", "0x1p3%"}) {
    ScenarioOverrides ov;
    json fj = json::parse(R"({"type":"nic_flap","npu":"node0/npu0","duration":"5us","at":{"step":1}})");
    fj["at"]["after"] = after;
    ov.faults.push_back({"x", fj});
    EXPECT_FALSE(load_scenario(kFaults2, ov, &errs)) << after;
    EXPECT_TRUE(any_contains(errs, "after: expected a percentage")) << after << "\n" << join(errs);
  }
  std::string why;
  for (const char* bad : {" 1us", "1us ", "\t1us", ".5us", "1.us", "1e3ns", "1E3ns", "0x10us", "+1us", "1 . 5us", "1  us"})
    EXPECT_FALSE(parse_duration(bad, &why)) << "\"" << bad << "\"";
  for (const char* bad : {" 1MiB", "1MiB ", "1e3B", ".5KiB", "0x10B"}) EXPECT_FALSE(parse_size(bad, &why)) << bad;
  for (const char* bad : {" 200Gb/s", "2e2Gb/s", ".5GB/s"}) EXPECT_FALSE(parse_bandwidth(bad, &why)) << bad;
  EXPECT_EQ(parse_duration("1.5us", &why), 1500000u);
  EXPECT_EQ(parse_size("512 B", &why), 512u);  // one space before the unit stays allowed
  EXPECT_EQ(parse_bandwidth("200Gb/s", &why), 25000000000u);
}

TEST(Faults, KeysATypeDoesNotTakeAreErrorsNamingItsKeys) {
  struct C { const char* text; const char* key; const char* takes; } cases[] = {
      {"link_down a=node0/npu0 b=node0/npu1 at=1us rate=0.5", "rate", "link_down takes type, at, a, b)"},
      {"link_up a=node0/npu0 b=node0/npu1 at=1us lanes=4", "lanes", "link_up takes type, at, a, b)"},
      {"crc_rate a=node0/npu0 b=node0/npu1 at=1us rate=0.001 lanes=4", "lanes", "crc_rate takes type, at, a, b, rate)"},
      {"lane_degrade a=node0/npu0 b=node0/npu1 at=1us lanes=4 rate=0.1", "rate", "lane_degrade takes type, at, a, b, lanes)"},
      {"switch_link_down npu=node0/npu0 at=1us rate=0.5", "rate", "switch_link_down takes type, at, switch, port, npu)"},
      {"nic_down npu=node0/npu0 at=1us duration=5us", "duration", "nic_down takes type, at, npu)"},
      {"pcie_link_up npu=node0/npu0 at=1us duration=5us", "duration", "pcie_link_up takes type, at, npu)"},
      {"npu_stall npu=node0/npu0 at=1us duration=5us count=2", "count", "npu_stall takes type, at, npu, duration)"},
      {"rank_crash rank=1 at=1us npu=node0/npu0", "npu", "rank_crash takes type, at, rank)"},
      {"drop_rate rate=0.1 at=1us npu=node0/npu0", "npu", "drop_rate takes type, at, rate)"},
      {"hbm_bitflip rank=1 step=1 at=1us", "at", "hbm_bitflip takes type, rank, step, rep, byte, bit)"},
      {"nic_flap npu=node0/npu0 at=1us duration=5us lanes=2", "lanes", "nic_flap takes type, at, npu, duration, count, period)"},
      {"packet_corruption npu=node0/npu0 at=1us rate=0.1 bogus=1", "bogus", "packet_corruption takes type, at, switch, port, npu, rate)"},
      {"pfc_storm npu=node0/npu0 at=1us duration=5us rate=0.1", "rate", "pfc_storm takes type, at, npu, duration)"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> errs;
    EXPECT_FALSE(load_with({c.text}, &errs)) << c.text;
    const std::string want = "--fault '" + std::string(c.text) + "': " + c.key + ": ";
    bool found = false;
    for (const auto& e : errs) found |= e.find(want) != std::string::npos && e.find(c.takes) != std::string::npos && e.find("does not take") != std::string::npos;
    EXPECT_TRUE(found) << c.text << "\n" << join(errs);
  }
  // An empty type is an unknown type, not a bit flip.
  {
    ScenarioOverrides ov;
    ov.faults.push_back({"x", json::parse(R"({"type":"","rank":1})")});
    std::vector<std::string> errs;
    EXPECT_FALSE(load_scenario(kFaults2, ov, &errs));
    EXPECT_TRUE(any_contains(errs, "type: unknown fault type \"\"")) << join(errs);
  }
  // In a file too: the pointer of the key.
  ScenarioOverrides ov;
  ov.faults.push_back({"x", json::parse(R"({"type":"link_down","a":"node0/npu0","b":"node0/npu1","at":"1us","a/b":1})")});
  std::vector<std::string> errs;
  EXPECT_FALSE(load_scenario(kFaults2, ov, &errs));
  EXPECT_TRUE(any_contains(errs, "a~1b: link_down does not take \"a/b\"")) << join(errs);
  // The keys a type does take still load.
  EXPECT_TRUE(load_with({"link_flap npu=node0/npu0 at=1us duration=5us count=2 period=20us", "crc_rate a=node0/npu0 b=node0/npu1 at=1us rate=0.001",
                         "npu_stall npu=node0/npu0 at=1us duration=5us", "rank_crash rank=1 at=1us", "hbm_bitflip rank=1 step=1 rep=1 byte=3 bit=2"},
                        &errs)) << join(errs);
}

TEST(Faults, FlapsPastTheClockAreRefusedNamingTheKey) {
  struct C { const char* text; const char* key; } cases[] = {
      {"link_flap npu=node0/npu0 at=1us duration=5us count=3 period=9000000s", "period"},        // 2 x 9e18 ps wraps
      {"nic_flap npu=node0/npu0 at=1us duration=1us count=10000 period=2000s", "period"},         // 9999 x 2e15 ps
      {"link_flap a=node0/npu0 b=node0/npu1 at=9000000s duration=300000s", "duration"},            // 9.3e18 ps
      {"nic_flap npu=node0/npu0 at.step=1 at.after=9000000s duration=300000s", "duration"},       // relative: the same offsets
      {"link_flap npu=node0/npu0 at=1us duration=4611686s count=2", "count"},                    // default period 2 x duration
  };
  for (const auto& c : cases) {
    std::vector<std::string> errs;
    EXPECT_FALSE(load_with({c.text}, &errs)) << c.text;
    EXPECT_TRUE(any_contains(errs, "--fault '" + std::string(c.text) + "': " + c.key + ": ")) << c.text << "\n" << join(errs);
    EXPECT_TRUE(any_contains(errs, "past the simulated clock's range")) << c.text << "\n" << join(errs);
  }
  // At the edge: 2^62 + 1 ps is a time of the clock, 2^63 + 1 ps is not.
  std::vector<std::string> errs;
  EXPECT_TRUE(load_with({"link_flap npu=node0/npu0 at=0ps duration=1ps count=2 period=4611686018427387904ps"}, &errs)) << join(errs);
  EXPECT_FALSE(load_with({"link_flap npu=node0/npu0 at=0ps duration=1ps count=3 period=4611686018427387904ps"}, &errs));
  EXPECT_TRUE(any_contains(errs, "period: link_flap: its last transition")) << join(errs);
}

TEST(Faults, PacketFaultsWarnInTheFlowTierAndChaosDoesNotDrawThem) {
  std::vector<std::string> errs, warns;
  std::optional<Scenario> sc;
  ASSERT_TRUE(load_with({"drop_rate rate=0.01 at=0us", "packet_corruption npu=node0/npu0 rate=0.01 at=0us", "nic_flap npu=node0/npu0 at=1us duration=5us"},
                        &errs, &warns, {{"/fidelity", "flow"}, {"/network/drop_rate", "0.001"}}, &sc)) << join(errs);
  EXPECT_TRUE(any_contains(warns, "--fault 'drop_rate rate=0.01 at=0us': type: warning: drop_rate has no effect in the flow tier")) << join(warns);
  EXPECT_TRUE(any_contains(warns, "--fault 'packet_corruption npu=node0/npu0 rate=0.01 at=0us': type: warning: packet_corruption has no effect in the flow tier"))
      << join(warns);
  EXPECT_TRUE(any_contains(warns, "/network/drop_rate: warning: drop_rate has no effect in the flow tier")) << join(warns);
  EXPECT_FALSE(any_contains(warns, "nic_flap")) << join(warns);
  // Chaos in the flow tier draws no packet_corruption; in the chunk and packet tiers it does.
  for (const char* tier : {"flow", "chunk", "packet"}) {
    std::optional<Scenario> s;
    ASSERT_TRUE(load_with({}, &errs, &warns, {{"/fidelity", tier}}, &s)) << join(errs);
    EXPECT_TRUE(warns.empty()) << tier << "\n" << join(warns);
    std::size_t corruption = 0;
    for (const auto& t : chaos_faults(*s, 3, 400)) corruption += t.rfind("packet_corruption", 0) == 0;
    if (std::string(tier) == "flow") EXPECT_EQ(corruption, 0u);
    else EXPECT_GT(corruption, 0u) << tier;
  }
  // No warning in the packet tiers.
  ASSERT_TRUE(load_with({"drop_rate rate=0.01 at=0us", "packet_corruption npu=node0/npu0 rate=0.01 at=0us"}, &errs, &warns, {{"/fidelity", "packet"}}))
      << join(errs);
  EXPECT_TRUE(warns.empty()) << join(warns);
}

// pfc_storm: the NIC of an NPU, a positive duration; no effect (a warning) in the flow tier or
// with PFC off.
TEST(Faults, PfcStormIsValidated) {
  std::vector<std::string> errs, warns;
  std::optional<Scenario> sc;
  ASSERT_TRUE(load_with({"pfc_storm npu=node0/npu0 at=1us duration=5ms"}, &errs, &warns, {}, &sc)) << join(errs);
  EXPECT_TRUE(warns.empty()) << join(warns);
  ASSERT_EQ(sc->faults.size(), 1u);
  EXPECT_EQ(sc->faults[0].kind, FaultKind::PfcStorm);
  EXPECT_EQ(sc->faults[0].duration_ps, 5000 * models::kPsPerUs);
  EXPECT_GE(sc->faults[0].roce_link, 0);
  EXPECT_NE(sc->faults[0].what.find("sends PFC pause frames for 5000 us"), std::string::npos) << sc->faults[0].what;
  struct C { const char* text; const char* want; } cases[] = {
      {"pfc_storm npu=node0/npu0 at=1us", "duration: "},
      {"pfc_storm npu=node0/npu0 at=1us duration=0us", "duration: must be positive"},
      {"pfc_storm npu=node0/npu0 at=1us duration=2h", "duration: "},
      {"pfc_storm at=1us duration=1ms", "npu: "},
      {"pfc_storm npu=node9/npu0 at=1us duration=1ms", "npu: no NPU named \"node9/npu0\""},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(load_with({c.text}, &errs)) << c.text;
    EXPECT_TRUE(any_contains(errs, "--fault '" + std::string(c.text) + "': " + c.want)) << c.text << "\n" << join(errs);
  }
  ASSERT_TRUE(load_with({"pfc_storm npu=node0/npu0 at=1us duration=1ms"}, &errs, &warns, {{"/fidelity", "flow"}})) << join(errs);
  EXPECT_TRUE(any_contains(warns, "--fault 'pfc_storm npu=node0/npu0 at=1us duration=1ms': type: warning: pfc_storm has no effect in the flow tier"))
      << join(warns);
  ASSERT_TRUE(load_with({"pfc_storm npu=node0/npu0 at=1us duration=1ms"}, &errs, &warns, {{"/network/pfc/enabled", "false"}})) << join(errs);
  EXPECT_TRUE(any_contains(warns, "pfc_storm has no effect with /network/pfc/enabled false")) << join(warns);
}

TEST(Names, ControlCharactersAndEmptyNamesAreRefused) {
  const std::string topo = kSrc + "/topologies/a2-2node.json";
  Diagnostics d0(topo);
  auto base = read_json_file(topo, d0);
  ASSERT_TRUE(base);
  for (const char* bad : {"", "a\x1b[31mb", "tab\there", "del\x7f", "c1\xc2\x85x", "csi\xc2\x9b" "2J", "nl\n"}) {
    json j = *base;
    j["name"] = bad;
    auto errs = topo_errors(j);
    EXPECT_TRUE(any_contains(errs, "t.json: /name: ")) << "\"" << bad << "\"\n" << join(errs);
    EXPECT_TRUE(any_contains(errs, std::string(bad).empty() ? "must not be empty" : "control character U+00")) << join(errs);
    // Device names: servers and switches.
    j = *base;
    j["servers"][1]["name"] = bad;
    EXPECT_TRUE(any_contains(topo_errors(j), "t.json: /servers/1/name: ")) << bad;
    j = *base;
    j["switches"][0]["name"] = bad;
    EXPECT_TRUE(any_contains(topo_errors(j), "t.json: /switches/0/name: ")) << bad;
    // A scenario's name.
    char tmpl[] = "/tmp/hcsim-names-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string p = std::string(tmpl) + "/s.json";
    json s = {{"format", "hcsim-scenario"}, {"version", 1}, {"name", bad}, {"topology", topo}, {"workload", json::array({{{"op", "barrier"}}})}};
    std::ofstream(p) << s.dump();
    std::vector<std::string> errs2;
    EXPECT_FALSE(load_scenario(p, &errs2)) << bad;
    EXPECT_TRUE(any_contains(errs2, p + ": /name: ")) << join(errs2);
    std::remove(p.c_str());
    rmdir(tmpl);
  }
  // Bytes that are not UTF-8 (a command-line value, --set /name=...): refused, not passed on.
  for (const char* bad : {"\x85", "a\xc2", "\xc0\x85", "\xed\xa0\x80", "\xff"}) EXPECT_NE(name_problem(bad), "") << bad;
  EXPECT_EQ(name_problem("\xf0\x9f\x98\x80 x"), "");
  // Printable UTF-8 beyond the C1 block is a name (U+00A0 and up).
  json j = *base;
  j["name"] = "caf\xc3\xa9 \xc2\xa0x";
  EXPECT_TRUE(topo_errors(j).empty()) << join(topo_errors(j));
}

TEST(RankTable, LeadingZerosDuplicateSuperDevicesAndPodlessServersAreRefused) {
  Diagnostics dt("t");
  auto base = load_topology(kSrc + "/topologies/a2-2node.json", dt);
  ASSERT_TRUE(base);
  const json good = export_rank_table(*base, "1.2");
  struct C { const char* what; std::function<void(json&)> m; const char* expect; } cases[] = {
      {"server_id leading zero", [](json& j) { j["server_list"][1]["server_id"] = "192.168.1.011"; }, "/server_list/1/server_id: not an IPv4 address"},
      {"server_id leading zero 2", [](json& j) { j["server_list"][0]["server_id"] = "192.168.01.10"; }, "/server_list/0/server_id: not an IPv4 address"},
      {"device_ip leading zero", [](json& j) { j["server_list"][0]["device"][2]["device_ip"] = "192.168.100.0103"; }, "/server_list/0/device/2/device_ip"},
      {"device_ip leading zero 2", [](json& j) { j["server_list"][0]["device"][2]["device_ip"] = "192.168.00.103"; }, "/server_list/0/device/2/device_ip"},
      {"duplicate super_device_id", [](json& j) { j["server_list"][1]["device"][3]["super_device_id"] = "2"; },
       "/server_list/1/device/3/super_device_id: super_device_id 2 appears twice"},
      {"duplicate super_device_id in a server", [](json& j) { j["server_list"][0]["device"][5]["super_device_id"] = "0"; },
       "/server_list/0/device/5/super_device_id: super_device_id 0 appears twice"},
      {"server in no pod", [](json& j) { j["super_pod_list"][0]["server_list"].erase(1); }, "/server_list/1/server_id: server 192.168.1.11 is in no super pod"},
      {"no pods at all", [](json& j) { j["super_pod_list"] = json::array(); }, "/server_list/0/server_id: server 192.168.1.10 is in no super pod"},
  };
  for (auto& c : cases) {
    json j = good;
    c.m(j);
    Topology t = *base;
    Diagnostics d("rt.json");
    EXPECT_FALSE(import_rank_table(j, t, d)) << c.what;
    EXPECT_TRUE(any_contains(d.messages(), c.expect)) << c.what << ": " << join(d.messages());
  }
  // Two super pods may reuse super device ids (they number the NPUs of their own pod).
  json two = good;
  two["super_pod_list"] = json::array({{{"super_pod_id", "0"}, {"server_list", json::array({{{"server_id", "192.168.1.10"}}})}},
                                       {{"super_pod_id", "1"}, {"server_list", json::array({{{"server_id", "192.168.1.11"}}})}}});
  for (int k = 0; k < 8; ++k) two["server_list"][1]["device"][k]["super_device_id"] = std::to_string(k);
  Topology t = *base;
  Diagnostics d("rt.json");
  EXPECT_TRUE(import_rank_table(two, t, d)) << join(d.messages());
  // A topology's own addresses: no leading zeros either.
  for (const char* ip : {"192.168.1.010", "010.0.0.1", "10.00.0.1"}) {
    Diagnostics d0("a");
    json tj = *read_json_file(kSrc + "/topologies/a2-2node.json", d0);
    tj["servers"][0]["host_ip"] = ip;
    EXPECT_TRUE(any_contains(topo_errors(tj), "t.json: /servers/0/host_ip: not an IPv4 address")) << ip;
  }
  EXPECT_EQ(parse_ipv4("10.0.0.0"), 0x0a000000u);
  EXPECT_EQ(parse_ipv4("0.0.0.0"), 0u);
  EXPECT_FALSE(parse_ipv4("10.0.01.2"));
}

TEST(WrongKind, PlansAreToldApart) {
  EXPECT_EQ(document_kind(json::parse(R"({"format":"hcsim-plan"})")), "plan");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"p","topology":"t.json","workloads":[]})")), "plan");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"p","topology":"t.json","sweep":[],"fidelity":"flow"})")), "plan");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"p","topology":"t.json","fidelity":"flow"})")), "scenario");
  EXPECT_EQ(document_kind(json::parse(R"({"name":"p","workload":[],"workloads":[]})")), "");  // a mixture
  auto errs = topo_errors(json::parse(R"({"format":"hcsim-plan","version":1,"name":"q","topology":"t.json","workloads":[]})"));
  ASSERT_EQ(errs.size(), 1u) << join(errs);
  EXPECT_EQ(errs[0], "t.json: /: is a plan, not a topology: pass it to hcsim plan / hcsim validate");
}

TEST(Numbers, OneParserForIntegersAndDecimals) {
  std::string why;
  EXPECT_EQ(parse_uint("0", &why), 0u);
  EXPECT_EQ(parse_uint("18446744073709551615", &why), 18446744073709551615ULL);
  EXPECT_EQ(parse_uint("000000000000000000000000042", &why), 42u);  // leading zeros are decimal, not octal
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "0x10", "1e2", "1.0", "18446744073709551616", "99999999999999999999", "1_000", "\xd9\xa1"}) {
    why.clear();
    EXPECT_FALSE(parse_uint(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_NE((parse_uint("18446744073709551616", &why), why.find("larger than 18446744073709551615")), std::string::npos) << why;
  EXPECT_DOUBLE_EQ(*parse_decimal("12.5", &why), 12.5);
  EXPECT_DOUBLE_EQ(*parse_decimal("7", &why), 7);
  for (const char* bad : {"", ".5", "5.", "1e2", "1E-2", "0x1p3", "inf", "nan", "-1", "+1", " 1", "1 ", "1.2.3", "1,5"})
    EXPECT_FALSE(parse_decimal(bad, &why)) << bad;
  // Integers with a unit are exact beyond the double's 53 bits, up to 2^63 - 1 units.
  EXPECT_EQ(parse_duration("9007199254740993ps", &why), 9007199254740993ULL);
  EXPECT_EQ(parse_duration("9223372036854775807ps", &why), 9223372036854775807ULL);
  EXPECT_FALSE(parse_duration("9223372036854775808ps", &why));
  EXPECT_EQ(parse_size("9007199254740993B", &why), 9007199254740993ULL);
  EXPECT_EQ(parse_duration("9223372us", &why), 9223372000000ULL);
}
