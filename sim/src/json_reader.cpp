#include "sim/json_reader.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/units.h"

namespace sim {

void Diagnostics::error(const std::string& pointer, const std::string& why) {
  ++count_;
  if (msgs_.size() < limit_) msgs_.push_back(file_ + ": " + (pointer.empty() ? "/" : pointer) + ": " + why);
  else if (msgs_.size() == limit_) msgs_.push_back(file_ + ": further errors omitted");
}

std::optional<json> read_json_file(const std::string& path, Diagnostics& d) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { d.error("", "cannot open file"); return std::nullopt; }
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 0) { d.error("", "cannot read file"); return std::nullopt; }
  if (size > (64 << 20)) { d.error("", "file is larger than 64 MiB"); return std::nullopt; }
  std::string text(static_cast<std::size_t>(size), '\0');
  f.read(text.data(), size);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) { d.error("", "file is empty"); return std::nullopt; }
  bool too_deep = false;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t, json&) {
    if (depth > 64) too_deep = true;
    return !too_deep;
  };
  try {
    json j = json::parse(text, cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    if (too_deep) { d.error("", "nesting deeper than 64 levels"); return std::nullopt; }
    return j;
  } catch (const json::parse_error& e) {
    d.error("", std::string("not valid JSON at byte ") + std::to_string(e.byte) + ": " +
                    (too_deep ? std::string("nesting deeper than 64 levels") : std::string(e.what())));
  } catch (const std::exception& e) {
    d.error("", std::string("not valid JSON: ") + e.what());
  }
  return std::nullopt;
}

static std::string escape_token(const std::string& k) {
  std::string o;
  for (char c : k) {
    if (c == '~') o += "~0";
    else if (c == '/') o += "~1";
    else o += c;
  }
  return o;
}

ObjectReader::ObjectReader(const json& j, std::string pointer, Diagnostics& d, std::initializer_list<const char*> allowed)
    : j_(j), ptr_(std::move(pointer)), d_(d) {
  if (!j.is_object()) {
    d_.error(ptr_, std::string("expected an object, got ") + j.type_name());
    valid_ = false;
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* a : allowed) if (it.key() == a) known = true;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      d_.error(child(it.key()), "unknown key (allowed: " + list + ")");
    }
  }
}

std::string ObjectReader::child(const std::string& key) const { return ptr_ + "/" + escape_token(key); }

const json* ObjectReader::get(const char* key, bool required) const {
  if (!valid_) return nullptr;
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (required) d_.error(child(key), "missing required key");
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> ObjectReader::str(const char* key, bool required) const {
  const json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) { d_.error(child(key), std::string("expected a string, got ") + v->type_name()); return std::nullopt; }
  return v->get<std::string>();
}

std::optional<bool> ObjectReader::boolean(const char* key, bool required) const {
  const json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) { d_.error(child(key), std::string("expected true or false, got ") + v->type_name()); return std::nullopt; }
  return v->get<bool>();
}

std::optional<std::uint64_t> ObjectReader::uint(const char* key, bool required, std::uint64_t lo, std::uint64_t hi) const {
  const json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() < 0)) {
    d_.error(child(key), v->is_number() ? "expected a non-negative integer, got " + v->dump()
                                        : std::string("expected an integer, got ") + v->type_name());
    return std::nullopt;
  }
  std::uint64_t x = v->get<std::uint64_t>();
  if (x < lo || x > hi) {
    d_.error(child(key), "value " + std::to_string(x) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return std::nullopt;
  }
  return x;
}

std::optional<double> ObjectReader::number(const char* key, bool required, double lo, double hi) const {
  const json* v = get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_number()) { d_.error(child(key), std::string("expected a number, got ") + v->type_name()); return std::nullopt; }
  double x = v->get<double>();
  if (!(x >= lo && x <= hi)) {
    d_.error(child(key), "value " + v->dump() + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return std::nullopt;
  }
  return x;
}

#define HCSIM_UNIT_GETTER(NAME, PARSER)                                                         \
  std::optional<std::uint64_t> ObjectReader::NAME(const char* key, bool required) const {       \
    auto s = str(key, required);                                                                \
    if (!s) return std::nullopt;                                                                \
    std::string why;                                                                            \
    auto v = PARSER(*s, &why);                                                                  \
    if (!v) d_.error(child(key), why);                                                          \
    return v;                                                                                   \
  }
HCSIM_UNIT_GETTER(bandwidth, parse_bandwidth)
HCSIM_UNIT_GETTER(size, parse_size)
HCSIM_UNIT_GETTER(duration, parse_duration)
#undef HCSIM_UNIT_GETTER

std::optional<std::uint32_t> parse_ipv4(const std::string& s) {
  unsigned a, b, c, d;
  char tail;
  if (std::sscanf(s.c_str(), "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &tail) != 4) return std::nullopt;
  if (a > 255 || b > 255 || c > 255 || d > 255) return std::nullopt;
  return (a << 24) | (b << 16) | (c << 8) | d;
}

std::string format_ipv4(std::uint32_t ip) {
  char b[20];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

}  // namespace sim
