// The runner's value types (sim/runner.h runs with them): what drives the ranks, the options of a
// run and its result. The runner's parts (sim/src/run/) include this, not runner.h, which sits
// above them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/live.h"

namespace sim {

class SimDriver;

/// What a run's ranks are to whoever drives them instead of the scenario workload.
class RankLife {
 public:
  virtual ~RankLife() = default;
  /// Rank r's program died (its process crashed or was killed): the rank is lost as a rank_crash
  /// fault loses it (its device dies, its host connections close). Called in r's own thread.
  virtual void died(std::uint32_t r, const std::string& why) = 0;
  /// End rank r's thread where it is (unwinding it), when the run is being ended early.
  virtual void end_thread(std::uint32_t r) = 0;
};

/// Drives the ranks itself instead of the scenario workload (hcsim exec: users' own processes,
/// docs/exec.md). run_scenario calls attach() before the ranks start, run(r) in rank r's thread
/// (the rank ends when it returns), and killed(r) when a rank_crash fault ended r's thread.
class RankHost {
 public:
  virtual ~RankHost() = default;
  virtual void attach(SimDriver& drv, RankLife& life) = 0;
  virtual void run(std::uint32_t r) = 0;
  virtual void killed(std::uint32_t r) = 0;
};

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
  /// run_scenario: `provenance` rows the caller knows (command_line, overrides, env_ignored,
  /// env_inherited); it adds hcsim_version, hcsim_commit, scenario_json and topology_json
  /// (docs/trace-schema.md#provenance).
  std::vector<std::pair<std::string, std::string>> provenance;
  RankHost* host = nullptr;        ///< run_scenario: drives the ranks instead of the workload (exec)
};

struct StepSummary {
  std::uint32_t step = 0, rep = 0;
  std::string kind;
  std::uint64_t bytes = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::uint32_t checked = 0, failed = 0;
  std::uint64_t start_ps = 0, end_ps = 0;  ///< first rank's start, last rank's end
};

/// A train_step repetition (docs/training-steps.md#what-is-reported; the trace's `train_steps`).
/// The critical rank is the one that finished last; exposed = iteration - compute on it.
struct TrainStepReport {
  std::uint32_t step = 0, rep = 0, ranks = 0, critical_rank = 0;
  double iteration_us = 0, compute_us = 0, comm_us = 0, exposed_comm_us = 0, overlap = 0;
  std::uint64_t grad_bytes = 0;  ///< gradient bytes the critical rank all-reduced over its data-parallel group
};

/// What an injected fault did (docs/tools.md#fault-report; the trace's `faults` table).
struct FaultReport {
  std::string type, target;
  bool fired = false;
  std::uint64_t injected_ps = 0, last_transition_ps = 0;  ///< first and last transition (fired only)
  std::uint32_t transitions = 0;
  std::uint64_t at_ps = 0;  ///< when it was due (absolute faults; 0 for relative ones never armed)
  std::size_t detections = 0;                               ///< failovers rows that followed it
  std::uint64_t first_detect_ns = 0, last_detect_ns = 0;
  std::map<std::string, std::vector<std::uint32_t>> actions;  ///< action -> ranks that took it
  std::uint64_t resumed_ns = 0;                             ///< 0: no traffic resumed after it
  std::uint64_t bytes_resent = 0;
  std::int64_t step = -1, rep = -1;                         ///< the repetition in flight when it fired
  double op_time_us = -1, median_us = -1;                   ///< that repetition; its step's untouched ones (-1: none)
};

struct RunResult {
  int exit_code = 0;                   ///< 0 all expectations held, 1 one failed, 2 the trace failed,
                                       ///< 128+signal stopped by a signal (stop.h)
  int signal = 0;                      ///< the signal that stopped the run, 0 if none
  std::string trace_error;             ///< why the trace could not be written (Trace::error)
  std::vector<StepSummary> steps;
  std::vector<TrainStepReport> train;  ///< one per train_step repetition every rank finished
  std::vector<std::string> failures;   ///< why the expectations failed
  std::uint64_t sim_end_ps = 0, events = 0;
  std::uint64_t events_peak = 0;       ///< the most fabric events pending at once
  std::map<std::string, double> counters;  ///< hardware counters at the end (counter_names())
  /// Ranks that failed or did not finish: "rank 3 (node0/npu3): failed in step 0 rep 1: hcomm_...: ..."
  std::vector<std::string> rank_outcomes;
  /// Ranks whose call failed on a rank loss and that finished their workload on a shrunk
  /// communicator (/on_rank_loss "shrink"): "rank 3 (node0/npu3): ..., then shrunk to 15 ranks ..."
  std::vector<std::string> rank_recovered;
  std::string outcome;                 ///< survived, aborted or shrunk (expect/outcome's terms)
  std::vector<std::string> faults;     ///< every fault injection, as logged
  std::vector<FaultReport> fault_reports;  ///< one per fault of the scenario, in its order
  std::vector<std::string> warnings;   ///< pathologies the run showed (timeouts, drops, PFC storms, outliers, unfired faults)
  bool op_retry_off_abort = false;     ///< a fault aborted an operation that op retry could have retried
  std::string status;                  ///< run.status: ok, failed, expectations failed, interrupted
  double wall_s = 0;
};

/// A program run in every rank's SC_THREAD instead of a scenario workload (run_program).
using RankProgram = std::function<void(std::uint32_t rank)>;

}  // namespace sim
