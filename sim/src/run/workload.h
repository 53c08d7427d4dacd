// The workload interpreter (docs/scenario-format.md#workload): class Workload (workload.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"
#include "models/machine.h"
#include "run/checks.h"
#include "run/failure.h"
#include "run/faults.h"
#include "run/members.h"
#include "run/rank_services.h"
#include "run/train_step.h"
#include "sim/config/scenario.h"
#include "sim/driver.h"

namespace sim {

/// The program every rank runs in its SC_THREAD when the scenario's workload drives it: through
/// the public hcomm API it allocates, fills, runs each step's operation and checks the result.
/// It owns each rank's error-callback context and the reports it got, the survivor lists of the
/// shrinks and each rank's recovery log; it asks the cluster through RankServices, flips the
/// injector's bit flips after the operation they corrupt, and records checks in ResultChecks.
class Workload {
 public:
  Workload(const Scenario& sc, std::uint32_t nranks, models::Machine& machine, SimDriver& driver, RankServices& ranks,
           FaultInjector& faults, ResultChecks& checks, TrainSteps& train, std::vector<Failure>& failures);
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  /// Rank r's whole program. False: it could not start (no context, communicator or stream) and
  /// left at once; true: it ran its steps until the last or a failed call.
  bool run(std::uint32_t r);
  /// Whether rank r sends in incast step w.
  bool incast_sender(const WorkloadStep& w, std::uint32_t r) const;
  /// Per rank: "shrunk to 15 ranks (lost 9) at 1585.751 us" for each /on_rank_loss shrink it did.
  const std::vector<std::string>& recovery() const { return recovery_; }
  /// Per rank: the asynchronous reports its communicator's error callback got (the simulated
  /// application registers one, docs/failover.md#the-applications-view), e.g. HCOMM_I_FAILOVER.
  const std::vector<std::vector<hcomm_result_t>>& async_reports() const { return async_reports_; }

 private:
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
  struct CallbackCtx { Workload* w; std::uint32_t r; };
  std::vector<CallbackCtx> cb_ctx_;
  static void on_async_report(hcomm_comm_t comm, hcomm_result_t code, const char* msg, void* user);
  void watch(std::uint32_t r, hcomm_comm_t comm);
  bool incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_context_t ctx, hcomm_comm_t comm,
              hcomm_stream_t st, void* in, unsigned char* host);
  /// /on_rank_loss "shrink": replace *comm by the survivors of its recovery agreement's lost ranks
  /// (*members: the original ranks of the communicator in its order, *me: this rank's index).
  bool shrink_comm(std::uint32_t r, std::uint32_t s, std::uint32_t rep, hcomm_comm_t* comm, Members* members, std::uint32_t* me);
  bool host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev,
                 std::uint8_t* host, bool real);

  /// Incast, at the root: every sender's segment of the symmetric buffer against what it sent.
  /// False if reading the buffer back failed.
  bool check_incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* sym,
                    unsigned char* host);

  std::uint32_t partner(const WorkloadStep& w, std::uint32_t r) const;

  const Scenario& sc_;
  std::uint32_t nranks_;
  models::Machine& machine_;
  SimDriver& driver_;
  RankServices& ranks_;
  FaultInjector& faults_;
  ResultChecks& checks_;
  TrainSteps& train_;
  std::vector<Failure>& failures_;
  std::vector<std::string> recovery_;
  std::vector<std::vector<hcomm_result_t>> async_reports_;
  std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> member_lists_;  // shrinks' survivor lists, shared
};

}  // namespace sim
