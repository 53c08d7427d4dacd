// Simulated time and the flat event queue (docs/architecture.md#models).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "models/event_queue.h"
#include "models/hbm.h"
#include "models/machine.h"
#include "models/reduce.h"
#include "models/regmap.h"
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

