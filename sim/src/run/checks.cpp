// Payload result checks (docs/scenario-format.md#workload `check`; run/checks.h): each rank's
// output compared with a reference computed on the host, tallied per (step, rep), traced and logged.
#include "run/checks.h"

#include <string>

namespace sim {

ResultChecks::ResultChecks(const Scenario& sc, std::uint32_t nranks, Trace* trace, SimDriver& driver, std::vector<Failure>& failures)
    : sc_(sc), nranks_(nranks), trace_(trace), driver_(driver), failures_(failures), tally_(sc.workload.size()) {}

// Reference results are computed once per (step, rep, communicator size) and shared by the ranks
// that check them: `members` are the communicator's ranks (all of them, or a shrink's survivors).
const Reference& ResultChecks::reference(std::uint32_t step, std::uint32_t rep, const Members& members) {
  const RefKey key{step, rep, members.size()};
  auto it = refs_.find(key);
  if (it != refs_.end()) return it->second.first;
  const WorkloadStep& w = sc_.workload[step];
  Reference ref;
  ref.bytes.swap(spare_ref_);  // the storage of the last released reference: no new pages per repetition
  const std::uint64_t count = w.bytes / models::dtype_size(w.dtype);
  const PayloadKey k{sc_.seed, step, rep, nranks_};
  if (!members.list) allreduce_reference(count, w.dtype, w.reduce, k, members.all, &ref);
  else allreduce_reference(count, w.dtype, w.reduce, k, *members.list, &ref);
  return refs_.emplace(key, std::make_pair(std::move(ref), 0u)).first->second.first;
}

void ResultChecks::release_reference(std::uint32_t step, std::uint32_t rep, std::uint32_t n) {
  auto it = refs_.find(RefKey{step, rep, n});
  if (it != refs_.end() && ++it->second.second == n) {
    if (it->second.first.bytes.capacity() > spare_ref_.capacity()) spare_ref_.swap(it->second.first.bytes);
    refs_.erase(it);
  }
}

void ResultChecks::record(std::uint32_t r, std::uint32_t s, std::uint32_t rep, const WorkloadStep& w, const CheckResult& cr,
                          std::uint64_t count) {
  auto& tally = tally_[s].by_rep[rep];
  ++tally.first;
  if (!cr.ok()) {
    ++tally.second;
    failures_.push_back({FailureKind::CheckFailed, "rank " + std::to_string(r) + " step " + std::to_string(s) + " rep " + std::to_string(rep) +
                                                       ": result check failed: " + std::to_string(cr.mismatches) + " wrong elements, first " +
                                                       cr.detail, static_cast<std::int64_t>(s)});
  }
  if (trace_) trace_->check(r, s, rep, cr.ok(), cr.mismatches, cr.detail, cr.mode(), cr.tolerance);
  driver_.observer().note(r, cr.ok() ? 2 : 0,
                          std::string(cr.ok() ? "[HCSIM_INFO]" : "[HCSIM_ERR]") + " rank " + std::to_string(r) + " step " + std::to_string(s) +
                              " rep " + std::to_string(rep) + " " + w.op + " check " + (cr.ok() ? "passed" : "FAILED: " + cr.detail) + " (" +
                              std::to_string(count) + " elements)");
}

bool ResultChecks::incast_segment(std::uint32_t r, std::uint32_t s, std::uint32_t rep, std::uint32_t q, const CheckResult& cr) {
  if (!cr.ok())
    failures_.push_back({FailureKind::CheckFailed, "rank " + std::to_string(r) + " step " + std::to_string(s) + " rep " + std::to_string(rep) +
                                                       ": result check failed: segment from rank " + std::to_string(q) + ": " + cr.detail,
                         static_cast<std::int64_t>(s)});
  if (trace_) trace_->check(q, s, rep, cr.ok(), cr.mismatches, cr.detail, cr.mode(), cr.tolerance);
  return cr.ok();
}

void ResultChecks::tally_incast(std::uint32_t s, std::uint32_t rep, std::uint32_t checked, std::uint32_t failed) {
  auto& tally = tally_[s].by_rep[rep];
  tally.first += checked;
  tally.second += failed;
}

}  // namespace sim
