// Running a shipped scenario file with a trace, checking its results and reading numbers back from
// the trace, for the failover and detection tests (one simulation per process: one scenario per test).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/runner.h"
#include "sim_test_db.h"
#include "sim_test_util.h"

namespace sim_test {

/// The first column of the query's first row as a number; -1 when there is none (or it is NULL).
inline double num(const std::string& db, const std::string& sql) {
  auto r = query(db, sql);
  return r.empty() || r[0].empty() || r[0][0].empty() ? -1 : std::stod(r[0][0]);
}

/// Run scenarios/FILE (or FILE relative to the source tree when it has a slash), changed by `edit`
/// first, with its trace written to `db`; load errors are test failures.
inline sim::RunResult run_file(const std::string& file, const std::string& db, const std::function<void(sim::Scenario&)>& edit = {}) {
  std::vector<std::string> errors;
  auto sc = sim::load_scenario(std::string(HCSIM_SOURCE_DIR) + (file.find('/') == std::string::npos ? "/scenarios/" : "/") + file,
                               &errors);
  for (auto& e : errors) ADD_FAILURE() << e;
  if (!sc) return {};
  static sim::Scenario keep;  // the run refers to it until the simulation ends
  keep = *sc;
  if (edit) edit(keep);
  sim::RunOptions opt = quiet();
  opt.db_path = db;
  opt.force_db = true;
  return sim::run_scenario(keep, opt);
}

/// The run ended well: no failures, exit code 0, and `steps` steps whose results were each checked
/// against the host reference on `ranks` ranks, none wrong. A wrong step count is fatal (wrap the
/// call in ASSERT_NO_FATAL_FAILURE to end the test there).
inline void expect_checked(const sim::RunResult& r, std::size_t steps, std::size_t ranks) {
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.steps.size(), steps);
  for (auto& s : r.steps) {
    EXPECT_EQ(s.checked, ranks);
    EXPECT_EQ(s.failed, 0u);
  }
}

/// A trace path in the test's temporary directory: NAME_PID.db.
inline std::string tmp_db(const char* name) {
  return ::testing::TempDir() + name + std::string("_") + std::to_string(::getpid()) + ".db";
}

}  // namespace sim_test
