// A run's outcome as `hcsim run` prints it and as JSON (sim/src/run/summary.cpp).
#pragma once
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/run_types.h"

namespace sim {

/// Pretty summary as printed by `hcsim run`: the operations, the fault report, warnings and the
/// ranks that failed (the first 8 per distinct cause unless `all_failures`).
std::string format_summary(const Scenario& sc, const RunResult& r, bool all_failures = false);
/// `lines` ("rank R (npu): ...") with at most 8 per distinct cause (the text after the rank
/// prefix with its numbers masked), then a count of the rest; every line when `all`.
std::vector<std::string> condense_by_cause(const std::vector<std::string>& lines, bool all);
/// The same run's outcome as JSON (hcsim run --report): status, faults, warnings, failures.
std::string report_json(const Scenario& sc, const RunResult& r);

}  // namespace sim
