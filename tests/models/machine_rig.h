// Shared fixtures of the model tests (tests/models/*_test.cpp): a recorder of stream idle times
// and errors, an NPU without overheads, a machine on its own scheduler, closed-form timing.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/machine.h"

namespace models_test {
using namespace models;

// Closed form in double, independent of serialization_ps's integer arithmetic.
inline Tick expected_ps(double bytes, double Bps) { return static_cast<Tick>(std::ceil(bytes * 1e12 / Bps - 1e-6)); }

struct Recorder : MachineListener {
  std::map<std::uint32_t, Tick> idle_at;
  std::vector<std::string> errors;
  Scheduler* s = nullptr;
  void on_stream_idle(std::uint32_t st) override { idle_at[st] = s->now(); }
  void on_marker(std::uint32_t, std::uint32_t, std::uint64_t, Tick) override {}
  void on_task_error(std::uint32_t, const std::string& why) override { errors.push_back(why); }
};

inline NpuParams bare_npu() {  // no dispatch/setup overheads: timing is the link's alone
  NpuParams p;
  p.task_dispatch_ps = 0;
  p.sdma_setup_ps = 0;
  p.notify_local_ps = 0;
  p.hbm.access_latency_ps = 0;
  p.sdma_bandwidth_Bps = 1000ULL * 1000 * 1000 * 1000;  // 1 TB/s: never the bottleneck
  p.hbm.capacity_bytes = 1ULL << 30;
  return p;
}

// A machine on its own scheduler with a recorder of stream idle times and errors.
struct Rig {
  StandaloneScheduler sch;
  Recorder rec;
  Machine m;
  explicit Rig(std::uint64_t piece_bytes = 256 * 1024) : m(sch, piece_bytes) {
    rec.s = &sch;
    m.set_listener(&rec);
  }
};

}  // namespace models_test
