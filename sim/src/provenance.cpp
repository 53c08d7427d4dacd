// How a run was made: the caller's HCOMM_*/HCCL_* variables (removed for a hermetic run, or kept
// and checked) and the command line (sim/provenance.h).
#include "sim/provenance.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "hcomm/hcomm.h"

extern char** environ;

namespace sim {

namespace {
bool library_name(const char* entry) { return std::strncmp(entry, "HCOMM_", 6) == 0 || std::strncmp(entry, "HCCL_", 5) == 0; }
}  // namespace

bool take_caller_env(bool inherit, CallerEnv* out, std::string* why) {
  *out = CallerEnv{};
  std::vector<std::pair<std::string, std::string>> found;
  for (char** e = environ; e && *e; ++e) {
    if (!library_name(*e)) continue;
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    found.emplace_back(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
  }
  std::sort(found.begin(), found.end());
  if (!inherit) {
    for (auto& [name, value] : found) {
      unsetenv(name.c_str());
      out->ignored.push_back(name);
    }
    return true;
  }
  for (auto& [name, value] : found) {
    char buf[256];
    const hcomm_result_t rc = hcomm_config_check(name.c_str(), value.c_str(), buf, sizeof buf);
    if (rc == HCOMM_E_PARA) {
      *why = std::string(buf) + " (from the environment, taken by --inherit-env; docs/config.md)";
      return false;
    }
    if (rc == HCOMM_E_NOT_FOUND) out->unread.push_back(name);
    out->inherited.emplace_back(name, value);
  }
  return true;
}

std::string env_ignored_note(const CallerEnv& e) {
  if (e.ignored.empty()) return "";
  std::string s = "ignoring ";
  for (std::size_t i = 0; i < e.ignored.size(); ++i) s += (i ? ", " : "") + e.ignored[i];
  return s + " from the environment (runs are hermetic; --inherit-env passes them to the library)";
}

std::string env_ignored_json(const CallerEnv& e) { return nlohmann::json(e.ignored).dump(); }

std::string env_inherited_json(const CallerEnv& e) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [k, v] : e.inherited) j[k] = v;
  return j.dump();
}

std::string shell_words(const std::string& prog, const std::vector<std::string>& args) {
  std::string s = prog;
  for (const std::string& a : args) {
    bool plain = !a.empty();
    for (char c : a) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./:=@%+,-", c));
    if (plain) { s += " " + a; continue; }
    s += " '";
    for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
    s += "'";
  }
  return s;
}

}  // namespace sim
