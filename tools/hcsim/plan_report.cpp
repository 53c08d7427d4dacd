// The reports of a finished plan (docs/plan-format.md): the layout and point tables, CSV, SQLite,
// SVG plots, the tier check and the verdict per what-if (cheapest layout, Pareto set).
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
#include "sim/config/units.h"
#include "svg_plot.h"

namespace hcsim::plan {

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


// "+15.21 %" of a fraction; "-" when not finite.
std::string pct(double v) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%+.2f %%", std::fabs(v) < 5e-5 ? 0.0 : 100 * v);  // no "-0.00"
  return b;
}

// A plot's subtitle: the fidelity tier(s) of the workloads it shows.
std::string tier_subtitle(const std::set<std::string>& tiers) {
  std::string t;
  for (auto& x : tiers) t += (t.empty() ? "" : ", ") + x;
  return tiers.size() == 1 ? t + " tier" : "tiers: " + t;
}

// One row of the tier check: a size of a re-run point, its coarse row and its finer one (null
// when nothing is finer than the point's tier).
struct TierRow {
  const TierCheck* check;
  const Result* coarse;
  const Result* finer;
  double spread;  // (finer - coarse) / finer; NaN when either time is missing
};

}  // namespace

int report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
           const std::vector<std::vector<Result>>& raw, const std::string& out, bool dry, int rc,
           const std::vector<std::pair<std::string, std::string>>& meta, const std::vector<TierCheck>* checks) {
  std::string why;
  const std::size_t nv = p.variants().size();
  const std::vector<std::vector<Result>> results = aggregate(p, points, raw);
  // The parameters column as wide as the longest layout label (at least 28).
  std::size_t pw = 28;
  for (auto& L : layouts) pw = std::max(pw, L.label.size());
  auto lab = [&](const std::string& t) { return t + std::string(pw > t.size() ? pw - t.size() : 0, ' '); };
  const std::string cur = p.prices.currency.empty() ? "" : " " + p.prices.currency;
  // The layouts: their counts and cost, or why they cannot be built.
  std::printf("%-6s %s %7s %6s %6s %8s %7s %14s %s\n", "layout", lab("parameters").c_str(), "servers", "npus", "nics", "switches", "cables",
              ("cost" + cur).c_str(), "status");
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    const Layout& L = layouts[li];
    std::printf("%-6zu %s %7zu %6zu %6zu %8zu %7zu %14s %s\n", li, lab(L.label).c_str(), L.servers, L.npus, L.nics, L.switches, L.cables,
                p.prices.given && L.infeasible.empty() ? fmt(L.cost, 0).c_str() : "-",
                L.infeasible.empty() ? "ok" : ("infeasible: " + L.infeasible).c_str());
  }
  std::printf("\nsizes in nccl-tests' convention (hcomm_test's and hcsim run's: an all-gather's gathered output, a reduce-scatter's "
              "input); algbw = size / time%s%s\n",
              nv > 1 ? "; time: the median of the seed runs (min, max beside it)" : "",
              dry ? "; --dry-run: est wall and peak are estimates" : "");
  // The table (stdout), CSV and SQLite, in layout, workload, size order.
  std::string csv = "layout";
  for (auto& s : p.sweeps) csv += "," + csv_escape("sweep." + s.name);
  csv += ",servers,npus,nics,switches,cables,cost,op,algo_requested,fidelity,bytes,algorithm,time_us,time_min_us,time_max_us,runs,"
         "exposed_comm_us,overlap,algbw_GBps,busbw_GBps,cost_metric,wall_s,cpu_s,peak_MiB,est_wall_s,est_peak_MiB,status\n";
  const bool spread = nv > 1;
  bool steps = false;
  for (auto& w : p.workloads) steps = steps || w.is_step();
  if (steps)
    std::printf("train_step rows: time = the iteration, exposed = its communication not hidden behind compute, overlap = 1 - "
                "exposed / communication; cost x s = the layout's cost x the iteration time\n");
  std::printf("%-6s %s %6s %-13s %10s %-12s %12s%s%s %9s %9s %12s %8s %9s %-6s %s\n", "layout", lab("parameters").c_str(), "npus", "op", "size",
              "algorithm", "time(us)", spread ? "      min(us)      max(us)" : "", steps ? "  exposed(us) overlap" : "", "algbw", "busbw",
              p.prices.given ? (steps ? "cost/busbw|xs" : "cost/busbw") : "-",
              dry ? "est(s)" : "wall(s)", dry ? "est(MiB)" : "peak(MiB)", "tier", "status");
  std::vector<const Result*> flat;
  for (auto& rs : results)
    for (auto& r : rs) flat.push_back(&r);
  // The cost metric: a collective's cost per GB/s of busbw; a training step's cost x iteration
  // time (cost-seconds per iteration).
  auto per_busbw = [&](const Result* r) {
    const Layout& L = layouts[r->layout];
    if (!p.prices.given) return double(NAN);
    if (p.workloads[r->workload].is_step()) return std::isfinite(r->time_us) ? L.cost * r->time_us * 1e-6 : double(NAN);
    return std::isfinite(r->busbw) && r->busbw > 0 ? L.cost / r->busbw : double(NAN);
  };

  for (const Result* r : flat) {
    const Layout& L = layouts[r->layout];
    const Workload& w = p.workloads[r->workload];
    const std::string mm = spread ? " " + std::string(12 - std::min<std::size_t>(12, fmt(r->time_min, 3).size()), ' ') + fmt(r->time_min, 3) +
                                        " " + std::string(12 - std::min<std::size_t>(12, fmt(r->time_max, 3).size()), ' ') + fmt(r->time_max, 3)
                                  : "";
    char st[40] = "";
    if (steps) std::snprintf(st, sizeof st, " %12s %7s", fmt(r->exposed_us, 1).c_str(), fmt(r->overlap, 3).c_str());
    std::printf("%-6zu %s %6zu %-13s %10s %-12s %12s%s%s %9s %9s %12s %8s %9s %-6s %s\n", r->layout, lab(L.label).c_str(), L.npus, w.op.c_str(),
                w.op == "barrier" || w.is_step() ? "-" : sim::format_bytes(r->bytes).c_str(), r->algorithm.empty() ? "-" : r->algorithm.c_str(),
                fmt(r->time_us, 3).c_str(), mm.c_str(), st, fmt(r->algbw, 2).c_str(), fmt(r->busbw, 2).c_str(), fmt(per_busbw(r), 0).c_str(),
                fmt(dry ? r->est_wall_s : r->wall_s, 1).c_str(), fmt(dry ? r->est_peak_mib : r->peak_mib, 0).c_str(), w.fidelity.c_str(),
                r->status.c_str());
    csv += std::to_string(r->layout);
    for (auto& v : L.values) csv += "," + csv_escape(value_text(v));
    csv += "," + std::to_string(L.servers) + "," + std::to_string(L.npus) + "," + std::to_string(L.nics) + "," +
           std::to_string(L.switches) + "," + std::to_string(L.cables) + "," + (p.prices.given ? fmt(L.cost, 2) : "") + "," + w.op + "," +
           csv_escape(w.algo) + "," + w.fidelity + "," + std::to_string(r->bytes) + "," + csv_escape(r->algorithm) + "," +
           fmt(r->time_us, 3) + "," + fmt(r->time_min, 3) + "," + fmt(r->time_max, 3) + "," + std::to_string(r->runs) + "," +
           fmt(r->exposed_us, 3) + "," + fmt(r->overlap, 4) + "," + fmt(r->algbw, 3) + "," + fmt(r->busbw, 3) + "," + (p.prices.given ? fmt(per_busbw(r), 2) : "") + "," + fmt(r->wall_s, 2) +
           "," + fmt(r->cpu_s, 2) + "," + fmt(r->peak_mib, 1) + "," + fmt(r->est_wall_s, 2) + "," + fmt(r->est_peak_mib, 1) + "," + csv_escape(r->status) + "\n";
  }
  if (dry) {
    double wall = 0, peak = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Result* r = nullptr;
      for (auto& x : raw[i])
        if (!r && x.step >= 0) r = &x;
      if (!r) continue;
      ++n;
      wall += r->est_wall_s;
      peak = std::max(peak, r->est_peak_mib);
    }
    std::printf("\n--dry-run: %zu runs to simulate, estimated %.0f s of simulation in all (divide by -j when memory allows), the "
                "largest peak %.0f MiB\n",
                n, wall, peak);
  }
  if (!write_file(out + "/plan.csv", csv, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }

  // --tier-check: every size of each re-run point against its row of the sweep (docs/plan-format.md#tier-check).
  std::vector<TierRow> tier_rows;
  std::string tier_summary;  // one clause for the verdict
  if (checks) {
    for (const TierCheck& c : *checks)
      for (std::size_t k = 0; k < raw[c.point].size(); ++k) {
        if (raw[c.point][k].step < 0) continue;
        const Result* coarse = &raw[c.point][k];
        const Result* finer = c.finer.empty() || k >= c.rows.size() ? nullptr : &c.rows[k];
        double spread = NAN;
        if (finer && std::isfinite(coarse->time_us) && std::isfinite(finer->time_us) && finer->time_us > 0)
          spread = (finer->time_us - coarse->time_us) / finer->time_us;
        tier_rows.push_back({&c, coarse, finer, spread});
      }
    std::string tcsv = "layout,workload,op,algo_requested,bytes,peak_port,peak_util,coarse_tier,coarse_time_us,finer_tier,"
                       "finer_time_us,spread,status,trace\n";
    std::printf("\ntier check: the points of each layout with the busiest switch egress port (util: its busy time / the span of the "
                "run's operations), re-run in the next finer tier; spread = (finer - coarse) / finer\n");
    std::printf("%-6s %s %-13s %10s %-14s %6s %-6s %12s %-6s %12s %10s %s\n", "layout", lab("parameters").c_str(), "op", "size", "busiest port",
                "util", "tier", "time(us)", "finer", "time(us)", "spread", "status");
    std::size_t beyond = 0, compared = 0, nothing_finer = 0, no_time = 0;
    const TierRow* worst = nullptr;
    for (const TierRow& t : tier_rows) {
      const Point& pt = points[t.check->point];
      const Workload& w = p.workloads[pt.workload];
      const std::string size = w.op == "barrier" ? "-" : sim::format_bytes(t.coarse->bytes);
      const std::string status = t.finer ? t.finer->status : "nothing finer: " + t.check->coarse + " is the finest tier";
      std::printf("%-6zu %s %-13s %10s %-14s %5s%% %-6s %12s %-6s %12s %10s %s\n", pt.layout, lab(layouts[pt.layout].label).c_str(),
                  w.op.c_str(), size.c_str(), t.coarse->peak_port.c_str(), fmt(100 * t.coarse->peak_util, 1).c_str(),
                  t.check->coarse.c_str(), fmt(t.coarse->time_us, 3).c_str(), t.finer ? t.check->finer.c_str() : "-",
                  t.finer ? fmt(t.finer->time_us, 3).c_str() : "-", pct(t.spread).c_str(), status.c_str());
      tcsv += std::to_string(pt.layout) + "," + std::to_string(pt.workload) + "," + w.op + "," + csv_escape(w.algo) + "," +
              std::to_string(t.coarse->bytes) + "," + csv_escape(t.coarse->peak_port) + "," + fmt(t.coarse->peak_util, 6) + "," +
              t.check->coarse + "," + fmt(t.coarse->time_us, 3) + "," + t.check->finer + "," +
              (t.finer ? fmt(t.finer->time_us, 3) : "") + "," + (std::isfinite(t.spread) ? fmt(t.spread, 6) : "") + "," +
              csv_escape(status) + "," + (t.finer ? t.check->run.db.substr(out.size() + 1) : "") + "\n";
      if (!t.finer) { ++nothing_finer; continue; }
      if (!std::isfinite(t.spread)) { ++no_time; continue; }
      ++compared;
      if (!worst || std::fabs(t.spread) > std::fabs(worst->spread)) worst = &t;
      if (std::fabs(t.spread) > kTierSpreadWarn) {
        ++beyond;
        std::fprintf(stderr,
                     "hcsim plan: warning: tier check: layout %zu (%s) %s %s: %s us in the %s tier, %s us in the %s tier, spread %s, "
                     "beyond %.0f %%: believe the %s tier\n",
                     pt.layout, layouts[pt.layout].label.c_str(), w.op.c_str(), size.c_str(), fmt(t.coarse->time_us, 3).c_str(),
                     t.check->coarse.c_str(), fmt(t.finer->time_us, 3).c_str(), t.check->finer.c_str(), pct(t.spread).c_str(),
                     100 * kTierSpreadWarn, t.check->finer.c_str());
      }
    }
    if (!write_file(out + "/tier_check.csv", tcsv, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    if (tier_rows.empty()) tier_summary = "no point was re-run (none ran ok)";
    else if (compared == 0 && nothing_finer == tier_rows.size()) tier_summary = "the picked points ran in the packet tier, nothing is finer";
    else if (compared == 0) tier_summary = "no finer time to compare with (the finer runs failed)";
    else {
      const Point& wp = points[worst->check->point];
      const Workload& ww = p.workloads[wp.workload];
      tier_summary = std::to_string(compared) + (compared == 1 ? " re-run row, " : " re-run rows, ") +
                     (beyond == 0 ? std::string("every spread within 5 %")
                                  : std::to_string(beyond) + " beyond 5 % (believe the finer tier there)") +
                     ", largest " + pct(worst->spread) + " (layout " + std::to_string(wp.layout) + " " + ww.op +
                     (ww.op == "barrier" ? "" : " " + sim::format_bytes(worst->coarse->bytes)) + ", " + worst->check->coarse + " against " +
                     worst->check->finer + ")";
      if (nothing_finer)
        tier_summary += "; " + std::to_string(nothing_finer) + (nothing_finer == 1 ? " row" : " rows") + " in the packet tier, nothing finer";
      if (no_time) tier_summary += "; " + std::to_string(no_time) + (no_time == 1 ? " row" : " rows") + " without a time to compare";
    }
    std::printf("tier check: %s\n", tier_summary.c_str());
  }

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
        "CREATE TABLE layouts(id INTEGER PRIMARY KEY, parameters TEXT, servers INTEGER, npus INTEGER, nics INTEGER, switches INTEGER,"
        " cables INTEGER, cost REAL, topology TEXT, infeasible TEXT);"
        "CREATE TABLE points(layout INTEGER, workload INTEGER, op TEXT, algo_requested TEXT, fidelity TEXT, bytes INTEGER,"
        " algorithm TEXT, time_us REAL, time_min_us REAL, time_max_us REAL, runs INTEGER, algbw_GBps REAL, busbw_GBps REAL,"
        " exposed_comm_us REAL, overlap REAL, cost_metric REAL, wall_s REAL, cpu_s REAL, peak_MiB REAL, est_wall_s REAL, est_peak_MiB REAL, status TEXT, trace TEXT);"
        "CREATE TABLE runs(layout INTEGER, workload INTEGER, seed INTEGER, ecmp_salt INTEGER, bytes INTEGER, algorithm TEXT,"
        " time_us REAL, algbw_GBps REAL, busbw_GBps REAL, wall_s REAL, cpu_s REAL, peak_MiB REAL, status TEXT, trace TEXT);";
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
    ok = ok && exec_bind("INSERT INTO meta VALUES('generator','hcsim plan'),('plan',?),('name',?),('plan_version',?),"
                         "('size_convention','nccl-tests: an all-gather''s gathered output, a reduce-scatter''s input; algbw = bytes / time')",
                         {absolute(p.file), p.name, std::to_string(p.version)});
    for (auto& [k, v] : meta) ok = ok && exec_bind("INSERT INTO meta VALUES(?,?)", {k, v});
    for (std::size_t li = 0; ok && li < layouts.size(); ++li) {
      const Layout& L = layouts[li];
      json params = json::object();
      for (std::size_t k = 0; k < p.sweeps.size(); ++k) params[p.sweeps[k].pointer] = L.values[k];
      ok = exec_bind("INSERT INTO layouts VALUES(?,?,?,?,?,?,?,?,?,?)",
                     {static_cast<std::int64_t>(li), params.dump(), static_cast<std::int64_t>(L.servers),
                      static_cast<std::int64_t>(L.npus), static_cast<std::int64_t>(L.nics), static_cast<std::int64_t>(L.switches),
                      static_cast<std::int64_t>(L.cables), p.prices.given ? json(L.cost) : json(nullptr),
                      "layout" + std::to_string(li) + ".topology.json", L.infeasible.empty() ? json(nullptr) : json(L.infeasible)});
    }
    for (std::size_t i = 0; ok && i < results.size(); ++i)
      for (const Result& r : results[i]) {
        const Workload& w = p.workloads[r.workload];
        ok = ok && exec_bind("INSERT INTO points VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             {static_cast<std::int64_t>(r.layout), static_cast<std::int64_t>(r.workload), w.op, w.algo, w.fidelity,
                              static_cast<std::int64_t>(r.bytes), r.algorithm, r.time_us, r.time_min, r.time_max,
                              static_cast<std::int64_t>(r.runs), r.algbw, r.busbw, r.exposed_us, r.overlap, per_busbw(&r), r.wall_s, r.cpu_s, r.peak_mib, r.est_wall_s,
                              r.est_peak_mib, r.status,
                              r.step >= 0 ? json(points[i * nv + r.variant].db.substr(out.size() + 1)) : json(nullptr)});
      }
    const auto variants = p.variants();
    for (std::size_t i = 0; ok && i < points.size(); ++i)
      for (const Result& r : raw[i]) {
        const Variant& v = variants[points[i].variant];
        ok = ok && exec_bind("INSERT INTO runs VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             {static_cast<std::int64_t>(r.layout), static_cast<std::int64_t>(r.workload),
                              v.seed_set ? json(static_cast<std::int64_t>(v.seed)) : json(nullptr),
                              v.salt_set ? json(static_cast<std::int64_t>(v.salt)) : json(nullptr), static_cast<std::int64_t>(r.bytes),
                              r.algorithm, r.time_us, r.algbw, r.busbw, r.wall_s, r.cpu_s, r.peak_mib, r.status,
                              r.step >= 0 ? json(points[i].db.substr(out.size() + 1)) : json(nullptr)});
      }
    if (checks) {
      ok = ok && sqlite3_exec(db,
                              "CREATE TABLE tier_check(layout INTEGER, workload INTEGER, op TEXT, algo_requested TEXT, bytes INTEGER,"
                              " peak_port TEXT, peak_util REAL, coarse_tier TEXT, coarse_time_us REAL, finer_tier TEXT,"
                              " finer_time_us REAL, spread REAL, status TEXT, trace TEXT);",
                              nullptr, nullptr, nullptr) == SQLITE_OK;
      for (const TierRow& t : tier_rows) {
        if (!ok) break;
        const Point& pt = points[t.check->point];
        const Workload& w = p.workloads[pt.workload];
        ok = exec_bind("INSERT INTO tier_check VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       {static_cast<std::int64_t>(pt.layout), static_cast<std::int64_t>(pt.workload), w.op, w.algo,
                        static_cast<std::int64_t>(t.coarse->bytes), t.coarse->peak_port, t.coarse->peak_util, t.check->coarse,
                        t.coarse->time_us, t.finer ? json(t.check->finer) : json(nullptr), t.finer ? json(t.finer->time_us) : json(nullptr),
                        t.spread, t.finer ? t.finer->status : "nothing finer: " + t.check->coarse + " is the finest tier",
                        t.finer ? json(t.check->run.db.substr(out.size() + 1)) : json(nullptr)});
      }
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
    std::set<std::string> tiers;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Point& pt = points[i * nv];
      const Workload& w = p.workloads[pt.workload];
      if (w.op == "barrier") continue;
      tiers.insert(w.fidelity);
      PlotSeries s{layouts[pt.layout].label + " " + w.op + (w.algo == "auto" ? "" : " " + w.algo), {}};
      for (auto& r : results[i]) s.points.emplace_back(static_cast<double>(r.bytes), r.busbw);
      series.push_back(std::move(s));
    }
    PlotSpec spec;
    spec.title = p.name + ": bus bandwidth";
    spec.subtitle = tier_subtitle(tiers);
    if (!series.empty() && !write_file(out + "/busbw.svg", svg_line_plot(spec, series), &why))
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
  }
  std::set<std::size_t> server_counts;
  for (auto& L : layouts) server_counts.insert(L.servers);
  if (server_counts.size() > 1) {
    std::map<std::string, PlotSeries> by;
    std::set<std::string> tiers;
    for (const Result* r : flat) {
      tiers.insert(p.workloads[r->workload].fidelity);
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
    spec.subtitle = tier_subtitle(tiers);
    spec.x_label = "servers";
    spec.y_label = "time (us)";
    if (!write_file(out + "/time-vs-servers.svg", svg_line_plot(spec, series), &why)) std::fprintf(stderr, "hcsim: %s\n", why.c_str());
  }

  // The targets: per target each layout's fastest row at its op and size (any requested
  // algorithm); the cheapest layout (without prices: the fewest NPUs) that meets every target, and
  // the Pareto set over (cost, each target's time) (docs/plan-format.md#targets).
  // What-if groups (docs/plan-format.md#what-if): the layouts sharing every what-if sweep's value
  // are the choices one verdict compares; a what-if is a condition, not a choice.
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::string> group_label;
  {
    std::map<std::string, std::size_t> idx;
    for (std::size_t li = 0; li < layouts.size(); ++li) {
      std::string key;
      for (std::size_t k = 0; k < p.sweeps.size(); ++k)
        if (p.sweeps[k].whatif)
          key += (key.empty() ? "" : " ") + p.sweeps[k].name + "=" + (p.sweeps[k].labels.empty() ? value_text(layouts[li].values[k]) : p.sweeps[k].labels[std::find(p.sweeps[k].values.begin(), p.sweeps[k].values.end(), layouts[li].values[k]) - p.sweeps[k].values.begin()]);
      auto [it, fresh] = idx.emplace(key, groups.size());
      if (fresh) { groups.emplace_back(); group_label.push_back(key); }
      groups[it->second].push_back(li);
    }
  }
  for (std::size_t gi = 0; !p.targets.empty() && !dry && gi < groups.size(); ++gi) {
    std::vector<char> in(layouts.size(), 0);
    for (std::size_t li : groups[gi]) in[li] = 1;
    if (groups.size() > 1) std::printf("\nwhat-if %s:", group_label[gi].c_str());
    const std::size_t nt = p.targets.size();
    std::vector<std::map<std::size_t, const Result*>> best(nt);
    for (std::size_t ti = 0; ti < nt; ++ti) {
      const Target& t = p.targets[ti];
      for (const Result* r : flat) {
        if (!in[r->layout] || p.workloads[r->workload].op != t.op || r->size != t.bytes || !std::isfinite(r->time_us)) continue;
        auto it = best[ti].find(r->layout);
        if (it == best[ti].end() || r->time_us < it->second->time_us) best[ti][r->layout] = r;
      }
    }
    auto order_key = [&](std::size_t li) {
      const Layout& L = layouts[li];
      const Result* r0 = best[0].count(li) ? best[0].at(li) : nullptr;
      return std::make_tuple(p.prices.given ? L.cost : 0.0, L.npus, r0 ? r0->time_us : INFINITY, li);
    };
    std::vector<std::size_t> complete, meets;  // layouts with a time for every target; of those, meeting them all
    for (std::size_t li : groups[gi]) {
      bool all = true, ok = true;
      for (std::size_t ti = 0; ti < nt; ++ti) {
        auto it = best[ti].find(li);
        if (it == best[ti].end()) { all = false; break; }
        if (!p.targets[ti].met(it->second->time_us, it->second->busbw)) ok = false;
      }
      if (!all) continue;
      complete.push_back(li);
      if (ok) meets.push_back(li);
    }
    std::sort(meets.begin(), meets.end(), [&](std::size_t a, std::size_t b) { return order_key(a) < order_key(b); });
    // The tier check's word on a row: its finer time and spread, if that row was re-run.
    auto tier_note_of = [&](const Result* on, const Target& t) {
      if (!checks) return std::string();
      const TierRow* row = nullptr;
      for (const TierRow& tr : tier_rows)
        if (on && tr.coarse->layout == on->layout && tr.coarse->workload == on->workload && tr.coarse->bytes == on->bytes) row = &tr;
      std::string note;
      if (row && row->finer && std::isfinite(row->spread)) {
        note = "; tier check: " + fmt(row->finer->time_us, 1) + " us in the " + row->check->finer + " tier, spread " + pct(row->spread);
        if (std::fabs(row->spread) > kTierSpreadWarn) note += ", beyond 5 %: believe the " + row->check->finer + " tier";
        if (!t.met(row->finer->time_us, row->finer->busbw)) note += ", whose time does not meet the target";
      } else if (row && !row->finer) {
        note = "; tier check: nothing is finer than the " + row->check->coarse + " tier";
      } else {
        note = "; tier check: " + std::string(on ? "this row not re-run; " : "") + tier_summary;
        if (!on)
          for (const TierRow& tr : tier_rows)
            if (tr.finer && p.workloads[tr.coarse->workload].op == t.op && tr.coarse->size == t.bytes &&
                std::isfinite(tr.finer->time_us) && t.met(tr.finer->time_us, tr.finer->busbw))
              note += "; layout " + std::to_string(tr.coarse->layout) + " meets it in the " + tr.check->finer + " tier (" +
                      fmt(tr.finer->time_us, 1) + " us)";
      }
      return note;
    };
    std::printf("\n");
    for (std::size_t ti = 0; nt > 1 && ti < nt; ++ti) {
      const Target& t = p.targets[ti];
      std::size_t n = 0;
      for (auto& [li, r] : best[ti]) n += t.met(r->time_us, r->busbw);
      std::printf("target %s: %zu of %zu layouts meet it\n", t.what().c_str(), n, best[ti].size());
    }
    const std::string cur = p.prices.currency.empty() ? "" : " " + p.prices.currency;
    if (meets.empty()) {
      const Result* none = nullptr;
      if (nt == 1) std::printf("target %s: no layout meets it%s\n", p.targets[0].what().c_str(), tier_note_of(none, p.targets[0]).c_str());
      else std::printf("targets: no layout meets every target\n");
      rc = std::max(rc, int(kExpectationFailed));
    } else {
      const std::size_t li = meets.front();
      const Layout& L = layouts[li];
      std::string times;
      for (std::size_t ti = 0; ti < nt; ++ti) {
        const Result* r = best[ti].at(li);
        const Workload& w = p.workloads[r->workload];
        const std::string how = w.is_step() ? " us (exposed communication " + fmt(r->exposed_us, 1) + " us, overlap " + fmt(r->overlap, 3) + ")"
                                            : " us, " + fmt(r->busbw, 1) + " GB/s busbw with " + (r->algorithm.empty() ? w.algo : r->algorithm);
        times += std::string(ti ? "; " : "") + p.targets[ti].op +
                 (p.targets[ti].op == "barrier" || w.is_step() ? "" : " " + sim::format_bytes(r->bytes)) + " " + fmt(r->time_us, 1) + how +
                 " in the " + w.fidelity + " tier" + (r->runs > 1 ? " (median of " + std::to_string(r->runs) + " seed runs, max " + fmt(r->time_max, 1) + " us)" : "") +
                 tier_note_of(r, p.targets[ti]);
      }
      std::printf("%s: cheapest layout %zu (%s)%s: %s; %zu of %zu layouts meet %s\n",
                  nt == 1 ? ("target " + p.targets[0].what()).c_str() : "targets, all met", li, L.label.c_str(),
                  p.prices.given ? (", cost " + fmt(L.cost, 0) + cur).c_str() : "", times.c_str(), meets.size(), complete.size(),
                  nt == 1 ? "it" : "them all");
    }
    // The Pareto set over (cost, each target's time): the layouts no other beats on every count.
    if (p.prices.given && !complete.empty()) {
      std::vector<std::size_t> pareto;
      for (std::size_t a : complete) {
        bool dominated = false;
        for (std::size_t b : complete) {
          if (a == b) continue;
          bool le = layouts[b].cost <= layouts[a].cost, lt = layouts[b].cost < layouts[a].cost;
          for (std::size_t ti = 0; ti < nt && le; ++ti) {
            const double ta = best[ti].at(a)->time_us, tb = best[ti].at(b)->time_us;
            le = tb <= ta;
            lt = lt || tb < ta;
          }
          if (le && lt) { dominated = true; break; }
        }
        if (!dominated) pareto.push_back(a);
      }
      std::sort(pareto.begin(), pareto.end(), [&](std::size_t a, std::size_t b) { return order_key(a) < order_key(b); });
      std::string list;
      for (std::size_t li : pareto) list += std::string(list.empty() ? "" : ", ") + std::to_string(li) + " (" + layouts[li].label + ", " + fmt(layouts[li].cost, 0) + cur + ")";
      std::printf("Pareto set over cost and %s: %s\n", nt == 1 ? "the target's time" : "every target's time", list.c_str());
    }
    // cost.svg (the first target; cost-tK.svg for target K): each layout's time against its cost,
    // labelled, the Pareto front of that target and its time limit.
    for (std::size_t ti = 0; p.prices.given && gi == 0 && ti < nt; ++ti) {  // the first what-if group's
      const Target& t = p.targets[ti];
      std::vector<std::size_t> lis;
      for (auto& [li, r] : best[ti]) lis.push_back(li);
      if (lis.empty()) continue;
      std::sort(lis.begin(), lis.end(), [&](std::size_t a, std::size_t b) {
        return std::make_tuple(layouts[a].cost, best[ti].at(a)->time_us, a) < std::make_tuple(layouts[b].cost, best[ti].at(b)->time_us, b);
      });
      PlotSeries pts{"layouts", {}, true}, front{"Pareto front", {}};
      double fastest = std::numeric_limits<double>::infinity();
      std::set<std::string> tiers;
      for (std::size_t li : lis) {
        const Result* r = best[ti].at(li);
        tiers.insert(p.workloads[r->workload].fidelity);
        pts.points.emplace_back(layouts[li].cost, r->time_us);
        pts.labels.push_back(std::to_string(li) + ": " + layouts[li].label);
        if (r->time_us < fastest) { fastest = r->time_us; front.points.emplace_back(layouts[li].cost, r->time_us); }
      }
      PlotSpec spec;
      spec.title = p.name + ": " + t.op + (t.op == "barrier" || t.op == "train_step" ? "" : " " + sim::format_bytes(best[ti].begin()->second->bytes)) +
                   (t.op == "train_step" ? " iteration time against cost" : " time against cost");
      spec.subtitle = tier_subtitle(tiers);
      spec.x_label = "cost" + (p.prices.currency.empty() ? "" : " (" + p.prices.currency + ")");
      spec.y_label = "time (us)";
      spec.log2_x = false;
      if (t.max_time_us > 0) spec.hlines.emplace_back(t.max_time_us, "target " + fmt(t.max_time_us, 0) + " us");
      const std::string f = out + (ti == 0 ? "/cost.svg" : "/cost-t" + std::to_string(ti) + ".svg");
      if (!write_file(f, svg_line_plot(spec, {pts, front}), &why)) std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    }
  }
  if (!dry) selection_report(p, layouts, flat);
  return rc;
}

}  // namespace hcsim::plan
