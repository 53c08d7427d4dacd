// What a run writes to the trace besides what the driver logs as it goes (docs/trace-schema.md):
// the device and link tables at the start, summaries and end-of-run counters at the end.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "models/machine.h"
#include "models/network.h"
#include "sim/run_types.h"
#include "sim/config/scenario.h"
#include "sim/trace.h"

namespace sim {

/// The `faults` rows (docs/trace-schema.md#faults).
void trace_faults(Trace& trace, const std::vector<FaultReport>& faults);

/// `npus` and `links` tables.
void trace_devices(Trace& t, const Topology& topo, const models::Machine& m, std::uint32_t nranks);
/// `summary` rows.
void trace_summaries(Trace& t, const std::vector<StepSummary>& steps);
/// `counters` rows.
void trace_counters(Trace& t, const std::map<std::string, double>& counters);
/// `link_counters` (both directions of every machine link) and `port_counters` (network ports
/// that carried or dropped traffic or were paused).
void trace_link_counters(Trace& t, const models::Machine& m, std::uint64_t sim_end_ps);
void trace_port_counters(Trace& t, const models::Network* net);
/// `counter_samples`: what the links' and network ports' samplers binned (models/sampler.h); ends them.
void trace_samples(Trace& t, models::Machine& m, models::Network* net, std::uint64_t sim_end_ps);

}  // namespace sim
