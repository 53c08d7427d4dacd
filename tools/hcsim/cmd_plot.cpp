// hcsim plot: busbw against size from a trace's summary table, as SVG (docs/tools.md#plot).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "svg_plot.h"
#include "trace_db.h"

namespace hcsim {
namespace {

int plot_main(const std::vector<std::string>& argv) {
  std::string file, out, title;
  bool force = false;
  const Args args(kPlot,
                  {{"-o", "", "OUT", "a file name", "write the SVG to OUT (default: stdout)",
                    [&](const std::string& v) { out = v; return v.empty() ? std::string("-o needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace OUT even if it is not an SVG plot (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }},
                   {"--title", "", "TEXT", "a title", "the plot's title (default: the scenario)",
                    [&](const std::string& v) { title = v; return std::string(); }}},
                  {"DB", "the trace database (hcsim run --db)", [&](const std::string& a) {
                     if (!file.empty()) return std::string("plot takes one trace database, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("plot needs a trace database");
  if (!out.empty() && out != "-") {
    const std::string bad = check_outputs({{"input DB", file}}, {{"-o", out, {kSvgPlotHead}, "an SVG plot"}}, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  TraceDb db;
  std::string why;
  if (!db.open(file, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  db.print_banner();
  if (!db.has_table("summary")) { std::fprintf(stderr, "hcsim: %s: no summary table\n", file.c_str()); return kBadInput; }
  // The algorithm of each (step, rep): the one most of its operation rows name.
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> algo;
  bool ok = db.query("SELECT step, rep, algorithm, COUNT(*) AS n FROM operations GROUP BY step, rep, algorithm "
                     "ORDER BY step, rep, n DESC, algorithm",
                     [&](const Row& r) { algo.emplace(std::make_pair(r.i(0), r.i(1)), r.s(2)); }, &why);
  // Series "kind algorithm": the mean busbw of the repetitions at each size.
  std::map<std::string, std::map<double, std::pair<double, int>>> acc;
  std::size_t skipped = 0;
  ok = ok && db.query("SELECT step, rep, kind, bytes, busbw_GBps FROM summary ORDER BY step, rep", [&](const Row& r) {
    const double bytes = r.d(3);
    if (bytes <= 0) { ++skipped; return; }  // a barrier has no size
    auto it = algo.find({r.i(0), r.i(1)});
    const std::string name = r.s(2) + (it == algo.end() || it->second.empty() ? "" : " " + it->second);
    auto& p = acc[name][bytes];
    p.first += r.d(4);
    p.second += 1;
  }, &why);
  if (!ok) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  if (acc.empty()) {
    std::fprintf(stderr, "hcsim: %s: nothing to plot: no summary row with a size (%zu without, e.g. barriers)\n", file.c_str(), skipped);
    return kBadInput;
  }
  std::vector<PlotSeries> series;
  for (auto& [name, pts] : acc) {
    PlotSeries s{name, {}};
    for (auto& [b, p] : pts) s.points.emplace_back(b, p.first / p.second);
    series.push_back(std::move(s));
  }
  if (title.empty()) {
    db.query("SELECT scenario FROM run WHERE id=1", [&](const Row& r) { title = r.s(0); }, &why);
    const auto k = title.find_last_of('/');
    if (k != std::string::npos) title = title.substr(k + 1);
    title = "bus bandwidth: " + title;
  }
  PlotSpec spec;
  spec.title = title;
  const std::string svg = svg_line_plot(spec, series);
  if (out.empty() || out == "-") { std::fputs(svg.c_str(), stdout); return kOk; }
  std::ofstream f(out, std::ios::binary);
  if (!(f << svg) || !f.flush()) { std::fprintf(stderr, "hcsim: %s: cannot write: %s\n", out.c_str(), std::strerror(errno)); return kBadInput; }
  return kOk;
}

}  // namespace

const Command kPlot = {
    "plot", "plot DB [-o OUT] [--force] [--title TEXT]",
    "        an SVG plot of bus bandwidth against size (log 2) from the trace's summary table,\n"
    "        one line per operation kind and algorithm (the mean over repetitions)\n",
    plot_main};

}  // namespace hcsim
