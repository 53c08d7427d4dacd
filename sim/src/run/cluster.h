// The running cluster (docs/architecture.md#sim): one SystemC module holding the elaborated models,
// the simulated driver, the fault injector (run/faults.h) and one SC_THREAD per rank. Its methods
// are in cluster.cpp (rank lifecycle, rendezvous, a rank's death); the workload interpreter is
// class Workload (run/workload.h), the result checks class ResultChecks (run/checks.h), the
// train_step steps class TrainSteps (run/train_step.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <systemc>

#include "elaborate.h"
#include "hcomm/hcomm.h"
#include "run/checks.h"
#include "run/failure.h"
#include "run/faults.h"
#include "run/members.h"
#include "run/rank_services.h"
#include "run/train_step.h"
#include "run/workload.h"
#include "sim/driver.h"
#include "sim/payload.h"
#include "sim/run_types.h"
#include "sim/config/scenario.h"
#include "sim/trace.h"

namespace sim {

class Cluster : public sc_core::sc_module, public RankLife, private FaultTarget, private RankServices {
 public:
  Cluster(sc_core::sc_module_name n, const Scenario& sc, const RunOptions& opt, Trace* trace);

  RankProgram program;  ///< run_program: replaces the scenario workload
  RankHost* host_ = nullptr;  ///< run_scenario with RunOptions::host: replaces the scenario workload
  /// RankLife: rank r's own program died (exec): lost as a rank_crash fault loses it.
  void died(std::uint32_t r, const std::string& why) override;
  void end_thread(std::uint32_t r) override;
  Trace* trace_ = nullptr;
  std::vector<Failure> failures;
  /// The payload result checks: references and per-step tallies.
  ResultChecks& checks() { return *checks_; }
  std::vector<bool> done_;          ///< per rank: finished its workload
  std::vector<std::uint64_t> ops_done_;  ///< per rank: workload operations (step repetitions) completed (live.h)
  std::uint64_t ops_total_ = 0;          ///< workload operations per rank (sum of repeats)
  std::vector<bool> stopped_;            ///< per rank: its program ended on a failed call (/on_rank_loss stop)
  /// Per rank: the first error it got ("hcomm_stream_synchronize: HCOMM_E_TIMEOUT ..."; "" none)
  /// and the step/rep it was in then (operations.status/error, the summary's rank outcomes).
  std::vector<std::string> rank_error_;
  std::vector<hcomm_result_t> rank_rc_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rank_at_;  ///< per rank: current step, rep
  std::vector<models::Tick> rank_err_ps_;                         ///< per rank: when it got its first error
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rank_err_at_;  ///< per rank: step, rep of its first error
  /// Per rank: the first error in each (step, rep) it got one in: result, "call: message", when.
  struct StepError { hcomm_result_t rc = HCOMM_SUCCESS; std::string error; models::Tick t = 0; };
  std::vector<std::map<std::pair<std::uint32_t, std::uint32_t>, StepError>> step_errors_;

  /// The train_step steps: what their repetitions measured.
  TrainSteps& train() { return *train_; }

  /// Whether a rank_crash fault killed rank r.
  bool crashed(std::uint32_t r) const { return r < crashed_.size() && crashed_[r]; }

  // cluster.cpp
  void start_ranks();
  std::uint32_t nranks() const { return nranks_; }
  models::Machine& machine() { return elab_.machine; }
  models::Network* network() { return elab_.net.get(); }
  SimDriver& driver() { return *driver_; }
  ScScheduler& sched() { return elab_.sched; }
  /// The scenario workload's interpreter.
  Workload& workload() { return *workload_; }

  /// The scenario's faults: when each fired, and the log of every injection.
  FaultInjector& faults() { return *faults_; }

 private:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t kStack = 1024 * 1024;
#else
  static constexpr std::size_t kStack = 128 * 1024;
#endif
  // cluster.cpp
  void rank_finished(std::uint32_t r);
  void rendezvous() override;
  void rv_release();
  void depart(std::uint32_t r);
  bool ok(std::uint32_t r, const char* what, hcomm_result_t rc) override;
  void enter(std::uint32_t r, std::uint32_t s, std::uint32_t rep) override;
  void ops_done(std::uint32_t r, std::uint64_t n) override { ops_done_[r] = n; }
  void stop(std::uint32_t r) override { stopped_[r] = true; }

  void rank_main(std::uint32_t r);
  // cluster.cpp: a rank dies (a rank_crash fault, or its process under exec).
  void crash_fault(std::uint32_t r) override;
  /// Rank r dies: device, heartbeat, NIC; its thread is killed unless it is the caller. True
  /// when that ended a thread (counted as finished).
  bool crash_rank(std::uint32_t r, const std::string& why, bool kill_thread);
  /// Ranks a rank_crash killed. A crash at time 0 can precede the rank's first run, when
  /// SystemC's kill() of the process does not stop it: rank_main then ends at once.
  std::vector<bool> crashed_;

  const Scenario& sc_;
  Elaboration elab_;
  std::uint32_t nranks_;
  std::unique_ptr<SimDriver> driver_;
  std::unique_ptr<FaultInjector> faults_;
  std::unique_ptr<ResultChecks> checks_;
  std::unique_ptr<TrainSteps> train_;
  std::unique_ptr<Workload> workload_;
  std::vector<sc_core::sc_process_handle> procs_;  // rank threads
  std::uint32_t finished_ = 0;
  // Host-side rendezvous (cluster.cpp).
  std::uint32_t rv_expected_ = 0, rv_arrived_ = 0;
  std::uint64_t rv_gen_ = 0;
  sc_core::sc_event rv_ev_;
  std::vector<bool> departed_;
};

}  // namespace sim
