#include "run/summary.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "run/report.h"
#include "sim/config/units.h"

namespace sim {

std::vector<StepSummary> summarize(const Scenario& sc, const std::map<SimObserver::SpanKey, SimObserver::OpSpan>& spans, std::uint32_t n,
                                   const std::function<std::uint64_t(std::uint32_t step)>& senders) {
  // Per (step, rep): the collective's time is from the first rank's start to the last rank's end
  // (an attempt aborted by a fault and re-executed counts from its start: the time the
  // application waited).
  std::map<std::pair<std::uint32_t, std::uint32_t>, StepSummary> agg;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<models::Tick, models::Tick>> span;
  auto counts = [&](const WorkloadStep& w, const std::string& kind) {
    switch (w.kind) {
      case WorkloadOp::ReduceScatter: return kind == "reduce_scatter";  // the library's operation name
      case WorkloadOp::AllReduce:
      case WorkloadOp::AllGather:
      case WorkloadOp::Broadcast:
      case WorkloadOp::AllToAll:
      case WorkloadOp::Barrier:
      case WorkloadOp::H2D:
      case WorkloadOp::D2H: return kind == w.op;
      case WorkloadOp::SendRecv: return kind == "send" || kind == "recv";
      case WorkloadOp::Incast:
      case WorkloadOp::TrainStep: break;
    }
    return kind == "rdma_write";
  };
  for (const auto& [key, o] : spans) {
    const auto& [step, rep, kind] = key;
    if (o.end == 0) continue;  // begun, never finished on any rank
    if (step >= sc.workload.size() || !counts(sc.workload[step], kind)) continue;
    auto k = std::make_pair(step, rep);
    auto& s = agg[k];
    s.step = step;
    s.rep = rep;
    s.kind = sc.workload[step].op;
    s.bytes = sc.workload[step].bytes;
    const WorkloadOp op = sc.workload[step].kind;
    if (op == WorkloadOp::Incast) s.bytes *= senders(step);  // aggregate into the root
    if (op == WorkloadOp::AllGather) s.bytes *= n;           // the gathered buffer, as nccl-tests counts it
    auto it = span.find(k);
    if (it == span.end()) span[k] = {o.start, o.end};
    else { it->second.first = std::min(it->second.first, o.start); it->second.second = std::max(it->second.second, o.end); }
  }
  std::vector<StepSummary> out;
  for (auto& [k, s] : agg) {
    auto [t0, t1] = span[k];
    s.start_ps = t0;
    s.end_ps = t1;
    s.time_us = static_cast<double>(t1 - t0) / 1e6;
    s.algbw_GBps = s.time_us > 0 ? static_cast<double>(s.bytes) / (s.time_us * 1e3) : 0;
    // busbw: nccl-tests' bus bandwidth (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n
    // of the whole buffer, all-to-all (n-1)/n of a rank's send buffer, broadcast 1); for host copies the aggregate of all ranks.
    const WorkloadOp op = sc.workload[s.step].kind;
    s.busbw_GBps = op == WorkloadOp::AllReduce ? s.algbw_GBps * 2.0 * (n - 1) / n
                   : (op == WorkloadOp::AllGather || op == WorkloadOp::ReduceScatter || op == WorkloadOp::AllToAll) ? s.algbw_GBps * (n - 1) / n
                   : (op == WorkloadOp::H2D || op == WorkloadOp::D2H) ? s.algbw_GBps * n : s.algbw_GBps;
    out.push_back(s);
  }
  return out;
}

namespace {

std::string us(std::uint64_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f us", static_cast<double>(ps) / 1e6);
  return b;
}

// A line's cause: the text after its "rank R (npu): " prefix, with every number masked, so that
// the same error on other ranks and devices reads the same.
std::string cause_of(const std::string& line) {
  const auto p = line.find("): ");
  const std::string rest = p == std::string::npos ? line : line.substr(p + 3);
  std::string key;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(rest[i]))) {
      key += '#';
      while (i + 1 < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i + 1]))) ++i;
    } else {
      key += rest[i];
    }
  }
  return key;
}

}  // namespace

std::vector<std::string> condense_by_cause(const std::vector<std::string>& lines, bool all) {
  if (all) return lines;
  constexpr std::size_t kPerCause = 8;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const std::string*>> by;
  for (const auto& l : lines) {
    auto& v = by[cause_of(l)];
    if (v.empty()) order.push_back(cause_of(l));
    v.push_back(&l);
  }
  std::vector<std::string> out;
  for (const auto& k : order) {
    const auto& v = by[k];
    for (std::size_t i = 0; i < v.size() && i < kPerCause; ++i) out.push_back(*v[i]);
    if (v.size() > kPerCause)
      out.push_back("... and " + std::to_string(v.size() - kPerCause) + " more with this cause (" + std::to_string(v.size()) +
                    " in all; --all-failures lists every one)");
  }
  return out;
}

std::string format_summary(const Scenario& sc, const RunResult& r, bool all_failures) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%5s %5s %-13s %12s %12s %12s %12s  %s\n", "step", "rep", "op", "size", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "check");
  os << line;
  for (const auto& s : r.steps) {
    std::string check = s.checked == 0 ? "-" : (s.failed ? "FAILED " + std::to_string(s.failed) + "/" : "ok ") + std::to_string(s.checked) + " ranks";
    if (s.checked && !s.failed) check = "ok (" + std::to_string(s.checked) + " ranks)";
    std::snprintf(line, sizeof line, "%5u %5u %-13s %12s %12.3f %12.2f %12.2f  %s\n", s.step, s.rep, s.kind.c_str(),
                  format_bytes(s.bytes).c_str(), s.time_us, s.algbw_GBps, s.busbw_GBps, check.c_str());
    os << line;
  }
  (void)sc;
  if (!r.train.empty()) {  // docs/training-steps.md#what-is-reported
    std::snprintf(line, sizeof line, "%5s %5s %14s %12s %12s %14s %8s  %s\n", "step", "rep", "iteration(us)", "compute(us)", "comm(us)",
                  "exposed(us)", "overlap", "critical rank");
    os << "train steps (on the critical rank: exposed = iteration - compute, overlap = 1 - exposed / comm):\n" << line;
    for (const auto& t : r.train) {
      std::snprintf(line, sizeof line, "%5u %5u %14.3f %12.3f %12.3f %14.3f %8.3f  %u\n", t.step, t.rep, t.iteration_us, t.compute_us,
                    t.comm_us, t.exposed_comm_us, t.overlap, t.critical_rank);
      os << line;
    }
  }
  if (!r.fault_reports.empty()) {
    std::size_t fired = 0;
    for (const auto& f : r.fault_reports) fired += f.fired ? 1 : 0;
    os << "faults: " << fired << " of " << r.fault_reports.size() << " fired\n";
    for (std::size_t i = 0; i < r.fault_reports.size(); ++i) {
      const FaultReport& f = r.fault_reports[i];
      os << "  fault " << i << ": " << f.type << " " << f.target << "\n";
      if (!f.fired) {
        os << "    NOT FIRED" << (f.at_ps ? ": due at " + us(f.at_ps) + ", the run ended at " + us(r.sim_end_ps) : std::string()) << "\n";
        continue;
      }
      os << "    injected at " << us(f.injected_ps);
      if (f.transitions > 1) os << ", " << f.transitions << " transitions until " << us(f.last_transition_ps);
      os << "\n";
      if (f.detections) {
        os << "    detected at " << us(f.first_detect_ns * 1000);
        if (f.last_detect_ns > f.first_detect_ns) os << " to " << us(f.last_detect_ns * 1000);
        os << " (" << f.detections << " failovers rows):";
        bool first = true;
        for (const auto& [action, ranks] : f.actions) os << (first ? " " : "; ") << action << " " << rank_list(ranks), first = false;
        os << "\n";
      } else {
        os << "    no detection: no rank's library reported it (it needed no recovery, or went unnoticed)\n";
      }
      if (f.resumed_ns)
        os << "    resumed at " << us(f.resumed_ns * 1000) << " (" << us(f.resumed_ns * 1000 - std::min(f.resumed_ns * 1000, f.injected_ps))
           << " after the fault), " << format_bytes(f.bytes_resent) << " re-sent\n";
      if (f.step >= 0) {
        if (f.op_time_us >= 0)
          std::snprintf(line, sizeof line, "    step %lld rep %lld: %.3f us", static_cast<long long>(f.step), static_cast<long long>(f.rep), f.op_time_us);
        else
          std::snprintf(line, sizeof line, "    step %lld rep %lld: did not complete", static_cast<long long>(f.step), static_cast<long long>(f.rep));
        os << line;
        if (f.median_us > 0 && f.op_time_us >= 0) {
          std::snprintf(line, sizeof line, " against a median of %.3f us of its step's untouched repetitions (%.2fx)", f.median_us,
                        f.op_time_us / f.median_us);
          os << line;
        }
        os << "\n";
      } else {
        os << "    no operation of the workload was in flight\n";
      }
    }
  }
  if (r.op_retry_off_abort)
    os << "hint: a fault aborted an operation because op retry is off; HCOMM_OP_RETRY=1 (scenario /hcomm_env, or --set "
          "'/hcomm_env/HCOMM_OP_RETRY=\"1\"') makes the library re-execute it around the fault (docs/failover.md)\n";
  if (!r.warnings.empty()) {
    os << "warnings: " << r.warnings.size() << "\n";
    for (const auto& w : r.warnings) os << "  " << w << "\n";
  }
  if (!r.rank_recovered.empty()) {
    os << "ranks that went on after a rank loss: " << r.rank_recovered.size() << "\n";
    for (const auto& o : condense_by_cause(r.rank_recovered, all_failures)) os << "  " << o << "\n";
  }
  if (!r.rank_outcomes.empty()) {
    os << "ranks that failed or did not finish: " << r.rank_outcomes.size() << "\n";
    for (const auto& o : condense_by_cause(r.rank_outcomes, all_failures)) os << "  " << o << "\n";
  }
  return os.str();
}

std::string report_json(const Scenario& sc, const RunResult& r) {
  json j;
  j["scenario"] = sc.name;
  j["status"] = r.status;
  j["exit_code"] = r.exit_code;
  j["sim_end_us"] = static_cast<double>(r.sim_end_ps) / 1e6;
  j["faults"] = json::array();
  for (std::size_t i = 0; i < r.fault_reports.size(); ++i) {
    const FaultReport& f = r.fault_reports[i];
    json x = {{"id", i}, {"type", f.type}, {"target", f.target}, {"fired", f.fired}};
    if (f.fired) {
      x["injected_at_us"] = static_cast<double>(f.injected_ps) / 1e6;
      x["transitions"] = f.transitions;
      x["last_transition_us"] = static_cast<double>(f.last_transition_ps) / 1e6;
      x["detections"] = f.detections;
      if (f.detections) {
        x["first_detected_us"] = static_cast<double>(f.first_detect_ns) / 1e3;
        x["last_detected_us"] = static_cast<double>(f.last_detect_ns) / 1e3;
      }
      json acts = json::object();
      for (const auto& [a, ranks] : f.actions) {
        std::vector<std::uint32_t> sorted = ranks;
        std::sort(sorted.begin(), sorted.end());
        sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
        acts[a] = sorted;
      }
      x["actions"] = acts;
      x["resumed_at_us"] = f.resumed_ns ? json(static_cast<double>(f.resumed_ns) / 1e3) : json(nullptr);
      x["bytes_resent"] = f.bytes_resent;
      if (f.step >= 0) {
        x["step"] = f.step;
        x["rep"] = f.rep;
        x["op_time_us"] = f.op_time_us >= 0 ? json(f.op_time_us) : json(nullptr);
        x["median_us"] = f.median_us > 0 ? json(f.median_us) : json(nullptr);
      }
    } else if (f.at_ps) {
      x["due_at_us"] = static_cast<double>(f.at_ps) / 1e6;
    }
    j["faults"].push_back(x);
  }
  j["warnings"] = r.warnings;
  j["failures"] = r.failures;
  j["outcome"] = r.outcome;
  j["ranks_recovered"] = r.rank_recovered.size();
  j["ranks_failed"] = r.rank_outcomes.size();
  j["rank_outcomes"] = condense_by_cause(r.rank_outcomes, false);
  j["op_retry_off_abort"] = r.op_retry_off_abort;
  return j.dump(2) + "\n";
}

}  // namespace sim
