// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014): the
// one 64-bit mixer of models/ and of sim/ above it. Plain C++, no room: every room may include it.
#pragma once
#include <cstdint>

namespace models {

/// splitmix64's step for state x: add the golden-ratio increment, then the finaliser. Used as a
/// hash mixer (the network's ECMP and route hashes, sim/'s payload patterns) and, through
/// SplitMix64, as a generator.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The splitmix64 generator: the same seed draws the same sequence on every machine.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    const std::uint64_t out = splitmix64(state);
    state += 0x9e3779b97f4a7c15ULL;
    return out;
  }
};

}  // namespace models
