// Simulated time and transfer arithmetic shared by every model.
// Time is an integer number of picoseconds (Tick) so that results are exact and deterministic;
// bandwidths are integer bytes per second.
#pragma once
#include <cstdint>

namespace models {

using Tick = std::uint64_t;                 ///< picoseconds
constexpr Tick kPsPerNs = 1000;
constexpr Tick kPsPerUs = 1000 * 1000;
constexpr Tick kPsPerSec = 1000ULL * 1000 * 1000 * 1000;
constexpr Tick kTickMax = ~Tick(0);

/// Serialization time of `bytes` at `bytes_per_sec`, rounded up to the next picosecond.
/// Uses 128-bit arithmetic: 64 GiB * 1e12 does not fit in 64 bits.
inline Tick serialization_ps(std::uint64_t bytes, std::uint64_t bytes_per_sec) {
  if (bytes == 0) return 0;
  if (bytes_per_sec == 0) return kTickMax;
  unsigned __int128 num = static_cast<unsigned __int128>(bytes) * kPsPerSec;
  unsigned __int128 q = (num + bytes_per_sec - 1) / bytes_per_sec;
  return q > kTickMax ? kTickMax : static_cast<Tick>(q);
}

inline double ps_to_us(Tick t) { return static_cast<double>(t) / 1e6; }
inline double ps_to_ns(Tick t) { return static_cast<double>(t) / 1e3; }

}  // namespace models
