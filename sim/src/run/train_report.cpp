// What a train_step repetition measured (docs/training-steps.md#what-is-reported): the iteration
// time, and on the critical rank (the one that finished last) its compute time, its communication
// time and the communication it did not hide behind compute.
#include <algorithm>

#include "run/cluster.h"

namespace sim {

std::vector<TrainStepReport> Cluster::train_reports() const {
  std::vector<TrainStepReport> out;
  for (const auto& [key, v] : train_meas_) {
    if (v.size() != nranks_ || !std::all_of(v.begin(), v.end(), [](const TrainMeas& m) { return m.done; })) continue;
    models::Tick t0 = v[0].t0;
    std::uint32_t crit = 0;
    for (std::uint32_t r = 0; r < nranks_; ++r) {
      t0 = std::min(t0, v[r].t0);
      if (v[r].end > v[crit].end) crit = r;  // the lowest rank among those that finished last
    }
    const TrainMeas& m = v[crit];
    TrainStepReport rep;
    rep.step = key.first;
    rep.rep = key.second;
    rep.ranks = nranks_;
    rep.critical_rank = crit;
    const models::Tick iter = m.end - t0;
    rep.iteration_us = static_cast<double>(iter) / 1e6;
    rep.compute_us = static_cast<double>(m.compute) / 1e6;
    rep.comm_us = static_cast<double>(m.comm) / 1e6;
    rep.exposed_comm_us = static_cast<double>(iter - std::min(iter, m.compute)) / 1e6;
    rep.overlap = m.comm > 0 ? std::max(0.0, 1.0 - rep.exposed_comm_us / rep.comm_us) : 0.0;
    rep.grad_bytes = m.grad_bytes;
    out.push_back(rep);
  }
  return out;
}

}  // namespace sim
