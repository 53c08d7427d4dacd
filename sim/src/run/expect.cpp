#include <algorithm>
#include "run/expect.h"

namespace sim {

void expect_limits(const Expectations& e, const std::vector<StepSummary>& steps, std::vector<Failure>& out) {
  for (const auto& s : steps) {
    const std::string at = "step " + std::to_string(s.step) + " rep " + std::to_string(s.rep);
    if (e.max_op_time_us && s.time_us > *e.max_op_time_us)
      out.push_back({FailureKind::OpTime, at + ": time " + std::to_string(s.time_us) + " us exceeds max_op_time_us " +
                                              std::to_string(*e.max_op_time_us)});
    if (e.min_busbw_GBps && s.busbw_GBps < *e.min_busbw_GBps)
      out.push_back({FailureKind::BusBandwidth, at + ": busbw " + std::to_string(s.busbw_GBps) + " GB/s below min_busbw_GBps " +
                                                    std::to_string(*e.min_busbw_GBps)});
  }
}

void expect_steps(const Scenario& sc, const std::vector<StepSummary>& steps, std::vector<Failure>& out) {
  for (const auto& s : steps) {
    if (s.step >= sc.workload.size()) continue;
    const auto& lim = sc.workload[s.step].max_op_time_us;
    if (lim && s.time_us > *lim)
      out.push_back({FailureKind::OpTime, "step " + std::to_string(s.step) + " rep " + std::to_string(s.rep) + ": time " + std::to_string(s.time_us) +
                                              " us exceeds the step's max_op_time_us " + std::to_string(*lim),
                     static_cast<std::int64_t>(s.step)});
  }
  for (std::size_t i = 0; i < sc.workload.size(); ++i) {
    if (sc.workload[i].checks_pass.value_or(true)) continue;
    const auto step = static_cast<std::int64_t>(i);
    bool any = false;
    std::vector<Failure> other;
    for (auto& f : out) {
      if (f.kind == FailureKind::CheckFailed && f.step == step) any = true;
      else other.push_back(f);
    }
    out = other;
    if (!any)
      out.push_back({FailureKind::NoCheckFailure,
                     "step " + std::to_string(i) + ": expected a result check to fail (its checks_pass: false), but all passed", step});
  }
}

void expect_counters(const Expectations& e, const std::map<std::string, double>& ctr, std::vector<Failure>& out) {
  for (const auto& [name, lo] : e.counters_min)
    if (ctr.at(name) < lo)
      out.push_back({FailureKind::CounterMin, "counter " + name + " = " + std::to_string(ctr.at(name)) + " is below counters_min " + std::to_string(lo)});
  for (const auto& [name, hi] : e.counters_max)
    if (ctr.at(name) > hi)
      out.push_back({FailureKind::CounterMax, "counter " + name + " = " + std::to_string(ctr.at(name)) + " exceeds counters_max " + std::to_string(hi)});
}

void expect_failovers(const Expectations& e, const std::vector<hcomm::FailoverInfo>& fo, const std::vector<std::uint64_t>& faults,
                      std::vector<Failure>& out) {
  if (e.detections_min || e.max_detection_us) {
    std::size_t rows = 0;
    double late = 0;
    for (const auto& f : fo) {
      if (f.action == "warn") continue;
      ++rows;
      double at = -1;
      for (const std::uint64_t t : faults)
        if (t <= f.detected_ns * 1000) at = static_cast<double>(t) / models::kPsPerNs;
      if (at >= 0) late = std::max(late, (static_cast<double>(f.detected_ns) - at) / 1e3);
    }
    if (e.detections_min && static_cast<double>(rows) < *e.detections_min)
      out.push_back({FailureKind::Failover, std::to_string(rows) + " detections (failovers rows) is below detections_min " + std::to_string(*e.detections_min)});
    if (e.max_detection_us && late > *e.max_detection_us)
      out.push_back({FailureKind::Failover, "a rank learned of a fault " + std::to_string(late) + " us after it, over max_detection_us " +
                                                std::to_string(*e.max_detection_us)});
  }
  if (!e.failovers_min && !e.max_failover_us) return;
  std::size_t resumed = 0;
  double worst = 0;
  for (const auto& f : fo) {
    if (!f.resumed_ns) continue;
    ++resumed;
    double at = -1;  // the injected fault it follows
    for (const std::uint64_t t : faults)
      if (t <= f.detected_ns * 1000) at = static_cast<double>(t) / models::kPsPerNs;
    if (at >= 0) worst = std::max(worst, (static_cast<double>(f.resumed_ns) - at) / 1e3);
  }
  if (e.failovers_min && static_cast<double>(resumed) < *e.failovers_min)
    out.push_back({FailureKind::Failover, std::to_string(resumed) + " recoveries (failovers rows that resumed) is below failovers_min " +
                                              std::to_string(*e.failovers_min)});
  if (e.max_failover_us && worst > *e.max_failover_us)
    out.push_back({FailureKind::Failover, "a recovery resumed " + std::to_string(worst) + " us after its fault, over max_failover_us " +
                                              std::to_string(*e.max_failover_us)});
}

void expect_outcome(const Expectations& e, std::vector<Failure>& failures) {
  if (e.api_errors) {
    // The scenario injects a fault the library must report: API errors are the expected outcome,
    // and ranks that could not finish because of them too.
    std::vector<Failure> other;
    bool any = false;
    for (auto& f : failures) {
      if (f.kind == FailureKind::ApiCall) any = true;
      else if (f.kind != FailureKind::Unfinished && f.kind != FailureKind::Incomplete) other.push_back(f);
    }
    failures = other;
    if (!any) failures.push_back({FailureKind::NoApiError, "expected an hcomm call to fail (api_errors: expected), but none did"});
  }
  if (!e.checks_pass) {
    // The scenario expects a check to fail (e.g. an injected corruption): invert that part.
    bool any_check_failed = false;
    std::vector<Failure> other;
    for (auto& f : failures) {
      if (f.kind == FailureKind::CheckFailed) any_check_failed = true;
      else other.push_back(f);
    }
    failures = other;
    if (!any_check_failed)
      failures.push_back({FailureKind::NoCheckFailure, "expected a result check to fail (checks_pass: false), but all passed"});
  }
}

void expect_run_outcome(const Expectations& e, const RunOutcome& o, std::vector<Failure>& failures) {
  if (e.outcome.empty()) return;
  if (o.what != e.outcome) {
    std::string why = "expect/outcome is \"" + e.outcome + "\", but the run " +
                      (o.what == "survived" ? "survived (no call failed)" : o.what == "shrunk" ? "shrunk (a rank lost, the survivors went on)" : "aborted");
    if (e.outcome == "shrunk" && !o.unfinished.empty()) {
      why += ": survivor rank(s)";
      for (std::size_t i = 0; i < o.unfinished.size() && i < 8; ++i) why += " " + std::to_string(o.unfinished[i]);
      why += o.unfinished.size() > 8 ? " ... did not finish their workload" : " did not finish their workload";
    }
    failures.push_back({FailureKind::Outcome, why});
    return;
  }
  if (o.what == "survived") return;  // nothing to forgive: any failure stands
  std::vector<Failure> other;
  for (auto& f : failures)
    if (f.kind != FailureKind::ApiCall && f.kind != FailureKind::Unfinished && f.kind != FailureKind::Incomplete) other.push_back(f);
  failures = other;
}

}  // namespace sim
