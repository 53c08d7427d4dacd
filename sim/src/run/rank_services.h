// What a rank's program asks of the cluster it runs in (run/cluster.h implements it).
#pragma once
#include <cstdint>

#include "hcomm/hcomm.h"

namespace sim {

class RankServices {
 public:
  virtual ~RankServices() = default;
  /// Rank r's call `what` returned rc: true on success; else false, the failure recorded (the
  /// rank's first error, its step's first error, a failure of the run).
  virtual bool ok(std::uint32_t r, const char* what, hcomm_result_t rc) = 0;
  /// The host-side rendezvous of the ranks still running (no simulated time, nothing on the devices).
  virtual void rendezvous() = 0;
  /// Rank r starts repetition `rep` of workload step s: the driver's phase, the rank's position.
  virtual void enter(std::uint32_t r, std::uint32_t s, std::uint32_t rep) = 0;
  /// Rank r has completed `n` workload operations (step repetitions; the live view).
  virtual void ops_done(std::uint32_t r, std::uint64_t n) = 0;
  /// Rank r's program ended on a failed call (/on_rank_loss stop).
  virtual void stop(std::uint32_t r) = 0;
};

}  // namespace sim
