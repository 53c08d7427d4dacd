// Scenario runner: builds the machine from the topology, starts one SC_THREAD per rank running the
// scenario's workload through the public hcomm API, checks every result against a host reference,
// records the trace and evaluates the expectations. One run per process (SystemC cannot reset).
#pragma once
#include <cstdint>

#include "sim/config/scenario.h"
#include "sim/run_summary.h"
#include "sim/run_types.h"

namespace sim {

RunResult run_scenario(const Scenario& sc, const RunOptions& opt);

/// Run `program(rank)` in every rank's SC_THREAD on the given topology instead of a scenario
/// workload (tests and tools that drive the hcomm API directly). Returns the final simulated time.
std::uint64_t run_program(const Topology& topo, const RankProgram& program, const RunOptions& opt = {},
                          bool store_bytes = true);

}  // namespace sim
