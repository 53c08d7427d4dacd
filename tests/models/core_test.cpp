// Simulated time and the flat event queue (docs/architecture.md#models).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "models/event_queue.h"
#include "models/mem/hbm.h"
#include "models/machine.h"
#include "models/mem/reduce.h"
#include "models/npu/regmap.h"
#include "models/sampler.h"
#include "models/splitmix64.h"
#include "machine_rig.h"

using namespace models;
using namespace models_test;

TEST(Time, SerializationRoundsUpToPicoseconds) {
  EXPECT_EQ(serialization_ps(28, 28ULL * 1000 * 1000 * 1000), 1000u);  // 28 B at 28 GB/s = 1 ns
  EXPECT_EQ(serialization_ps(1, 3), 333333333334u);                    // 1/3 s rounded up
  EXPECT_EQ(serialization_ps(64ULL << 30, 1000000000ULL), 68719476736000ULL);  // 64 GiB * 1e12 needs 128 bits
  EXPECT_EQ(serialization_ps(64ULL << 30, 1), kTickMax);                          // saturates, never wraps
  EXPECT_EQ(serialization_ps(0, 5), 0u);
}

// The published splitmix64 sequence for seed 1234567 (the reference C code of Steele, Lea and Flood
// as printed by Rosetta Code, "Pseudo-random numbers/Splitmix64"), and the mixer as one step of it.
TEST(SplitMix64, MatchesThePublishedSequence) {
  SplitMix64 g{1234567};
  const std::uint64_t want[] = {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                                4593380528125082431ULL, 16408922859458223821ULL};
  for (std::uint64_t w : want) EXPECT_EQ(g.next(), w);
  EXPECT_EQ(splitmix64(1234567), want[0]);
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
}

TEST(EventQueue, OrdersByTimeThenInsertion) {
  struct H : EventHandler {
    std::vector<std::uint64_t> seen;
    void on_event(std::uint64_t a, std::uint64_t) override { seen.push_back(a); }
  } h;
  StandaloneScheduler s;
  s.schedule(30, &h, 3);
  s.schedule(10, &h, 1);
  s.schedule(30, &h, 4);
  s.schedule(10, &h, 2);
  s.run();
  EXPECT_EQ(h.seen, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}


// The queue's heap + current-time FIFO against a reference order: every event, including those
// handlers schedule for the current time or later while running, pops in (time, insertion) order.
TEST(EventQueue, MatchesReferenceOrderUnderSameTimePushes) {
  struct Rec { Tick t; std::uint64_t seq; };
  struct H : EventHandler {
    StandaloneScheduler* s = nullptr;
    std::vector<Rec> popped;     // (time, id) as run
    std::vector<Tick> time_of;   // id -> its scheduled time
    std::uint64_t rng = 12345, budget = 20000;
    std::uint64_t next() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
    void add(Tick at) { time_of.push_back(at); s->schedule(at, this, time_of.size() - 1); }
    void on_event(std::uint64_t a, std::uint64_t) override {
      popped.push_back({s->now(), a});
      EXPECT_EQ(s->now(), time_of[a]);
      for (int k = static_cast<int>(next() % 4); k > 0 && budget > 0; --k, --budget)
        add(s->now() + (next() % 3 == 0 ? 0 : next() % 50));  // a third at the current time
    }
  } h;
  StandaloneScheduler s;
  h.s = &s;
  for (int i = 0; i < 200; ++i) h.add(h.next() % 100);
  s.run();
  ASSERT_EQ(h.popped.size(), h.time_of.size());
  // Reference: ids are insertion order, so (time, id) must be non-decreasing lexicographically.
  for (std::size_t i = 1; i < h.popped.size(); ++i) {
    const Rec& x = h.popped[i - 1];
    const Rec& y = h.popped[i];
    ASSERT_TRUE(x.t < y.t || (x.t == y.t && x.seq < y.seq)) << "at " << i;
  }
}

// The radix queue against a reference (a sorted multiset of (time, insertion)), driven as the
// SystemC shell drives it: head_time() and peek() read between pushes, pushes earlier than the
// current head but not before the last popped time, times spread over all 64 bits.
TEST(EventQueue, RadixQueueMatchesReferenceWithPeeksAndWideTimes) {
  struct Nop : EventHandler { void on_event(std::uint64_t, std::uint64_t) override {} } h;
  EventQueue q;
  std::vector<std::pair<Tick, std::uint64_t>> ref;  // kept sorted
  std::uint64_t rng = 987654321, id = 0;
  auto next = [&] { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; };
  Tick last = 0;
  auto push = [&](Tick t) {
    q.push(t, &h, id, 0);
    ref.insert(std::upper_bound(ref.begin(), ref.end(), std::make_pair(t, id)), {t, id});
    ++id;
  };
  for (int round = 0; round < 20000; ++round) {
    const std::uint64_t r = next();
    if (r % 3 != 0 || ref.empty()) {
      const int shift = static_cast<int>(next() % 64);
      Tick t = last + ((next() >> shift) % ((kTickMax - last) / 2 + 1));  // never wraps
      if (r % 7 == 0) t = last;                        // at the current time
      if (r % 11 == 0 && !ref.empty()) t = ref[0].first;  // a tie with the head
      push(t);
    } else {
      ASSERT_EQ(q.head_time(), ref[0].first);
      const EventRecord* pk = q.peek();
      ASSERT_NE(pk, nullptr);
      EXPECT_EQ(pk->a, ref[0].second);
      EventRecord got = q.pop();
      ASSERT_EQ(got.t, ref[0].first) << "round " << round;
      ASSERT_EQ(got.a, ref[0].second) << "round " << round;
      last = got.t;
      ref.erase(ref.begin());
    }
    ASSERT_EQ(q.size(), ref.size());
  }
  while (!ref.empty()) {
    EventRecord got = q.pop();
    ASSERT_EQ(got.a, ref[0].second);
    ref.erase(ref.begin());
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.peek(), nullptr);
}

// Counters over time (models/sampler.h): spans split over intervals in proportion with exact sums,
// contributions to earlier intervals merged, queue maxima over the time a level holds.
TEST(Sampler, SplitsSpansExactly) {
  Sampler sm;
  sm.enable(10, 2);
  sm.busy(0, 5, 35, 30, 1000);  // busy all of [5, 35): 5 + 10 + 10 + 5 ps
  sm.busy(1, 0, 40, 20, 7);     // half busy over four intervals
  auto v = sm.finish(40);
  ASSERT_EQ(v.size(), 8u);
  std::uint64_t bytes = 0;
  const Tick busy0[] = {5, 10, 10, 5}, busy1[] = {5, 5, 5, 5};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(v[i].obj, 0u);
    EXPECT_EQ(v[i].bin, i);
    EXPECT_EQ(v[i].v.busy_ps, busy0[i]);
    EXPECT_NEAR(static_cast<double>(v[i].v.bytes), 1000.0 * static_cast<double>(busy0[i]) / 30, 1.0);
    bytes += v[i].v.bytes;
    EXPECT_EQ(v[4 + i].v.busy_ps, busy1[i]);
  }
  EXPECT_EQ(bytes, 1000u);
  EXPECT_EQ(v[4].v.bytes + v[5].v.bytes + v[6].v.bytes + v[7].v.bytes, 7u);
}

TEST(Sampler, MergesEarlierIntervalsAndTracksQueues) {
  Sampler sm;
  sm.enable(10, 1);
  sm.count(0, 55, SampleCount::Drops, 2);
  sm.count(0, 3, SampleCount::Ecn);      // an earlier interval, after a later one was opened
  sm.count(0, 7, SampleCount::Ecn, 2);
  sm.count(0, 56, SampleCount::Drops);
  sm.queue(0, 60, 100);                  // 100 bytes over [60, 92), then 50 until the end (105)
  sm.queue(0, 92, 50);
  auto v = sm.finish(105);
  ASSERT_EQ(v.size(), 7u);               // intervals 0, 5 .. 10
  EXPECT_EQ(v[0].bin, 0u);
  EXPECT_EQ(v[0].v.ecn, 3u);
  EXPECT_EQ(v[1].bin, 5u);
  EXPECT_EQ(v[1].v.drops, 3u);
  EXPECT_EQ(v[1].v.queue_max, 0u);
  const std::uint64_t q[] = {100, 100, 100, 100};  // intervals 6..9: 9 holds 100 until 92
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(v[2 + i].bin, 6 + i);
    EXPECT_EQ(v[2 + i].v.queue_max, q[i]);
  }
  EXPECT_EQ(v[6].bin, 10u);
  EXPECT_EQ(v[6].v.queue_max, 50u);
}

// The queue's buffers follow the events pending, not the most each of its 65 buckets ever held:
// 40 rounds each push 100 000 events 2^r ps ahead (so they land in bucket r + 1, a different
// one every round) and pop them all. Kept whole, the buckets' buffers summed to millions of
// records; recycled, the buffers never hold more than about four times the events pending when
// a large one empties, plus 4096 records a bucket (a growing bucket's doubling on top: 6 x and
// 8 x the 100 000 pending are the bounds checked).
TEST(EventQueue, MemoryFollowsPendingEvents) {
  EventQueue q;
  Tick now = 0;
  std::size_t most = 0;
  for (unsigned r = 0; r < 40; ++r) {
    for (std::uint64_t i = 0; i < 100000; ++i) q.push(now + (Tick{1} << r) + i % 7, nullptr, i, 0);
    while (!q.empty()) {
      now = q.pop().t;
      most = std::max(most, q.capacity());
    }
  }
  EXPECT_EQ(q.peak(), 100000u);
  EXPECT_LE(q.capacity(), 6u * 100000u + 65u * 4096u);
  EXPECT_LE(most, 8u * 100000u + 65u * 4096u);
}
