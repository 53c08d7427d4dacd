// A RankHost that runs a rank program in the simulator's own rank threads (the in-process side of
// the exec comparisons: tests/exec/exec_test.cpp, tests/bench/exec_inproc.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <utility>

#include "sim/config/topology.h"
#include "sim/runner.h"

namespace exec_test {

class InProcess final : public sim::RankHost {
 public:
  /// program(rank, ranks, device id): one rank's program, run in its simulator thread.
  using Program = std::function<void(std::uint32_t, std::uint32_t, std::uint32_t)>;
  InProcess(const sim::Topology& t, Program program) : t_(t), program_(std::move(program)) {}
  void attach(sim::SimDriver&, sim::RankLife&) override {}
  void run(std::uint32_t r) override {
    program_(r, static_cast<std::uint32_t>(t_.rank_to_npu.size()), t_.npus[t_.rank_to_npu[r]].device_id);
  }
  void killed(std::uint32_t) override {}

 private:
  const sim::Topology& t_;
  Program program_;
};

}  // namespace exec_test
