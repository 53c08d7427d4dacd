#include "sim/kernel.h"

#include "sim/stop.h"

namespace sim {

void configure_kernel() {
  static bool done = false;
  if (!done) {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    done = true;
  }
}

ScScheduler::ScScheduler(sc_core::sc_module_name name) : sc_core::sc_module(name) {
  SC_METHOD(run);
  sensitive << wake_;
  dont_initialize();
}

void ScScheduler::schedule(models::Tick at, models::EventHandler* h, std::uint64_t a, std::uint64_t b) {
  models::Tick n = now();
  if (at < n) at = n;
  q_.push(at, h, a, b);
  if (!in_run_ && at < armed_) {
    armed_ = at;
    wake_.notify(sc_core::sc_time::from_value(at - n));  // an earlier notify replaces a later one
  }
}

void ScScheduler::arm() {
  if (q_.empty()) { armed_ = models::kTickMax; return; }
  models::Tick head = q_.head_time(), n = now();
  armed_ = head;
  wake_.notify(sc_core::sc_time::from_value(head > n ? head - n : 0));
}

void ScScheduler::run() {
  if (stop_reason() != 0) {  // a signal or a trace error: end the simulation at this time step
    sc_core::sc_stop();
    return;
  }
  in_run_ = true;
  const models::Tick n = now();
  while (!q_.empty() && q_.head_time() <= n) {
    models::EventRecord r = q_.pop();
    ++processed_;
    if (const models::EventRecord* nx = q_.peek()) nx->h->prefetch(nx->a, nx->b);
    r.h->on_event(r.a, r.b);
  }
  in_run_ = false;
  if (processed_ >= next_poll_ || --steps_left_ == 0) {  // both ~0 unless a live view asked for it
    next_poll_ = processed_ + poll_every_;
    steps_left_ = poll_steps_;
    poll_();
  }
  arm();
}

}  // namespace sim
