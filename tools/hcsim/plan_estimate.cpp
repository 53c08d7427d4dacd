// hcsim plan's estimates of a point's wall time and peak memory (docs/plan-format.md#estimates):
// what --dry-run prints, the order points start in, the ETA, and what -j admits while memory is
// short. A fitted cost model of the child `hcsim run`: a start-up cost that grows with the ranks
// (elaboration, communicator set-up, discovery), and per operation a cost per simulated event —
// the events a collective makes counted from its ranks, its steps and, in the chunk and packet
// tiers, the units its bytes are cut into. The coefficients were fitted on the development
// machine (docs/plan-format.md#estimates has the runs and the command); tests/cli/plan_estimate_test.sh
// checks them on the shipped small plans.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "plan.h"

namespace hcsim::plan {

namespace {

struct TierCost {
  double start_s, per_rank_s, per_event_s;  // wall: fixed, per rank at start-up, per simulated event
  double base_mib, per_rank_mib;            // memory: fixed, per rank
  double unit;                              // bytes per network unit (0: a flow per message)
};

const TierCost& cost_of(const std::string& tier) {
  static const TierCost flow{0.05, 2.0e-4, 1.0e-6, 30, 0.12, 0};
  static const TierCost chunk{0.05, 2.0e-4, 2.0e-6, 30, 0.12, 65536};
  static const TierCost packet{0.05, 2.0e-4, 1.5e-6, 30, 0.12, 4096};
  return tier == "packet" ? packet : tier == "chunk" ? chunk : flow;
}

// Simulated events of one operation of `bytes` (nccl-tests' size) on n ranks: messages (every
// rank's steps; an all-to-all's every rank writes to every other) and, below the flow tier, the
// units each rank's bytes cross the network in.
double events(const std::string& op, double n, double bytes, const TierCost& c) {
  const double steps = op == "alltoall" ? n : op == "barrier" ? std::log2(n) : 2 * std::log2(n) + 2;
  double e = n * steps;
  if (c.unit > 0) e += n * 2 * bytes / c.unit;
  return e;
}

}  // namespace

Estimate estimate(const Plan&, const Layout& L, const Workload& w, const std::vector<Result>& rows) {
  Estimate e;
  if (!runnable(rows)) return e;
  const TierCost& c = cost_of(w.fidelity);
  const double n = std::max<double>(2, static_cast<double>(L.npus));
  e.wall_s = c.start_s + c.per_rank_s * n;
  for (auto& r : rows)
    if (r.step >= 0) e.wall_s += static_cast<double>(w.repeat) * events(w.op, n, static_cast<double>(r.bytes), c) * c.per_event_s;
  e.peak_mib = c.base_mib + c.per_rank_mib * n;
  return e;
}

double available_mib() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb / 1024.0;
  return NAN;
}

MemoryGate::MemoryGate(const std::vector<double>& peak_mib, double available) : peak_(peak_mib), budget_(0.9 * available) {}

bool MemoryGate::admits(std::size_t i) const {
  if (running_ == 0 || !std::isfinite(budget_)) return true;  // the first always starts
  return reserved_ + peak_[i] <= budget_;
}

void MemoryGate::started(std::size_t i) {
  reserved_ += peak_[i];
  ++running_;
}

void MemoryGate::finished(std::size_t i) {
  reserved_ = std::max(0.0, reserved_ - peak_[i]);
  if (running_) --running_;
}

}  // namespace hcsim::plan
