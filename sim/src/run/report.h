// The run's outcome beyond pass/fail (docs/tools.md#fault-report): what each injected fault did,
// and the pathologies no expectation asked about (retransmit timeouts, drops, PFC storms,
// repetitions far slower than their siblings, faults that never fired).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hcomm/driver.h"
#include "run/failure.h"
#include "sim/config/scenario.h"
#include "sim/run_types.h"

namespace models {
class Network;
}

namespace sim {

/// When each fault of the scenario fired (Cluster::fault_*_ps_; `never` where it did not).
struct FaultFirings {
  std::vector<std::uint64_t> first_ps, last_ps, due_ps;
  std::vector<std::uint32_t> transitions;
  std::uint64_t never = ~std::uint64_t{0};
};

/// One FaultReport per fault of `sc`: its firing, the failovers rows that followed it (a row
/// belongs to the latest fault fired at or before its detection), the repetition it hit and the
/// median of its step's untouched repetitions.
std::vector<FaultReport> fault_reports(const Scenario& sc, const FaultFirings& fired, const std::vector<hcomm::FailoverInfo>& failovers,
                                       const std::vector<StepSummary>& steps);

/// Warnings for pathologies (RDMA retransmit timeouts, drops, a RoCE port paused by PFC for more
/// than `kPfcStormShare` of the run, in the flow tier a fan-in bottleneck for more than
/// `kFlowFaninShare` of it, in the chunk tier any ECN mark or PFC pause, a repetition over `kOutlierFactor` times the median of its
/// step's other repetitions, a fault that never fired), and the failures the scenario's
/// expectations make of them (expect/max_step_slowdown, expect/faults_fired).
constexpr double kPfcStormShare = 0.05;
/// The flow tier's congestion warning: a switch egress port was a fan-in bottleneck
/// (NetPortStats::fanin_ps) for more than this share of the run (docs/models/tiers.md).
constexpr double kFlowFaninShare = 0.05;
constexpr double kOutlierFactor = 10;
void pathologies(const Scenario& sc, const std::vector<StepSummary>& steps, const std::map<std::string, double>& counters,
                 const models::Network* net, std::uint64_t sim_end_ps, const std::vector<FaultReport>& faults,
                 std::vector<std::string>* warnings, std::vector<Failure>* failures);

/// "rank 3", "ranks 0-15", "ranks 0-3, 8, 10-11" (sorted, distinct).
std::string rank_list(std::vector<std::uint32_t> ranks);

}  // namespace sim
