#include "sim/config/json_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/config/units.h"

namespace sim {

void Diagnostics::error(const std::string& pointer, const std::string& why) {
  ++count_;
  if (msgs_.size() < limit_) msgs_.push_back(file_ + ": " + (pointer.empty() ? "/" : pointer) + ": " + why);
  else if (msgs_.size() == limit_) msgs_.push_back(file_ + ": further errors omitted");
}

void Diagnostics::warn(const std::string& pointer, const std::string& why) {
  if (warnings_.size() < limit_) warnings_.push_back(file_ + ": " + (pointer.empty() ? "/" : pointer) + ": warning: " + why);
}

std::size_t max_json_depth(const std::string& text) {
  // Depth of [ and { outside strings; a backslash escapes the next character inside a string.
  // Malformed text is left to the parser: this only has to bound the nesting it will see.
  std::size_t depth = 0, best = 0;
  bool in_string = false;
  for (std::size_t i = 0, n = text.size(); i < n; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      best = std::max(best, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return best;
}

std::optional<json> read_json_file(const std::string& path, Diagnostics& d) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) { d.error("", "cannot open file"); return std::nullopt; }
  if (S_ISDIR(st.st_mode)) { d.error("", "is a directory, not a JSON file"); return std::nullopt; }
  if (!S_ISREG(st.st_mode)) { d.error("", "not a regular file"); return std::nullopt; }
  std::ifstream f(path, std::ios::binary);
  if (!f) { d.error("", "cannot open file"); return std::nullopt; }
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 0) { d.error("", "cannot read file"); return std::nullopt; }
  if (size > (64 << 20)) { d.error("", "file is larger than 64 MiB"); return std::nullopt; }
  std::string text(static_cast<std::size_t>(size), '\0');
  f.read(text.data(), size);
  if (!f) { d.error("", "cannot read file"); return std::nullopt; }
  return parse_json_text(text, d);
}

std::optional<json> parse_json_text(const std::string& text, Diagnostics& d) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) { d.error("", "file is empty"); return std::nullopt; }
  // The depth limit is checked on the raw text before parsing (linear); a parser callback would
  // make nlohmann's parser re-examine the parent at every object end (quadratic in siblings).
  if (max_json_depth(text) > kMaxJsonDepth) {
    d.error("", "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return std::nullopt;
  }
  try {
    return json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    d.error("", std::string("not valid JSON at byte ") + std::to_string(e.byte) + ": " + e.what());
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

std::string name_problem(const std::string& n) {
  if (n.empty()) return "a name must not be empty";
  for (std::size_t i = 0; i < n.size();) {
    const auto c = static_cast<unsigned char>(n[i]);
    // One UTF-8 sequence: its length and code point (a command-line value need not be UTF-8).
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    unsigned cp = len == 1 ? c : len == 2 ? (c & 0x1fu) : len == 3 ? (c & 0x0fu) : (c & 0x07u);
    bool valid = len != 0 && i + len <= n.size();
    for (std::size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(n[i + k]);
      valid = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    static const unsigned kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid && (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) valid = false;  // overlong, surrogate
    if (!valid) return "the name is not valid UTF-8 (byte " + std::to_string(i) + ")";
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      char b[16];
      std::snprintf(b, sizeof b, "U+%04X", cp);
      return "the name contains the control character " + std::string(b) + " at byte " + std::to_string(i) + " (names are printable text)";
    }
    i += len;
  }
  return "";
}

std::optional<std::string> ObjectReader::name(const char* key, bool required) const {
  auto s = str(key, required);
  if (s)
    if (std::string why = name_problem(*s); !why.empty()) d_.error(child(key), why);
  return s;
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
  // Four dot-separated decimal fields of 1 to 3 digits, each <= 255, no leading zero (inet_aton
  // reads "010" as octal 8); no signs, spaces or tail.
  std::uint32_t ip = 0;
  std::size_t i = 0;
  for (int field = 0; field < 4; ++field) {
    if (field && (i >= s.size() || s[i++] != '.')) return std::nullopt;
    std::size_t digits = 0;
    unsigned v = 0;
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 3) v = v * 10 + static_cast<unsigned>(s[i++] - '0'), ++digits;
    if (digits == 0 || v > 255 || (digits > 1 && s[from] == '0')) return std::nullopt;
    ip = (ip << 8) | v;
  }
  if (i != s.size()) return std::nullopt;
  return ip;
}

std::string format_ipv4(std::uint32_t ip) {
  char b[20];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

std::string document_kind(const json& j) {
  if (!j.is_object()) return "";
  auto fmt = j.find("format");
  if (fmt != j.end() && fmt->is_string()) {
    if (*fmt == "hcsim-scenario") return "scenario";
    if (*fmt == "hcsim-topology") return "topology";
    if (*fmt == "hcsim-plan") return "plan";
  }
  auto any = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (j.contains(k)) return true;
    return false;
  };
  // A plan (docs/plan-format.md) shares topology, payload, fidelity and hcomm_env with scenarios.
  const bool plan = any({"sweep", "workloads", "prices", "target", "trace_routes"});
  const bool sc = any({"workload", "faults", "expect", "network", "seed"}) || (!plan && any({"hcomm_env", "topology", "payload", "fidelity"}));
  const bool topo = any({"servers", "server_groups", "switches", "links", "fabric", "overrides", "rank_table"});
  const bool rt = any({"server_count", "server_list", "super_pod_list"});
  if (sc + topo + rt + plan != 1) return "";  // nothing, or a mixture: let the reader list the keys
  return sc ? "scenario" : topo ? "topology" : plan ? "plan" : "rank table";
}

std::string wrong_kind(const json& j, const std::string& want) {
  const std::string k = document_kind(j);
  if (k.empty() || k == want) return "";
  std::string where = k == "scenario" ? "pass it to hcsim run / hcsim validate"
                      : k == "topology" ? "pass it to hcsim topo / hcsim validate, or name it in a scenario's \"topology\""
                      : k == "plan"     ? "pass it to hcsim plan / hcsim validate"
                                        : "name it in a topology's \"rank_table\"";
  auto a = [](const std::string& kind) { return kind == "rank table" ? std::string("an Ascend rank table") : "a " + kind; };
  return "is " + a(k) + ", not " + a(want) + ": " + where;
}

}  // namespace sim
