// hcsim plan --tier-check (docs/plan-format.md#tier-check): after the sweep, the K points of each
// layout with the busiest switch port are re-run whole in the next finer fidelity tier, so that the
// report can say how far the coarse tier's times are from the finer one's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "plan.h"

namespace hcsim::plan {

std::string finer_tier(const std::string& tier) {
  if (tier == "flow") return "chunk";
  if (tier == "chunk") return "packet";
  return "";  // packet: nothing finer
}

namespace {
double peak_util(const std::vector<Result>& rows) {
  for (auto& r : rows)
    if (r.step >= 0) return r.peak_util;
  return NAN;
}
}  // namespace

std::vector<TierCheck> pick_tier_checks(const Plan& p, const std::vector<Point>& points,
                                        const std::vector<std::vector<Result>>& results, std::size_t k) {
  std::vector<TierCheck> picked;
  if (k == 0 || points.empty()) return picked;
  std::size_t layouts = 0;
  for (auto& pt : points) layouts = std::max(layouts, pt.layout + 1);
  for (std::size_t li = 0; li < layouts; ++li) {
    std::vector<std::size_t> cand;  // this layout's points whose run was ok and measured
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (points[i].layout != li || points[i].variant != 0 || !runnable(results[i])) continue;
      const Result* r = nullptr;  // the point's first run size (its rows share the run's figures)
      for (auto& x : results[i])
        if (!r && x.step >= 0) r = &x;
      if (r->status == "ok" && std::isfinite(r->peak_util)) cand.push_back(i);
    }
    std::stable_sort(cand.begin(), cand.end(),
                     [&](std::size_t a, std::size_t b) { return peak_util(results[a]) > peak_util(results[b]); });
    cand.resize(std::min(cand.size(), k));
    std::sort(cand.begin(), cand.end());
    for (std::size_t i : cand) {
      TierCheck c;
      c.point = i;
      c.coarse = p.workloads[points[i].workload].fidelity;
      c.finer = finer_tier(c.coarse);
      picked.push_back(std::move(c));
    }
  }
  return picked;
}

int run_tier_checks(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
                    const std::vector<std::vector<Result>>& results, const std::string& out, unsigned jobs,
                    std::vector<TierCheck>& checks) {
  // The finer runs as points of their own: same layout and workload (the rows' sizes), another
  // scenario, trace and log.
  std::vector<Point> runs;
  std::vector<std::vector<Result>> templates;
  std::vector<std::size_t> check_of;  // runs[j] is checks[check_of[j]]
  std::string why;
  for (std::size_t c = 0; c < checks.size(); ++c) {
    TierCheck& tc = checks[c];
    const Point& pt = points[tc.point];
    const std::string stem = out + "/" + point_stem(p, pt.layout, pt.workload, pt.variant);
    if (tc.finer.empty()) continue;
    std::ifstream f(pt.scen);
    std::stringstream text;
    text << f.rdbuf();
    json sc = json::parse(text.str(), nullptr, false);
    if (!f || !sc.is_object()) {
      std::fprintf(stderr, "hcsim: %s: cannot read the point's scenario for --tier-check\n", pt.scen.c_str());
      return kBadInput;
    }
    sc["fidelity"] = tc.finer;
    sc["name"] = sc.value("name", p.name) + "-" + tc.finer;
    tc.run = {pt.layout, pt.workload, pt.variant, stem + "." + tc.finer + ".scenario.json", stem + "." + tc.finer + ".hcsim.db",
              stem + "." + tc.finer + ".log", 0, {}};
    if (!write_file(tc.run.scen, sc.dump(2) + "\n", &why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      return kBadInput;
    }
    std::vector<Result> rows = results[tc.point];  // the same sizes, steps and infeasible cells
    for (auto& r : rows) {
      if (r.step < 0) continue;
      r.status = "not run";
      r.time_us = r.algbw = r.busbw = r.wall_s = r.peak_mib = r.peak_util = NAN;
    }
    tc.rows = rows;
    runs.push_back(tc.run);
    templates.push_back(rows);
    check_of.push_back(c);
  }
  if (runs.empty()) return kOk;

  std::fprintf(stderr, "hcsim plan: tier check: %zu points re-run in the next finer tier, -j %u\n", runs.size(), jobs);
  Children kids(p, runs, templates);
  if (!kids.find_self(&why)) {
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next = 0, done = 0;
  int rc = kOk;
  while (done < runs.size()) {
    while (kids.running() < jobs && next < runs.size())
      if (!kids.spawn(next++, &why)) {
        std::fprintf(stderr, "hcsim: %s\n", why.c_str());
        return kBadInput;
      }
    Finished f;
    if (!kids.reap(true, f, &why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      return kBadInput;
    }
    TierCheck& tc = checks[check_of[f.index]];
    tc.rows = f.rows;
    tc.code = f.code;
    rc = std::max(rc, f.code);
    ++done;
    const Point& pt = runs[f.index];
    const Result& r0 = *std::find_if(f.rows.begin(), f.rows.end(), [](const Result& r) { return r.step >= 0; });
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "hcsim plan: tier check [%zu/%zu] layout %zu (%s) %s in the %s tier: %s, %.1f s, %.0f MiB; elapsed %.0f s\n",
                 done, runs.size(), pt.layout, layouts[pt.layout].label.c_str(), p.workloads[pt.workload].op.c_str(),
                 tc.finer.c_str(), r0.status.c_str(), r0.wall_s, r0.peak_mib, el);
  }
  return rc;
}

}  // namespace hcsim::plan
