#include "sim/config/units.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace sim {
namespace {

constexpr const char* kGrammar = "no sign, hex or exponent";

bool digit(char c) { return c >= '0' && c <= '9'; }

// The length of the longest prefix of s matching [0-9]+(\.[0-9]+)?, 0 if none.
std::size_t decimal_prefix(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size() && digit(s[i])) ++i;
  if (i == 0) return 0;
  if (i + 1 < s.size() && s[i] == '.' && digit(s[i + 1])) {
    i += 2;
    while (i < s.size() && digit(s[i])) ++i;
  }
  return i;
}

}  // namespace

std::optional<std::uint64_t> parse_uint(const std::string& s, std::string* why) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) {
    *why = "expected an integer (digits 0-9 only: " + std::string(kGrammar) + ", no spaces), got \"" + s + "\"";
    return std::nullopt;
  }
  std::uint64_t v = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) { *why = "\"" + s + "\" is larger than 18446744073709551615 (2^64 - 1)"; return std::nullopt; }
    v = v * 10 + d;
  }
  return v;
}

std::optional<double> parse_decimal(const std::string& s, std::string* why) {
  if (s.empty() || decimal_prefix(s) != s.size()) {
    *why = "expected a decimal number (\"12\" or \"12.5\": " + std::string(kGrammar) + ", no spaces), got \"" + s + "\"";
    return std::nullopt;
  }
  const double v = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(v)) { *why = "value out of range: \"" + s + "\""; return std::nullopt; }
  return v;
}

bool parse_decimal_unit(const std::string& s, double* num, std::string* unit, std::string* why) {
  const std::size_t n = decimal_prefix(s);
  if (n == 0) {
    *why = (!s.empty() && s[0] == '-') ? "negative values are not allowed: \"" + s + "\""
                                       : "expected a decimal number followed by a unit (" + std::string(kGrammar) + "), got \"" + s + "\"";
    return false;
  }
  // "1e3us", "1.5E-2ms", "0x10us": an exponent or hex, not a unit beginning with e or x.
  const char c = n < s.size() ? s[n] : '\0';
  const bool exponent = (c == 'e' || c == 'E') && n + 1 < s.size() && (digit(s[n + 1]) || s[n + 1] == '+' || s[n + 1] == '-');
  const bool hex = (c == 'x' || c == 'X') && s.compare(0, n, "0") == 0;
  if (exponent || hex || c == '.') {
    *why = "expected a decimal number followed by a unit (" + std::string(kGrammar) + "), got \"" + s + "\"";
    return false;
  }
  auto v = parse_decimal(s.substr(0, n), why);
  if (!v) return false;
  *num = *v;
  // One space may separate the number from its unit ("512 B"); nothing else surrounds them.
  std::size_t i = n;
  if (i < s.size() && s[i] == ' ') ++i;
  *unit = s.substr(i);
  if (unit->empty() || unit->find_first_of(" \t\r\n") != std::string::npos) {
    *why = unit->empty() ? "expected a decimal number followed by a unit, got \"" + s + "\""
                         : "unexpected space in \"" + s + "\"";
    return false;
  }
  return true;
}

namespace {

bool split(const std::string& s, double* num, std::string* unit, std::string* why) { return parse_decimal_unit(s, num, unit, why); }

// Convert to the integer unit. Rejects NaN/inf, values of 2^63 units or more (headroom for sums
// of times and sizes), and values that are not whole units within kUnitRelTolerance (which would
// otherwise round silently, e.g. "0.1ps" to 0 or "1.5B" to 2).
std::optional<std::uint64_t> finish(double v, const std::string& s, const char* unit, std::string* why) {
  if (!std::isfinite(v) || v < 0 || v >= 9223372036854775808.0) { *why = "value out of range: \"" + s + "\""; return std::nullopt; }
  const double r = std::round(v);
  if (std::fabs(v - r) > kUnitRelTolerance * v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    *why = "\"" + s + "\" is " + b + " " + unit + ", not a whole number of " + unit;
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(r);
}

// An integer number of units ("9007199254740993ps", "3GiB") exactly, without the double's 53-bit
// rounding: the value when `s` starts with [0-9]+ and no fraction, and n x mult is below 2^63.
std::optional<std::uint64_t> exact(const std::string& s, std::uint64_t mult) {
  std::size_t n = 0;
  while (n < s.size() && digit(s[n])) ++n;
  if (n == 0 || (n < s.size() && s[n] == '.')) return std::nullopt;
  std::string why;
  auto v = parse_uint(s.substr(0, n), &why);
  if (!v || *v > (9223372036854775807ULL) / mult) return std::nullopt;  // 2^63 or more: finish() refuses it
  return *v * mult;
}

// Prefix multiplier of a size unit ("", K, M, G, T, Ki, Mi, Gi, Ti); returns false if unknown.
bool prefix(const std::string& p, double* mult) {
  static const struct { const char* p; double m; } tab[] = {
      {"", 1}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
  for (auto& t : tab) if (p == t.p) { *mult = t.m; return true; }
  return false;
}

}  // namespace

std::optional<std::uint64_t> parse_bandwidth(const std::string& s, std::string* why) {
  double v; std::string u;
  if (!split(s, &v, &u, why)) return std::nullopt;
  if (u.size() < 3 || u.compare(u.size() - 2, 2, "/s") != 0) {
    *why = "bandwidth needs a unit such as GB/s or Gb/s, got \"" + s + "\"";
    return std::nullopt;
  }
  char kind = u[u.size() - 3];
  double m;
  if ((kind != 'B' && kind != 'b') || !prefix(u.substr(0, u.size() - 3), &m)) {
    *why = "unknown bandwidth unit \"" + u + "\" (use B/s, KB/s, MB/s, GB/s, TB/s, GiB/s, Gb/s, ...)";
    return std::nullopt;
  }
  v *= m;
  if (kind == 'b') v /= 8;
  if (!(v > 0)) { *why = "bandwidth must be positive: \"" + s + "\""; return std::nullopt; }
  if (v < kMinBandwidthBps || v > kMaxBandwidthBps) {
    *why = "bandwidth \"" + s + "\" is out of range (1 KB/s .. 1 PB/s)";
    return std::nullopt;
  }
  return finish(v, s, "B/s", why);
}

std::optional<std::uint64_t> parse_size(const std::string& s, std::string* why) {
  double v; std::string u;
  if (!split(s, &v, &u, why)) return std::nullopt;
  double m;
  if (u.empty() || u.back() != 'B' || !prefix(u.substr(0, u.size() - 1), &m)) {
    *why = "unknown size unit \"" + u + "\" (use B, KB, MB, GB, KiB, MiB, GiB, TiB)";
    return std::nullopt;
  }
  if (auto e = exact(s, static_cast<std::uint64_t>(m))) return e;
  return finish(v * m, s, "B", why);
}

std::optional<std::uint64_t> parse_duration(const std::string& s, std::string* why) {
  double v; std::string u;
  if (!split(s, &v, &u, why)) return std::nullopt;
  static const struct { const char* u; double ps; } tab[] = {
      {"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"\xC2\xB5s", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (auto& t : tab)
    if (u == t.u) {
      if (auto e = exact(s, static_cast<std::uint64_t>(t.ps))) return e;
      return finish(v * t.ps, s, "ps", why);
    }
  *why = "unknown time unit \"" + u + "\" (use ps, ns, us, ms, s)";
  return std::nullopt;
}

std::string format_bytes(std::uint64_t b) {
  static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && i < 4) { v /= 1024; ++i; }
  char buf[32];
  if (v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f %s", v, u[i]);
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, u[i]);
  return buf;
}

}  // namespace sim
