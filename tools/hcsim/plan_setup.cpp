// hcsim plan's points (docs/plan-format.md#what-hcsim-plan-does): every layout's topology and
// every (layout, workload, seed run)'s scenario written into DIR and validated, the rows each point
// will fill, and the cells that cannot run ("infeasible: <reason>"): a layout whose topology does
// not build, a size the layout cannot take (an all-gather that does not divide among its ranks), a
// scenario the loader refuses for this layout (a fault naming a switch it does not have).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"

namespace hcsim::plan {

namespace {

// The scenario step index an error names ("/workload/3/bytes: ..." -> 3), or -1.
int step_named(const std::string& err) {
  const auto k = err.find("/workload/");
  if (k == std::string::npos) return -1;
  std::size_t pos = k + 10, end = pos;
  while (end < err.size() && std::isdigit(static_cast<unsigned char>(err[end]))) ++end;
  if (end == pos) return -1;
  return std::stoi(err.substr(pos, end - pos));
}

// The reason of a loader message: its text after the file's name ("F: /x: why" -> "/x: why").
std::string reason(const std::string& msg, const std::string& file) {
  const std::string pre = file + ": ";
  return msg.rfind(pre, 0) == 0 ? msg.substr(pre.size()) : msg;
}

}  // namespace

bool step_parallel(const Workload& w, std::size_t npus, json* out, std::string* why) {
  json par = w.step.value("parallel", json::object());
  if (!par.is_object() || par.contains("dp")) {
    if (out) *out = par;
    return true;
  }
  auto degree = [&](const char* k) -> std::uint64_t {
    return par.contains(k) && par[k].is_number_unsigned() ? par[k].get<std::uint64_t>() : 1;
  };
  const std::uint64_t tp = std::max<std::uint64_t>(1, degree("tp")), pp = std::max<std::uint64_t>(1, degree("pp"));
  if (npus == 0 || npus % (tp * pp) != 0) {
    *why = "tp x pp = " + std::to_string(tp * pp) + " does not divide the layout's " + std::to_string(npus) + " ranks";
    return false;
  }
  par["dp"] = npus / (tp * pp);
  if (out) *out = par;
  return true;
}

std::string point_stem(const Plan& p, std::size_t li, std::size_t wi, std::size_t vi) {
  std::string s = "l" + std::to_string(li) + "-w" + std::to_string(wi);
  if (p.variants().size() > 1) s += "-v" + std::to_string(vi);
  return s;
}

bool build_points(const Plan& p, const std::string& out, bool write, std::vector<Layout>& layouts, std::vector<Point>& points,
                  std::vector<std::vector<Result>>& results) {
  std::string why;
  layouts = plan_layouts(p);
  const auto variants = p.variants();
  struct Built {
    std::size_t servers = 0, npus = 0, nics = 0, switches = 0, cables = 0;
    std::string infeasible;
  };
  std::map<std::string, Built> topologies;  // by the layout topology's text (scenario sweeps share one)
  std::map<std::string, std::vector<std::string>> verdicts;  // scenario text (without its name) -> errors
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    Layout& L = layouts[li];
    const json t = layout_topology(p, L, li);
    const std::string tname = "layout" + std::to_string(li) + ".topology.json";
    const std::string tpath = out + "/" + tname;
    if (write && !write_file(tpath, t.dump(2) + "\n", &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return false; }
    json tkey = t;
    tkey.erase("name");
    const std::string ttext = tkey.dump();
    auto tit = topologies.find(ttext);
    if (tit == topologies.end()) {
      Built b;
      sim::Diagnostics td(tpath);
      if (auto topo = sim::topology_from_json(t, td, dir_of(p.topology_path))) {
        b.servers = topo->servers.size();
        b.npus = topo->npus.size();
        for (auto& n : topo->npus) b.nics += n.nic_Bps > 0;
        for (auto& s : topo->switches) b.switches += s.tier >= 1 && s.kind == sim::SwitchKind::Ethernet;
        for (auto& l : topo->links) b.cables += l.type == sim::LinkType::Roce;
      } else {
        b.infeasible = td.messages().empty() ? "the topology does not build" : reason(td.messages().front(), tpath);
      }
      tit = topologies.emplace(ttext, b).first;
    }
    const Built& b = tit->second;
    L.servers = b.servers;
    L.npus = b.npus;
    L.nics = b.nics;
    L.switches = b.switches;
    L.cables = b.cables;
    L.infeasible = b.infeasible;
    L.cost = p.prices.server * L.servers + p.prices.sw * L.switches + p.prices.cable * L.cables;
    for (std::size_t wi = 0; wi < p.workloads.size(); ++wi) {
      const Workload& w = p.workloads[wi];
      for (std::size_t vi = 0; vi < variants.size(); ++vi) {
        const std::string stem = out + "/" + point_stem(p, li, wi, vi);
        Point pt{li, wi, vi, stem + ".scenario.json", stem + ".hcsim.db", stem + ".log", 0, {}};
        std::vector<Result> rows;
        for (auto size : w.sizes) {
          Result r;
          r.layout = li;
          r.workload = wi;
          r.variant = vi;
          r.size = r.bytes = size;
          rows.push_back(r);
        }
        // The sizes this layout can take, as scenario steps.
        std::vector<std::uint64_t> step_bytes(rows.size(), 0);
        std::vector<std::string> bad(rows.size());
        for (std::size_t k = 0; k < rows.size(); ++k) {
          if (!L.infeasible.empty()) { bad[k] = L.infeasible; continue; }
          if (!size_convention(p, w, w.sizes[k], L.npus, &rows[k].bytes, &step_bytes[k], &why)) bad[k] = why;
          if (w.is_step() && !step_parallel(w, L.npus, nullptr, &why)) bad[k] = why;
        }
        // The scenario of the feasible sizes; a size its loader refuses for this layout is left
        // out and the scenario written again (at most once per size).
        for (int attempt = 0; attempt <= static_cast<int>(rows.size()); ++attempt) {
          json sc = {{"format", "hcsim-scenario"}, {"version", 1}, {"name", p.name + "-" + point_stem(p, li, wi, vi)},
                     {"topology", tname}, {"fidelity", w.fidelity}, {"payload", p.payload}};
          if (variants[vi].seed_set) sc["seed"] = variants[vi].seed;
          json steps = json::array();
          std::vector<std::size_t> step_row;
          for (std::size_t k = 0; k < rows.size(); ++k) {
            rows[k].step = -1;
            if (!bad[k].empty()) continue;
            json s = {{"op", w.op}, {"repeat", w.repeat}};
            if (w.is_step()) {
              for (auto& [key, v] : w.step.items()) s[key] = v;
              step_parallel(w, L.npus, &s["parallel"], &why);
            } else if (w.op != "barrier") {
              s["bytes"] = std::to_string(step_bytes[k]) + "B";
            }
            if (!w.dtype.empty()) s["dtype"] = w.dtype;
            rows[k].step = static_cast<int>(steps.size());
            step_row.push_back(k);
            steps.push_back(s);
          }
          if (steps.empty()) break;
          sc["workload"] = steps;
          if (!p.trace_routes) sc["trace"] = {{"routes", false}};
          json env = json::object();
          for (auto& [k, v] : p.env) env[k] = v;
          for (auto& [k, v] : w.env) env[k] = v;  // the workload's own win
          if (w.algo != "auto") env["HCOMM_ALGO"] = w.algo;
          if (!env.empty()) sc["hcomm_env"] = env;
          if (variants[vi].salt_set) sc["network"]["ecmp_salt"] = variants[vi].salt;
          for (std::size_t k = 0; k < p.sweeps.size(); ++k)
            if (p.sweeps[k].scenario) sc[json::json_pointer(p.sweeps[k].pointer)] = L.values[k];
          if (write && !write_file(pt.scen, sc.dump(2) + "\n", &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return false; }
          // Validated once per distinct scenario on its topology (the seed runs differ in seed
          // and salt, checked with the plan).
          json key = sc;
          key.erase("name");
          key.erase("seed");
          if (key.contains("network")) key["network"].erase("ecmp_salt");
          const std::string vkey = ttext + key.dump();
          auto vit = verdicts.find(vkey);
          if (vit == verdicts.end()) {
            std::vector<std::string> errs;
            sim::load_scenario(pt.scen, &errs);
            vit = verdicts.emplace(vkey, errs).first;
          }
          const auto& errs = vit->second;
          if (errs.empty()) break;
          bool named = false;
          for (auto& e : errs) {
            const int s = step_named(e);
            if (s >= 0 && static_cast<std::size_t>(s) < step_row.size() && bad[step_row[s]].empty()) {
              bad[step_row[s]] = reason(e, pt.scen);
              named = true;
            }
          }
          if (!named) {  // the scenario as a whole (a fault this layout has no target for)
            for (std::size_t k = 0; k < rows.size(); ++k)
              if (bad[k].empty()) bad[k] = reason(errs.front(), pt.scen);
          }
        }
        for (std::size_t k = 0; k < rows.size(); ++k)
          if (!bad[k].empty()) {
            rows[k].step = -1;
            rows[k].status = "infeasible: " + bad[k];
          }
        points.push_back(pt);
        results.push_back(std::move(rows));
      }
    }
  }
  return true;
}

}  // namespace hcsim::plan
