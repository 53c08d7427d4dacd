// SystemC shell of the fabric (docs/architecture.md#sim): one SC_METHOD owns the flat event queue of plain
// records and re-arms itself with one sc_event at the queue head. Models never touch the kernel.
#pragma once
#include <algorithm>
#include <functional>

#include <systemc>

#include "models/event_queue.h"

namespace sim {

class ScScheduler : public sc_core::sc_module, public models::Scheduler {
 public:
  SC_HAS_PROCESS(ScScheduler);
  explicit ScScheduler(sc_core::sc_module_name name);

  models::Tick now() const override { return sc_core::sc_time_stamp().value(); }
  void schedule(models::Tick at, models::EventHandler* h, std::uint64_t a, std::uint64_t b) override;
  std::uint64_t events_processed() const { return processed_; }
  /// The most events pending at once in the flat queue (memory follows the work in flight).
  std::uint64_t events_pending_peak() const { return q_.peak(); }
  /// Call `fn` after the batch of events of a time step once at least `every` events were processed,
  /// or `every / 16` time steps run, since its last call (never inside an event): a cheap hook for
  /// wall-clock checks (live.h); time steps count too because some runs have few, slow events.
  void set_poll(std::function<void()> fn, std::uint64_t every) {
    poll_ = std::move(fn);
    poll_every_ = every ? every : 1;
    poll_steps_ = std::max<std::uint64_t>(1, poll_every_ / 16);
    next_poll_ = processed_ + poll_every_;
    steps_left_ = poll_steps_;
  }

 private:
  void run();
  void arm();
  models::EventQueue q_;
  sc_core::sc_event wake_;
  models::Tick armed_ = models::kTickMax;
  bool in_run_ = false;
  std::uint64_t processed_ = 0;
  std::function<void()> poll_;
  std::uint64_t poll_every_ = 0, next_poll_ = ~0ULL, poll_steps_ = 0, steps_left_ = ~0ULL;
};

/// Kernel time resolution is 1 ps so that sc_time values equal models::Tick.
void configure_kernel();

}  // namespace sim
