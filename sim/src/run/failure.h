// Why a run failed (docs/scenario-format.md#expect): a kind the expectations decide on, and the
// message printed for people. Expectations match kinds, never message text.
#pragma once
#include <cstdint>
#include <string>

namespace sim {

enum class FailureKind {
  ApiCall,          ///< an hcomm call returned an error
  HostMemory,       ///< the runner could not allocate a host buffer
  CheckFailed,      ///< a result check found wrong bytes
  Unfinished,       ///< a rank did not finish its workload
  Incomplete,       ///< fewer operations completed than the workload has
  OpTime,           ///< expect/max_op_time_us exceeded
  BusBandwidth,     ///< below expect/min_busbw_GBps
  CounterMin,       ///< a counter below expect/counters_min
  CounterMax,       ///< a counter above expect/counters_max
  NoApiError,       ///< api_errors: expected, but every call succeeded
  NoCheckFailure,   ///< checks_pass: false, but every check passed
  Failover,         ///< expect/failovers_min or max_failover_us not met (docs/failover.md)
  FaultNotFired,    ///< a fault's time was not reached before the run ended (expect/faults_fired)
  Outcome,          ///< expect/outcome (survived, aborted, shrunk) not what the run did
};

struct Failure {
  FailureKind kind;
  std::string message;
  std::int64_t step = -1;  ///< the workload step it concerns (CheckFailed, OpTime), -1 none
};

}  // namespace sim
