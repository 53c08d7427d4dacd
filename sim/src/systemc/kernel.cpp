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
  active_ = this;
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

void ScScheduler::notify_now(sc_core::sc_event& ev, How how, models::Tick at, models::Tick k) {
  if (how == kNow) ev.notify();
  else if (how == kDelta) ev.notify(sc_core::SC_ZERO_TIME);
  else ev.notify(sc_core::sc_time::from_value(at > k ? at - k : 0));
}

void ScScheduler::notify(sc_core::sc_event& ev, How how, models::Tick at) {
  const models::Tick k = sc_core::sc_time_stamp().value();
  if (!in_run_) { notify_now(ev, how, at, k); return; }
  woke_ = true;  // a process may act at this time step: the activation ends with it
  if (mnow_ <= k) { notify_now(ev, how, at, k); return; }
  deferred_at_ = mnow_;
  deferred_.push_back({&ev, how, at});
}

void ScScheduler::arm() {
  const models::Tick n = sc_core::sc_time_stamp().value();
  if (!deferred_.empty()) {  // processes to wake at a time step run ahead of the kernel's
    armed_ = deferred_at_;
    wake_.notify(sc_core::sc_time::from_value(deferred_at_ - n));
    return;
  }
  if (q_.empty()) { armed_ = models::kTickMax; return; }
  const models::Tick head = q_.head_time();
  armed_ = head;
  wake_.notify(sc_core::sc_time::from_value(head > n ? head - n : 0));
}

// One activation (docs/architecture.md#sim): every event at the kernel's time, then the next time
// steps of the queue in order, as long as no process could act in between — none was woken, the
// kernel has nothing pending before the step (a process's timed wait, a delta notification), and
// no event of the kernel handler (set_kernel_handler) is next. Nothing outside the models can
// observe the models' time running ahead of the kernel's: the processes a step wakes are woken
// at the start of the next activation, at that step's time, in the order the step woke them.
// The same events run in the same order as with one activation per time step, at the same times.
void ScScheduler::run() {
  if (stop_reason() != 0) {  // a signal or a trace error: end the simulation at this time step
    sc_core::sc_stop();
    return;
  }
  const models::Tick k = sc_core::sc_time_stamp().value();
  if (!deferred_.empty()) {  // the processes a time step woke ahead of the kernel: their time has come
    std::vector<Deferred> d;
    d.swap(deferred_);
    for (const Deferred& x : d) notify_now(*x.ev, x.how, x.at, k);
    if (q_.empty() || q_.head_time() > k) { arm(); return; }  // they run before the next step
  }
  // Nothing else may happen before this time: another process's timed wait or a delta cycle.
  const models::Tick gap = sc_core::sc_time_to_pending_activity().value();
  const models::Tick limit = gap >= models::kTickMax - k ? models::kTickMax : k + gap;
  in_run_ = true;
  ++activations_;
  woke_ = false;
  mnow_ = k;
  for (;;) {
    while (!q_.empty() && q_.head_time() <= mnow_) {
      if (mnow_ > k && q_.peek()->h == kernel_h_) { woke_ = true; break; }  // it runs at the kernel's time
      models::EventRecord r = q_.pop();
      ++processed_;
      if (const models::EventRecord* nx = q_.peek()) nx->h->prefetch(nx->a, nx->b);
      if (r.h == kernel_h_) woke_ = true;
      r.h->on_event(r.a, r.b);
    }
    if (woke_ || q_.empty() || stop_reason() != 0) break;
    const models::Tick h = q_.head_time();
    if (h >= limit) break;
    mnow_ = h;
  }
  in_run_ = false;
  reached_ = std::max(reached_, mnow_);
  if (processed_ >= next_poll_ || --steps_left_ == 0) {  // both ~0 unless a live view asked for it
    next_poll_ = processed_ + poll_every_;
    steps_left_ = poll_steps_;
    poll_();
  }
  arm();
}

}  // namespace sim
