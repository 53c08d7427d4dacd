// Scenario runner: builds the machine from the topology, starts one SC_THREAD per rank running the
// scenario's workload through the public hcomm API, checks every result against a host reference,
// records the trace and evaluates the expectations. One run per process (SystemC cannot reset).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/live.h"

namespace sim {

struct RunOptions {
  std::string db_path;        ///< empty: no trace
  bool force_db = false;      ///< replace db_path even if it is not an hcsim trace (Trace::open)
  bool echo_logs = true;      ///< library log lines to stderr
  /// SDMA/HCCS transfer pieces (docs/models/links.md); 0: 256 KiB, or 4 MiB in the flow tier,
  /// which trades the interleaving of concurrent copies on a link for fewer events.
  std::uint64_t piece_bytes = 0;
  std::string fidelity = "chunk";  ///< run_program: network tier (set_fidelity)
  LiveOptions live;                ///< run_scenario: progress / --top (live.h)
  /// counter_samples interval in ps (0: off); -1: the scenario's /trace/sample_interval.
  std::int64_t sample_interval_ps = -1;
  bool trace_tasks = false;        ///< write the `tasks` table (also when the scenario's /trace/tasks says so)
};

struct StepSummary {
  std::uint32_t step = 0, rep = 0;
  std::string kind;
  std::uint64_t bytes = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::uint32_t checked = 0, failed = 0;
};

struct RunResult {
  int exit_code = 0;                   ///< 0 all expectations held, 1 one failed, 2 the trace failed,
                                       ///< 128+signal stopped by a signal (stop.h)
  int signal = 0;                      ///< the signal that stopped the run, 0 if none
  std::string trace_error;             ///< why the trace could not be written (Trace::error)
  std::vector<StepSummary> steps;
  std::vector<std::string> failures;   ///< why the expectations failed
  std::uint64_t sim_end_ps = 0, events = 0;
  std::uint64_t events_peak = 0;       ///< the most fabric events pending at once
  std::map<std::string, double> counters;  ///< hardware counters at the end (counter_names())
  /// Ranks that failed or did not finish: "rank 3 (node0/npu3): failed in step 0 rep 1: hcomm_...: ..."
  std::vector<std::string> rank_outcomes;
  std::vector<std::string> faults;     ///< every fault injected, as logged
  std::string status;                  ///< run.status: ok, failed, expectations failed, interrupted
  double wall_s = 0;
};

RunResult run_scenario(const Scenario& sc, const RunOptions& opt);

/// Run `program(rank)` in every rank's SC_THREAD on the given topology instead of a scenario
/// workload (tests and tools that drive the hcomm API directly). Returns the final simulated time.
using RankProgram = std::function<void(std::uint32_t rank)>;
std::uint64_t run_program(const Topology& topo, const RankProgram& program, const RunOptions& opt = {},
                          bool store_bytes = true);

/// Pretty summary as printed by `hcsim run`.
std::string format_summary(const Scenario& sc, const RunResult& r);

}  // namespace sim
