// The scenario loader (docs/scenario-format.md): the document's top level, then one reader per
// part (scenario_readers.h), the topology, and the checks that need it.
#include "sim/config/scenario.h"

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
  ObjectReader t(*tj, top.child("trace"), d, {"sample_interval", "tasks"});
  if (!t.valid()) return;
  if (auto v = t.str("sample_interval", false)) {
    std::string why;
    if (auto iv = parse_sample_interval(*v, &why)) sc.sample_interval_ps = *iv;
    else d.error(t.child("sample_interval"), why);
  }
  sc.trace_tasks = t.boolean("tasks", false).value_or(false);
}

std::string dir_of(const std::string& p) {
  auto k = p.find_last_of('/');
  return k == std::string::npos ? "" : p.substr(0, k + 1);
}

}  // namespace

using namespace scenario_detail;

std::optional<Scenario> load_scenario(const std::string& path, std::vector<std::string>* errors, std::vector<std::string>* warnings) {
  Diagnostics d(path);
  auto finish = [&]() -> std::optional<Scenario> {
    *errors = d.messages();
    if (warnings) *warnings = d.warnings();
    return std::nullopt;
  };
  auto j = read_json_file(path, d);
  if (!j) return finish();
  if (std::string why = wrong_kind(*j, "scenario"); !why.empty()) {
    d.error("", why);
    return finish();
  }
  ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "seed", "payload", "fidelity", "network", "hcomm_env", "workload", "faults", "expect", "trace"});
  if (!top.valid()) return finish();
  Scenario sc;
  sc.file = path;
  auto fmt = top.str("format", true);
  if (fmt && *fmt != "hcsim-scenario") d.error(top.child("format"), "expected \"hcsim-scenario\", got \"" + *fmt + "\"");
  top.uint("version", true, 1, 1);
  sc.name = top.str("name", true).value_or("");
  sc.description = top.str("description", false).value_or("");
  sc.seed = top.uint("seed", false, 0, ~0ULL).value_or(1);
  if (auto p = top.str("payload", false)) {
    if (*p == "real") sc.store_bytes = true;
    else if (*p == "timing") sc.store_bytes = false;
    else d.error(top.child("payload"), "expected \"real\" or \"timing\", got \"" + *p + "\"");
  }
  if (auto t = top.str("topology", true)) sc.topology_path = (!t->empty() && (*t)[0] == '/') ? *t : dir_of(path) + *t;

  read_network(top, sc, d);
  read_hcomm_env(top, sc, d);
  const json* wl = read_workload(top, sc, d);
  std::vector<PendingRef> refs;  // device names resolved once the topology is loaded
  read_faults(top, wl, sc, d, refs);
  read_expect(top, sc, d);
  read_trace(top, sc, d);
  // The references — the topology file, the devices and ranks faults name, what each op needs of
  // the layout — are checked even when fields are wrong, so that one pass reports every problem it
  // can. A check that needs the JSON index of a step or fault runs only when none was skipped.
  if (sc.topology_path.empty()) return finish();  // no topology to check against (already an error)
  Diagnostics td(sc.topology_path);
  auto topo = load_topology(sc.topology_path, td);
  if (!topo) {
    std::vector<std::string> all = d.messages();
    all.push_back(path + ": /topology: topology file is invalid");
    all.insert(all.end(), td.messages().begin(), td.messages().end());
    *errors = std::move(all);
    if (warnings) *warnings = d.warnings();
    return std::nullopt;
  }
  sc.topology = std::move(*topo);
  const json* fl = top.get("faults", false);
  resolve_faults(refs, sc, d, fl && fl->is_array() && fl->size() == sc.faults.size());
  if (wl && wl->size() == sc.workload.size()) check_workload(sc, d);
  if (!d.ok()) return finish();
  sc.warnings = d.warnings();
  if (warnings) *warnings = d.warnings();
  return sc;
}

}  // namespace sim

