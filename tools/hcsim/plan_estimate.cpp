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


// Fitted on the development machine (docs/plan-format.md#estimates) from runs of 16 to 4096
// ranks of clos-1024 in the three tiers, timing payload.
struct TierCost {
  double per_step;   // s per rank and log2(ranks): an operation's steps
  double per_pair;   // s per (rank, peer) pair: an all-to-all's messages
  double per_unit;   // s per network unit (bytes / unit, per rank, scaled by ranks / 1024)
  double unit;       // bytes per network unit (the flow tier: 1 MiB, one fluid message's worth)
};

const TierCost& cost_of(const std::string& tier) {
  static const TierCost flow{3e-5, 3e-6, 1.6e-6, 1048576};
  static const TierCost chunk{5e-5, 7e-6, 1.8e-6, 65536};
  static const TierCost packet{5e-5, 7e-6, 1.0e-6, 4096};
  return tier == "packet" ? packet : tier == "chunk" ? chunk : flow;
}

}  // namespace

Estimate estimate(const Plan&, const Layout& L, const Workload& w, const std::vector<Result>& rows) {
  Estimate e;
  if (!runnable(rows)) return e;
  const TierCost& c = cost_of(w.fidelity);
  const double n = std::max<double>(2, static_cast<double>(L.npus));
  // Start-up: process, elaboration of the fabric, communicator set-up and discovery.
  e.wall_s = 0.15 + 3e-4 * n + 8e-8 * n * n;
  e.peak_mib = 17 + 0.068 * n;
  double biggest = 0;
  for (auto& r : rows) {
    if (r.step < 0) continue;
    const double b = static_cast<double>(r.bytes);
    double op = c.per_step * n * std::log2(n);
    if (w.is_step()) {  // its collectives: 4 tensor-parallel all-reduces per layer and micro-batch, the gradient buckets
      const json& m = w.step.value("model", json::object());
      const double layers = m.is_object() ? m.value("layers", 1.0) : 1.0, mb = w.step.value("micro_batches", 1.0);
      op *= 4 * layers * mb + 8;
    }
    if (w.op == "alltoall") op += c.per_pair * n * n;
    const double scale = c.unit >= 1048576 ? 1.0 : n / 1024;  // below the flow tier the fabric's hops and queues grow with it
    op += c.per_unit * n * (b / c.unit) * scale;
    e.wall_s += static_cast<double>(w.repeat) * op;
    biggest = std::max(biggest, b);
  }
  if (w.op == "alltoall") e.peak_mib += 1.5e-4 * n * n;  // a QP and its routes per pair
  e.peak_mib += 1e-4 * n * biggest / 1048576;
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
