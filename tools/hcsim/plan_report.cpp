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
           const std::vector<std::vector<Result>>& results, const std::string& out, bool dry, int rc,
           const std::vector<std::pair<std::string, std::string>>& meta, const std::vector<TierCheck>* checks) {
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

  // --tier-check: every size of each re-run point against its row of the sweep (docs/plan-format.md#tier-check).
  std::vector<TierRow> tier_rows;
  std::string tier_summary;  // one clause for the verdict
  if (checks) {
    for (const TierCheck& c : *checks)
      for (std::size_t k = 0; k < results[c.point].size(); ++k) {
        const Result* coarse = &results[c.point][k];
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
    std::printf("%-6s %-28s %-13s %10s %-14s %6s %-6s %12s %-6s %12s %10s %s\n", "layout", "parameters", "op", "size", "busiest port",
                "util", "tier", "time(us)", "finer", "time(us)", "spread", "status");
    std::size_t beyond = 0, compared = 0, nothing_finer = 0, no_time = 0;
    const TierRow* worst = nullptr;
    for (const TierRow& t : tier_rows) {
      const Point& pt = points[t.check->point];
      const Workload& w = p.workloads[pt.workload];
      const std::string size = w.op == "barrier" ? "-" : sim::format_bytes(t.coarse->bytes);
      const std::string status = t.finer ? t.finer->status : "nothing finer: " + t.check->coarse + " is the finest tier";
      std::printf("%-6zu %-28s %-13s %10s %-14s %5s%% %-6s %12s %-6s %12s %10s %s\n", pt.layout, layouts[pt.layout].label.c_str(),
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
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Workload& w = p.workloads[points[i].workload];
      if (w.op == "barrier") continue;
      tiers.insert(w.fidelity);
      PlotSeries s{layouts[points[i].layout].label + " " + w.op + (w.algo == "auto" ? "" : " " + w.algo), {}};
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
    auto meets_target = [&](double time_us, double busbw) {
      return (t.max_time_us <= 0 || time_us <= t.max_time_us) && (t.min_busbw <= 0 || busbw >= t.min_busbw);
    };
    // The tier check's word on the verdict: on the row it rests on, if that row was re-run; else
    // the check's summary (and, when no layout meets the target, any finer row that would).
    std::string tier_note;
    if (checks) {
      const Result* on = meets.empty() ? nullptr : meets.front().second;
      const TierRow* row = nullptr;
      for (const TierRow& tr : tier_rows)
        if (tr.coarse == on) row = &tr;
      if (row && row->finer && std::isfinite(row->spread)) {
        tier_note = "; tier check: " + fmt(row->finer->time_us, 1) + " us in the " + row->check->finer + " tier, spread " + pct(row->spread);
        if (std::fabs(row->spread) > kTierSpreadWarn) tier_note += ", beyond 5 %: believe the " + row->check->finer + " tier";
        if (!meets_target(row->finer->time_us, row->finer->busbw)) tier_note += ", whose time does not meet the target";
      } else if (row && !row->finer) {
        tier_note = "; tier check: nothing is finer than the " + row->check->coarse + " tier";
      } else {
        tier_note = "; tier check: " + std::string(on ? "this row not re-run; " : "") + tier_summary;
        if (!on)
          for (const TierRow& tr : tier_rows)
            if (tr.finer && p.workloads[tr.coarse->workload].op == t.op && tr.coarse->bytes == t.bytes &&
                std::isfinite(tr.finer->time_us) && meets_target(tr.finer->time_us, tr.finer->busbw))
              tier_note += "; layout " + std::to_string(tr.coarse->layout) + " meets it in the " + tr.check->finer + " tier (" +
                           fmt(tr.finer->time_us, 1) + " us)";
      }
    }
    if (meets.empty()) {
      std::printf("\ntarget %s: no layout meets it%s\n", what.c_str(), tier_note.c_str());
      rc = std::max(rc, int(kExpectationFailed));
    } else {
      auto [L, r] = meets.front();
      const Workload& w = p.workloads[r->workload];
      std::printf("\ntarget %s: cheapest layout %zu (%s): %s us, %s GB/s busbw with %s in the %s tier%s; %zu of %zu layouts meet it%s\n",
                  what.c_str(), r->layout, L->label.c_str(), fmt(r->time_us, 1).c_str(), fmt(r->busbw, 1).c_str(),
                  (r->algorithm.empty() ? w.algo : r->algorithm).c_str(), w.fidelity.c_str(),
                  p.prices.given ? (", cost " + fmt(L->cost, 0) + (p.prices.currency.empty() ? "" : " " + p.prices.currency)).c_str() : "",
                  meets.size(), all.size(), tier_note.c_str());
    }
    if (p.prices.given && !all.empty()) {
      std::sort(all.begin(), all.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
      PlotSeries pts{"layouts", {}}, front{"Pareto front", {}};
      pts.markers_only = true;
      double best = std::numeric_limits<double>::infinity();
      std::set<std::string> tiers;
      for (auto& [L, r] : all) {
        tiers.insert(p.workloads[r->workload].fidelity);
        pts.points.emplace_back(L->cost, r->time_us);
        if (r->time_us < best) { best = r->time_us; front.points.emplace_back(L->cost, r->time_us); }
      }
      PlotSpec spec;
      spec.title = p.name + ": " + t.op + " " + sim::format_bytes(t.bytes) + " time against cost";
      spec.subtitle = tier_subtitle(tiers);
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
