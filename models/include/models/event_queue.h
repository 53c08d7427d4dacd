// The flat event queue of a fabric (docs/architecture.md#models): plain records ordered by (time, sequence),
// no per-component kernel events. The SystemC shell (models/kernel.h) drives one of these from a
// single SC_METHOD; unit tests drive it with run_until_idle().
#pragma once
#include <cstdint>
#include <vector>

#include "models/time.h"

namespace models {

/// Receiver of events. `a` and `b` are opaque arguments chosen by whoever scheduled the event.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint64_t a, std::uint64_t b) = 0;
  /// The event (a, b) is the next to run: start loading what it will touch (a cache hint only).
  virtual void prefetch(std::uint64_t /*a*/, std::uint64_t /*b*/) {}
};

struct EventRecord {
  Tick t;
  EventHandler* h;
  std::uint64_t a, b;
};
/// Time source + scheduler seen by the models.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Tick now() const = 0;
  /// Schedule h->on_event(a, b) at absolute time `at` (>= now()).
  virtual void schedule(Tick at, EventHandler* h, std::uint64_t a = 0, std::uint64_t b = 0) = 0;
};

/// The pending events, popped in (time, insertion) order: a monotone radix heap
/// (docs/architecture.md#models). Event times never precede the last popped time (every scheduler
/// clamps to now()), which is what a radix heap needs. Bucket 0 holds the events at exactly the
/// last popped time, in insertion order; bucket b > 0 those whose time first differs from it in
/// bit b-1. A pop from an empty bucket 0 moves the lowest non-empty bucket down (into buckets
/// that are empty then), so each bucket stays in insertion order and ties pop first-scheduled-
/// first without a sequence key. Pushes are appends and pops mostly sequential scans: at 8192
/// endpoints (~200 K pending events) this misses cache far less than a binary heap.
class EventQueue {
 public:
  void push(Tick at, EventHandler* h, std::uint64_t a, std::uint64_t b) {
    if (at < last_) at = last_;  // defensive: the schedulers already clamp to now()
    const unsigned k = bucket_of(at);
    Bucket& bk = bk_[k];
    if (bk.size() == bk.head) { mask_ |= Mask{1} << k; min_[k] = at; arg_[k] = bk.size(); }
    else if (at < min_[k]) { min_[k] = at; arg_[k] = bk.size(); }
    bk.items.push_back(EventRecord{at, h, a, b});
    ++seq_;
    if (++size_ > peak_) peak_ = size_;
  }
  bool empty() const { return size_ == 0; }
  /// The earliest pending time (the queue must not be empty).
  Tick head_time() const { return min_[lowest()]; }
  /// The event pop() would return now (nullptr when empty).
  const EventRecord* peek() const {
    if (size_ == 0) return nullptr;
    const Bucket& b0 = bk_[0];
    if (b0.head < b0.size()) return &b0.items[b0.head];
    const unsigned k = lowest();
    return &bk_[k].items[arg_[k]];
  }
  EventRecord pop() {
    if (bk_[0].size() == bk_[0].head) settle();
    Bucket& b0 = bk_[0];
    EventRecord r = b0.items[b0.head++];
    --size_;
    if (b0.head == b0.items.size()) { recycle(b0.items, 0); b0.head = 0; mask_ &= ~Mask{1}; }
    return r;
  }
  std::size_t size() const { return size_; }
  /// The most events ever pending at once: what the queue's memory follows.
  std::size_t peak() const { return peak_; }
  std::uint64_t pushed() const { return seq_; }
  /// Event records the buckets' buffers can hold: what the queue's memory is.
  std::size_t capacity() const {
    std::size_t c = 0;
    for (const Bucket& b : bk_) c += b.items.capacity();
    return c;
  }

 private:
  using Mask = unsigned __int128;  // bit k: bucket k is non-empty (65 buckets)
  struct Bucket {
    std::vector<EventRecord> items;
    std::size_t head = 0;  // bucket 0 pops from the front; the others are moved whole
    std::size_t size() const { return items.size(); }
  };
  unsigned bucket_of(Tick t) const {
    const Tick x = t ^ last_;
    return x == 0 ? 0u : 64u - static_cast<unsigned>(__builtin_clzll(x));
  }
  unsigned lowest() const {
    const auto lo = static_cast<std::uint64_t>(mask_);
    return lo != 0 ? static_cast<unsigned>(__builtin_ctzll(lo)) : 64u;  // bit 64 is the only high bit
  }
  /// An emptied bucket's buffer (`extra`: records held outside the buckets meanwhile): cleared
  /// and kept, unless it is larger than kKeep records and the buffers together hold more than
  /// four times the pending events plus kKeep per bucket; then it is freed. Each bucket's buffer
  /// grows to the most events it held since it was last emptied, and the 65 buckets reach theirs
  /// at different times: always kept, their sum grew to several times the most events ever
  /// pending at once (at 8192 NPUs, hundreds of MB). Freeing every large one instead cost 10 %
  /// of a run's time in re-grown buffers.
  void recycle(std::vector<EventRecord>& v, std::size_t extra) {
    v.clear();
    if (v.capacity() > kKeep && capacity() + extra > 4 * size_ + 65 * kKeep) std::vector<EventRecord>().swap(v);
  }
  static constexpr std::size_t kKeep = 4096;
  /// Bucket 0 is empty: make the lowest non-empty bucket's minimum the new last time and move
  /// that bucket's events down, in order.
  void settle() {
    const unsigned k = lowest();
    last_ = min_[k];
    std::vector<EventRecord> moving;
    moving.swap(bk_[k].items);
    bk_[k].head = 0;
    mask_ &= ~(Mask{1} << k);
    for (const EventRecord& r : moving) {
      const unsigned j = bucket_of(r.t);  // j < k
      Bucket& bj = bk_[j];
      if (bj.items.empty()) { mask_ |= Mask{1} << j; min_[j] = r.t; arg_[j] = 0; }
      else if (r.t < min_[j]) { min_[j] = r.t; arg_[j] = bj.items.size(); }
      bj.items.push_back(r);
    }
    recycle(moving, moving.capacity());
    bk_[k].items.swap(moving);  // back to its bucket (empty now), or nothing when freed
  }
  Bucket bk_[65];
  Tick min_[65] = {};
  std::size_t arg_[65] = {};  // the index of the first event at min_[k] in bucket k
  Mask mask_ = 0;
  Tick last_ = 0;
  std::size_t size_ = 0, peak_ = 0;
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
      if (const EventRecord* nx = q_.peek()) nx->h->prefetch(nx->a, nx->b);
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
