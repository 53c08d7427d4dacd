// Per-operation summary (README "hcsim run"): nccl-tests' time, algbw and busbw of each
// (step, rep), from the operations the driver recorded.
#pragma once
#include <functional>
#include <map>
#include <vector>

#include "sim/driver.h"
#include "sim/run_summary.h"
#include "sim/run_types.h"
#include "sim/config/scenario.h"

namespace sim {

/// One StepSummary per (step, rep) with a recorded operation of the step's kind; `senders(step)`
/// counts an incast step's senders (its bytes are aggregated into the root).
std::vector<StepSummary> summarize(const Scenario& sc, const std::map<SimObserver::SpanKey, SimObserver::OpSpan>& spans, std::uint32_t nranks,
                                   const std::function<std::uint64_t(std::uint32_t step)>& senders);

}  // namespace sim
