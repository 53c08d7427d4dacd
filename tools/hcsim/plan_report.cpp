// The reports of a finished plan (docs/plan-format.md): the table, CSV, SQLite, SVG plots and
// the cheapest layout that meets the target.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "commands.h"
#include "plan.h"
#include "sim/units.h"
#include "svg_plot.h"

namespace hcsim::plan {

namespace {

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

}  // namespace

namespace {

bool ends_with_count(const std::string& ptr) {
  return ptr.size() >= 6 && ptr.compare(ptr.size() - 6, 6, "/count") == 0;
}


std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}


}  // namespace

int report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
           const std::vector<std::vector<Result>>& results, const std::string& out, bool dry, int rc,
           const std::vector<std::pair<std::string, std::string>>& meta) {
  std::string why;
  // The table (stdout), CSV and SQLite, in layout, workload, size order.
  std::string csv = "layout";
  for (auto& s : p.sweeps) csv += "," + csv_escape("sweep." + s.name);
  csv += ",servers,npus,switches,cables,cost,op,algo_requested,fidelity,bytes,algorithm,time_us,algbw_GBps,busbw_GBps,wall_s,peak_MiB,status\n";
  std::printf("%-6s %-28s %6s %-13s %10s %-12s %12s %10s %10s %8s %9s %-6s %s\n", "layout", "parameters", "npus", "op", "size",
              "algorithm", "time(us)", "algbw", "busbw", "wall(s)", "peak(MiB)", "tier", "status");
  std::vector<const Result*> flat;
  for (auto& rs : results)
    for (auto& r : rs) flat.push_back(&r);
  for (const Result* r : flat) {
    const Layout& L = layouts[r->layout];
    const Workload& w = p.workloads[r->workload];
    std::printf("%-6zu %-28s %6zu %-13s %10s %-12s %12s %10s %10s %8s %9s %-6s %s\n", r->layout, L.label.c_str(), L.npus, w.op.c_str(),
                w.op == "barrier" ? "-" : sim::format_bytes(r->bytes).c_str(), r->algorithm.empty() ? "-" : r->algorithm.c_str(),
                fmt(r->time_us, 3).c_str(), fmt(r->algbw, 2).c_str(), fmt(r->busbw, 2).c_str(), fmt(r->wall_s, 1).c_str(),
                fmt(r->peak_mib, 0).c_str(), w.fidelity.c_str(), r->status.c_str());
    csv += std::to_string(r->layout);
    for (auto& v : L.values) csv += "," + csv_escape(value_text(v));
    csv += "," + std::to_string(L.servers) + "," + std::to_string(L.npus) + "," + std::to_string(L.switches) + "," +
           std::to_string(L.cables) + "," + (p.prices.given ? fmt(L.cost, 2) : "") + "," + w.op + "," + csv_escape(w.algo) + "," +
           w.fidelity + "," + std::to_string(r->bytes) + "," + csv_escape(r->algorithm) + "," + fmt(r->time_us, 3) + "," +
           fmt(r->algbw, 3) + "," + fmt(r->busbw, 3) + "," + fmt(r->wall_s, 2) + "," + fmt(r->peak_mib, 1) + "," +
           csv_escape(r->status) + "\n";
  }
  if (!write_file(out + "/plan.csv", csv, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }

  // SQLite: layouts and points.
  {
    const std::string dbp = out + "/plan.db";
    std::remove(dbp.c_str());
    sqlite3* db = nullptr;
    if (sqlite3_open(dbp.c_str(), &db) != SQLITE_OK) {
      std::fprintf(stderr, "hcsim: %s: cannot create: %s\n", dbp.c_str(), db ? sqlite3_errmsg(db) : "out of memory");
      sqlite3_close(db);
      return kBadInput;
    }
    const char* schema =
        "BEGIN;"
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE layouts(id INTEGER PRIMARY KEY, parameters TEXT, servers INTEGER, npus INTEGER, switches INTEGER,"
        " cables INTEGER, cost REAL, topology TEXT);"
        "CREATE TABLE points(layout INTEGER, workload INTEGER, op TEXT, algo_requested TEXT, fidelity TEXT, bytes INTEGER,"
        " algorithm TEXT, time_us REAL, algbw_GBps REAL, busbw_GBps REAL, wall_s REAL, peak_MiB REAL, status TEXT, trace TEXT);";
    bool ok = sqlite3_exec(db, schema, nullptr, nullptr, nullptr) == SQLITE_OK;
    auto exec_bind = [&](const char* sql, const std::vector<json>& vals) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) return false;
      for (std::size_t k = 0; k < vals.size(); ++k) {
        const json& v = vals[k];
        const int c = static_cast<int>(k + 1);
        if (v.is_null()) sqlite3_bind_null(s, c);
        else if (v.is_number_integer()) sqlite3_bind_int64(s, c, v.get<std::int64_t>());
        else if (v.is_number()) {
          const double x = v.get<double>();
          if (std::isfinite(x)) sqlite3_bind_double(s, c, x);
          else sqlite3_bind_null(s, c);
        } else sqlite3_bind_text(s, c, v.get<std::string>().c_str(), -1, SQLITE_TRANSIENT);
      }
      const bool r = sqlite3_step(s) == SQLITE_DONE;
      sqlite3_finalize(s);
      return r;
    };
    ok = ok && exec_bind("INSERT INTO meta VALUES('generator','hcsim plan'),('plan',?),('name',?)", {absolute(p.file), p.name});
    for (auto& [k, v] : meta) ok = ok && exec_bind("INSERT INTO meta VALUES(?,?)", {k, v});
    for (std::size_t li = 0; ok && li < layouts.size(); ++li) {
      const Layout& L = layouts[li];
      json params = json::object();
      for (std::size_t k = 0; k < p.sweeps.size(); ++k) params[p.sweeps[k].pointer] = L.values[k];
      ok = exec_bind("INSERT INTO layouts VALUES(?,?,?,?,?,?,?,?)",
                     {static_cast<std::int64_t>(li), params.dump(), static_cast<std::int64_t>(L.servers),
                      static_cast<std::int64_t>(L.npus), static_cast<std::int64_t>(L.switches), static_cast<std::int64_t>(L.cables),
                      p.prices.given ? json(L.cost) : json(nullptr), "layout" + std::to_string(li) + ".topology.json"});
    }
    for (std::size_t i = 0; ok && i < points.size(); ++i)
      for (const Result& r : results[i]) {
        const Workload& w = p.workloads[r.workload];
        ok = ok && exec_bind("INSERT INTO points VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             {static_cast<std::int64_t>(r.layout), static_cast<std::int64_t>(r.workload), w.op, w.algo, w.fidelity,
                              static_cast<std::int64_t>(r.bytes), r.algorithm, r.time_us, r.algbw, r.busbw, r.wall_s, r.peak_mib,
                              r.status, points[i].db.substr(out.size() + 1)});
      }
    ok = ok && sqlite3_exec(db, "COMMIT;", nullptr, nullptr, nullptr) == SQLITE_OK;
    if (!ok) std::fprintf(stderr, "hcsim: %s: write failed: %s\n", dbp.c_str(), sqlite3_errmsg(db));
    sqlite3_close(db);
    if (!ok) return kBadInput;
  }

  // Plots: busbw against size (per layout and workload), time against servers (per workload and
  // size, the other swept parameters equal), cost against time of the target with its Pareto front.
  {
    std::vector<PlotSeries> series;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Workload& w = p.workloads[points[i].workload];
      if (w.op == "barrier") continue;
      PlotSeries s{layouts[points[i].layout].label + " " + w.op + (w.algo == "auto" ? "" : " " + w.algo), {}};
      for (auto& r : results[i]) s.points.emplace_back(static_cast<double>(r.bytes), r.busbw);
      series.push_back(std::move(s));
    }
    PlotSpec spec;
    spec.title = p.name + ": bus bandwidth";
    if (!series.empty() && !write_file(out + "/busbw.svg", svg_line_plot(spec, series), &why))
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
  }
  std::set<std::size_t> server_counts;
  for (auto& L : layouts) server_counts.insert(L.servers);
  if (server_counts.size() > 1) {
    std::map<std::string, PlotSeries> by;
    for (const Result* r : flat) {
      const Layout& L = layouts[r->layout];
      std::string others;
      for (std::size_t k = 0; k < p.sweeps.size(); ++k)
        if (!ends_with_count(p.sweeps[k].pointer)) others += " " + p.sweeps[k].name + "=" + value_text(L.values[k]);
      const Workload& w = p.workloads[r->workload];
      const std::string name = w.op + (w.op == "barrier" ? "" : " " + sim::format_bytes(r->bytes)) + others;
      by[name].name = name;
      by[name].points.emplace_back(static_cast<double>(L.servers), r->time_us);
    }
    std::vector<PlotSeries> series;
    for (auto& [k, s] : by) series.push_back(s);
    PlotSpec spec;
    spec.title = p.name + ": time against servers";
    spec.x_label = "servers";
    spec.y_label = "time (us)";
    if (!write_file(out + "/time-vs-servers.svg", svg_line_plot(spec, series), &why)) std::fprintf(stderr, "hcsim: %s\n", why.c_str());
  }

  // The target: the cheapest layout (or, without prices, the fewest NPUs) that meets it.
  if (p.target.given && !dry) {
    const Target& t = p.target;
    // Per layout, its fastest row at the target's op and size (any requested algorithm).
    std::map<std::size_t, const Result*> best;
    for (const Result* r : flat) {
      if (p.workloads[r->workload].op != t.op || r->bytes != t.bytes || !std::isfinite(r->time_us)) continue;
      auto it = best.find(r->layout);
      if (it == best.end() || r->time_us < it->second->time_us) best[r->layout] = r;
    }
    std::vector<std::pair<const Layout*, const Result*>> meets, all;
    for (auto& [li, r] : best) {
      all.emplace_back(&layouts[li], r);
      const bool ok = (t.max_time_us <= 0 || r->time_us <= t.max_time_us) && (t.min_busbw <= 0 || r->busbw >= t.min_busbw);
      if (ok) meets.emplace_back(&layouts[li], r);
    }
    auto key = [&](const std::pair<const Layout*, const Result*>& a) {
      return std::make_tuple(p.prices.given ? a.first->cost : 0.0, a.first->npus, a.second->time_us, a.second->layout);
    };
    std::sort(meets.begin(), meets.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
    std::string what = t.op + " " + sim::format_bytes(t.bytes) +
                       (t.max_time_us > 0 ? " under " + fmt(t.max_time_us, 1) + " us" : "") +
                       (t.min_busbw > 0 ? " at >= " + fmt(t.min_busbw, 1) + " GB/s busbw" : "");
    if (meets.empty()) {
      std::printf("\ntarget %s: no layout meets it\n", what.c_str());
      rc = std::max(rc, int(kExpectationFailed));
    } else {
      auto [L, r] = meets.front();
      const Workload& w = p.workloads[r->workload];
      std::printf("\ntarget %s: cheapest layout %zu (%s): %s us, %s GB/s busbw with %s in the %s tier%s; %zu of %zu layouts meet it\n",
                  what.c_str(), r->layout, L->label.c_str(), fmt(r->time_us, 1).c_str(), fmt(r->busbw, 1).c_str(),
                  (r->algorithm.empty() ? w.algo : r->algorithm).c_str(), w.fidelity.c_str(),
                  p.prices.given ? (", cost " + fmt(L->cost, 0) + (p.prices.currency.empty() ? "" : " " + p.prices.currency)).c_str() : "",
                  meets.size(), all.size());
    }
    if (p.prices.given && !all.empty()) {
      std::sort(all.begin(), all.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
      PlotSeries pts{"layouts", {}}, front{"Pareto front", {}};
      pts.markers_only = true;
      double best = std::numeric_limits<double>::infinity();
      for (auto& [L, r] : all) {
        pts.points.emplace_back(L->cost, r->time_us);
        if (r->time_us < best) { best = r->time_us; front.points.emplace_back(L->cost, r->time_us); }
      }
      PlotSpec spec;
      spec.title = p.name + ": " + t.op + " " + sim::format_bytes(t.bytes) + " time against cost";
      spec.x_label = "cost" + (p.prices.currency.empty() ? "" : " (" + p.prices.currency + ")");
      spec.y_label = "time (us)";
      spec.log2_x = false;
      if (!write_file(out + "/cost.svg", svg_line_plot(spec, {pts, front}), &why)) std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    }
  }
  if (!dry) selection_report(p, layouts, flat);
  return rc;
}

}  // namespace hcsim::plan
