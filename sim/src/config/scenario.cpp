// The scenario loader (docs/scenario-format.md): the document's top level, then one reader per
// part (scenario_readers.h), the topology, and the checks that need it.
#include "sim/config/scenario.h"

#include <cstdlib>

#include "scenario_readers.h"
#include "sim/config/units.h"

namespace sim {

std::optional<models::Tick> parse_sample_interval(const std::string& s, std::string* why) {
  if (s == "off" || s == "0") return models::Tick{0};
  auto t = parse_duration(s, why);
  if (!t) return std::nullopt;
  if (*t != 0 && *t < kMinSampleIntervalPs) {
    *why = "a sampling interval must be 0, \"off\" or at least 100ns, got \"" + s + "\"";
    return std::nullopt;
  }
  return t;
}

namespace {

// "trace": what the trace records besides its default tables (docs/scenario-format.md).
void read_trace(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  const json* tj = top.get("trace", false);
  if (!tj) return;
  ObjectReader t(*tj, top.child("trace"), d, {"sample_interval", "tasks", "routes"});
  if (!t.valid()) return;
  if (auto v = t.str("sample_interval", false)) {
    std::string why;
    if (auto iv = parse_sample_interval(*v, &why)) sc.sample_interval_ps = *iv;
    else d.error(t.child("sample_interval"), why);
  }
  sc.trace_tasks = t.boolean("tasks", false).value_or(false);
  sc.trace_routes = t.boolean("routes", false).value_or(true);
}

// /chaos: a campaign drawn like --chaos SEED:N (hcsim run draws it; --chaos replaces it).
void read_chaos(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  const json* cj = top.get("chaos", false);
  if (!cj) return;
  ObjectReader c(*cj, top.child("chaos"), d, {"seed", "faults"});
  if (!c.valid()) return;
  const auto seed = c.uint("seed", true, 0, ~0ULL);
  const auto n = c.uint("faults", true, 1, 1000);
  if (seed && n) sc.chaos = {*seed, static_cast<std::uint32_t>(*n)};
}

std::string dir_of(const std::string& p) {
  auto k = p.find_last_of('/');
  return k == std::string::npos ? "" : p.substr(0, k + 1);
}

// A value from the command line: JSON when it parses as JSON, else the string itself.
json cli_value(const std::string& v) {
  json j = json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return json(v);
  return j;
}

// --set POINTER=VALUE on the document: objects on the way are created when missing (the reader
// then rejects keys it does not know, naming the option); array elements must exist. False + `why`.
bool apply_set(json& doc, const std::string& ptr, const std::string& value, std::string* why) {
  if (ptr.empty() || ptr[0] != '/') { *why = "expected /json/pointer=value"; return false; }
  std::vector<std::string> tokens;
  for (std::size_t from = 1;;) {
    const auto slash = ptr.find('/', from);
    std::string t = ptr.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
    for (std::size_t k; (k = t.find("~1")) != std::string::npos;) t.replace(k, 2, "/");
    for (std::size_t k; (k = t.find("~0")) != std::string::npos;) t.replace(k, 2, "~");
    tokens.push_back(t);
    if (slash == std::string::npos) break;
    from = slash + 1;
  }
  json* at = &doc;
  std::string path;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const bool last = i + 1 == tokens.size();
    if (at->is_null()) *at = json::object();
    if (at->is_object()) {
      at = &(*at)[t];
    } else if (at->is_array()) {
      char* end = nullptr;
      const unsigned long long k = std::strtoull(t.c_str(), &end, 10);
      if (t.empty() || *end || t[0] == '-' || k >= at->size()) {
        *why = "unknown pointer " + ptr + ": " + (path.empty() ? "/" : path) + " has " + std::to_string(at->size()) + " elements";
        return false;
      }
      at = &(*at)[static_cast<std::size_t>(k)];
    } else {
      *why = "unknown pointer " + ptr + ": " + path + " is a " + at->type_name() + ", not an object or array";
      return false;
    }
    path += "/" + t;
    if (last) *at = cli_value(value);
  }
  return true;
}

// Errors about what the command line added name the option instead of the file.
void name_overrides(std::vector<std::string>& msgs, const std::string& path, const ScenarioOverrides& ov, std::size_t file_faults) {
  for (auto& m : msgs) {
    if (m.compare(0, path.size() + 2, path + ": ") != 0) continue;
    const std::string rest = m.substr(path.size() + 2);  // "/pointer: reason"
    bool done = false;
    for (std::size_t k = 0; k < ov.faults.size() && !done; ++k) {
      const std::string fp = "/faults/" + std::to_string(file_faults + k);
      if (rest.compare(0, fp.size(), fp) == 0 && (rest.size() == fp.size() || rest[fp.size()] == '/' || rest[fp.size()] == ':')) {
        std::string tail = rest.substr(fp.size());
        if (!tail.empty() && tail[0] == '/') tail = tail.substr(1);
        else if (tail.rfind(": ", 0) == 0) tail = tail.substr(2);
        m = "--fault '" + ov.faults[k].text + "': " + tail;
        done = true;
      }
    }
    for (auto it = ov.sets.rbegin(); it != ov.sets.rend() && !done; ++it) {
      const std::string& sp = it->first;
      if (rest.compare(0, sp.size(), sp) == 0 && (rest.size() == sp.size() || rest[sp.size()] == '/' || rest[sp.size()] == ':')) {
        m = "--set " + sp + "=" + it->second + ": " + rest;
        done = true;
      }
    }
  }
}

// A --fault value in the number grammar (units.h): [0-9]+ an integer (up to 2^64 - 1),
// [0-9]+.[0-9]+ a decimal, true / false, "..." a JSON string; anything else is a string (a
// name, a duration, a percentage) unless it is a number outside the grammar (-1, +2, 1e2,
// 0x10, .5, 5.), which is an error rather than a string the reader would misreport.
std::optional<json> fault_value(const std::string& v, std::string* why) {
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
    auto n = parse_uint(v, why);
    if (!n) return std::nullopt;
    return json(*n);
  }
  if (!v.empty() && (v[0] >= '0' && v[0] <= '9') && v.find_first_not_of("0123456789.") == std::string::npos) {
    auto x = parse_decimal(v, why);
    if (!x) return std::nullopt;
    return json(*x);
  }
  if (v == "true" || v == "false") return json(v == "true");
  if (!v.empty() && v[0] == '"') {
    json j = json::parse(v, nullptr, /*allow_exceptions=*/false);
    if (j.is_string()) return j;
    *why = "a quoted value must be a JSON string, got " + v;
    return std::nullopt;
  }
  // A number outside the grammar: strtod reads all of it (signs, exponents, hex, a lone dot).
  if (!v.empty() && std::string("+-.0123456789").find(v[0]) != std::string::npos) {
    char* end = nullptr;
    (void)std::strtod(v.c_str(), &end);
    if (end && *end == '\0' && end != v.c_str()) {
      *why = "not a number of the command line's grammar: an integer is [0-9]+ (at most 18446744073709551615), a decimal [0-9]+ or [0-9]+.[0-9]+ (no sign, hex or exponent)";
      return std::nullopt;
    }
  }
  return json(v);
}

}  // namespace

std::optional<json> parse_fault_text(const std::string& text, std::string* why) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text) {
    if (c == ' ' || c == '\t') { if (!w.empty()) words.push_back(w), w.clear(); }
    else w += c;
  }
  if (!w.empty()) words.push_back(w);
  if (words.empty()) { *why = "empty: expected 'TYPE key=value ...'"; return std::nullopt; }
  if (words[0].find('=') != std::string::npos) { *why = "the first word is the fault type, got \"" + words[0] + "\""; return std::nullopt; }
  json o = json::object();
  o["type"] = words[0];
  for (std::size_t i = 1; i < words.size(); ++i) {
    const auto eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0) { *why = "expected key=value, got \"" + words[i] + "\""; return std::nullopt; }
    const std::string key = words[i].substr(0, eq), val = words[i].substr(eq + 1);
    // "at.step=0": a key of a nested object ("at": {"step": 0}).
    json* at = &o;
    std::size_t from = 0;
    for (auto dot = key.find('.'); dot != std::string::npos; from = dot + 1, dot = key.find('.', from)) {
      const std::string part = key.substr(from, dot - from);
      if (part.empty()) { *why = "empty key in \"" + key + "\""; return std::nullopt; }
      json& next = (*at)[part];
      if (next.is_null()) next = json::object();
      if (!next.is_object()) { *why = "key " + part + " is given both as a value and as an object"; return std::nullopt; }
      at = &next;
    }
    const std::string leaf = key.substr(from);
    if (leaf.empty()) { *why = "empty key in \"" + key + "\""; return std::nullopt; }
    if (at->contains(leaf)) { *why = "key " + key + " given twice"; return std::nullopt; }
    auto v = fault_value(val, why);
    if (!v) { *why = key + "=" + val + ": " + *why; return std::nullopt; }
    (*at)[leaf] = std::move(*v);
  }
  return o;
}

using namespace scenario_detail;

std::optional<Scenario> load_scenario(const std::string& path, std::vector<std::string>* errors, std::vector<std::string>* warnings) {
  return load_scenario(path, ScenarioOverrides{}, errors, warnings);
}

std::optional<Scenario> load_scenario(const std::string& path, const ScenarioOverrides& ov, std::vector<std::string>* errors,
                                      std::vector<std::string>* warnings) {
  Diagnostics d(path);
  std::size_t file_faults = 0;
  auto finish = [&]() -> std::optional<Scenario> {
    *errors = d.messages();
    name_overrides(*errors, path, ov, file_faults);
    if (warnings) {
      *warnings = d.warnings();
      name_overrides(*warnings, path, ov, file_faults);
    }
    return std::nullopt;
  };
  auto j = read_json_file(path, d);
  if (!j) return finish();
  if (std::string why = wrong_kind(*j, "scenario"); !why.empty()) {
    d.error("", why);
    return finish();
  }
  // Command-line overrides, applied to the document before it is read; a --set whose pointer
  // the document cannot take is reported alone (naming the option), before anything is read.
  std::vector<std::string> cli_errors;
  for (const auto& [ptr, value] : ov.sets) {
    std::string why;
    if (!apply_set(*j, ptr, value, &why)) cli_errors.push_back("--set " + ptr + "=" + value + ": " + why);
  }
  if (!ov.faults.empty() && j->is_object()) {
    json& fl = (*j)["faults"];
    if (fl.is_null()) fl = json::array();
    if (!fl.is_array()) cli_errors.push_back("--fault: the scenario's /faults is not an array");
    else {
      file_faults = fl.size();
      for (const auto& f : ov.faults) fl.push_back(f.object);
    }
  }
  if (!cli_errors.empty()) {
    *errors = cli_errors;
    if (warnings) warnings->clear();
    return std::nullopt;
  }
  ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "seed", "payload", "fidelity", "network", "hcomm_env", "on_rank_loss", "workload", "faults", "chaos", "expect", "trace"});
  if (!top.valid()) return finish();
  Scenario sc;
  sc.file = path;
  auto fmt = top.str("format", true);
  if (fmt && *fmt != "hcsim-scenario") d.error(top.child("format"), "expected \"hcsim-scenario\", got \"" + *fmt + "\"");
  top.uint("version", true, 1, 1);
  sc.name = top.name("name", true).value_or("");
  sc.description = top.str("description", false).value_or("");
  sc.seed = top.uint("seed", false, 0, ~0ULL).value_or(1);
  if (auto p = top.str("payload", false)) {
    if (*p == "real") sc.store_bytes = true;
    else if (*p == "timing") sc.store_bytes = false;
    else d.error(top.child("payload"), "expected \"real\" or \"timing\", got \"" + *p + "\"");
  }
  if (auto o = top.str("on_rank_loss", false)) {
    if (*o == "stop") sc.shrink_on_rank_loss = false;
    else if (*o == "shrink") sc.shrink_on_rank_loss = true;
    else d.error(top.child("on_rank_loss"), "expected \"stop\" or \"shrink\", got \"" + *o + "\"");
  }
  if (auto t = top.str("topology", true)) sc.topology_path = (!t->empty() && (*t)[0] == '/') ? *t : dir_of(path) + *t;

  read_network(top, sc, d);
  read_hcomm_env(top, sc, d);
  const json* wl = read_workload(top, sc, d);
  std::vector<PendingRef> refs;  // device names resolved once the topology is loaded
  read_faults(top, wl, sc, d, refs);
  read_expect(top, sc, d);
  read_trace(top, sc, d);
  read_chaos(top, sc, d);
  // The references — the topology file, the devices and ranks faults name, what each op needs of
  // the layout — are checked even when fields are wrong, so that one pass reports every problem it
  // can. A check that needs the JSON index of a step or fault runs only when none was skipped.
  if (sc.topology_path.empty()) return finish();  // no topology to check against (already an error)
  Diagnostics td(sc.topology_path);
  std::optional<Topology> topo;
  if (auto tj = read_json_file(sc.topology_path, td)) {  // load_topology, keeping the document
    topo = topology_from_json(*tj, td, dir_of(sc.topology_path));
    if (topo) sc.topology_json = tj->dump();
  }
  if (!topo) {
    std::vector<std::string> all = d.messages();
    all.push_back(path + ": /topology: topology file is invalid");
    all.insert(all.end(), td.messages().begin(), td.messages().end());
    name_overrides(all, path, ov, file_faults);
    *errors = std::move(all);
    if (warnings) {
      *warnings = d.warnings();
      name_overrides(*warnings, path, ov, file_faults);
    }
    return std::nullopt;
  }
  sc.topology = std::move(*topo);
  const json* fl = top.get("faults", false);
  resolve_faults(refs, sc, d, fl && fl->is_array() && fl->size() == sc.faults.size());
  if (wl && wl->size() == sc.workload.size()) check_workload(sc, d);
  if (!d.ok()) return finish();
  sc.scenario_json = j->dump();
  sc.warnings = d.warnings();
  name_overrides(sc.warnings, path, ov, file_faults);
  if (warnings) *warnings = sc.warnings;
  return sc;
}

}  // namespace sim

