// The running cluster (docs/architecture.md#sim): one SystemC module holding the elaborated models,
// the simulated driver, the fault injector (run/faults.h) and one SC_THREAD per rank. Its methods
// live by concern: cluster.cpp (rank lifecycle, rendezvous, a rank's death), workload.cpp (the
// per-rank program); the result checks are class ResultChecks (run/checks.h).
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
#include "sim/driver.h"
#include "sim/payload.h"
#include "sim/run_types.h"
#include "sim/config/scenario.h"
#include "sim/trace.h"

namespace sim {

class Cluster : public sc_core::sc_module, public RankLife, private FaultTarget {
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
  /// Per rank: "shrunk to 15 ranks (lost 9) at 1585.751 us" for each /on_rank_loss shrink it did.
  std::vector<std::string> rank_recovery_;
  /// Per rank: the asynchronous reports its communicator's error callback got (the simulated
  /// application registers one, docs/failover.md#the-applications-view), e.g. HCOMM_I_FAILOVER.
  std::vector<std::vector<hcomm_result_t>> async_reports_;

  /// train_step: per (step, rep), per rank, what it measured (train_step.cpp).
  struct TrainMeas {
    bool done = false;
    models::Tick t0 = 0, end = 0, compute = 0, comm = 0;
    std::uint64_t grad_bytes = 0;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<TrainMeas>> train_meas_;
  /// The train_step repetitions every rank finished, in (step, rep) order.
  std::vector<TrainStepReport> train_reports() const;

  /// Whether a rank_crash fault killed rank r.
  bool crashed(std::uint32_t r) const { return r < crashed_.size() && crashed_[r]; }

  // cluster.cpp
  void start_ranks();
  std::uint32_t nranks() const { return nranks_; }
  models::Machine& machine() { return elab_.machine; }
  models::Network* network() { return elab_.net.get(); }
  SimDriver& driver() { return *driver_; }
  ScScheduler& sched() { return elab_.sched; }
  bool incast_sender(const WorkloadStep& w, std::uint32_t r) const;

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
  void rendezvous();
  void rv_release();
  void depart(std::uint32_t r);
  bool ok(std::uint32_t r, const char* what, hcomm_result_t rc);
  std::uint32_t partner(const WorkloadStep& w, std::uint32_t r) const;

  // workload.cpp
  void rank_main(std::uint32_t r);
  /// One rank's program state while it runs the scenario workload.
  struct RankState {
    std::uint32_t r;
    hcomm_context_t ctx;
    hcomm_comm_t comm;
    hcomm_stream_t st, st2;
    std::uint64_t started;  ///< operations begun: the ones before the current are done (live.h)
    Members members;        ///< the communicator's ranks (original numbers) in its rank order
    std::uint32_t me;       ///< this rank's index in members
  };
  /// One step's buffers on one rank (real: the payload is generated and checked).
  struct StepBuffers {
    const WorkloadStep& w;
    std::uint32_t s;
    std::uint64_t count;
    bool real;
    void* in;
    void* out;
    unsigned char* host;
  };
  bool run_step(RankState& k, std::uint32_t s);
  bool run_rep(RankState& k, const StepBuffers& b, std::uint32_t rep);
  bool send_input(RankState& k, const StepBuffers& b, std::uint32_t rep);
  bool run_barrier(RankState& k);
  bool run_collective(RankState& k, const StepBuffers& b);
  bool run_sendrecv(RankState& k, const StepBuffers& b, std::uint32_t rep);
  bool check_output(RankState& k, const StepBuffers& b, std::uint32_t rep);
  struct CallbackCtx { Cluster* c; std::uint32_t r; };
  std::vector<CallbackCtx> cb_ctx_;
  static void on_async_report(hcomm_comm_t comm, hcomm_result_t code, const char* msg, void* user);
  void watch(std::uint32_t r, hcomm_comm_t comm);
  bool incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_context_t ctx, hcomm_comm_t comm,
              hcomm_stream_t st, void* in, unsigned char* host);
  /// /on_rank_loss "shrink": replace *comm by the survivors of its recovery agreement's lost ranks
  /// (*members: the original ranks of the communicator in its order, *me: this rank's index).
  bool shrink_comm(std::uint32_t r, hcomm_comm_t* comm, Members* members, std::uint32_t* me);
  bool host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev,
                 std::uint8_t* host, bool real);

  // train_step.cpp: one train_step step of rank r (false: a call failed, the program ends).
  bool train_step(std::uint32_t r, std::uint32_t s, const WorkloadStep& w, hcomm_context_t ctx, hcomm_comm_t comm, std::uint64_t* started);

  /// Incast, at the root: every sender's segment of the symmetric buffer against what it sent.
  /// False if reading the buffer back failed.
  bool check_incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* sym,
                    unsigned char* host);

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
  std::vector<sc_core::sc_process_handle> procs_;  // rank threads
  std::uint32_t finished_ = 0;
  // Host-side rendezvous (cluster.cpp).
  std::uint32_t rv_expected_ = 0, rv_arrived_ = 0;
  std::uint64_t rv_gen_ = 0;
  sc_core::sc_event rv_ev_;
  std::vector<bool> departed_;
  std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> member_lists_;  // shrinks' survivor lists, shared
};

}  // namespace sim
