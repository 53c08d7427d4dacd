// Injected faults (docs/scenario-format.md#faults): class FaultInjector (faults.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "elaborate.h"
#include "run/report.h"
#include "sim/config/scenario.h"
#include "sim/driver.h"

namespace sim {

/// What the injector asks of the cluster it runs in.
class FaultTarget {
 public:
  virtual ~FaultTarget() = default;
  /// A rank_crash fault: rank r's process dies, with its device (the cluster's lifecycle).
  virtual void crash_fault(std::uint32_t r) = 0;
};

/// The scenario's faults (faults.cpp): timed ones applied at their simulated time (absolute, or
/// relative to the start of a workload step) as events of the SystemC kernel's handler, HBM bit
/// flips by the workload after the operation they corrupt. It owns which faults are armed, when
/// each fired (FaultFirings) and the log of every injection, traced through the driver's
/// observer and, unless -q, echoed on stderr with its simulated time.
class FaultInjector final : public models::EventHandler {
 public:
  FaultInjector(const Scenario& sc, Elaboration& elab, SimDriver& driver, FaultTarget& target, bool echo);
  /// Arms the faults timed from the start; those relative to a step are armed as it starts.
  void schedule();
  /// HBM bit flips scheduled for rank r's output of (step s, rep): flipped in device memory.
  void inject_bitflips(std::uint32_t r, std::uint32_t s, std::uint32_t rep, void* out);
  /// Logs `line` for `rank` (trace, stderr unless -q, the fault log).
  void announce(std::uint32_t rank, int level, const std::string& line);
  const FaultFirings& firings() const { return fired_; }
  const std::vector<std::string>& log() const { return log_; }
  /// Fault i, transition `phase` (a = i, b = phase).
  void on_event(std::uint64_t i, std::uint64_t phase) override;

 private:
  void arm(std::size_t i, models::Tick at);
  void op_started(std::uint32_t step, std::uint32_t rep, double est_ns, models::Tick t);
  void apply(std::size_t i, std::uint32_t phase);
  std::uint32_t npu_rank(std::uint32_t npu) const;

  const Scenario& sc_;
  Elaboration& elab_;
  SimDriver& driver_;
  FaultTarget& target_;
  bool echo_;
  std::vector<bool> armed_;
  FaultFirings fired_;
  std::vector<std::string> log_;
};

}  // namespace sim
