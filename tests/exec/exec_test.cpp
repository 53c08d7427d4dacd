// hcsim exec against the in-process runner (docs/exec.md#time): the same rank program, run in the
// simulator's own rank threads and as one OS process per rank under `hcsim exec`, gets the same
// simulated time after every operation, to the ns, and the same (host-checked) results.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "in_process.h"
#include "ops_program.h"
#include "sim/config/scenario.h"
#include "sim/runner.h"

namespace {

std::string scenario_file() {
  const std::string path = ::testing::TempDir() + "exec_identity.json";
  std::ofstream(path) << R"({"format": "hcsim-scenario", "version": 1, "name": "exec-identity", "topology": ")" << HCSIM_SOURCE_DIR
                      << R"(/topologies/a2-2node.json", "payload": "real", "workload": []})";
  return path;
}

TEST(Exec, SameSimulatedTimesAndResultsAsInProcess) {
  const std::string scen = scenario_file();
  // Under exec first (a child process: this process keeps its one simulation for the in-process run).
  const std::string cmd = std::string(HCSIM_BIN) + " exec " + scen + " --no-trace -q -- " + OPS_PROGRAM + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::map<std::uint32_t, std::vector<std::uint64_t>> exec_times;
  std::string all;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    all += line;
    std::istringstream in(line);
    std::string word, times;
    std::uint32_t r = 0;
    std::uint64_t wrong = 0;
    if (!(in >> word >> r) || word != "rank" || !(in >> word >> wrong) || word != "wrong" || !(in >> times) || times != "times") continue;
    EXPECT_EQ(wrong, 0u) << "rank " << r << " under exec";
    for (std::uint64_t t; in >> t;) exec_times[r].push_back(t);
  }
  ASSERT_EQ(pclose(p), 0) << all;

  std::vector<std::string> errs;
  auto sc = sim::load_scenario(scen, &errs);
  ASSERT_TRUE(sc) << (errs.empty() ? "" : errs[0]);
  std::vector<exec_test::OpsResult> results(sc->topology.rank_to_npu.size());
  exec_test::InProcess host(sc->topology, [&](std::uint32_t r, std::uint32_t n, std::uint32_t dev) { results[r] = exec_test::run_ops(r, n, dev); });
  sim::RunOptions opt;
  opt.echo_logs = false;
  opt.host = &host;
  const auto r = sim::run_scenario(*sc, opt);
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(exec_times.size(), results.size()) << all;
  for (std::uint32_t k = 0; k < results.size(); ++k) {
    const auto& in = results[k];
    EXPECT_EQ(in.error, "") << "rank " << k;
    EXPECT_EQ(in.wrong, 0u) << "rank " << k;
    ASSERT_EQ(in.times_ns.size(), 8u) << "rank " << k;
    EXPECT_EQ(exec_times[k], in.times_ns) << "rank " << k;
  }
}

}  // namespace
