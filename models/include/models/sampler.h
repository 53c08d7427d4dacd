// Counters over simulated time (docs/trace-schema.md `counter_samples`): per object (a link
// direction, a network port) and sampling interval, what the models counted in that interval.
// No events of its own: the models add busy spans, bytes and counts as traffic happens, binned by
// interval index. Memory follows the (object, interval) pairs that saw traffic: one open interval
// per object, the closed ones (and contributions to earlier intervals) kept as records merged at
// the end. Plain C++; disabled (interval 0) it costs the models one branch per call site.
#pragma once
#include <cstdint>
#include <vector>

#include "models/time.h"

namespace models {

/// What one object did in one sampling interval.
struct SampleBin {
  Tick busy_ps = 0;              ///< time spent transmitting
  std::uint64_t bytes = 0;       ///< bytes carried
  std::uint64_t queue_max = 0;   ///< deepest queue (bytes) during the interval
  std::uint32_t ecn = 0, cnp = 0, pause = 0, crc = 0, retransmit = 0, drops = 0;  // events in one interval
  void merge(const SampleBin& o);
};

enum class SampleCount : std::uint8_t { Ecn, Cnp, Pause, Crc, Retransmit, Drops };

class Sampler {
 public:
  /// Sample `objects` objects every `interval_ps` (0: off).
  void enable(Tick interval_ps, std::size_t objects);
  bool on() const { return interval_ > 0; }
  Tick interval() const { return interval_; }
  /// The object was busy for `busy` ps spread evenly over [t0, t1) (busy <= t1 - t0), carrying
  /// `bytes`: both split over the intervals in proportion to the overlap, with exact integer sums.
  void busy(std::uint32_t obj, Tick t0, Tick t1, Tick busy, std::uint64_t bytes);
  void count(std::uint32_t obj, Tick t, SampleCount c, std::uint64_t n = 1);
  /// The object's queue holds `bytes` from `t` on (calls in time order per object).
  void queue(std::uint32_t obj, Tick t, std::uint64_t bytes);

  struct Sample {
    std::uint32_t obj;
    std::uint32_t bin;  ///< interval index: [bin * interval, (bin + 1) * interval)
    SampleBin v;
  };
  /// Every (object, interval) that saw something, by object then interval; queues still holding
  /// bytes are accounted until `end`. Ends the sampling (call once).
  std::vector<Sample> finish(Tick end);

 private:
  struct Open {
    std::uint32_t bin = ~0u;
    SampleBin v;
    Tick q_t = 0;
    std::uint64_t q = 0;
  };
  SampleBin& at(std::uint32_t obj, std::uint64_t bin);
  static constexpr std::uint32_t kNone = ~0u;
  Tick interval_ = 0;
  std::vector<Open> open_;
  std::vector<Sample> done_;
};

}  // namespace models
