// The SystemC shell's activations (sim/kernel.h, docs/architecture.md#sim): one activation runs
// the queue's time steps back to back while no process can act in between, and what a process
// observes is what it would with one activation per time step. Checked against hand-computed
// times: a process woken by a model event runs at that event's time, though the activation had
// run ahead of the kernel; an event it schedules runs before later queued ones; a process's own
// timed wait is not overtaken (it sees exactly the events before its time); a kernel handler's
// event runs at the kernel's time.
#include <gtest/gtest.h>

#include <vector>

#include <systemc>

#include "sim/kernel.h"

using models::kPsPerNs;
using models::Tick;

namespace {

constexpr Tick kNs = kPsPerNs;

// Records the time of each of its events; the event numbered `wake_on` wakes `ev` (immediately).
struct Recorder : models::EventHandler {
  sim::ScScheduler* s = nullptr;
  std::vector<std::pair<std::uint64_t, Tick>> seen;  // (a, model time)
  std::vector<Tick> kernel_at;                        // the kernel's time at each event (kernel handler)
  sc_core::sc_event* ev = nullptr;
  std::uint64_t wake_on = ~0ull;
  void on_event(std::uint64_t a, std::uint64_t) override {
    seen.emplace_back(a, s->now());
    kernel_at.push_back(sc_core::sc_time_stamp().value());
    if (a == wake_on) sim::wake_at_now(*ev, false);
  }
};

struct Host : sc_core::sc_module {
  sim::ScScheduler& s;
  Recorder& rec;
  Recorder& late;
  sc_core::sc_event ev;
  Tick woke_at = 0, timed_at = 0;
  std::size_t seen_at_timed = 0;
  SC_HAS_PROCESS(Host);
  Host(sc_core::sc_module_name n, sim::ScScheduler& sch, Recorder& r, Recorder& l) : sc_core::sc_module(n), s(sch), rec(r), late(l) {
    SC_THREAD(woken);
    SC_THREAD(timed);
  }
  void woken() {
    wait(ev);
    woke_at = sc_core::sc_time_stamp().value();
    s.schedule(woke_at + 5 * kNs, &late, 100, 0);  // before the queued event at 400 ns
  }
  void timed() {
    wait(sc_core::sc_time(250, sc_core::SC_NS));
    timed_at = sc_core::sc_time_stamp().value();
    seen_at_timed = rec.seen.size();
  }
};

}  // namespace

TEST(ScScheduler, TimeStepsRunInOneActivationAsIfOneEach) {
  sim::configure_kernel();
  sim::ScScheduler sched("fabric");
  Recorder rec, late, kern;
  rec.s = late.s = kern.s = &sched;
  Host host("host", sched, rec, late);
  rec.ev = &host.ev;
  rec.wake_on = 3;
  // Events 1..9 at 10, 20, ..., 90 ns; event 3 (30 ns) wakes the host. Then 300, 400 ns, and a
  // kernel handler's event at 500 ns; the timed process waits until 250 ns.
  for (std::uint64_t i = 1; i <= 9; ++i) sched.schedule(i * 10 * kNs, &rec, i, 0);
  sched.schedule(300 * kNs, &rec, 30, 0);
  sched.schedule(400 * kNs, &rec, 40, 0);
  sched.schedule(500 * kNs, &kern, 50, 0);
  sched.set_kernel_handler(&kern);
  sc_core::sc_start();

  // Every event at its own time, in time order.
  ASSERT_EQ(rec.seen.size(), 11u);
  for (std::uint64_t i = 1; i <= 9; ++i) EXPECT_EQ(rec.seen[i - 1], std::make_pair(i, i * 10 * kNs));
  EXPECT_EQ(rec.seen[9], std::make_pair(std::uint64_t{30}, 300 * kNs));
  EXPECT_EQ(rec.seen[10], std::make_pair(std::uint64_t{40}, 400 * kNs));
  // The woken process ran at the waking event's time, and its event ran 5 ns later.
  EXPECT_EQ(host.woke_at, 30 * kNs);
  ASSERT_EQ(late.seen.size(), 1u);
  EXPECT_EQ(late.seen[0].second, 35 * kNs);
  // The timed wait at 250 ns saw the nine events before it and none after.
  EXPECT_EQ(host.timed_at, 250 * kNs);
  EXPECT_EQ(host.seen_at_timed, 9u);
  // The kernel handler's event ran with the kernel at its time.
  ASSERT_EQ(kern.kernel_at.size(), 1u);
  EXPECT_EQ(kern.kernel_at[0], 500 * kNs);
  EXPECT_EQ(sched.reached(), 500 * kNs);
  // 13 time steps in 4 activations: 10-30 ns (the wake at 30 ends it; the host is woken at 30 ns
  // before any step runs), 35-90 ns (the timed wait at 250 ns ends it), 300-400 ns (the kernel
  // handler's event is next), 500 ns. One activation per time step took 13.
  EXPECT_EQ(sched.events_processed(), 13u);
  EXPECT_EQ(sched.activations(), 4u);
}
