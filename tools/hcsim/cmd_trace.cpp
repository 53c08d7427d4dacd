// hcsim trace: export a finished trace as Chrome / Perfetto trace-event JSON (docs/tools.md#trace).
// The document is streamed: rows go from SQLite to the file one at a time, so memory stays flat
// whatever the rank count (only the npus table is held).
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "trace_db.h"

namespace hcsim {
namespace {

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

// A number as JSON: finite, shortest round-trip-ish, deterministic.
std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

// Simulated ns → trace-event µs with ns resolution.
std::string us(double ns) {
  char b[40];
  std::snprintf(b, sizeof b, "%.3f", ns / 1e3);
  return b;
}

// How the document begins (what -o may replace without --force).
constexpr const char* kHead = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) { std::fputs(kHead, f_); }
  void event(const std::string& body) {
    if (n_++) std::fputs(",\n", f_);
    std::fputc('{', f_);
    std::fputs(body.c_str(), f_);
    std::fputc('}', f_);
  }
  void end(const std::string& other_data) {
    std::fputs("\n],\"otherData\":", f_);
    std::fputs(other_data.c_str(), f_);
    std::fputs("}\n", f_);
  }
  std::uint64_t events() const { return n_; }

 private:
  std::FILE* f_;
  std::uint64_t n_ = 0;
};

// Track ids. pid 0: the cluster (faults, failovers); pid 1 + s: server s; then links and ports
// (counters). tid of rank r's operations: r * 1024; of its stream s: r * 1024 + 1 + s.
constexpr std::int64_t kTidPerRank = 1024;

int trace_main(const std::vector<std::string>& argv) {
  std::string file, out, detail = "ops";
  std::vector<std::int64_t> rank_list;
  bool ranks_set = false, force = false;
  double from_ns = 0, to_ns = INFINITY;
  const Args args(kTrace,
                  {{"-o", "", "OUT", "a file name", "write the JSON to OUT (default: stdout)",
                    [&](const std::string& v) { out = v; return v.empty() ? std::string("-o needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace OUT even if it is not a JSON export of hcsim trace (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }},
                   {"--ranks", "", "LIST", "a rank list", "only these ranks, e.g. 0-7,12 (default: all)",
                    [&](const std::string& v) {
                      std::string why;
                      ranks_set = true;
                      return parse_rank_list(v, &rank_list, &why) ? std::string() : "--ranks: " + why;
                    }},
                   {"--from", "", "T", "a time", "only what overlaps [T, ...] (simulated; 10us, 1.5ms, 250ns)",
                    [&](const std::string& v) {
                      return parse_time_ns(v, &from_ns) ? std::string() : "--from: bad time \"" + v + "\" (e.g. 10us, 1.5ms, 250ns)";
                    }},
                   {"--to", "", "T", "a time", "only what overlaps [..., T]",
                    [&](const std::string& v) {
                      return parse_time_ns(v, &to_ns) ? std::string() : "--to: bad time \"" + v + "\" (e.g. 10us, 1.5ms, 250ns)";
                    }},
                   {"--detail", "", "ops|tasks|all", "ops, tasks or all",
                    "ops: operations per rank (default); tasks: also stream tasks; all: also counters",
                    [&](const std::string& v) {
                      detail = v;
                      return v == "ops" || v == "tasks" || v == "all" ? std::string() : "--detail must be ops, tasks or all, got \"" + v + "\"";
                    }}},
                  {"DB", "the trace database (hcsim run --db)", [&](const std::string& a) {
                     if (!file.empty()) return std::string("trace takes one trace database, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("trace needs a trace database");
  if (to_ns < from_ns) return args.usage_error("--to is before --from");
  if (!out.empty() && out != "-") {
    const std::string bad = check_outputs({{"input DB", file}}, {{"-o", out, {kHead}, "a JSON export of hcsim trace"}}, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  TraceDb db;
  std::string why;
  if (!db.open(file, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  db.print_banner();

  // Ranks: names and servers (the npus table; a damaged trace without it gets one server).
  struct Npu { std::string name; std::int64_t server = 0; };
  std::map<std::int64_t, Npu> npus;
  if (db.has_table("npus") &&
      !db.query("SELECT id, name, server FROM npus ORDER BY id", [&](const Row& r) { npus[r.i(0)] = {r.s(1), r.i(2)}; }, &why)) {
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }
  std::vector<char> want;  // rank → selected
  auto selected = [&](std::int64_t r) {
    if (!ranks_set) return true;
    return r >= 0 && static_cast<std::size_t>(r) < want.size() && want[static_cast<std::size_t>(r)];
  };
  if (ranks_set) {
    for (auto r : rank_list) {
      if (!npus.empty() && !npus.count(r)) {
        std::fprintf(stderr, "hcsim: --ranks: rank %" PRId64 " is not in %s (%zu ranks)\n", r, file.c_str(), npus.size());
        return kBadInput;
      }
      if (static_cast<std::size_t>(r) >= want.size()) want.resize(static_cast<std::size_t>(r) + 1, 0);
      want[static_cast<std::size_t>(r)] = 1;
    }
  }
  const bool tasks = detail != "ops" && db.has_table("tasks");
  const bool counters = detail == "all" && db.has_table("counter_samples");
  const bool choice_cols = db.has_column("operations", "chosen_by");

  std::FILE* f = stdout;
  if (!out.empty() && out != "-") {
    f = std::fopen(out.c_str(), "wb");
    if (!f) { std::fprintf(stderr, "hcsim: %s: cannot write: %s\n", out.c_str(), std::strerror(errno)); return kBadInput; }
  }
  static char buf[1 << 16];
  std::setvbuf(f, buf, _IOFBF, sizeof buf);
  Writer w(f);
  auto server_of = [&](std::int64_t r) {
    auto it = npus.find(r);
    return it == npus.end() ? 0 : it->second.server;
  };
  auto pid_of = [&](std::int64_t r) { return 1 + server_of(r); };
  auto meta = [&](const char* what, std::int64_t pid, std::int64_t tid, const std::string& name) {
    w.event(std::string("\"ph\":\"M\",\"name\":\"") + what + "\",\"ts\":0,\"pid\":" + std::to_string(pid) + ",\"tid\":" +
            std::to_string(tid) + ",\"args\":{\"name\":" + json_str(name) + "}");
  };
  auto sort_meta = [&](const char* what, std::int64_t pid, std::int64_t tid, std::int64_t index) {
    w.event(std::string("\"ph\":\"M\",\"name\":\"") + what + "\",\"ts\":0,\"pid\":" + std::to_string(pid) + ",\"tid\":" +
            std::to_string(tid) + ",\"args\":{\"sort_index\":" + std::to_string(index) + "}");
  };
  auto in_window = [&](double s, double e) { return e >= from_ns && s <= to_ns; };

  // Processes and threads.
  meta("process_name", 0, 0, "cluster (faults, failovers)");
  sort_meta("process_sort_index", 0, 0, -1);
  std::int64_t max_server = -1;
  {
    std::int64_t last_server = -1;
    for (auto& [r, n] : npus) {
      max_server = std::max(max_server, n.server);
      if (!selected(r)) continue;
      if (n.server != last_server) {
        const std::string srv = n.name.substr(0, n.name.find('/'));
        meta("process_name", 1 + n.server, 0, "server " + std::to_string(n.server) + " (" + srv + ")");
        sort_meta("process_sort_index", 1 + n.server, 0, n.server);
        last_server = n.server;
      }
      meta("thread_name", 1 + n.server, r * kTidPerRank, "rank " + std::to_string(r) + " " + n.name);
      sort_meta("thread_sort_index", 1 + n.server, r * kTidPerRank, r * kTidPerRank);
    }
  }
  const std::int64_t pid_links = max_server + 2, pid_ports = max_server + 3;

  // Operations: one complete event per row. One that did not end (operations.status, schema 6)
  // spans from its start to the time its failure was known: its rank's first error (a level-0
  // log line or a failovers detection of that rank) at or after its start, else its rank's next
  // operation's start, else the run's end. A row that never started is an instant at its end_ns
  // (the time of the error), or at the run's end.
  bool ok = true;
  std::uint64_t n_ops = 0, n_tasks = 0, n_samples = 0, n_instants = 0;
  const bool status_cols = db.has_column("operations", "status");
  double run_end = db.scalar("SELECT sim_end_ns FROM run WHERE id=1", 0);
  if (run_end <= 0) run_end = db.scalar("SELECT MAX(COALESCE(end_ns, start_ns)) FROM operations", 0);
  std::map<std::int64_t, std::vector<double>> err_times, op_starts;  // only ranks with an operation that did not end
  if (status_cols) {
    std::map<std::int64_t, bool> open_ranks;
    ok = db.query("SELECT DISTINCT rank FROM operations WHERE end_ns IS NULL AND start_ns IS NOT NULL",
                  [&](const Row& r) { open_ranks[r.i(0)] = true; }, &why);
    if (ok && !open_ranks.empty()) {
      auto add = [&open_ranks](std::map<std::int64_t, std::vector<double>>* m) {
        return [&open_ranks, m](const Row& r) {
          if (open_ranks.count(r.i(0))) (*m)[r.i(0)].push_back(r.d(1));
        };
      };
      if (db.has_table("logs"))
        ok = db.query("SELECT rank, sim_time_ns FROM logs WHERE level = 0 ORDER BY rank, sim_time_ns", add(&err_times), &why);
      if (ok && db.has_column("failovers", "detected_by") && db.has_column("failovers", "detected_at_ns"))
        ok = db.query("SELECT detected_by, detected_at_ns FROM failovers WHERE detected_at_ns IS NOT NULL ORDER BY detected_by, detected_at_ns",
                      add(&err_times), &why);
      ok = ok && db.query("SELECT rank, start_ns FROM operations WHERE start_ns IS NOT NULL ORDER BY rank, start_ns", add(&op_starts), &why);
      for (auto& [r, v] : err_times) std::sort(v.begin(), v.end());
    }
  }
  // The first time in `m[rank]` at or after (strictly after) `t`, or NAN.
  auto first_from = [](const std::map<std::int64_t, std::vector<double>>& m, std::int64_t rank, double t, bool strict) -> double {
    auto it = m.find(rank);
    if (it == m.end()) return NAN;
    auto p = strict ? std::upper_bound(it->second.begin(), it->second.end(), t) : std::lower_bound(it->second.begin(), it->second.end(), t);
    return p == it->second.end() ? NAN : *p;
  };
  ok = ok && db.query(std::string("SELECT id, rank, seq, kind, algorithm, bytes, step, rep, peer, start_ns, end_ns") +
                          (choice_cols ? ", chosen_by, est_us, runner_up, runner_up_est_us" : ", 0, 0, 0, 0") +
                          (status_cols ? ", status, error" : "") + " FROM operations ORDER BY rank, start_ns, id",
                      [&](const Row& r) {
                        const std::int64_t rank = r.i(1);
                        const std::string status = status_cols ? (r.null(15) ? std::string("ok") : r.s(15)) : std::string("ok");
                        std::string end_from;  // how the end of an operation that did not end was found
                        double s = 0, e = 0;
                        const bool instant = r.null(9);
                        if (instant) {  // never started: the time of its error, else the run's end
                          s = e = r.null(10) ? run_end : r.d(10);
                          end_from = r.null(10) ? "run end" : "error";
                        } else {
                          s = r.d(9);
                          e = r.null(10) ? NAN : r.d(10);
                          if (std::isnan(e)) {
                            if (!std::isnan(e = first_from(err_times, rank, s, false))) end_from = "error";
                            else if (!std::isnan(e = first_from(op_starts, rank, s, true))) end_from = "next operation";
                            else e = std::max(s, run_end), end_from = "run end";
                          }
                        }
                        if (!selected(rank) || !in_window(s, e)) return;
                        std::string b = std::string(instant ? "\"ph\":\"i\",\"s\":\"t\"" : "\"ph\":\"X\"") + ",\"cat\":\"op\",\"name\":" +
                                        json_str(status == "ok" ? r.s(3) : r.s(3) + " (" + status + ")") + ",\"ts\":" + us(s);
                        if (!instant) b += ",\"dur\":" + us(std::max(0.0, e - s));
                        if (status != "ok") b += ",\"cname\":\"terrible\"";
                        b += ",\"pid\":" + std::to_string(pid_of(rank)) + ",\"tid\":" + std::to_string(rank * kTidPerRank) +
                             ",\"args\":{\"id\":" + std::to_string(r.i(0)) + ",\"seq\":" + std::to_string(r.i(2)) +
                             ",\"algorithm\":" + json_str(r.s(4)) + ",\"bytes\":" + std::to_string(r.i(5)) +
                             ",\"step\":" + std::to_string(r.i(6)) + ",\"rep\":" + std::to_string(r.i(7)) +
                             ",\"peer\":" + std::to_string(r.i(8));
                        if (choice_cols)
                          b += ",\"chosen_by\":" + json_str(r.s(11)) + ",\"est_us\":" + json_num(r.d(12)) +
                               ",\"runner_up\":" + json_str(r.s(13)) + ",\"runner_up_est_us\":" + json_num(r.d(14));
                        if (status_cols) {
                          b += ",\"status\":" + json_str(status) + ",\"error\":" + (r.null(16) ? std::string("null") : json_str(r.s(16)));
                          if (!end_from.empty()) b += ",\"end\":" + json_str(end_from);
                        }
                        w.event(b + "}");
                        ++n_ops;
                      },
                      &why);

  // Stream tasks (the optional tasks table): one thread per (rank, stream).
  if (ok && tasks) {
    std::int64_t last_rank = -1, last_stream = -1;
    ok = db.query("SELECT rank, stream, op_seq, kind, start_ns, end_ns, bytes, peer FROM tasks ORDER BY rank, stream, start_ns, rowid",
                  [&](const Row& r) {
                    const std::int64_t rank = r.i(0), stream = r.i(1);
                    const double s = r.d(4), e = r.null(5) ? s : r.d(5);
                    if (!selected(rank) || !in_window(s, e)) return;
                    const std::int64_t tid = rank * kTidPerRank + 1 + (stream % (kTidPerRank - 1));
                    if (rank != last_rank || stream != last_stream) {
                      meta("thread_name", pid_of(rank), tid, "rank " + std::to_string(rank) + " stream " + std::to_string(stream));
                      sort_meta("thread_sort_index", pid_of(rank), tid, tid);
                      last_rank = rank;
                      last_stream = stream;
                    }
                    w.event("\"ph\":\"X\",\"cat\":\"task\",\"name\":" + json_str(r.s(3)) + ",\"ts\":" + us(s) + ",\"dur\":" +
                            us(std::max(0.0, e - s)) + ",\"pid\":" + std::to_string(pid_of(rank)) + ",\"tid\":" +
                            std::to_string(tid) + ",\"args\":{\"op_seq\":" + std::to_string(r.i(2)) + ",\"bytes\":" +
                            std::to_string(r.i(6)) + ",\"peer\":" + std::to_string(r.i(7)) + "}");
                    ++n_tasks;
                  },
                  &why);
  }

  // Counter samples (the optional counter_samples table): a counter track per object and metric;
  // a link's busy intervals (util > 0) also as slices on a thread per link.
  if (ok && counters) {
    meta("process_name", pid_links, 0, "links (counters)");
    sort_meta("process_sort_index", pid_links, 0, max_server + 1);
    meta("process_name", pid_ports, 0, "ports (counters)");
    sort_meta("process_sort_index", pid_ports, 0, max_server + 2);
    std::map<std::string, std::int64_t> link_tid;
    ok = db.query("SELECT t_ns, interval_ns, kind, object, metric, value FROM counter_samples ORDER BY kind, object, metric, t_ns, rowid",
                  [&](const Row& r) {
                    const double t0 = r.d(0), iv = r.d(1), v = r.d(5);
                    const double t = t0 + iv;  // a sample covers [t_ns, t_ns + interval_ns) (docs/trace-schema.md)
                    if (!in_window(t0, t)) return;
                    const std::string kind = r.s(2), obj = r.s(3), metric = r.s(4);
                    const std::int64_t pid = kind == "link" ? pid_links : pid_ports;
                    w.event("\"ph\":\"C\",\"name\":" + json_str(obj + " " + metric) + ",\"ts\":" + us(t0) + ",\"pid\":" +
                            std::to_string(pid) + ",\"tid\":0,\"args\":{" + json_str(metric) + ":" + json_num(v) + "}");
                    ++n_samples;
                    if (kind == "link" && metric == "util" && v > 0) {
                      auto [it, fresh] = link_tid.emplace(obj, static_cast<std::int64_t>(link_tid.size()) + 1);
                      if (fresh) meta("thread_name", pid_links, it->second, obj + " busy");
                      char u[32];
                      std::snprintf(u, sizeof u, "%.1f%%", 100 * v);
                      w.event("\"ph\":\"X\",\"cat\":\"link\",\"name\":" + json_str(std::string("busy ") + u) + ",\"ts\":" + us(t0) +
                              ",\"dur\":" + us(std::max(0.0, t - t0)) + ",\"pid\":" + std::to_string(pid_links) +
                              ",\"tid\":" + std::to_string(it->second) + ",\"args\":{\"util\":" + json_num(v) + "}");
                    }
                  },
                  &why);
  }

  // Faults and failovers: global instant events. A fired `faults` row (schema 9) is one event at
  // its injected_at_ns, every column in args, named by the log line "fault injected: ..." logged
  // then for it (that line is not exported again); the other log lines containing "fault
  // injected:" (a flap's later transitions, faults of a trace without the table) or "failover"
  // are events of their own.
  struct LogLine { double t; std::int64_t id, rank; std::string msg; bool used = false; };
  std::vector<LogLine> log_lines;
  if (ok && db.has_table("logs"))
    ok = db.query("SELECT id, sim_time_ns, rank, message FROM logs WHERE message LIKE '%fault injected:%' OR "
                  "message LIKE '%failover%' ORDER BY sim_time_ns, id",
                  [&](const Row& r) { log_lines.push_back({r.d(1), r.i(0), r.i(2), r.s(3)}); }, &why);
  std::vector<std::pair<double, std::string>> instants;  // (time, event body), in time order (stable)
  std::uint64_t unfired = 0;
  if (ok && db.has_table("faults")) {
    std::vector<std::string> cols;
    ok = db.query("SELECT name FROM pragma_table_info('faults') ORDER BY cid", [&](const Row& r) { cols.push_back(r.s(0)); }, &why);
    int c_type = -1, c_target = -1, c_fired = -1, c_at = -1;
    for (std::size_t k = 0; k < cols.size(); ++k) {
      const int i = static_cast<int>(k);
      if (cols[k] == "type") c_type = i;
      if (cols[k] == "target") c_target = i;
      if (cols[k] == "fired") c_fired = i;
      if (cols[k] == "injected_at_ns") c_at = i;
    }
    if (ok && c_fired >= 0 && c_at >= 0)
      ok = db.query("SELECT * FROM faults ORDER BY rowid", [&](const Row& r) {
        if (r.i(c_fired) == 0 || r.null(c_at)) { ++unfired; return; }
        const double t = r.d(c_at);
        std::string msg;
        for (auto& l : log_lines)
          if (!l.used && std::fabs(l.t - t) < 0.5 && l.msg.find("fault injected: ") != std::string::npos) {
            l.used = true;
            msg = l.msg;
            break;
          }
        if (!in_window(t, t)) return;
        std::string a;
        for (std::size_t k = 0; k < cols.size(); ++k) {
          const int i = static_cast<int>(k);
          a += (a.empty() ? "" : ",") + json_str(cols[k]) + ":" +
               (r.null(i) ? std::string("null") : r.number(i) ? json_num(r.d(i)) : json_str(r.s(i)));
        }
        if (!msg.empty()) a += ",\"message\":" + json_str(msg);
        const std::string what = msg.empty() ? (c_type >= 0 ? r.s(c_type) : "") + (c_target >= 0 ? " " + r.s(c_target) : "")
                                             : msg.substr(msg.find("fault injected: ") + 16);
        instants.emplace_back(t, "\"ph\":\"i\",\"s\":\"g\",\"cat\":\"fault\",\"name\":" + json_str("fault: " + what) + ",\"ts\":" + us(t) +
                                     ",\"pid\":0,\"tid\":0,\"args\":{" + a + "}");
      }, &why);
  }
  for (auto& l : log_lines) {
    if (l.used || !in_window(l.t, l.t)) continue;
    const auto k = l.msg.find("fault injected: ");
    const bool fault = k != std::string::npos;
    const std::string name = fault ? "fault: " + l.msg.substr(k + 16) : "failover";
    instants.emplace_back(l.t, "\"ph\":\"i\",\"s\":\"g\",\"cat\":\"" + std::string(fault ? "fault" : "failover") + "\",\"name\":" +
                                   json_str(name) + ",\"ts\":" + us(l.t) + ",\"pid\":0,\"tid\":0,\"args\":{\"rank\":" +
                                   std::to_string(l.rank) + ",\"message\":" + json_str(l.msg) + "}");
  }
  std::stable_sort(instants.begin(), instants.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [t, body] : instants) {
    w.event(body);
    ++n_instants;
  }
  if (ok && db.has_table("failovers")) {
    // Schema 7 (docs/trace-schema.md#failovers): every column goes into args; the time is the
    // first of detected_at_ns, t_ns, sim_time_ns, at_ns, time_ns, start_ns that exists.
    std::vector<std::string> cols;
    db.query("SELECT name FROM pragma_table_info('failovers') ORDER BY cid", [&](const Row& r) { cols.push_back(r.s(0)); }, &why);
    int tcol = -1;
    for (const char* c : {"detected_at_ns", "t_ns", "sim_time_ns", "at_ns", "time_ns", "start_ns"})
      for (std::size_t k = 0; k < cols.size() && tcol < 0; ++k)
        if (cols[k] == c) tcol = static_cast<int>(k);
    if (tcol >= 0) {
      ok = db.query("SELECT * FROM failovers ORDER BY " + std::to_string(tcol + 1) + ", rowid",
                    [&](const Row& r) {
                      const double t = r.d(tcol);
                      if (!in_window(t, t)) return;
                      std::string a;
                      for (std::size_t k = 0; k < cols.size(); ++k)
                        a += (a.empty() ? "" : ",") + json_str(cols[k]) + ":" + (r.null(static_cast<int>(k)) ? "null" : json_str(r.s(static_cast<int>(k))));
                      w.event("\"ph\":\"i\",\"s\":\"g\",\"cat\":\"failover\",\"name\":\"failover\",\"ts\":" + us(t) +
                              ",\"pid\":0,\"tid\":0,\"args\":{" + a + "}");
                      ++n_instants;
                    },
                    &why);
    }
  }
  std::string scenario;
  db.query("SELECT scenario FROM run WHERE id=1", [&](const Row& r) { scenario = r.s(0); }, &why);
  w.end("{\"generator\":\"hcsim trace\",\"trace\":" + json_str(scenario) + ",\"detail\":" + json_str(detail) +
        ",\"operations\":" + std::to_string(n_ops) + ",\"tasks\":" + std::to_string(n_tasks) + ",\"counter_samples\":" +
        std::to_string(n_samples) + ",\"instants\":" + std::to_string(n_instants) +
        ",\"faults_not_fired\":" + std::to_string(unfired) + "}");
  bool write_ok = std::fflush(f) == 0 && !std::ferror(f);
  const int write_errno = errno;
  struct stat st {};
  const bool regular = f != stdout && ::fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
  if (f != stdout && std::fclose(f) != 0) write_ok = false;
  if (!ok || !write_ok) {
    // A partial document is not left behind as if it were the export (only ever a regular file:
    // never a device or FIFO named by -o).
    if (regular) std::remove(out.c_str());
    if (!ok) std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    else std::fprintf(stderr, "hcsim: %s: cannot write: %s\n", f == stdout ? "stdout" : out.c_str(), std::strerror(write_errno ? write_errno : errno));
    return kBadInput;
  }
  if (f != stdout)
    std::fprintf(stderr, "hcsim: %s: %" PRIu64 " operations, %" PRIu64 " tasks, %" PRIu64 " counter samples, %" PRIu64 " faults/failovers\n",
                 out.c_str(), n_ops, n_tasks, n_samples, n_instants);
  return kOk;
}

}  // namespace

const Command kTrace = {
    "trace", "trace DB [-o OUT] [--force] [--ranks LIST] [--from T] [--to T] [--detail ops|tasks|all]",
    "        export a trace as Chrome / Perfetto trace-event JSON: a process per server, a track\n"
    "        per rank (operations) and per rank and stream (tasks), counters, faults\n",
    trace_main};

}  // namespace hcsim
