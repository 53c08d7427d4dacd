// hcsim discover: run the library's topology discovery on a topology (or a scenario's) and check
// what it found against the description, as HCCL checks its rank table (docs/discovery.md).
// The description says what should be; the models are elaborated as built (/as_built); every
// rank runs context creation and communicator init (the probe and the bootstrap) and the
// differences are reported per NPU and HCCS port. Exit 0 all matches, 1 differences, 2 bad input.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "hcomm/driver.h"
#include "hcomm/hcomm.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"
#include "sim/driver.h"
#include "sim/provenance.h"
#include "sim/runner.h"

namespace hcsim {
namespace {

struct RankOut {
  hcomm_result_t init = HCOMM_SUCCESS;
  bool joined = false;
  std::string error;
  hcomm_topo_rank_t rec{};
  std::uint64_t t_begin_ns = 0, t_end_ns = 0;
};

const char* link_name(std::uint32_t t) {
  switch (t) {
    case HCOMM_LINK_LOCAL: return "local";
    case HCOMM_LINK_HCCS: return "hccs";
    case HCOMM_LINK_PCIE: return "pcie";
    case HCOMM_LINK_ROCE: return "roce";
    default: return "none";
  }
}
std::uint32_t pair_bit(hcomm::PairLink l) {
  switch (l) {
    case hcomm::PairLink::Local: return HCOMM_LINK_LOCAL;
    case hcomm::PairLink::Hccs: return HCOMM_LINK_HCCS;
    case hcomm::PairLink::Pcie: return HCOMM_LINK_PCIE;
    case hcomm::PairLink::Roce: return HCOMM_LINK_ROCE;
    default: return HCOMM_LINK_NONE;
  }
}

int discover_main(const std::vector<std::string>& argv) {
  std::string file;
  bool cross_check = false, quiet = false, inherit_env = false;
  std::uint64_t timeout_ms = 1000;
  const Args args(kDiscover,
                  {{"--cross-check", "", "", "", "also compare the library's link choice with the simulator's oracle (Driver::pair_link) pair by pair",
                    [&](const std::string&) { cross_check = true; return std::string(); }},
                   {"--timeout-ms", "", "MS", "a number of milliseconds", "how long a root waits for a rank (simulated; HCOMM_TIMEOUT_MS, 1000-300000, default 1000)",
                    [&](const std::string& v) {
                      std::string why;
                      const auto x = sim::parse_uint(v, &why);
                      if (!x || *x < 1000 || *x > 300000) return "--timeout-ms needs 1000..300000, got \"" + v + "\"";
                      timeout_ms = *x;
                      return std::string();
                    }},
                   {"--quiet", "-q", "", "", "print only the differences and the verdict", [&](const std::string&) { quiet = true; return std::string(); }},
                   {"--inherit-env", "", "", "", "let the library read this shell's HCOMM_*/HCCL_* variables (default: ignored)",
                    [&](const std::string&) { inherit_env = true; return std::string(); }}},
                  {"SCENARIO|TOPOLOGY", "a scenario (its topology is used) or a topology file", [&](const std::string& a) {
                     if (!file.empty()) return std::string("discover takes one file");
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("discover needs a scenario or topology file");
  {
    sim::CallerEnv env;
    std::string why;
    if (!sim::take_caller_env(inherit_env, &env, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    if (const std::string note = sim::env_ignored_note(env); !note.empty()) std::fprintf(stderr, "hcsim: %s\n", note.c_str());
  }

  sim::Topology topo;
  {
    sim::Diagnostics d(file);
    auto j = sim::read_json_file(file, d);
    std::vector<std::string> errs;
    if (j && sim::document_kind(*j) == "scenario") {
      auto sc = sim::load_scenario(file, &errs);
      if (sc) topo = sc->topology;
    } else if (j) {
      auto k = file.find_last_of('/');
      auto t = sim::topology_from_json(*j, d, k == std::string::npos ? "" : file.substr(0, k + 1));
      if (t) topo = *t;
      errs = d.messages();
    } else {
      errs = d.messages();
    }
    if (!errs.empty() || topo.npus.empty()) {
      for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
      return kBadInput;
    }
  }
  const std::uint32_t N = static_cast<std::uint32_t>(topo.rank_to_npu.size());
  std::vector<bool> missing(topo.npus.size(), false);
  for (std::uint32_t n : topo.as_built.npus_missing) missing[n] = true;
  setenv("HCOMM_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);

  std::vector<RankOut> out(N);
  std::vector<std::string> mismatches;  // cross-check
  std::uint64_t checked_pairs = 0, ctrl_msgs = 0, ctrl_bytes = 0;
  const auto wall0 = std::chrono::steady_clock::now();
  sim::RankProgram program = [&](std::uint32_t r) {
    const std::uint32_t npu = topo.rank_to_npu[r];
    if (missing[npu]) return;  // never joins
    RankOut& o = out[r];
    o.joined = true;
    hcomm_context_t ctx = nullptr;
    o.init = hcomm_create_context(topo.npus[npu].device_id, &ctx);
    if (o.init != HCOMM_SUCCESS) return;
    hcomm::DeviceRuntime* rt = hcomm::drivers().runtime;
    o.t_begin_ns = rt->now_ns();
    hcomm_comm_t comm = nullptr;
    o.init = hcomm_comm_init(ctx, N, r, &comm);
    o.t_end_ns = rt->now_ns();
    if (o.init != HCOMM_SUCCESS) {
      const char* why = "";
      hcomm_get_discovery_error(ctx, &why);
      o.error = why;
      return;
    }
    hcomm_get_topology_rank(comm, r, &o.rec);
    if (r == 0) {
      if (cross_check) {
        // Every pair up to 1024 ranks; beyond, every pair inside a server and 16 strides across.
        auto check = [&](std::uint32_t a, std::uint32_t b) {
          hcomm_topo_link_t l{};
          hcomm_get_topology(comm, a, b, &l);
          const std::uint32_t want = pair_bit(rt->pair_link(topo.rank_to_npu[a], topo.rank_to_npu[b]));
          ++checked_pairs;
          if (l.link_type != want && mismatches.size() < 20)
            mismatches.push_back("rank " + std::to_string(a) + " -> rank " + std::to_string(b) + ": discovery " + link_name(l.link_type) +
                                 ", pair_link " + link_name(want));
        };
        if (N <= 1024) {
          for (std::uint32_t a = 0; a < N; ++a)
            for (std::uint32_t b = 0; b < N; ++b) check(a, b);
        } else {
          for (const auto& srv : topo.servers)
            for (std::uint32_t x : srv.npus)
              for (std::uint32_t y : srv.npus) {
                std::uint32_t a = ~0u, b = ~0u;
                for (std::uint32_t k = 0; k < N && (a == ~0u || b == ~0u); ++k) {
                  if (topo.rank_to_npu[k] == x) a = k;
                  if (topo.rank_to_npu[k] == y) b = k;
                }
                if (a != ~0u && b != ~0u) check(a, b);
                if (&srv - topo.servers.data() >= 8) break;  // the first 8 servers' pairs; the rest by stride
              }
          for (std::uint32_t a = 0; a < N; ++a)
            for (std::uint32_t k = 1; k <= 16; ++k) check(a, (a + k * 8 + k) % N);
        }
      }
    }
    hcomm_comm_destroy(comm);
    hcomm_destroy_context(ctx);
  };
  std::uint64_t sim_ps = 0;
  try {
    sim::RunOptions opt;
    sim_ps = sim::run_program(topo, program, opt, false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hcsim: %s\n", e.what());
    return kBadInput;
  }
  if (auto* hc = dynamic_cast<sim::SimHostChannel*>(hcomm::drivers().host)) {
    ctrl_msgs = hc->ctrl().messages_sent();
    ctrl_bytes = hc->ctrl().bytes_received();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  // What should be (the description) against what is (the records).
  std::vector<std::int64_t> npu_rank(topo.npus.size(), -1);
  for (std::uint32_t r = 0; r < N; ++r) npu_rank[topo.rank_to_npu[r]] = r;
  auto npu_name = [&](std::uint32_t server, std::uint32_t dev) -> std::string {
    if (server < topo.servers.size() && dev < topo.servers[server].npus.size()) return topo.npus[topo.servers[server].npus[dev]].name;
    return "server " + std::to_string(server) + " device " + std::to_string(dev) + " (not in the description)";
  };
  std::vector<std::string> diffs;
  std::uint64_t ports_up = 0, ports_cabled = 0, pcie_peers = 0, joined = 0, nics_up = 0;
  std::uint64_t t_disc_ns = 0;
  for (std::uint32_t n = 0; n < topo.npus.size(); ++n) {
    const auto& spec = topo.npus[n];
    if (npu_rank[n] < 0) continue;  // not in this run
    const RankOut& o = out[static_cast<std::size_t>(npu_rank[n])];
    if (!o.joined || o.init != HCOMM_SUCCESS) {
      if (!o.joined) diffs.push_back(spec.name + " (rank " + std::to_string(npu_rank[n]) + "): expected present, found: never joined");
      continue;
    }
    ++joined;
    t_disc_ns = std::max(t_disc_ns, o.t_end_ns - o.t_begin_ns);
    // Expected HCCS ports of this NPU: port number -> partner NPU.
    std::vector<std::int64_t> want(hcomm::kHccsPortCount, -1);
    for (const auto& l : topo.links) {
      if (l.type != sim::LinkType::Hccs) continue;
      if (l.a.index == n && l.a.port < want.size()) want[l.a.port] = l.b.index;
      if (l.b.index == n && l.b.port < want.size()) want[l.b.port] = l.a.index;
    }
    std::vector<bool> seen(hcomm::kHccsPortCount, false);
    for (std::uint32_t i = 0; i < o.rec.nports && i < 8; ++i) {
      const hcomm_topo_port_t& p = o.rec.ports[i];
      ++ports_cabled;
      seen[p.port] = true;
      const std::string where = spec.name + " HCCS port " + std::to_string(p.port);
      if (want[p.port] < 0) { diffs.push_back(where + ": expected not cabled, found cabled"); continue; }
      const std::string expect = topo.npus[static_cast<std::size_t>(want[p.port])].name;
      if (!p.up) { diffs.push_back(where + ": expected up to " + expect + ", found down (never trained)"); continue; }
      ++ports_up;
      const std::string found = npu_name(p.partner_server, p.partner_device_id);
      if (found != expect) diffs.push_back(where + ": expected partner " + expect + ", found " + found);
    }
    for (std::uint32_t p = 0; p < want.size(); ++p)
      if (want[p] >= 0 && !seen[p]) diffs.push_back(spec.name + " HCCS port " + std::to_string(p) + ": expected cabled to " +
                                                    topo.npus[static_cast<std::size_t>(want[p])].name + ", found not cabled");
    pcie_peers += static_cast<std::uint64_t>(__builtin_popcount(o.rec.pcie_peers));
    // The NIC: its LLDP neighbour (switch, port) and its IP against the description's cabling.
    std::string want_sw;
    std::uint32_t want_port = 0;
    for (const auto& l : topo.links) {
      if (l.type != sim::LinkType::Roce || l.a.is_switch == l.b.is_switch) continue;
      const sim::Endpoint& npu_end = l.a.is_switch ? l.b : l.a;
      const sim::Endpoint& sw_end = l.a.is_switch ? l.a : l.b;
      if (npu_end.index == n) { want_sw = topo.switches[sw_end.index].name; want_port = sw_end.port; }
    }
    if (o.rec.nic_present) ++nics_up;
    if (!want_sw.empty()) {
      const std::string where = spec.name + " NIC";
      if (!o.rec.nic_present || !o.rec.nic_up) diffs.push_back(where + ": expected up to " + want_sw + " port " + std::to_string(want_port) + ", found down");
      else if (want_sw != o.rec.nic_neighbor || want_port != o.rec.nic_neighbor_port)
        diffs.push_back(where + ": expected switch " + want_sw + " port " + std::to_string(want_port) + ", found switch " +
                        (o.rec.nic_neighbor[0] ? o.rec.nic_neighbor : "(none)") + " port " + std::to_string(o.rec.nic_neighbor_port));
      if (spec.device_ip && o.rec.nic_ip != spec.device_ip)
        diffs.push_back(where + ": expected IP " + sim::format_ipv4(spec.device_ip) + ", found " + sim::format_ipv4(o.rec.nic_ip));
    }
  }
  // Ranks that joined but whose init failed: the library's own error, naming the rank.
  std::set<std::string> errors;
  for (std::uint32_t r = 0; r < N; ++r)
    if (out[r].joined && out[r].init != HCOMM_SUCCESS)
      errors.insert(out[r].error.empty() ? "rank " + std::to_string(r) + ": init failed (" + std::to_string(out[r].init) + ")" : out[r].error);

  if (!quiet) {
    std::printf("discover %s: %u ranks on %zu servers, %llu joined\n", topo.name.c_str(), N, topo.servers.size(),
                static_cast<unsigned long long>(joined));
    std::printf("  HCCS ports      %llu cabled, %llu up\n", static_cast<unsigned long long>(ports_cabled), static_cast<unsigned long long>(ports_up));
    std::printf("  PCIe p2p peers  %llu (device pairs, one way)\n", static_cast<unsigned long long>(pcie_peers));
    std::printf("  NICs            %llu present\n", static_cast<unsigned long long>(nics_up));
    std::printf("  bootstrap       %llu control messages, %llu bytes delivered\n", static_cast<unsigned long long>(ctrl_msgs),
                static_cast<unsigned long long>(ctrl_bytes));
    std::printf("  discovery time  %.3f us simulated (slowest rank's communicator init), %.3f us simulated in all, %.2f s wall\n",
                static_cast<double>(t_disc_ns) / 1e3, static_cast<double>(sim_ps) / 1e6, wall);
    if (cross_check)
      std::printf("  cross-check     %llu pairs against pair_link, %zu disagree\n", static_cast<unsigned long long>(checked_pairs),
                  mismatches.size());
  }
  for (const auto& e : errors) std::printf("error: %s\n", e.c_str());
  for (const auto& d : diffs) std::printf("difference: %s\n", d.c_str());
  for (const auto& m : mismatches) std::printf("cross-check: %s\n", m.c_str());
  if (diffs.empty() && errors.empty() && mismatches.empty()) {
    std::printf("hcsim: discovery matches the description\n");
    return kOk;
  }
  std::printf("hcsim: FAIL: %zu differences, %zu errors, %zu cross-check disagreements\n", diffs.size(), errors.size(), mismatches.size());
  return kExpectationFailed;
}

}  // namespace

const Command kDiscover = {
    "discover", "discover SCENARIO|TOPOLOGY [--cross-check] [--timeout-ms MS] [--quiet] [--inherit-env]",
    "        run the library's topology discovery (probe + bootstrap) on the hardware as built\n"
    "        (/as_built) and report its differences from the description per NPU and HCCS port;\n"
    "        exit 0 when everything matches, 1 with a report of expected vs found, 2 for bad input\n",
    discover_main};

}  // namespace hcsim
