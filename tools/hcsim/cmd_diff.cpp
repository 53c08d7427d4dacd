// hcsim diff: compare two runs for CI (docs/tools.md#diff): between two traces their run status and
// provenance, failed operations, faults and failovers, summary times within a tolerance; and the
// route decisions of traces or routes files. Exit 0 nothing moved, 1 something did, 2 bad input.
// A timing golden (hcsim summary) against a trace compares their timing only. --junit FILE writes
// one test case per section, per workload step's times and per changed route aggregate.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "diff_sections.h"
#include "routes_io.h"
#include "summary_tsv.h"
#include "trace_db.h"
#include "sim/config/units.h"

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

// What a trace says about how its run went: status, provenance, operations that did not end well,
// faults and failovers. Empty (have = false) for a routes file.
struct RunFacts {
  bool have = false;
  std::string status;
  std::int64_t exit_code = 0;
  std::map<std::string, std::string> prov;
  bool have_prov = false, have_status = false, have_faults = false, have_failovers = false;
  // (rank, step, rep, kind, seq) → "status: error"
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::string, std::int64_t>, std::pair<std::string, std::string>> bad_ops;
  struct Fault { std::string type, target, actions; bool fired; std::int64_t transitions, bytes; double at, recovery; };  ///< -1: NULL
  std::map<std::int64_t, Fault> faults;
  // (detected_by, comm, op_seq, action, code) → recovery times (resumed - fault, ns; -1 never resumed)
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::string, std::int64_t>, std::vector<double>> failovers;
};

bool load_facts(const std::string& file, RunFacts* f, std::string* why) {
  TraceDb db;
  if (!is_sqlite_file(file) || !db.open(file, why)) return true;  // a routes file
  f->have = true;
  bool ok = db.query("SELECT status, exit_code FROM run WHERE id=1", [&](const Row& r) { f->status = r.s(0); f->exit_code = r.i(1); }, why);
  if (ok && (f->have_prov = db.has_table("provenance")))
    ok = db.query("SELECT key, value FROM provenance ORDER BY key", [&](const Row& r) { f->prov[r.s(0)] = r.s(1); }, why);
  if (ok && (f->have_status = db.has_column("operations", "status")))
    ok = db.query("SELECT rank, step, rep, kind, seq, status, error FROM operations WHERE status IS NOT 'ok'", [&](const Row& r) {
      f->bad_ops[{r.i(0), r.i(1), r.i(2), r.s(3), r.i(4)}] = {r.null(5) ? "unknown" : r.s(5), r.s(6)};
    }, why);
  if (ok && (f->have_faults = db.has_table("faults")))
    ok = db.query("SELECT id, type, target, actions, fired, transitions, bytes_resent, injected_at_ns, resumed_at_ns FROM faults", [&](const Row& r) {
      f->faults[r.i(0)] = {r.s(1), r.s(2), r.s(3), r.i(4) != 0, r.i(5), r.i(6), r.null(7) ? -1 : r.d(7),
                           r.null(7) || r.null(8) ? -1 : r.d(8) - r.d(7)};
    }, why);
  if (ok && (f->have_failovers = db.has_column("failovers", "resumed_at_ns")))
    ok = db.query("SELECT detected_by, comm, op_seq, action, code, fault_at_ns, detected_at_ns, resumed_at_ns FROM failovers ORDER BY id",
                  [&](const Row& r) {
      const double from = r.null(5) ? r.d(6) : r.d(5);
      f->failovers[{r.i(0), r.i(1), r.i(2), r.s(3), r.i(4)}].push_back(r.null(7) ? -1 : r.d(7) - from);
    }, why);
  return ok;
}

// A long or multi-line value (scenario_json, topology_json, command_line) as "changed at line N:
// `a` -> `b`" (the first differing line, cut to a window around the first differing character).
std::string what_changed(const std::string& a, const std::string& b) {
  auto lines = [](const std::string& s) {
    std::vector<std::string> v;
    std::size_t p = 0;
    while (p <= s.size()) {
      const std::size_t e = s.find('\n', p);
      v.push_back(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
      if (e == std::string::npos) break;
      p = e + 1;
    }
    return v;
  };
  const auto la = lines(a), lb = lines(b);
  std::size_t k = 0;
  while (k < la.size() && k < lb.size() && la[k] == lb[k]) ++k;
  const std::string x = k < la.size() ? la[k] : "(end)", y = k < lb.size() ? lb[k] : "(end)";
  std::size_t c = 0;
  while (c < x.size() && c < y.size() && x[c] == y[c]) ++c;
  auto cut = [&](const std::string& s) {
    const std::size_t from = c > 30 ? c - 30 : 0;
    std::string o = (from ? "..." : "") + s.substr(from, 70);
    if (from + 70 < s.size()) o += "...";
    return o;
  };
  return "changed at line " + std::to_string(k + 1) + (c ? ", column " + std::to_string(c + 1) : "") + ": `" + cut(x) + "` -> `" + cut(y) + "`";
}

std::string us_s(double ns) {
  if (ns < 0) return "never";
  char b[48];
  std::snprintf(b, sizeof b, "%.3f us", ns / 1e3);
  return b;
}

bool write_junit(const std::string& file, const std::string& x) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  if (!f || !(f << x) || !f.flush()) { std::fprintf(stderr, "hcsim: %s: cannot write it\n", file.c_str()); return false; }
  return true;
}

// A timing golden (hcsim summary) against a trace or another golden: their timing only.
int timing_main(const std::vector<std::string>& files, double tol, std::size_t max_lines, const std::string& junit) {
  std::vector<TimingRow> rows[2];
  std::string why;
  for (int k = 0; k < 2; ++k) {
    const std::string& f = files[k];
    if (is_timing_tsv(f)) {
      if (!read_timing_tsv(f, &rows[k], &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
      continue;
    }
    TraceDb db;
    if (!is_sqlite_file(f)) {
      std::fprintf(stderr, "hcsim: %s: a timing golden (%s) is compared with a trace or another timing golden, not with this file\n",
                   f.c_str(), files[1 - k].c_str());
      return kBadInput;
    }
    if (!db.open(f, &why) || !timing_rows(db, &rows[k], &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    for (auto& r : rows[k]) {  // as a golden holds it (--tolerance 0: a golden of the same trace passes)
      char b[64];
      std::snprintf(b, sizeof b, "%.3f", r.time_us);
      r.time_us = std::strtod(b, nullptr);
    }
  }
  const std::vector<DiffCase> cases = diff_timing(rows[0], rows[1], tol);
  std::vector<std::string> items;
  for (const auto& c : cases) items.insert(items.end(), c.items.begin(), c.items.end());
  std::printf("hcsim diff: %s -> %s\n", files[0].c_str(), files[1].c_str());
  std::printf("run, failed operations, faults: not compared (a timing golden has none)\n");
  std::printf("summary: %zu vs %zu steps (median time over repetitions), %zu differ (tolerance %.2f %%)\n", rows[0].size(),
              rows[1].size(), items.size(), tol);
  print_list(items, max_lines);
  std::printf("routes: not compared (a timing golden has none)\n");
  std::printf("hcsim diff: %s\n", items.empty() ? "no differences" : "DIFFERENT");
  if (!junit.empty()) {
    std::vector<DiffCase> all = {{"run", false, {}}, {"failed_operations", false, {}}, {"faults", false, {}}};
    if (cases.empty()) all.push_back({"summary", true, {}});
    all.insert(all.end(), cases.begin(), cases.end());
    all.push_back({"routes", false, {}});
    if (!write_junit(junit, junit_xml(all, max_lines))) return kBadInput;
  }
  return items.empty() ? kOk : kExpectationFailed;
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
                   {"-n", "", "N", "a number", "differences listed per kind, JUnit cases per aggregate kind (default 50)",
                    [&](const std::string& v) { return parse_count("-n", v, &max_lines); }}},
                  {"A B", "two trace databases, routes files or timing goldens of hcsim summary (A is the reference, e.g. a golden file)", [&](const std::string& a) {
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
  std::string why;
  for (const auto& f : files)  // a trace must be finished (and not corrupt) to be compared
    if (is_sqlite_file(f)) {
      TraceDb db;
      if (!db.open(f, &why) || !db.require_finished("diff", &why)) {
        std::fprintf(stderr, "hcsim: %s\n", why.c_str());
        return kBadInput;
      }
    }
  if (is_timing_tsv(files[0]) || is_timing_tsv(files[1])) return timing_main(files, tol, max_lines, junit);
  std::vector<RouteLine> ra, rb;
  for (int k = 0; k < 2; ++k)
    if (!load_routes(files[k], false, k ? &rb : &ra, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  const RoutesDiff routes = diff_routes(ra, rb);
  const std::vector<std::string>& moved = routes.moved;

  // Summary figures, when both are traces.
  std::map<SumKey, SumRow> sa, sb;
  bool ha = false, hb = false;
  if (!load_summary(files[0], &sa, &ha) || !load_summary(files[1], &sb, &hb)) {
    std::fprintf(stderr, "hcsim: cannot read the summary tables\n");
    return kBadInput;
  }
  // One JUnit case per (step, kind, bytes): its repetitions' differences.
  std::map<std::tuple<std::int64_t, std::string, std::int64_t>, std::vector<std::string>> groups;
  std::vector<std::string> figures;
  if (ha && hb) {
    char b[256];
    std::map<SumKey, std::pair<const SumRow*, const SumRow*>> all;
    for (const auto& [k, r] : sa) all[k].first = &r;
    for (const auto& [k, r] : sb) all[k].second = &r;
    for (const auto& [k, ab] : all) {
      const auto [x, y] = ab;
      const std::string name = "step " + std::to_string(std::get<0>(k)) + " rep " + std::to_string(std::get<1>(k)) + " " +
                               std::get<2>(k) + " " + std::to_string(std::get<3>(k)) + " B";
      auto& g = groups[{std::get<0>(k), std::get<2>(k), std::get<3>(k)}];
      const std::size_t had = g.size();
      if (!y) g.push_back("removed " + name);
      else if (!x) g.push_back("added   " + name);
      else {
        const double d = x->time_us > 0 ? 100.0 * (y->time_us - x->time_us) / x->time_us : 0;
        if (std::fabs(d) > tol) {
          std::snprintf(b, sizeof b, "%s: time %.3f -> %.3f us (%+.2f %%, tolerance %.2f %%)", name.c_str(), x->time_us, y->time_us, d, tol);
          g.push_back(b);
        }
      }
      if (g.size() > had) figures.push_back(g.back());
    }
  }

  // Run status and provenance, failed operations, faults and failovers, when both are traces.
  RunFacts fa, fb;
  if (!load_facts(files[0], &fa, &why) || !load_facts(files[1], &fb, &why)) {
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }
  const bool facts = fa.have && fb.have;
  std::vector<std::string> run_diffs, prov_lines, op_diffs, fault_diffs;
  std::string ops_head, faults_head;
  if (facts) {
    if (fa.status != fb.status || fa.exit_code != fb.exit_code)
      run_diffs.push_back("status " + (fa.status.empty() ? std::string("(none)") : fa.status) + " (exit " + std::to_string(fa.exit_code) +
                          ") -> " + (fb.status.empty() ? std::string("(none)") : fb.status) + " (exit " + std::to_string(fb.exit_code) + ")");
    if (fa.have_prov && fb.have_prov) {
      std::map<std::string, int> keys;
      for (auto& [k, v] : fa.prov) keys[k] |= 1;
      for (auto& [k, v] : fb.prov) keys[k] |= 2;
      for (auto& [k, in] : keys) {
        if (in == 1) { prov_lines.push_back(k + ": only in A"); continue; }
        if (in == 2) { prov_lines.push_back(k + ": only in B"); continue; }
        const std::string &a = fa.prov[k], &b = fb.prov[k];
        const bool long_value = (k.size() > 5 && k.compare(k.size() - 5, 5, "_json") == 0) || a.size() > 80 || b.size() > 80 || a.find('\n') != std::string::npos || b.find('\n') != std::string::npos;
        if (a == b) {
          if (long_value) prov_lines.push_back(k + ": unchanged");
        } else {
          prov_lines.push_back(k + ": " + (long_value ? what_changed(a, b) : "`" + a + "` -> `" + b + "`"));
        }
      }
    }
    if (fa.have_status && fb.have_status) {
      auto counts = [](const RunFacts& f) {
        std::map<std::string, std::size_t> c;
        for (auto& [k, v] : f.bad_ops) ++c[v.first];
        std::string o;
        for (auto& [st, n] : c) o += (o.empty() ? "" : ", ") + st + " " + std::to_string(n);
        return o.empty() ? std::string("none") : o;
      };
      auto name = [](const auto& k) {
        return "rank " + std::to_string(std::get<0>(k)) + " step " + std::to_string(std::get<1>(k)) + " rep " + std::to_string(std::get<2>(k)) +
               " " + std::get<3>(k) + " seq " + std::to_string(std::get<4>(k));
      };
      auto what = [](const std::pair<std::string, std::string>& v) { return v.first + (v.second.empty() ? "" : ": " + v.second); };
      for (auto& [k, v] : fa.bad_ops) {
        auto it = fb.bad_ops.find(k);
        if (it == fb.bad_ops.end()) op_diffs.push_back("removed " + name(k) + ": " + what(v) + " (ok in B)");
        else if (it->second != v) op_diffs.push_back("changed " + name(k) + ": " + what(v) + "  ->  " + what(it->second));
      }
      for (auto& [k, v] : fb.bad_ops)
        if (!fa.bad_ops.count(k)) op_diffs.push_back("added   " + name(k) + ": " + what(v));
      ops_head = std::to_string(fa.bad_ops.size()) + " vs " + std::to_string(fb.bad_ops.size()) + " not ok (A: " + counts(fa) + "; B: " +
                 counts(fb) + ")";
    }
    char b[320];
    auto moved_pct = [&](double x, double y) {  // recovery times (ns, -1 never): outside the tolerance?
      if (x < 0 || y < 0) return x != y;
      const double d = x > 0 ? 100.0 * (y - x) / x : (y > 0 ? INFINITY : 0);
      return std::fabs(d) > tol;
    };
    if (fa.have_faults && fb.have_faults) {
      for (auto& [id, x] : fa.faults) {
        const std::string n = "fault " + std::to_string(id) + " (" + x.type + " " + x.target + ")";
        auto it = fb.faults.find(id);
        if (it == fb.faults.end()) { fault_diffs.push_back("removed " + n); continue; }
        const auto& y = it->second;
        std::string d;
        auto add = [&](const std::string& s2) { d += (d.empty() ? "" : "; ") + s2; };
        if (x.type != y.type || x.target != y.target) add("is " + y.type + " " + y.target + " in B");
        if (x.fired != y.fired) add(std::string("fired ") + (x.fired ? "yes" : "no") + " -> " + (y.fired ? "yes" : "no"));
        if (x.transitions != y.transitions) add("transitions " + std::to_string(x.transitions) + " -> " + std::to_string(y.transitions));
        if (x.actions != y.actions) add("actions `" + x.actions + "` -> `" + y.actions + "`");
        if (x.bytes != y.bytes) add("bytes re-sent " + std::to_string(x.bytes) + " -> " + std::to_string(y.bytes));
        if (moved_pct(x.recovery, y.recovery)) {
          std::snprintf(b, sizeof b, "resumed %s -> %s after it fired (tolerance %.2f %%)", us_s(x.recovery).c_str(), us_s(y.recovery).c_str(), tol);
          add(b);
        }
        if (!d.empty()) fault_diffs.push_back("changed " + n + ": " + d);
      }
      for (auto& [id, y] : fb.faults)
        if (!fa.faults.count(id)) fault_diffs.push_back("added   fault " + std::to_string(id) + " (" + y.type + " " + y.target + ")");
    }
    std::size_t rows_a = 0, rows_b = 0;
    if (fa.have_failovers && fb.have_failovers) {
      auto name = [](const auto& k) {
        return "failover rank " + std::to_string(std::get<0>(k)) + " comm " + std::to_string(std::get<1>(k)) + " op seq " +
               std::to_string(std::get<2>(k)) + " " + std::get<3>(k) + " code " + std::to_string(std::get<4>(k));
      };
      for (auto& [k, v] : fa.failovers) rows_a += v.size();
      for (auto& [k, v] : fb.failovers) rows_b += v.size();
      for (auto& [k, x] : fa.failovers) {
        auto it = fb.failovers.find(k);
        if (it == fb.failovers.end()) { fault_diffs.push_back("removed " + name(k) + (x.size() > 1 ? " (x" + std::to_string(x.size()) + ")" : "")); continue; }
        const auto& y = it->second;
        if (x.size() != y.size()) { fault_diffs.push_back("changed " + name(k) + ": " + std::to_string(x.size()) + " -> " + std::to_string(y.size()) + " rows"); continue; }
        for (std::size_t i = 0; i < x.size(); ++i)
          if (moved_pct(x[i], y[i])) {
            std::snprintf(b, sizeof b, ": resumed %s -> %s after the fault (tolerance %.2f %%)", us_s(x[i]).c_str(), us_s(y[i]).c_str(), tol);
            fault_diffs.push_back("changed " + name(k) + b);
          }
      }
      for (auto& [k, y] : fb.failovers)
        if (!fa.failovers.count(k)) fault_diffs.push_back("added   " + name(k) + (y.size() > 1 ? " (x" + std::to_string(y.size()) + ")" : ""));
    }
    faults_head = (fa.have_faults && fb.have_faults ? std::to_string(fa.faults.size()) + " vs " + std::to_string(fb.faults.size()) + " faults"
                                                    : std::string("faults not compared (no faults table)")) +
                  ", " + (fa.have_failovers && fb.have_failovers ? std::to_string(rows_a) + " vs " + std::to_string(rows_b) + " failovers rows"
                                                                 : std::string("failovers not compared (no failovers table)"));
  }
  auto list = [&](const std::vector<std::string>& v) { print_list(v, max_lines); };

  std::printf("hcsim diff: %s -> %s\n", files[0].c_str(), files[1].c_str());
  if (facts) {
    if (run_diffs.empty()) std::printf("run: status %s in both\n", fa.status.empty() ? "(none)" : fa.status.c_str());
    else std::printf("run: %s\n", run_diffs[0].c_str());
    if (fa.have_prov && fb.have_prov && fa.prov.empty() && fb.prov.empty()) {
      std::printf("provenance: none recorded\n");
    } else if (fa.have_prov && fb.have_prov) {
      std::size_t changed = 0;
      for (auto& l : prov_lines) changed += l.find(": unchanged") == std::string::npos;
      std::printf("provenance: %zu of %zu keys differ (shown, not counted as a difference)\n", changed,
                  std::max(fa.prov.size(), fb.prov.size()));
      list(prov_lines);
    } else {
      std::printf("provenance: not compared (no provenance table)\n");
    }
    if (fa.have_status && fb.have_status) {
      std::printf("failed operations: %s, %zu differ\n", ops_head.c_str(), op_diffs.size());
      list(op_diffs);
    } else {
      std::printf("failed operations: not compared (no operations.status)\n");
    }
    std::printf("faults and failovers: %s, %zu differ\n", faults_head.c_str(), fault_diffs.size());
    list(fault_diffs);
  } else {
    std::printf("run, failed operations, faults: not compared (a routes file has none)\n");
  }
  if (ha && hb) {
    std::printf("summary: %zu vs %zu rows, %zu outside %.2f %%\n", sa.size(), sb.size(), figures.size(), tol);
    list(figures);
  } else {
    std::printf("summary: not compared (a routes file has none)\n");
  }
  std::printf("routes: %zu vs %zu decisions, %zu moved\n", ra.size(), rb.size(), moved.size());
  std::vector<std::string> lines;
  for (const auto& u : routes.uplinks) lines.push_back(u.line);
  std::printf("  uplinks used per switch (distinct uplink ports carrying a decision): %zu of %zu switches changed\n",
              routes.uplinks.size(), routes.switches);
  print_list(lines, max_lines, "    ");
  lines.clear();
  for (const auto& p : routes.ports) lines.push_back(p.line);
  std::printf("  load per switch port or link (decisions crossing it): %zu of %zu changed\n", routes.ports.size(), routes.links);
  print_list(lines, max_lines, "    ");
  std::printf("  decisions: %zu moved\n", moved.size());
  print_list(moved, max_lines, "    ");
  const bool same = moved.empty() && figures.empty() && run_diffs.empty() && op_diffs.empty() && fault_diffs.empty();
  std::printf("hcsim diff: %s\n", same ? "no differences" : "DIFFERENT");

  if (!junit.empty()) {
    std::vector<DiffCase> cases;
    cases.push_back({"run", facts, run_diffs});
    cases.push_back({"failed_operations", facts && fa.have_status && fb.have_status, op_diffs});
    cases.push_back({"faults", facts && ((fa.have_faults && fb.have_faults) || (fa.have_failovers && fb.have_failovers)), fault_diffs});
    if (!(ha && hb) || groups.empty()) cases.push_back({"summary", ha && hb, {}});
    for (const auto& [k, items] : groups)
      cases.push_back({"summary step " + std::to_string(std::get<0>(k)) + " " + std::get<1>(k) + " " + std::to_string(std::get<2>(k)) + " B",
                       true, items});
    cases.push_back({"routes", true, moved});
    // One failing case per changed aggregate, the first N of each kind; the rest in one case.
    auto aggregates = [&](const std::vector<Aggregate>& v, const std::string& kind) {
      for (std::size_t i = 0; i < v.size() && i < max_lines; ++i) cases.push_back({"routes " + kind + " " + v[i].name, true, {v[i].line}});
      if (v.size() > max_lines) {
        std::vector<std::string> rest;
        for (std::size_t i = max_lines; i < v.size(); ++i) rest.push_back(v[i].line);
        cases.push_back({"routes " + kind + " (" + std::to_string(rest.size()) + " more)", true, rest});
      }
    };
    aggregates(routes.uplinks, "uplinks");
    aggregates(routes.ports, "load");
    if (!write_junit(junit, junit_xml(cases, max_lines))) return kBadInput;
  }
  return same ? kOk : kExpectationFailed;
}

}  // namespace

const Command kDiff = {
    "diff", "diff A B [--tolerance PCT] [--junit FILE] [--force] [-n N]",
    "        compare two runs: between traces their status and provenance, failed operations,\n"
    "        faults and failovers, summary times within a tolerance; and the route decisions of\n"
    "        traces or routes files (e.g. a golden file): load per switch port and uplinks used\n"
    "        per switch, then the decisions; or a timing golden of hcsim summary against a trace;\n"
    "        exit 1 when something moved\n",
    diff_main};

}  // namespace hcsim
