// Shared by the simulation tests (each its own executable: one simulation per process).
#pragma once
#include <optional>
#include <string>

#include "sim/config/topology.h"
#include "sim/runner.h"

namespace sim_test {

/// A preset from topologies/ (problems are reported by the caller's ASSERT on the result).
inline std::optional<sim::Topology> preset(const std::string& file) {
  sim::Diagnostics d(file);
  return sim::load_topology(std::string(HCSIM_SOURCE_DIR) + "/topologies/" + file, d);
}

/// Run options for tests: no trace, library log lines not echoed.
inline sim::RunOptions quiet() {
  sim::RunOptions opt;
  opt.echo_logs = false;
  return opt;
}

}  // namespace sim_test
