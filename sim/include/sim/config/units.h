// The number grammar (docs/topology-format.md#numbers), one for files, the command line and
// --fault strings: an integer is [0-9]+ up to 2^64 - 1; a decimal is [0-9]+ or [0-9]+.[0-9]+; a
// value with a unit is a decimal then the unit, optionally after one space. No sign, hex,
// exponent or surrounding spaces; an integer above 2^64 - 1 is an error, never clamped.
// Parsing of unit strings in topology and scenario files: "28GB/s", "200Gb/s", "1.6TB/s",
// "64GiB", "256MiB", "500ns", "0.5us", "2ms". Decimal prefixes are powers of 1000, binary (Ki, Mi,
// Gi, Ti) powers of 1024; "B" is bytes and "b" bits. Results are exact integers (bytes/s, bytes,
// picoseconds): a value that is not a whole number of units within a relative 1e-6 (decimal
// fractions such as "1.1KB" are not exact in binary floating point) is an error, never rounded
// silently ("1b/s" is 0.125 B/s, "0.1ps" is 0.1 ps). Values of 2^63 units or more are errors.
// Bandwidths must lie in [1 KB/s, 1 PB/s]: below, one transfer of the largest workload size would
// take longer than the simulated clock (64-bit picoseconds) can count.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace sim {

constexpr double kUnitRelTolerance = 1e-6;       ///< how far from a whole unit a value may be
constexpr double kMinBandwidthBps = 1e3;         ///< 1 KB/s
constexpr double kMaxBandwidthBps = 1e15;        ///< 1 PB/s

/// [0-9]+ up to 2^64 - 1; nullopt and `why` otherwise (signs, spaces, hex, exponents, overflow).
std::optional<std::uint64_t> parse_uint(const std::string& s, std::string* why);
/// [0-9]+ or [0-9]+.[0-9]+; nullopt and `why` otherwise.
std::optional<double> parse_decimal(const std::string& s, std::string* why);
/// A decimal followed by a unit ("1.5us", "40%", "512 B"): the number and the unit (not checked
/// here); false and `why` otherwise.
bool parse_decimal_unit(const std::string& s, double* num, std::string* unit, std::string* why);

/// Each returns nullopt and sets `why` on malformed input, negative values or overflow.
std::optional<std::uint64_t> parse_bandwidth(const std::string& s, std::string* why);  ///< bytes/s
std::optional<std::uint64_t> parse_size(const std::string& s, std::string* why);       ///< bytes
std::optional<std::uint64_t> parse_duration(const std::string& s, std::string* why);   ///< picoseconds

std::string format_bytes(std::uint64_t b);  ///< "64 MiB", "1.5 KiB", "12 B"

}  // namespace sim
