// Expectations (docs/scenario-format.md#expect): which failures a scenario tolerates or requires.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "hcomm/driver.h"
#include "run/failure.h"
#include "sim/run_types.h"
#include "sim/config/scenario.h"

namespace sim {

/// Time and bus-bandwidth limits of every operation, in step order.
void expect_limits(const Expectations& e, const std::vector<StepSummary>& steps, std::vector<Failure>& out);
/// Each step's own expectations (/workload/i/expect): its max_op_time_us, and checks_pass false
/// (some check of that step must fail; that step's check failures are then not failures).
void expect_steps(const Scenario& sc, const std::vector<StepSummary>& steps, std::vector<Failure>& out);
/// The counters' bounds.
void expect_counters(const Expectations& e, const std::map<std::string, double>& counters, std::vector<Failure>& out);
/// failovers_min and max_failover_us against the library's reports and the faults' times.
void expect_failovers(const Expectations& e, const std::vector<hcomm::FailoverInfo>& failovers,
                      const std::vector<std::uint64_t>& fault_ps, std::vector<Failure>& out);
/// Applies api_errors and checks_pass: failures the scenario asked for are removed, their absence
/// becomes a failure.
void expect_outcome(const Expectations& e, std::vector<Failure>& failures);
/// What the run did, as expect/outcome names it: "survived", "aborted" or "shrunk".
struct RunOutcome {
  std::string what;                      ///< survived, aborted, shrunk
  std::vector<std::uint32_t> unfinished;  ///< survivors (ranks not crashed) that did not finish their workload
};
/// expect/outcome: the run's outcome must be the one stated; the failures that outcome consists
/// of (failed calls, ranks that stopped or were lost, operations that did not complete) are then
/// not failures. Result check failures always stay.
void expect_run_outcome(const Expectations& e, const RunOutcome& o, std::vector<Failure>& failures);

}  // namespace sim
