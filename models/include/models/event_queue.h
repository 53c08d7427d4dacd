// The flat event queue of a fabric (docs/architecture.md#models): plain records ordered by (time, sequence),
// no per-component kernel events. The SystemC shell (models/kernel.h) drives one of these from a
// single SC_METHOD; unit tests drive it with run_until_idle().
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "models/time.h"

namespace models {

/// Receiver of events. `a` and `b` are opaque arguments chosen by whoever scheduled the event.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint64_t a, std::uint64_t b) = 0;
};

struct EventRecord {
  Tick t;
  std::uint64_t seq;  ///< insertion order: ties at one time run first-scheduled-first
  EventHandler* h;
  std::uint64_t a, b;
};

struct EventLater {
  bool operator()(const EventRecord& x, const EventRecord& y) const {
    return x.t != y.t ? x.t > y.t : x.seq > y.seq;
  }
};

/// Time source + scheduler seen by the models.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Tick now() const = 0;
  /// Schedule h->on_event(a, b) at absolute time `at` (>= now()).
  virtual void schedule(Tick at, EventHandler* h, std::uint64_t a = 0, std::uint64_t b = 0) = 0;
};

/// The event heap itself; deterministic because ties break on insertion sequence.
class EventQueue {
 public:
  void push(Tick at, EventHandler* h, std::uint64_t a, std::uint64_t b) {
    heap_.push(EventRecord{at, seq_++, h, a, b});
  }
  bool empty() const { return heap_.empty(); }
  Tick head_time() const { return heap_.top().t; }
  EventRecord pop() {
    EventRecord r = heap_.top();
    heap_.pop();
    return r;
  }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t pushed() const { return seq_; }

 private:
  std::priority_queue<EventRecord, std::vector<EventRecord>, EventLater> heap_;
  std::uint64_t seq_ = 0;
};

/// Pure C++ scheduler for unit tests and kernel-free runs.
class StandaloneScheduler final : public Scheduler {
 public:
  Tick now() const override { return now_; }
  void schedule(Tick at, EventHandler* h, std::uint64_t a = 0, std::uint64_t b = 0) override {
    q_.push(at < now_ ? now_ : at, h, a, b);
  }
  /// Process events until none remain or time would pass `limit`. Returns events processed.
  std::uint64_t run(Tick limit = kTickMax) {
    std::uint64_t n = 0;
    while (!q_.empty() && q_.head_time() <= limit) {
      EventRecord r = q_.pop();
      now_ = r.t;
      r.h->on_event(r.a, r.b);
      ++n;
    }
    return n;
  }
  void advance_to(Tick t) { if (t > now_) now_ = t; }
  bool idle() const { return q_.empty(); }

 private:
  EventQueue q_;
  Tick now_ = 0;
};

}  // namespace models
