// hcsim summary: a finished trace's timing as a text golden (docs/tools.md#summary), one TSV row
// per workload step with the median time over its repetitions, no wall times or provenance, so
// the same run gives the same bytes; hcsim diff GOLDEN.tsv NEW.db compares a trace with it.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "summary_tsv.h"
#include "trace_db.h"

namespace hcsim {

const char* const kSummaryHeader = "# hcsim summary 1";

namespace {

constexpr const char* kColumns = "step\top\talgorithm\tbytes\treps\ttime_us\talgbw_GBps\tbusbw_GBps";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

bool timing_rows(const TraceDb& db, std::vector<TimingRow>* out, std::string* why) {
  out->clear();
  if (!db.has_table("summary")) { *why = db.path() + ": the trace has no summary table"; return false; }
  struct Acc {
    std::string op;
    std::int64_t bytes = 0;
    std::vector<double> t;
    double factor = 0;  // busbw / algbw of the step's rows (nccl-tests' bus factor)
  };
  std::map<std::int64_t, Acc> steps;
  bool mixed = false;
  std::int64_t mixed_step = 0;
  if (!db.query("SELECT step, kind, bytes, time_us, algbw_GBps, busbw_GBps FROM summary ORDER BY step, rep", [&](const Row& r) {
        Acc& a = steps[r.i(0)];
        if (!a.t.empty() && (a.op != r.s(1) || a.bytes != r.i(2)) && !mixed) { mixed = true; mixed_step = r.i(0); }
        a.op = r.s(1);
        a.bytes = r.i(2);
        a.t.push_back(r.d(3));
        if (a.factor == 0 && r.d(4) > 0) a.factor = r.d(5) / r.d(4);
      }, why))
    return false;
  if (mixed) { *why = db.path() + ": step " + std::to_string(mixed_step) + " has summary rows of two operations or sizes"; return false; }
  std::map<std::int64_t, std::set<std::string>> algos;
  if (db.has_table("operations") &&
      !db.query("SELECT DISTINCT step, algorithm FROM operations WHERE algorithm IS NOT NULL AND algorithm != ''",
                [&](const Row& r) { algos[r.i(0)].insert(r.s(1)); }, why))
    return false;
  for (const auto& [step, a] : steps) {
    TimingRow t;
    t.step = step;
    t.op = a.op;
    t.bytes = a.bytes;
    t.reps = static_cast<std::int64_t>(a.t.size());
    t.time_us = median(a.t);
    t.algbw_GBps = t.time_us > 0 ? static_cast<double>(t.bytes) / (t.time_us * 1e3) : 0;
    t.busbw_GBps = t.algbw_GBps * a.factor;
    for (const auto& s : algos[step]) t.algorithm += (t.algorithm.empty() ? "" : ",") + s;
    if (t.algorithm.empty()) t.algorithm = "-";
    out->push_back(std::move(t));
  }
  return true;
}

std::string timing_tsv(const std::vector<TimingRow>& rows) {
  std::string s = std::string(kSummaryHeader) +
                  ": one row per workload step of a finished trace (hcsim summary, docs/tools.md#summary)\n"
                  "# bytes: summary.bytes, the size as hcsim run reports it (nccl-tests' convention); reps: repetitions "
                  "with a summary row; time_us: their median summary.time_us (first rank starting to last rank finishing, "
                  "simulated; an even count: the mean of the middle two); algbw_GBps = bytes / time_us / 1000; "
                  "busbw_GBps = algbw_GBps x nccl-tests' bus factor\n" +
                  kColumns + "\n";
  for (const auto& r : rows) {
    char b[160];
    std::snprintf(b, sizeof b, "\t%lld\t%lld\t%.3f\t%.3f\t%.3f\n", static_cast<long long>(r.bytes), static_cast<long long>(r.reps),
                  r.time_us, r.algbw_GBps, r.busbw_GBps);
    s += std::to_string(r.step) + "\t" + r.op + "\t" + r.algorithm + b;
  }
  return s;
}

bool is_timing_tsv(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::string line;
  return in && std::getline(in, line) && line.compare(0, std::strlen(kSummaryHeader), kSummaryHeader) == 0;
}

bool read_timing_tsv(const std::string& file, std::vector<TimingRow>* out, std::string* why) {
  out->clear();
  std::ifstream in(file, std::ios::binary);
  if (!in) { *why = file + ": cannot read it: " + std::strerror(errno); return false; }
  std::string line;
  std::size_t ln = 0;
  bool columns = false;
  std::set<std::int64_t> seen;
  auto fail = [&](const std::string& reason) { *why = file + ":" + std::to_string(ln) + ": " + reason; return false; };
  auto integer = [](const std::string& s, std::int64_t* v) {
    if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::stoll(s);
    return true;
  };
  auto decimal = [](const std::string& s, double* v) {
    if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos || std::count(s.begin(), s.end(), '.') > 1 || s == ".")
      return false;
    *v = std::strtod(s.c_str(), nullptr);
    return std::isfinite(*v);
  };
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (ln == 1) {
      if (line.compare(0, std::strlen(kSummaryHeader), kSummaryHeader) != 0)
        return fail(std::string("not a timing golden (the first line is not \"") + kSummaryHeader + "...\")");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (!columns) {
      if (line != kColumns) return fail("expected the column line \"" + std::string(kColumns) + "\" (tab-separated)");
      columns = true;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) f.push_back(cell);
    if (f.size() != 8) return fail("expected 8 tab-separated fields (" + std::string(kColumns) + "), got " + std::to_string(f.size()));
    TimingRow r;
    r.op = f[1];
    r.algorithm = f[2];
    if (!integer(f[0], &r.step)) return fail("step: expected a whole number, got \"" + f[0] + "\"");
    if (r.op.empty()) return fail("op: empty");
    if (r.algorithm.empty()) return fail("algorithm: empty (\"-\" for none)");
    if (!integer(f[3], &r.bytes)) return fail("bytes: expected a whole number, got \"" + f[3] + "\"");
    if (!integer(f[4], &r.reps) || r.reps < 1) return fail("reps: expected a whole number from 1, got \"" + f[4] + "\"");
    if (!decimal(f[5], &r.time_us)) return fail("time_us: expected a decimal number, got \"" + f[5] + "\"");
    if (!decimal(f[6], &r.algbw_GBps)) return fail("algbw_GBps: expected a decimal number, got \"" + f[6] + "\"");
    if (!decimal(f[7], &r.busbw_GBps)) return fail("busbw_GBps: expected a decimal number, got \"" + f[7] + "\"");
    if (!seen.insert(r.step).second) return fail("step " + f[0] + " appears twice");
    out->push_back(std::move(r));
  }
  if (ln == 0) { *why = file + ": an empty file, not a timing golden"; return false; }
  if (!columns) { ++ln; return fail("no column line \"" + std::string(kColumns) + "\""); }
  std::sort(out->begin(), out->end(), [](const TimingRow& a, const TimingRow& b) { return a.step < b.step; });
  return true;
}

namespace {

int summary_main(const std::vector<std::string>& argv) {
  std::string file, out;
  bool force = false;
  const Args args(kSummary,
                  {{"--output", "-o", "FILE", "a file name", "write to FILE instead of standard output",
                    [&](const std::string& v) { out = v; return v.empty() ? std::string("--output needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace FILE even if it is not a timing golden (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }}},
                  {"DB", "a finished trace database", [&](const std::string& a) {
                     if (!file.empty()) return std::string("summary takes one trace, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("summary needs a trace database");
  if (!out.empty()) {
    const std::string bad = check_outputs({{"the trace", file}}, {{"-o", out, {kSummaryHeader}, "a timing golden of hcsim summary"}}, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  TraceDb db;
  std::string why;
  std::vector<TimingRow> rows;
  if (!db.open(file, &why) || !db.require_finished("summary", &why) || !timing_rows(db, &rows, &why)) {
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }
  const std::string text = timing_tsv(rows);
  if (out.empty()) { std::fwrite(text.data(), 1, text.size(), stdout); return kOk; }
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) { std::fprintf(stderr, "hcsim: %s: cannot write it\n", out.c_str()); return kBadInput; }
  return kOk;
}

}  // namespace

const Command kSummary = {
    "summary", "summary DB [-o FILE] [--force]",
    "        a finished trace's timing as a text golden: one tab-separated row per workload step\n"
    "        (op, algorithm, bytes, repetitions, median time, algbw, busbw) for hcsim diff\n",
    summary_main};

}  // namespace hcsim
