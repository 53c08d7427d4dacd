// SystemC shell of the fabric (docs/architecture.md#sim): one SC_METHOD owns the flat event queue of plain
// records and re-arms itself with one sc_event at the queue head. Models never touch the kernel.
// One activation runs the queue's time steps back to back for as long as the SystemC kernel has
// nothing to do in between (docs/architecture.md#sim, "Time steps in one activation").
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include <systemc>

#include "models/event_queue.h"

namespace sim {

class ScScheduler : public sc_core::sc_module, public models::Scheduler {
 public:
  SC_HAS_PROCESS(ScScheduler);
  explicit ScScheduler(sc_core::sc_module_name name);

  /// The models' time: inside an activation, the time step being run (it may be ahead of the
  /// kernel's, which no process can observe meanwhile); else the kernel's.
  models::Tick now() const override { return in_run_ ? mnow_ : sc_core::sc_time_stamp().value(); }
  void schedule(models::Tick at, models::EventHandler* h, std::uint64_t a, std::uint64_t b) override;
  /// Notify `ev` (delta: at SC_ZERO_TIME; else immediately) from a model event, so that the
  /// processes it wakes run at the models' time: at once when that is the kernel's time, else
  /// at the start of the next activation, which comes at that time. The activation then ends
  /// with the current time step. Outside an activation: a plain notify.
  void wake(sc_core::sc_event& ev, bool delta) { notify(ev, delta ? kDelta : kNow, 0); }
  /// The same for a notification at time `at` (>= now()): the activation does not run past it.
  void wake_at(sc_core::sc_event& ev, models::Tick at) { notify(ev, kAt, at); }
  /// Events of `h` run only at the kernel's time (an activation that reaches one ahead of the
  /// kernel's time ends before it): for handlers that act on SystemC processes (a fault kills one).
  void set_kernel_handler(models::EventHandler* h) { kernel_h_ = h; }
  /// The latest time the simulation has reached: the kernel's, or a later time step the models ran.
  models::Tick reached() const { return std::max<models::Tick>(reached_, sc_core::sc_time_stamp().value()); }
  /// The scheduler of this process's simulation (one per process), or nullptr before it exists.
  static ScScheduler* active() { return active_; }
  std::uint64_t events_processed() const { return processed_; }
  /// Activations of the SC_METHOD so far (each runs one or more time steps of the queue).
  std::uint64_t activations() const { return activations_; }
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
  models::Tick mnow_ = 0;     // the time step being run (in_run_)
  models::Tick reached_ = 0;  // the latest time step run
  bool woke_ = false;         // a model event woke a process (or was a kernel handler's): end the activation
  models::EventHandler* kernel_h_ = nullptr;
  enum How : int { kNow, kDelta, kAt };
  void notify(sc_core::sc_event& ev, How how, models::Tick at);
  static void notify_now(sc_core::sc_event& ev, How how, models::Tick at, models::Tick k);
  struct Deferred {
    sc_core::sc_event* ev;
    How how;
    models::Tick at;
  };
  std::vector<Deferred> deferred_;  // wakes due at deferred_at_, ahead of the kernel's time
  models::Tick deferred_at_ = 0;
  static inline ScScheduler* active_ = nullptr;
  std::uint64_t processed_ = 0, activations_ = 0;
  std::function<void()> poll_;
  std::uint64_t poll_every_ = 0, next_poll_ = ~0ULL, poll_steps_ = 0, steps_left_ = ~0ULL;
};

/// Kernel time resolution is 1 ps so that sc_time values equal models::Tick.
void configure_kernel();

/// The simulated time as the code running now sees it (ScScheduler::now(): a model event's time,
/// or the kernel's in a process). Use it, not sc_time_stamp(), in anything a model event can call.
inline models::Tick now_ps() {
  const ScScheduler* s = ScScheduler::active();
  return s ? s->now() : sc_core::sc_time_stamp().value();
}
/// Wake the processes waiting on `ev` at now_ps() (ScScheduler::wake); delta: SC_ZERO_TIME.
inline void wake_at_now(sc_core::sc_event& ev, bool delta) {
  if (ScScheduler* s = ScScheduler::active()) s->wake(ev, delta);
  else if (delta) ev.notify(sc_core::SC_ZERO_TIME);
  else ev.notify();
}
/// Notify `ev` at simulated time `at` (>= now_ps()), from a model event or a process.
inline void wake_at(sc_core::sc_event& ev, models::Tick at) {
  if (ScScheduler* s = ScScheduler::active()) s->wake_at(ev, at);
  else ev.notify(sc_core::sc_time::from_value(at - sc_core::sc_time_stamp().value()));
}
/// Start a method process `name` that runs `fn` each time `ev` is notified (not at start-up):
/// the driver's background agents (heartbeats, the host network) are such processes.
inline void spawn_method_on(sc_core::sc_event& ev, const char* name, std::function<void()> fn) {
  sc_core::sc_spawn_options o;
  o.spawn_method();
  o.set_sensitivity(&ev);
  o.dont_initialize();
  sc_core::sc_spawn(std::move(fn), name, &o);
}

}  // namespace sim
