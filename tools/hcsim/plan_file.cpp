// The plan file's loader (docs/plan-format.md): strict keys, every problem with its JSON pointer.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>

#include "hcomm/hcomm.h"
#include "plan.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"

namespace hcsim::plan {

namespace {
constexpr const char* kOps[] = {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "barrier", "train_step"};
// A train_step workload's keys that go to its scenario step as they are (docs/training-steps.md;
// the ObjectReader below lists them too).
constexpr const char* kStepKeys[] = {"model", "parallel", "micro_batches", "bucket", "efficiency"};

// An hcomm_env object (plan-wide or a workload's): names to strings. The values are checked as
// the library reads them when each generated scenario is loaded (hcomm_config_check).
void read_env(const json* e, const std::string& ptr, sim::Diagnostics& d, std::map<std::string, std::string>* out) {
  if (!e) return;
  if (!e->is_object()) {
    d.error(ptr, "must be an object of HCOMM_*/HCCL_* names to strings");
    return;
  }
  for (auto& [k, v] : e->items()) {
    if (!v.is_string()) { d.error(ptr + "/" + k, "must be a string"); continue; }
    // Checked here as the library reads it (the scenarios' loader checks it again): a bad value is
    // an error of the plan, not an infeasible cell of every layout.
    const std::string val = v.get<std::string>();
    char why[256] = "";
    if (k.rfind("HCOMM_", 0) != 0 && k.rfind("HCCL_", 0) != 0) d.error(ptr + "/" + k, "only HCOMM_* and HCCL_* variables can be set");
    else if (val.find('\0') != std::string::npos) d.error(ptr + "/" + k, "value contains a NUL byte");
    else if (hcomm_config_check(k.c_str(), val.c_str(), why, sizeof why) == HCOMM_E_PARA) d.error(ptr + "/" + k, why);
    (*out)[k] = val;
  }
}

// The scenario keys a scenario-side sweep may not set: the ones the plan writes itself.
bool plan_owned(const std::string& pointer) {
  for (const char* k : {"/format", "/version", "/name", "/topology", "/workload", "/fidelity", "/payload", "/seed", "/network/ecmp_salt"})
    if (pointer == k || pointer.rfind(std::string(k) + "/", 0) == 0) return true;
  return false;
}

// A plan's uint list (/seeds/seed): non-empty, distinct, each 0..max.
std::vector<std::uint64_t> read_uints(const json* v, const std::string& ptr, std::uint64_t max, sim::Diagnostics& d) {
  std::vector<std::uint64_t> out;
  if (!v) return out;
  if (!v->is_array() || v->empty()) { d.error(ptr, "must be a non-empty array of integers"); return out; }
  for (std::size_t k = 0; k < v->size(); ++k) {
    const json& x = (*v)[k];
    if (!x.is_number_unsigned() || x.get<std::uint64_t>() > max) {
      d.error(ptr + "/" + std::to_string(k), "must be an integer from 0 to " + std::to_string(max));
      continue;
    }
    if (std::find(out.begin(), out.end(), x.get<std::uint64_t>()) != out.end()) d.error(ptr + "/" + std::to_string(k), "repeats a value");
    out.push_back(x.get<std::uint64_t>());
  }
  return out;
}

}  // namespace

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string dir_of(const std::string& f) {
  auto k = f.find_last_of('/');
  return k == std::string::npos ? "" : f.substr(0, k + 1);
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[4096];
  if (!getcwd(buf, sizeof buf)) return p;
  return std::string(buf) + "/" + p;
}

std::string fmt(double v, int prec) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}


bool write_file(const std::string& path, const std::string& text, std::string* why) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) { *why = path + ": cannot write: " + std::strerror(errno); return false; }
  return true;
}

std::string Target::what() const {
  return op + (op == "barrier" || op == "train_step" ? "" : " " + sim::format_bytes(bytes)) + (max_time_us > 0 ? " under " + fmt(max_time_us, 1) + " us" : "") +
         (min_busbw > 0 ? " at >= " + fmt(min_busbw, 1) + " GB/s busbw" : "");
}

std::string Variant::label() const {
  std::string s;
  if (seed_set) s = "seed=" + std::to_string(seed);
  if (salt_set) s += (s.empty() ? "" : " ") + std::string("salt=") + std::to_string(salt);
  return s;
}

std::vector<Variant> Plan::variants() const {
  std::vector<Variant> v;
  const std::size_t ns = std::max<std::size_t>(1, seeds.size()), nt = std::max<std::size_t>(1, salts.size());
  for (std::size_t i = 0; i < ns; ++i)
    for (std::size_t k = 0; k < nt; ++k) {
      Variant x;
      if (!seeds.empty()) { x.seed_set = true; x.seed = seeds[i]; }
      if (!salts.empty()) { x.salt_set = true; x.salt = salts[k]; }
      v.push_back(x);
    }
  return v;
}

bool size_convention(const Plan& p, const Workload& w, std::uint64_t size, std::size_t npus, std::uint64_t* row_bytes,
                     std::uint64_t* step_bytes, std::string* why) {
  *row_bytes = *step_bytes = size;
  if (w.op != "allgather") return true;
  const std::uint64_t n = std::max<std::size_t>(1, npus);
  if (p.version == 1) {  // the per-rank input
    *row_bytes = size * n;
    return true;
  }
  // The element size of the workload's dtype (scenario-format.md's names; fp32 by default; an
  // unknown name is the scenario loader's error).
  const std::string& dt = w.dtype;
  const std::uint64_t esz = dt == "int8" ? 1 : dt == "int16" || dt == "fp16" || dt == "bf16" ? 2 : dt == "int64" || dt == "fp64" ? 8 : 4;
  if (size % (n * esz) != 0) {
    *why = "allgather of " + sim::format_bytes(size) + " does not divide into " + std::to_string(n) + " ranks' inputs of whole " +
           std::to_string(esz) + "-byte elements";
    return false;
  }
  *step_bytes = size / n;
  return true;
}

bool load_plan(const std::string& path, Plan& p, sim::Diagnostics& d) {
  p.file = path;
  p.dir = dir_of(path);
  auto j = sim::read_json_file(path, d);
  if (!j) return false;
  if (std::string why = sim::wrong_kind(*j, "plan"); !why.empty()) {
    d.error("", why);
    return false;
  }
  sim::ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "sweep", "workloads", "fidelity",
                                    "payload", "hcomm_env", "prices", "target", "targets", "seeds", "trace_routes"});
  if (!top.valid()) return false;
  if (auto f = top.str("format", true); f && *f != "hcsim-plan") d.error("/format", "is \"" + *f + "\", expected \"hcsim-plan\"");
  p.version = static_cast<int>(top.uint("version", true, 1, 2).value_or(2));
  if (p.version == 1)
    d.warn("/version", "version 1: an all-gather's sizes are per-rank inputs (its rows show the gathered size); version 2 "
                       "states every size as hcomm_test and hcsim run do (nccl-tests' convention, docs/plan-format.md#sizes)");
  p.name = top.name("name", true).value_or("");
  for (char& c : p.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  top.str("description", false);
  if (auto f = top.str("fidelity", false)) {
    if (*f != "chunk" && *f != "packet" && *f != "flow") d.error("/fidelity", "unknown tier \"" + *f + "\" (chunk, packet, flow)");
    p.fidelity = *f;
  }
  p.trace_routes = top.boolean("trace_routes", false).value_or(true);
  if (auto f = top.str("payload", false)) {
    if (*f != "timing" && *f != "real") d.error("/payload", "unknown payload \"" + *f + "\" (timing, real)");
    p.payload = *f;
  }
  read_env(top.get("hcomm_env", false), "/hcomm_env", d, &p.env);
  // The base topology, relative to the plan file.
  if (auto t = top.str("topology", true)) {
    p.topology_path = (!t->empty() && (*t)[0] == '/') ? *t : p.dir + *t;
    sim::Diagnostics td(p.topology_path);
    auto tj = sim::read_json_file(p.topology_path, td);
    if (!tj) {
      for (auto& m : td.messages()) d.error("/topology", m);
    } else if (std::string why = sim::wrong_kind(*tj, "topology"); !why.empty()) {
      d.error("/topology", p.topology_path + " " + why);
    } else {
      p.base = std::move(*tj);
    }
  }
  if (const json* s = top.get("sweep", false)) {
    if (!s->is_array()) d.error("/sweep", "must be an array of {pointer, values, name}");
    else
      for (std::size_t i = 0; i < s->size(); ++i) {
        const std::string ptr = "/sweep/" + std::to_string(i);
        sim::ObjectReader r((*s)[i], ptr, d, {"pointer", "values", "name", "in", "labels", "whatif"});
        if (!r.valid()) continue;
        Sweep w;
        w.pointer = r.str("pointer", true).value_or("");
        const std::string in = r.str("in", false).value_or("topology");
        if (in != "topology" && in != "scenario") d.error(ptr + "/in", "is \"" + in + "\", expected \"topology\" or \"scenario\"");
        w.scenario = in == "scenario";
        w.whatif = r.boolean("whatif", false).value_or(w.scenario || w.pointer == "/as_built");
        if (!w.pointer.empty()) {
          try {
            json::json_pointer jp(w.pointer);
            if (w.scenario && (w.pointer == "/" || plan_owned(w.pointer)))
              d.error(ptr + "/pointer", "\"" + w.pointer + "\" is a scenario key the plan sets itself (use /workloads, /fidelity, /payload or /seeds)");
            else if (!w.scenario && !p.base.is_null() && !p.base.contains(jp) && w.pointer != "/as_built")
              d.error(ptr + "/pointer", "\"" + w.pointer + "\" names nothing in " + p.topology_path);
          } catch (const std::exception&) {
            d.error(ptr + "/pointer", "\"" + w.pointer + "\" is not a JSON pointer (\"/fabric/oversubscription\")");
          }
        }
        w.name = r.name("name", false).value_or(w.pointer.substr(w.pointer.find_last_of('/') + 1));
        const json* v = r.get("values", true);
        if (v && (!v->is_array() || v->empty())) d.error(ptr + "/values", "must be a non-empty array");
        else if (v)
          for (auto& x : *v) w.values.push_back(x);
        if (const json* lb = r.get("labels", false)) {
          if (!lb->is_array() || lb->size() != w.values.size())
            d.error(ptr + "/labels", "must be an array of one string per value (" + std::to_string(w.values.size()) + ")");
          else
            for (std::size_t k = 0; k < lb->size(); ++k) {
              if (!(*lb)[k].is_string() || (*lb)[k].get<std::string>().empty()) d.error(ptr + "/labels/" + std::to_string(k), "must be a non-empty string");
              else w.labels.push_back((*lb)[k].get<std::string>());
            }
        }
        p.sweeps.push_back(std::move(w));
      }
  }
  const json* wl = top.get("workloads", true);
  if (wl && (!wl->is_array() || wl->empty())) d.error("/workloads", "must be a non-empty array");
  else if (wl)
    for (std::size_t i = 0; i < wl->size(); ++i) {
      const std::string ptr = "/workloads/" + std::to_string(i);
      const json& wj = (*wl)[i];
      const bool step = wj.is_object() && wj.value("op", json()).is_string() && wj["op"].get<std::string>() == "train_step";
      sim::ObjectReader r = step ? sim::ObjectReader(wj, ptr, d, {"op", "algo", "fidelity", "repeat", "hcomm_env", "model", "parallel",
                                                                 "micro_batches", "bucket", "efficiency"})
                                 : sim::ObjectReader(wj, ptr, d, {"op", "algo", "fidelity", "repeat", "hcomm_env", "sizes", "dtype"});
      if (!r.valid()) continue;
      Workload w;
      w.op = r.str("op", true).value_or("");
      if (!w.op.empty() && std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return w.op == o; }) == std::end(kOps))
        d.error(ptr + "/op", "unknown op \"" + w.op + "\" (allreduce, allgather, reducescatter, broadcast, alltoall, barrier, train_step)");
      if (step) {
        // The step's own keys are checked by the scenario loader, per layout (with the layout's
        // data-parallel degree when /parallel/dp is not given).
        w.step = json::object();
        for (const char* k : kStepKeys)
          if (wj.contains(k)) w.step[k] = wj[k];
        if (!w.step.contains("parallel") || !w.step["parallel"].is_object())
          d.error(ptr + "/parallel", "a train_step needs {tp, pp, dp} (dp may be left out: the layout's ranks / (tp x pp))");
      }
      w.algo = r.str("algo", false).value_or("auto");
      if (w.algo.empty()) d.error(ptr + "/algo", "is empty (\"auto\", or an HCOMM_ALGO value such as \"level1:ring\")");
      w.fidelity = r.str("fidelity", false).value_or(p.fidelity);
      if (w.fidelity != "chunk" && w.fidelity != "packet" && w.fidelity != "flow")
        d.error(ptr + "/fidelity", "unknown tier \"" + w.fidelity + "\" (chunk, packet, flow)");
      w.dtype = r.str("dtype", false).value_or("");
      w.repeat = r.uint("repeat", false, 1, 1000).value_or(1);
      read_env(r.get("hcomm_env", false), ptr + "/hcomm_env", d, &w.env);
      const json* sz = step ? nullptr : r.get("sizes", w.op != "barrier");
      if (sz && (!sz->is_array() || sz->empty())) d.error(ptr + "/sizes", "must be a non-empty array of sizes (\"1MiB\")");
      else if (sz)
        for (std::size_t k = 0; k < sz->size(); ++k) {
          const json& x = (*sz)[k];
          std::string why;
          std::optional<std::uint64_t> b;
          if (x.is_number_unsigned()) b = x.get<std::uint64_t>();
          else if (x.is_string()) b = sim::parse_size(x.get<std::string>(), &why);
          else why = "must be a size (\"64MiB\" or a number of bytes)";
          if (!b) d.error(ptr + "/sizes/" + std::to_string(k), why);
          else w.sizes.push_back(*b);
        }
      if ((w.op == "barrier" || step) && w.sizes.empty()) w.sizes.push_back(0);
      p.workloads.push_back(std::move(w));
    }
  if (const json* pr = top.get("prices", false)) {
    sim::ObjectReader r(*pr, "/prices", d, {"server", "switch", "cable", "currency"});
    if (r.valid()) {
      p.prices.given = true;
      p.prices.server = r.number("server", false, 0, 1e15).value_or(0);
      p.prices.sw = r.number("switch", false, 0, 1e15).value_or(0);
      p.prices.cable = r.number("cable", false, 0, 1e15).value_or(0);
      p.prices.currency = r.str("currency", false).value_or("");
    }
  }
  // Targets: /targets (an array), or one /target object (version 1's form, accepted in both).
  auto read_target = [&](const json& tj, const std::string& ptr) {
    sim::ObjectReader r(tj, ptr, d, {"op", "bytes", "max_time_us", "min_busbw_GBps"});
    if (!r.valid()) return;
    Target t;
    t.op = r.str("op", true).value_or("");
    t.bytes = r.size("bytes", t.op != "barrier" && t.op != "train_step").value_or(0);
    t.max_time_us = r.number("max_time_us", false, 0, 1e15).value_or(0);
    t.min_busbw = r.number("min_busbw_GBps", false, 0, 1e9).value_or(0);
    if (t.max_time_us <= 0 && t.min_busbw <= 0) d.error(ptr, "states neither max_time_us nor min_busbw_GBps");
    bool found = false;
    for (auto& w : p.workloads)
      if (w.op == t.op && std::find(w.sizes.begin(), w.sizes.end(), t.bytes) != w.sizes.end()) found = true;
    if (!t.op.empty() && !found)
      d.error(ptr, "no workload runs " + t.op + " at " + sim::format_bytes(t.bytes) + ": add it to /workloads");
    p.targets.push_back(t);
  };
  const json* tg = top.get("target", false);
  const json* tgs = top.get("targets", false);
  if (tg && tgs) d.error("/target", "give /targets or /target, not both");
  else if (tg) read_target(*tg, "/target");
  else if (tgs && (!tgs->is_array() || tgs->empty())) d.error("/targets", "must be a non-empty array of {op, bytes, max_time_us, min_busbw_GBps}");
  else if (tgs)
    for (std::size_t i = 0; i < tgs->size(); ++i) read_target((*tgs)[i], "/targets/" + std::to_string(i));
  if (const json* sd = top.get("seeds", false)) {
    sim::ObjectReader r(*sd, "/seeds", d, {"seed", "ecmp_salt"});
    if (r.valid()) {
      p.seeds = read_uints(r.get("seed", false), "/seeds/seed", ~0ULL >> 1, d);
      p.salts = read_uints(r.get("ecmp_salt", false), "/seeds/ecmp_salt", 0xffffffffULL, d);
      if (p.seeds.empty() && p.salts.empty()) d.error("/seeds", "names neither seed nor ecmp_salt");
      if (p.salts.size() > 1)
        for (std::size_t i = 0; i < p.workloads.size(); ++i) {
          auto it = p.workloads[i].env.find("HCOMM_ROUTE_SPORT");
          const std::string sport = it != p.workloads[i].env.end() ? it->second : p.env.count("HCOMM_ROUTE_SPORT") ? p.env.at("HCOMM_ROUTE_SPORT") : "probe";
          if (sport != "hash")
            d.warn("/seeds/ecmp_salt", "workload " + std::to_string(i) + " runs with HCOMM_ROUTE_SPORT=" + sport +
                                           ": the library probes source ports for the uplinks it wants, so a salt moves no flow; set "
                                           "/hcomm_env/HCOMM_ROUTE_SPORT to \"hash\" to vary the placement the NICs' hash makes");
        }
      if (p.seeds.size() > 1)
        for (std::size_t i = 0; i < p.workloads.size(); ++i)
          if (p.workloads[i].fidelity == "flow")
            d.warn("/seeds/seed", "workload " + std::to_string(i) + " runs in the flow tier, where the seed changes nothing (no ECN, no "
                                  "drops): its seed runs repeat one result (the ECMP salt does move flows there)");
    }
  }
  // The bound on the work and files a plan makes, checked before anything is written: every sweep
  // dimension (each /sweep entry's values) times every workload size. Counted in long double, which
  // is exact to 2^64 and cannot overflow here.
  if (d.ok()) {
    long double layouts = 1, sizes = 0;
    for (auto& s : p.sweeps) layouts *= static_cast<long double>(s.values.size());
    for (auto& w : p.workloads) sizes += static_cast<long double>(w.sizes.size());
    const long double points = layouts * sizes * static_cast<long double>(p.variants().size());
    if (points > static_cast<long double>(kMaxPoints)) {
      auto count = [](long double v) {
        char b[64];
        std::snprintf(b, sizeof b, v < 1e18L ? "%.0Lf" : "%.3Lg", v);
        return std::string(b);
      };
      std::string dims;
      for (auto& s : p.sweeps) dims += std::to_string(s.values.size()) + " " + s.name + " x ";
      const std::size_t nv = p.variants().size();
      d.error("", count(points) + " points (" + dims + count(sizes) + " workload sizes over " + std::to_string(p.workloads.size()) +
                      " workloads" + (nv > 1 ? " x " + std::to_string(nv) + " seed runs" : "") + ") exceed the cap of " +
                      std::to_string(kMaxPoints) + " points per plan; split the sweep");
    }
  }
  return d.ok();
}

std::vector<Layout> plan_layouts(const Plan& p) {
  std::vector<Layout> layouts(1);
  for (const auto& s : p.sweeps) {
    std::vector<Layout> next;
    for (const auto& l : layouts)
      for (std::size_t k = 0; k < s.values.size(); ++k) {
        Layout m = l;
        m.values.push_back(s.values[k]);
        m.label += (m.label.empty() ? "" : " ") + s.name + "=" + (s.labels.empty() ? value_text(s.values[k]) : s.labels[k]);
        next.push_back(std::move(m));
      }
    layouts = std::move(next);
  }
  for (auto& L : layouts)
    if (L.label.empty()) L.label = "base";
  return layouts;
}

json layout_topology(const Plan& p, const Layout& L, std::size_t li) {
  json t = p.base;
  for (std::size_t k = 0; k < p.sweeps.size(); ++k)
    if (!p.sweeps[k].scenario) t[json::json_pointer(p.sweeps[k].pointer)] = L.values[k];
  t["name"] = p.name + "-layout" + std::to_string(li);
  if (t.contains("rank_table") && t["rank_table"].is_string()) {
    std::string rt = t["rank_table"].get<std::string>();
    if (!rt.empty() && rt[0] != '/') t["rank_table"] = absolute(dir_of(p.topology_path) + rt);
  }
  return t;
}

bool check_layouts(const Plan& p, sim::Diagnostics& d) {
  const auto layouts = plan_layouts(p);
  std::size_t infeasible = 0;
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    const std::string tpath = "layout" + std::to_string(li) + ".topology.json";
    sim::Diagnostics td(tpath);
    if (sim::topology_from_json(layout_topology(p, layouts[li], li), td, dir_of(p.topology_path))) continue;
    ++infeasible;
    for (auto& m : td.messages()) d.warn("/sweep", "layout " + std::to_string(li) + " (" + layouts[li].label + ") is infeasible: " + m);
  }
  if (infeasible == layouts.size()) d.error("/sweep", "no layout can be built (the warnings above say why)");
  return infeasible < layouts.size();
}

}  // namespace hcsim::plan
