#include "run/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/config/units.h"

namespace sim {

std::vector<StepSummary> summarize(const Scenario& sc, const std::map<SimDriver::SpanKey, SimDriver::OpSpan>& spans, std::uint32_t n,
                                   const std::function<std::uint64_t(std::uint32_t step)>& senders) {
  // Per (step, rep): the collective's time is from the first rank's start to the last rank's end
  // (an attempt aborted by a fault and re-executed counts from its start: the time the
  // application waited).
  std::map<std::pair<std::uint32_t, std::uint32_t>, StepSummary> agg;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<models::Tick, models::Tick>> span;
  auto counts = [&](const WorkloadStep& w, const std::string& kind) {
    if (w.op == "reducescatter") return kind == "reduce_scatter";  // the library's operation name
    if (w.op == "allreduce" || w.op == "allgather" || w.op == "broadcast" || w.op == "alltoall") return kind == w.op;
    if (w.op == "sendrecv") return kind == "send" || kind == "recv";
    if (w.op == "barrier") return kind == "barrier";
    if (w.op == "h2d" || w.op == "d2h") return kind == w.op;
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
    if (s.kind == "incast") s.bytes *= senders(step);  // aggregate into the root
    if (s.kind == "allgather") s.bytes *= n;           // the gathered buffer, as nccl-tests counts it
    auto it = span.find(k);
    if (it == span.end()) span[k] = {o.start, o.end};
    else { it->second.first = std::min(it->second.first, o.start); it->second.second = std::max(it->second.second, o.end); }
  }
  std::vector<StepSummary> out;
  for (auto& [k, s] : agg) {
    auto [t0, t1] = span[k];
    s.time_us = static_cast<double>(t1 - t0) / 1e6;
    s.algbw_GBps = s.time_us > 0 ? static_cast<double>(s.bytes) / (s.time_us * 1e3) : 0;
    // busbw: nccl-tests' bus bandwidth (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n
    // of the whole buffer, all-to-all (n-1)/n of a rank's send buffer, broadcast 1); for host copies the aggregate of all ranks.
    s.busbw_GBps = s.kind == "allreduce" ? s.algbw_GBps * 2.0 * (n - 1) / n
                   : (s.kind == "allgather" || s.kind == "reducescatter" || s.kind == "alltoall") ? s.algbw_GBps * (n - 1) / n
                   : (s.kind == "h2d" || s.kind == "d2h") ? s.algbw_GBps * n : s.algbw_GBps;
    out.push_back(s);
  }
  return out;
}

std::string format_summary(const Scenario& sc, const RunResult& r) {
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
  if (!r.faults.empty()) os << "faults injected: " << r.faults.size() << "\n";
  if (!r.rank_outcomes.empty()) {
    os << "ranks that failed or did not finish: " << r.rank_outcomes.size() << "\n";
    for (const auto& o : r.rank_outcomes) os << "  " << o << "\n";
  }
  return os.str();
}

}  // namespace sim
