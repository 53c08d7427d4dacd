// Scenario "expect" (docs/scenario-format.md): what decides the exit code — checks, API errors,
// time and bandwidth limits, counter bounds (names from the counter registry, sim/counters.h).
#include <algorithm>

#include "scenario_readers.h"

namespace sim::scenario_detail {

void read_expect(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  if (const json* ej = top.get("expect", false)) {
    ObjectReader e(*ej, top.child("expect"), d, {"checks_pass", "api_errors", "max_op_time_us", "min_busbw_GBps", "counters_min", "counters_max",
                                            "failovers_min", "max_failover_us", "detections_min", "max_detection_us",
                                            "faults_fired", "max_step_slowdown", "outcome"});
    sc.expect.checks_pass = e.boolean("checks_pass", false).value_or(true);
    if (auto v = e.str("api_errors", false)) {
      if (*v == "none") sc.expect.api_errors = false;
      else if (*v == "expected") sc.expect.api_errors = true;
      else d.error(e.child("api_errors"), "expected \"none\" or \"expected\", got \"" + *v + "\"");
    }
    if (auto v = e.str("outcome", false)) {
      if (*v != "survived" && *v != "aborted" && *v != "shrunk")
        d.error(e.child("outcome"), "expected \"survived\", \"aborted\" or \"shrunk\", got \"" + *v + "\"");
      else if (sc.expect.api_errors && *v == "survived")
        d.error(e.child("outcome"), "\"survived\" contradicts api_errors \"expected\"");
      else if (e.get("api_errors", false) && !sc.expect.api_errors && *v != "survived")
        d.error(e.child("outcome"), "\"" + *v + "\" contradicts api_errors \"none\" (a failed call is part of it)");
      else sc.expect.outcome = *v;
    }
    sc.expect.max_op_time_us = e.number("max_op_time_us", false, 0, 1e15);
    sc.expect.min_busbw_GBps = e.number("min_busbw_GBps", false, 0, 1e9);
    sc.expect.failovers_min = e.number("failovers_min", false, 0, 1e9);
    sc.expect.max_failover_us = e.number("max_failover_us", false, 0, 1e15);
    sc.expect.detections_min = e.number("detections_min", false, 0, 1e9);
    sc.expect.max_detection_us = e.number("max_detection_us", false, 0, 1e15);
    sc.expect.faults_fired = e.boolean("faults_fired", false).value_or(true);
    sc.expect.max_step_slowdown = e.number("max_step_slowdown", false, 1, 1e9);
    for (const char* key : {"counters_min", "counters_max"}) {
      const json* cj = e.get(key, false);
      if (!cj) continue;
      if (!cj->is_object()) { d.error(e.child(key), "expected an object of counter: number"); continue; }
      for (auto it = cj->begin(); it != cj->end(); ++it) {
        const auto& names = counter_names();
        std::string p = e.child(key) + "/" + it.key();
        if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
          std::string list;
          for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
          d.error(p, "unknown counter (known: " + list + ")");
        } else if (!it.value().is_number() || it.value().get<double>() < 0) {
          d.error(p, "expected a non-negative number");
        } else {
          (std::string(key) == "counters_min" ? sc.expect.counters_min : sc.expect.counters_max)[it.key()] = it.value().get<double>();
        }
      }
    }
  }
}

}  // namespace sim::scenario_detail
