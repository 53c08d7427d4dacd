// The live view's sampler (sim/live.h): polled by the fabric scheduler, it reads the wall clock
// and, once per refresh period, builds a snapshot of the running cluster for the report callback.
#pragma once
#include <chrono>

#include "sim/live.h"

namespace sim {

class Cluster;

class LiveMonitor {
 public:
  LiveMonitor(Cluster& c, const LiveOptions& o);
  /// From ScScheduler's poll hook: a report when the period has passed. Reads only.
  void poll();

 private:
  LiveSnapshot snapshot(double wall_s);
  Cluster& c_;
  const LiveOptions& o_;
  std::chrono::steady_clock::time_point start_;
  double next_s_, last_s_ = 0;
  std::uint64_t last_events_ = 0;
};

}  // namespace sim
