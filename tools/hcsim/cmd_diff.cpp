// hcsim diff: compare two runs' route decisions (and, between two traces, their summary figures
// within a tolerance) for CI (docs/routing.md#cli). Exit 0 nothing moved, 1 something did, 2 bad
// input. --junit FILE writes one test case per compared item kind for CI systems.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "routes_io.h"
#include "trace_db.h"
#include "sim/units.h"

namespace hcsim {
namespace {

struct SumRow {
  double time_us = 0, busbw = 0;
};
using SumKey = std::tuple<std::int64_t, std::int64_t, std::string, std::int64_t>;

bool load_summary(const std::string& file, std::map<SumKey, SumRow>* out, bool* have) {
  *have = false;
  TraceDb db;
  std::string why;
  if (!db.open(file, &why) || !db.has_table("summary")) return true;  // a routes file: routes only
  *have = true;
  return db.query("SELECT step, rep, kind, bytes, time_us, busbw_GBps FROM summary ORDER BY step, rep",
                  [&](const Row& r) { (*out)[{r.i(0), r.i(1), r.s(2), r.i(3)}] = SumRow{r.d(4), r.d(5)}; }, &why);
}

// How a JUnit report of hcsim diff begins (what --junit may replace without --force).
constexpr const char* kJunitHead = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hcsim diff\"";

std::string xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

int diff_main(const std::vector<std::string>& argv) {
  std::vector<std::string> files;
  std::string junit;
  double tol = 2.0;
  std::size_t max_lines = 50;
  bool force = false;
  const Args args(kDiff,
                  {{"--junit", "", "FILE", "a file name", "also write the result as JUnit XML to FILE",
                    [&](const std::string& v) { junit = v; return v.empty() ? std::string("--junit needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace FILE even if it is not a JUnit report of hcsim diff (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }},
                   {"--tolerance", "", "PCT", "a percentage", "summary figures may move this much (default 2 %)",
                    [&](const std::string& v) {
                      std::string why;
                      const auto x = sim::parse_decimal(v, &why);
                      tol = x.value_or(-1);
                      if (!x || tol > 1000) return "--tolerance needs a percentage from 0 to 1000, got \"" + v + "\"";
                      return std::string();
                    }},
                   {"-n", "", "N", "a number", "differences listed per kind (default 50)",
                    [&](const std::string& v) { return parse_count("-n", v, &max_lines); }}},
                  {"A B", "two trace databases or routes files (A is the reference, e.g. a golden file)", [&](const std::string& a) {
                     if (files.size() == 2) return std::string("diff compares two inputs, got a third: ") + a;
                     files.push_back(a);
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (files.size() != 2) return args.usage_error("diff needs two inputs (trace databases or routes files)");
  if (!junit.empty()) {
    const std::string bad = check_outputs({{"input A", files[0]}, {"input B", files[1]}},
                                          {{"--junit", junit, {kJunitHead}, "a JUnit report of hcsim diff"}}, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  std::vector<RouteLine> ra, rb;
  std::string why;
  for (const auto& f : files)  // a trace must be finished (and not corrupt) to be compared
    if (is_sqlite_file(f)) {
      TraceDb db;
      if (!db.open(f, &why) || !db.require_finished("diff", &why)) {
        std::fprintf(stderr, "hcsim: %s\n", why.c_str());
        return kBadInput;
      }
    }
  for (int k = 0; k < 2; ++k)
    if (!load_routes(files[k], false, k ? &rb : &ra, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }

  // Routes: by key; a decision that differs, one only in A (removed), one only in B (added).
  std::map<std::string, const RouteLine*> ma, mb;
  for (const auto& r : ra) ma[r.key()] = &r;
  for (const auto& r : rb) mb[r.key()] = &r;
  std::vector<std::string> moved;
  for (const auto& [k, a] : ma) {
    auto it = mb.find(k);
    if (it == mb.end()) moved.push_back("removed " + k + ": " + a->decision());
    else if (a->decision() != it->second->decision() || a->trigger != it->second->trigger)
      moved.push_back("changed " + k + ": " + a->decision() + "  ->  " + it->second->decision());
  }
  for (const auto& [k, b] : mb)
    if (!ma.count(k)) moved.push_back("added   " + k + ": " + b->decision());

  // Summary figures, when both are traces.
  std::map<SumKey, SumRow> sa, sb;
  bool ha = false, hb = false;
  if (!load_summary(files[0], &sa, &ha) || !load_summary(files[1], &sb, &hb)) {
    std::fprintf(stderr, "hcsim: cannot read the summary tables\n");
    return kBadInput;
  }
  std::vector<std::string> figures;
  if (ha && hb) {
    char b[256];
    for (const auto& [k, a] : sa) {
      auto it = sb.find(k);
      const std::string name = "step " + std::to_string(std::get<0>(k)) + " rep " + std::to_string(std::get<1>(k)) + " " +
                               std::get<2>(k) + " " + std::to_string(std::get<3>(k)) + " B";
      if (it == sb.end()) { figures.push_back("removed " + name); continue; }
      const double d = a.time_us > 0 ? 100.0 * (it->second.time_us - a.time_us) / a.time_us : 0;
      if (std::fabs(d) > tol) {
        std::snprintf(b, sizeof b, "%s: time %.3f -> %.3f us (%+.2f %%, tolerance %.2f %%)", name.c_str(), a.time_us, it->second.time_us, d, tol);
        figures.push_back(b);
      }
    }
    for (const auto& [k, b2] : sb)
      if (!sa.count(k)) figures.push_back("added step " + std::to_string(std::get<0>(k)) + " " + std::get<2>(k));
  }

  std::printf("hcsim diff: %s -> %s\n", files[0].c_str(), files[1].c_str());
  std::printf("routes: %zu vs %zu decisions, %zu moved\n", ra.size(), rb.size(), moved.size());
  for (std::size_t i = 0; i < moved.size() && i < max_lines; ++i) std::printf("  %s\n", moved[i].c_str());
  if (moved.size() > max_lines) std::printf("  ... and %zu more (-n to show more)\n", moved.size() - max_lines);
  if (ha && hb) {
    std::printf("summary: %zu vs %zu rows, %zu outside %.2f %%\n", sa.size(), sb.size(), figures.size(), tol);
    for (std::size_t i = 0; i < figures.size() && i < max_lines; ++i) std::printf("  %s\n", figures[i].c_str());
  } else {
    std::printf("summary: not compared (a routes file has none)\n");
  }
  const bool same = moved.empty() && figures.empty();
  std::printf("hcsim diff: %s\n", same ? "no differences" : "DIFFERENT");

  if (!junit.empty()) {
    const int failures = !moved.empty() + !figures.empty();
    std::string x = std::string(kJunitHead) + " tests=\"2\" failures=\"" + std::to_string(failures) + "\">\n";
    auto cas = [&](const char* name, const std::vector<std::string>& items, bool compared) {
      x += std::string("  <testcase classname=\"hcsim.diff\" name=\"") + name + "\">";
      if (!compared) x += "<skipped message=\"not compared\"/>";
      else if (!items.empty()) {
        x += "<failure message=\"" + std::to_string(items.size()) + " differences\">";
        for (const auto& s : items) x += xml(s) + "\n";
        x += "</failure>";
      }
      x += "</testcase>\n";
    };
    cas("routes", moved, true);
    cas("summary", figures, ha && hb);
    x += "</testsuite>\n";
    std::ofstream f(junit, std::ios::binary | std::ios::trunc);
    if (!f || !(f << x) || !f.flush()) { std::fprintf(stderr, "hcsim: %s: cannot write it\n", junit.c_str()); return kBadInput; }
  }
  return same ? kOk : kExpectationFailed;
}

}  // namespace

const Command kDiff = {
    "diff", "diff A B [--tolerance PCT] [--junit FILE] [--force] [-n N]",
    "        compare two runs' route decisions (traces or routes files, e.g. a golden file) and,\n"
    "        between traces, their summary times within a tolerance; exit 1 when something moved\n",
    diff_main};

}  // namespace hcsim
