// The network's random draws (docs/models/ethernet-switch.md): an xorshift64 generator, seeded
// from NetParams::seed and drawn in event order. The fabric owns one (the packet tiers' drops,
// corruption and ECN marks, the chunk tier's marks), the flow tier another (its DCQCN marks).
#pragma once
#include <cstdint>

namespace models {

class XorShift64 {
 public:
  explicit XorShift64(std::uint64_t seed) : s_(seed ? seed : 1) {}
  /// A draw in [0, 1), 53 bits.
  double uniform() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return static_cast<double>(s_ >> 11) / 9007199254740992.0;
  }

 private:
  std::uint64_t s_;
};

}  // namespace models
