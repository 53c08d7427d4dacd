// hcsim plan's views across a point's runs and across workloads (docs/plan-format.md): the rows
// of a (layout, workload) over its seed runs, and the automatic algorithm choice against the
// forced ones.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "plan.h"
#include "sim/config/units.h"

namespace hcsim::plan {

std::vector<std::vector<Result>> aggregate(const Plan& p, const std::vector<Point>& points, const std::vector<std::vector<Result>>& raw) {
  const std::size_t nv = p.variants().size();
  std::vector<std::vector<Result>> agg;
  for (std::size_t i = 0; i < points.size(); i += nv) {  // a (layout, workload)'s runs are consecutive
    std::vector<Result> rows = raw[i];
    for (std::size_t k = 0; k < rows.size(); ++k) {
      std::vector<const Result*> runs;
      std::string bad;
      for (std::size_t v = 0; v < nv && i + v < points.size(); ++v) {
        const Result& r = raw[i + v][k];
        if (std::isfinite(r.time_us)) runs.push_back(&r);
        if (r.status != "ok" && r.status != raw[i][k].status && bad.empty())
          bad = "run " + p.variants()[v].label() + ": " + r.status;
      }
      if (!runs.empty()) {
        std::stable_sort(runs.begin(), runs.end(), [](const Result* a, const Result* b) { return a->time_us < b->time_us; });
        rows[k] = *runs[(runs.size() - 1) / 2];
        rows[k].time_min = runs.front()->time_us;
        rows[k].time_max = runs.back()->time_us;
      }
      rows[k].runs = runs.size();
      rows[k].variant = 0;
      if (!bad.empty()) rows[k].status = bad;
    }
    agg.push_back(std::move(rows));
  }
  return agg;
}



// The automatic choice against the forced algorithms (docs/plan-format.md#selection): for every
// layout, op, size, fidelity and dtype that ran both with `auto` and with at least one forced
// algorithm, the automatic choice's time against the fastest run's, and how much slower it was.
void selection_report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<const Result*>& flat) {
  using Key = std::tuple<std::size_t, std::string, std::uint64_t, std::string, std::string>;
  struct Group {
    const Result* automatic = nullptr;
    const Result* fastest = nullptr;
    bool forced = false;
  };
  std::map<Key, Group> groups;  // ordered: the report's order does not depend on finishing order
  std::vector<Key> order;
  for (const Result* r : flat) {
    const Workload& w = p.workloads[r->workload];
    if (w.op == "barrier" || !std::isfinite(r->time_us)) continue;
    const Key k{r->layout, w.op, r->bytes, w.fidelity, w.dtype};
    auto [it, fresh] = groups.try_emplace(k);
    if (fresh) order.push_back(k);
    Group& g = it->second;
    if (w.algo == "auto") { if (!g.automatic) g.automatic = r; }
    else g.forced = true;
    if (!g.fastest || r->time_us < g.fastest->time_us) g.fastest = r;
  }
  std::vector<std::pair<Key, Group>> rows;
  for (const Key& k : order)
    if (const Group& g = groups[k]; g.automatic && g.forced) rows.emplace_back(k, g);
  if (rows.empty()) return;
  std::printf("\nautomatic choice against the forced algorithms (%zu op/size points):\n", rows.size());
  std::printf("%-6s %-14s %10s %-18s %11s %-18s %11s %8s\n", "layout", "op", "size", "auto", "time(us)", "fastest", "time(us)",
              "slower");
  double sum = 0, worst = -1;
  std::string worst_what;
  for (const auto& [k, g] : rows) {
    const double slower = g.automatic->time_us / g.fastest->time_us - 1;
    sum += slower;
    const std::string size = sim::format_bytes(std::get<2>(k));
    if (slower > worst) {
      worst = slower;
      worst_what = std::get<1>(k) + " " + size + " on layout " + std::to_string(std::get<0>(k)) + " (" +
                   layouts[std::get<0>(k)].label + ")";
    }
    std::printf("%-6zu %-14s %10s %-18s %11s %-18s %11s %7s%%\n", std::get<0>(k), std::get<1>(k).c_str(), size.c_str(),
                g.automatic->algorithm.c_str(), fmt(g.automatic->time_us, 1).c_str(), g.fastest->algorithm.c_str(),
                fmt(g.fastest->time_us, 1).c_str(), fmt(100 * slower, 1).c_str());
  }
  std::printf("automatic choice slower than the fastest by %s %% on average, at most %s %% (%s)\n",
              fmt(100 * sum / static_cast<double>(rows.size()), 2).c_str(), fmt(100 * worst, 1).c_str(), worst_what.c_str());
}

}  // namespace hcsim::plan
