// hcomm_test's observer decorator: forwards every report to the simulator's observer and keeps
// what the library reports about rank 0's operations of one kind (the algorithm it selected and
// why). Installed in place of the observer part of the driver set before any context exists, so
// libhcomm itself is unchanged and the runtime, NIC and host channel are the simulator's own.
#pragma once
#include <cstdint>
#include <string>

#include "hcomm/driver.h"

namespace hcomm_tool {

class OpTap final : public hcomm::DriverObserver {
 public:
  hcomm::DriverObserver* d = nullptr;
  std::string kind;                       // the kind to watch
  std::string algorithm, chosen_by;       // rank 0's most recent one
  void route_decided(std::uint32_t dev, const hcomm::RouteInfo& r) override { d->route_decided(dev, r); }
  bool route_reports() override { return d->route_reports(); }
  void profile_op(std::uint32_t dev, std::uint64_t b, std::uint64_t e, const hcomm::OpInfo& info) override {
    if (info.rank == 0 && info.kind == kind) {
      algorithm = info.algorithm;
      chosen_by = info.chosen_by;
    }
    d->profile_op(dev, b, e, info);
  }
  void log(std::uint32_t dev, int level, const std::string& line) override { d->log(dev, level, line); }
  void failover_reported(std::uint32_t dev, const hcomm::FailoverInfo& f) override { d->failover_reported(dev, f); }
};

}  // namespace hcomm_tool
