// Parsing of unit strings in topology and scenario files: "28GB/s", "200Gb/s", "1.6TB/s",
// "64GiB", "256MiB", "500ns", "0.5us", "2ms". Decimal prefixes are powers of 1000, binary (Ki, Mi,
// Gi, Ti) powers of 1024; "B" is bytes and "b" bits. Results are exact integers (bytes/s, bytes,
// picoseconds); a value that does not come out integral is rounded to the nearest unit.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace sim {

/// Each returns nullopt and sets `why` on malformed input, negative values or overflow.
std::optional<std::uint64_t> parse_bandwidth(const std::string& s, std::string* why);  ///< bytes/s
std::optional<std::uint64_t> parse_size(const std::string& s, std::string* why);       ///< bytes
std::optional<std::uint64_t> parse_duration(const std::string& s, std::string* why);   ///< picoseconds

std::string format_bytes(std::uint64_t b);  ///< "64 MiB", "1.5 KiB", "12 B"

}  // namespace sim
