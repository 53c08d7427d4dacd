// Payload result checks (docs/scenario-format.md#workload `check`): class ResultChecks (checks.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "run/failure.h"
#include "run/members.h"
#include "sim/config/scenario.h"
#include "sim/driver.h"
#include "sim/payload.h"
#include "sim/trace.h"

namespace sim {

/// The result checks of a run: each rank's output compared with a reference computed on the
/// host, tallied per (step, rep), traced, logged, and a failed check recorded as a failure. It
/// owns the reference results (computed once per (step, rep, communicator size), shared by the
/// ranks that check them, released when the last has) and the tallies.
class ResultChecks {
 public:
  struct Tally { std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> by_rep; };  ///< rep -> (checked, failed)
  ResultChecks(const Scenario& sc, std::uint32_t nranks, Trace* trace, SimDriver& driver, std::vector<Failure>& failures);
  /// The reference of (step, rep) for the communicator `members` (all ranks, or a shrink's survivors).
  const Reference& reference(std::uint32_t step, std::uint32_t rep, const Members& members);
  /// One of the `n` ranks that use the reference of (step, rep) is done with it.
  void release_reference(std::uint32_t step, std::uint32_t rep, std::uint32_t n);
  /// Rank r's check of (step s, rep) over `count` elements: tallied, traced, logged.
  void record(std::uint32_t r, std::uint32_t s, std::uint32_t rep, const WorkloadStep& w, const CheckResult& cr, std::uint64_t count);
  /// An incast's root r checked the segment sender q wrote (traced on q's row); false if it failed.
  bool incast_segment(std::uint32_t r, std::uint32_t s, std::uint32_t rep, std::uint32_t q, const CheckResult& cr);
  /// An incast's root checked `checked` segments of (step s, rep), `failed` of them wrong.
  void tally_incast(std::uint32_t s, std::uint32_t rep, std::uint32_t checked, std::uint32_t failed);
  /// Per workload step: its tally.
  const std::vector<Tally>& tallies() const { return tally_; }

 private:
  const Scenario& sc_;
  std::uint32_t nranks_;
  Trace* trace_;
  SimDriver& driver_;
  std::vector<Failure>& failures_;
  std::vector<Tally> tally_;
  // Reference results per (step, rep, communicator size), with how many ranks used them.
  using RefKey = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;
  std::map<RefKey, std::pair<Reference, std::uint32_t>> refs_;
  std::vector<std::uint8_t> spare_ref_;  // a released reference's storage, reused by the next
};

}  // namespace sim
