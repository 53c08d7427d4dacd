// hcsim plan: capacity planning sweeps (docs/plan-format.md, docs/architecture.md#tools). A plan
// names a base topology, parameters to sweep (JSON pointers into it) and workloads; every layout
// of the sweep's cartesian product is written out, validated in this process, then each (layout,
// workload) point is simulated by a child `hcsim run` (up to -j at once, one simulation per
// process as SystemC requires) and its trace read back into one table, CSV, SQLite database and
// SVG plots, with the cheapest layout that meets the plan's target.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "sim/scenario.h"
#include "sim/topology.h"
#include "sim/units.h"
#include "svg_plot.h"
#include "trace_db.h"

namespace hcsim {
namespace {

using sim::json;

struct Sweep {
  std::string pointer, name;
  std::vector<json> values;
};

struct Workload {
  std::string op, algo = "auto", fidelity, dtype;
  std::vector<std::uint64_t> sizes;
  std::uint64_t repeat = 1;
};

struct Prices {
  bool given = false;
  double server = 0, sw = 0, cable = 0;
  std::string currency;
};

struct Target {
  bool given = false;
  std::string op;
  std::uint64_t bytes = 0;
  double max_time_us = 0, min_busbw = 0;  // 0: not stated
};

struct Plan {
  std::string file, dir, name, topology_path, fidelity = "flow", payload = "timing";
  json base;
  std::vector<Sweep> sweeps;
  std::vector<Workload> workloads;
  std::map<std::string, std::string> env;
  Prices prices;
  Target target;
};

struct Layout {
  std::vector<json> values;  // one per sweep
  std::string label;         // "servers=64 oversub=1:1"
  std::size_t servers = 0, npus = 0, switches = 0, cables = 0;
  double cost = 0;
};

struct Result {
  std::size_t layout = 0, workload = 0;
  std::uint64_t bytes = 0;
  std::string algorithm, status = "not run";
  double time_us = NAN, algbw = NAN, busbw = NAN, wall_s = NAN, peak_mib = NAN;
};

constexpr const char* kOps[] = {"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "barrier"};
constexpr std::size_t kMaxLayouts = 10000;
constexpr const char* kMarker = ".hcsim-plan";

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string dir_of(const std::string& f) {
  auto k = f.find_last_of('/');
  return k == std::string::npos ? "" : f.substr(0, k + 1);
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[4096];
  if (!getcwd(buf, sizeof buf)) return p;
  return std::string(buf) + "/" + p;
}

bool load_plan(const std::string& path, Plan& p, sim::Diagnostics& d) {
  p.file = path;
  p.dir = dir_of(path);
  auto j = sim::read_json_file(path, d);
  if (!j) return false;
  sim::ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "sweep", "workloads", "fidelity",
                                    "payload", "hcomm_env", "prices", "target"});
  if (!top.valid()) return false;
  if (auto f = top.str("format", true); f && *f != "hcsim-plan") d.error("/format", "is \"" + *f + "\", expected \"hcsim-plan\"");
  top.uint("version", true, 1, 1);
  p.name = top.str("name", true).value_or("");
  for (char& c : p.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  top.str("description", false);
  if (auto f = top.str("fidelity", false)) {
    if (*f != "chunk" && *f != "packet" && *f != "flow") d.error("/fidelity", "unknown tier \"" + *f + "\" (chunk, packet, flow)");
    p.fidelity = *f;
  }
  if (auto f = top.str("payload", false)) {
    if (*f != "timing" && *f != "real") d.error("/payload", "unknown payload \"" + *f + "\" (timing, real)");
    p.payload = *f;
  }
  if (const json* e = top.get("hcomm_env", false)) {
    if (!e->is_object()) d.error("/hcomm_env", "must be an object of HCOMM_* names to strings");
    else
      for (auto& [k, v] : e->items()) {
        if (!v.is_string()) d.error("/hcomm_env/" + k, "must be a string");
        else p.env[k] = v.get<std::string>();
      }
  }
  // The base topology, relative to the plan file.
  if (auto t = top.str("topology", true)) {
    p.topology_path = (!t->empty() && (*t)[0] == '/') ? *t : p.dir + *t;
    sim::Diagnostics td(p.topology_path);
    auto tj = sim::read_json_file(p.topology_path, td);
    if (!tj) {
      for (auto& m : td.messages()) d.error("/topology", m);
    } else if (std::string why = sim::wrong_kind(*tj, "topology"); !why.empty()) {
      d.error("/topology", p.topology_path + " " + why);
    } else {
      p.base = std::move(*tj);
    }
  }
  if (const json* s = top.get("sweep", false)) {
    if (!s->is_array()) d.error("/sweep", "must be an array of {pointer, values, name}");
    else
      for (std::size_t i = 0; i < s->size(); ++i) {
        const std::string ptr = "/sweep/" + std::to_string(i);
        sim::ObjectReader r((*s)[i], ptr, d, {"pointer", "values", "name"});
        if (!r.valid()) continue;
        Sweep w;
        w.pointer = r.str("pointer", true).value_or("");
        if (!w.pointer.empty()) {
          try {
            json::json_pointer jp(w.pointer);
            if (!p.base.is_null() && !p.base.contains(jp))
              d.error(ptr + "/pointer", "\"" + w.pointer + "\" names nothing in " + p.topology_path);
          } catch (const std::exception&) {
            d.error(ptr + "/pointer", "\"" + w.pointer + "\" is not a JSON pointer (\"/fabric/oversubscription\")");
          }
        }
        w.name = r.str("name", false).value_or(w.pointer.substr(w.pointer.find_last_of('/') + 1));
        const json* v = r.get("values", true);
        if (v && (!v->is_array() || v->empty())) d.error(ptr + "/values", "must be a non-empty array");
        else if (v)
          for (auto& x : *v) w.values.push_back(x);
        p.sweeps.push_back(std::move(w));
      }
  }
  const json* wl = top.get("workloads", true);
  if (wl && (!wl->is_array() || wl->empty())) d.error("/workloads", "must be a non-empty array");
  else if (wl)
    for (std::size_t i = 0; i < wl->size(); ++i) {
      const std::string ptr = "/workloads/" + std::to_string(i);
      sim::ObjectReader r((*wl)[i], ptr, d, {"op", "sizes", "algo", "fidelity", "dtype", "repeat"});
      if (!r.valid()) continue;
      Workload w;
      w.op = r.str("op", true).value_or("");
      if (!w.op.empty() && std::find_if(std::begin(kOps), std::end(kOps), [&](const char* o) { return w.op == o; }) == std::end(kOps))
        d.error(ptr + "/op", "unknown op \"" + w.op + "\" (allreduce, allgather, reducescatter, broadcast, alltoall, barrier)");
      w.algo = r.str("algo", false).value_or("auto");
      if (w.algo.empty()) d.error(ptr + "/algo", "is empty (\"auto\", or an HCOMM_ALGO value such as \"level1:ring\")");
      w.fidelity = r.str("fidelity", false).value_or(p.fidelity);
      if (w.fidelity != "chunk" && w.fidelity != "packet" && w.fidelity != "flow")
        d.error(ptr + "/fidelity", "unknown tier \"" + w.fidelity + "\" (chunk, packet, flow)");
      w.dtype = r.str("dtype", false).value_or("");
      w.repeat = r.uint("repeat", false, 1, 1000).value_or(1);
      const json* sz = r.get("sizes", w.op != "barrier");
      if (sz && (!sz->is_array() || sz->empty())) d.error(ptr + "/sizes", "must be a non-empty array of sizes (\"1MiB\")");
      else if (sz)
        for (std::size_t k = 0; k < sz->size(); ++k) {
          const json& x = (*sz)[k];
          std::string why;
          std::optional<std::uint64_t> b;
          if (x.is_number_unsigned()) b = x.get<std::uint64_t>();
          else if (x.is_string()) b = sim::parse_size(x.get<std::string>(), &why);
          else why = "must be a size (\"64MiB\" or a number of bytes)";
          if (!b) d.error(ptr + "/sizes/" + std::to_string(k), why);
          else w.sizes.push_back(*b);
        }
      if (w.op == "barrier" && w.sizes.empty()) w.sizes.push_back(0);
      p.workloads.push_back(std::move(w));
    }
  if (const json* pr = top.get("prices", false)) {
    sim::ObjectReader r(*pr, "/prices", d, {"server", "switch", "cable", "currency"});
    if (r.valid()) {
      p.prices.given = true;
      p.prices.server = r.number("server", false, 0, 1e15).value_or(0);
      p.prices.sw = r.number("switch", false, 0, 1e15).value_or(0);
      p.prices.cable = r.number("cable", false, 0, 1e15).value_or(0);
      p.prices.currency = r.str("currency", false).value_or("");
    }
  }
  if (const json* tg = top.get("target", false)) {
    sim::ObjectReader r(*tg, "/target", d, {"op", "bytes", "max_time_us", "min_busbw_GBps"});
    if (r.valid()) {
      Target& t = p.target;
      t.given = true;
      t.op = r.str("op", true).value_or("");
      t.bytes = r.size("bytes", t.op != "barrier").value_or(0);
      t.max_time_us = r.number("max_time_us", false, 0, 1e15).value_or(0);
      t.min_busbw = r.number("min_busbw_GBps", false, 0, 1e9).value_or(0);
      if (t.max_time_us <= 0 && t.min_busbw <= 0) d.error("/target", "states neither max_time_us nor min_busbw_GBps");
      bool found = false;
      for (auto& w : p.workloads)
        if (w.op == t.op && std::find(w.sizes.begin(), w.sizes.end(), t.bytes) != w.sizes.end()) found = true;
      if (!t.op.empty() && !found)
        d.error("/target", "no workload runs " + t.op + " at " + sim::format_bytes(t.bytes) + ": add it to /workloads");
    }
  }
  std::size_t n = 1;
  for (auto& s : p.sweeps) {
    n *= std::max<std::size_t>(1, s.values.size());
    if (n > kMaxLayouts) {
      d.error("/sweep", "more than " + std::to_string(kMaxLayouts) + " layouts");
      break;
    }
  }
  return d.ok();
}

bool ends_with_count(const std::string& ptr) {
  return ptr.size() >= 6 && ptr.compare(ptr.size() - 6, 6, "/count") == 0;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string fmt(double v, int prec) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

bool write_file(const std::string& path, const std::string& text, std::string* why) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) { *why = path + ": cannot write: " + std::strerror(errno); return false; }
  return true;
}

/// Reads the per-step means of a point's trace.
void read_trace(const std::string& db_path, const Workload& w, std::vector<Result>& rows, std::string* why) {
  TraceDb db;
  if (!db.open(db_path, why)) return;
  std::map<std::int64_t, std::pair<std::string, std::int64_t>> algo;  // step -> most named algorithm
  db.query("SELECT step, algorithm, COUNT(*) AS n FROM operations GROUP BY step, algorithm ORDER BY step, n DESC, algorithm",
           [&](const Row& r) { algo.emplace(r.i(0), std::make_pair(r.s(1), r.i(2))); }, why);
  std::map<std::int64_t, std::array<double, 4>> acc;  // step -> time, algbw, busbw, count
  db.query("SELECT step, time_us, algbw_GBps, busbw_GBps FROM summary ORDER BY step, rep", [&](const Row& r) {
    auto& a = acc[r.i(0)];
    a[0] += r.d(1);
    a[1] += r.d(2);
    a[2] += r.d(3);
    a[3] += 1;
  }, why);
  for (std::size_t k = 0; k < rows.size() && k < w.sizes.size(); ++k) {
    auto it = acc.find(static_cast<std::int64_t>(k));
    if (it == acc.end() || it->second[3] == 0) continue;
    rows[k].time_us = it->second[0] / it->second[3];
    rows[k].algbw = it->second[1] / it->second[3];
    rows[k].busbw = it->second[2] / it->second[3];
    if (auto a = algo.find(static_cast<std::int64_t>(k)); a != algo.end()) rows[k].algorithm = a->second.first;
  }
}

std::string last_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

int plan_main(const std::vector<std::string>& argv) {
  std::string file, out;
  unsigned jobs = 1;
  bool force = false, dry = false;
  const Args args(
      kPlan,
      {{"-j", "--jobs", "N", "a number", "simulate up to N points at once, one process each (default 1)",
        [&](const std::string& v) {
          char* end = nullptr;
          const unsigned long n = std::strtoul(v.c_str(), &end, 10);
          if (v.empty() || *end || n < 1 || n > 256) return std::string("-j needs a number from 1 to 256, got \"" + v + "\"");
          jobs = static_cast<unsigned>(n);
          return std::string();
        }},
       {"-o", "", "DIR", "a directory", "write layouts, scenarios, traces and results to DIR (default ./NAME.plan)",
        [&](const std::string& v) { out = v; return v.empty() ? std::string("-o needs a directory") : std::string(); }},
       {"--force", "", "", "", "use an existing DIR that an earlier hcsim plan did not create",
        [&](const std::string&) { force = true; return std::string(); }},
       {"--dry-run", "-n", "", "", "validate and list the points without simulating them",
        [&](const std::string&) { dry = true; return std::string(); }}},
      {"PLAN", "the plan file (docs/plan-format.md)", [&](const std::string& a) {
         if (!file.empty()) return std::string("plan takes one plan file, got a second: ") + a;
         file = a;
         return std::string();
       }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("plan needs a plan file");

  Plan p;
  sim::Diagnostics d(file);
  if (!load_plan(file, p, d)) {
    for (auto& m : d.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return kBadInput;
  }
  if (out.empty()) out = p.name + ".plan";
  // The output directory: created, or one an earlier plan made (its marker file), or --force.
  struct stat st {};
  if (stat(out.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) { std::fprintf(stderr, "hcsim: %s: exists and is not a directory\n", out.c_str()); return kBadInput; }
    if (access((out + "/" + kMarker).c_str(), F_OK) != 0 && !force) {
      std::fprintf(stderr, "hcsim: %s: exists and was not made by hcsim plan (no %s in it); use --force to write into it\n",
                   out.c_str(), kMarker);
      return kBadInput;
    }
  } else if (mkdir(out.c_str(), 0777) != 0) {
    std::fprintf(stderr, "hcsim: %s: cannot create: %s\n", out.c_str(), std::strerror(errno));
    return kBadInput;
  }
  std::string why;
  if (!write_file(out + "/" + kMarker, "hcsim plan " + absolute(file) + "\n", &why)) {
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }

  // Layouts: the cartesian product of the sweeps, the first sweep outermost.
  std::vector<Layout> layouts(1);
  for (const auto& s : p.sweeps) {
    std::vector<Layout> next;
    for (const auto& l : layouts)
      for (const auto& v : s.values) {
        Layout m = l;
        m.values.push_back(v);
        m.label += (m.label.empty() ? "" : " ") + s.name + "=" + value_text(v);
        next.push_back(std::move(m));
      }
    layouts = std::move(next);
  }
  bool bad = false;
  for (std::size_t li = 0; li < layouts.size(); ++li) {
    Layout& L = layouts[li];
    if (L.label.empty()) L.label = "base";
    json t = p.base;
    for (std::size_t k = 0; k < p.sweeps.size(); ++k) t[json::json_pointer(p.sweeps[k].pointer)] = L.values[k];
    t["name"] = p.name + "-layout" + std::to_string(li);
    if (t.contains("rank_table") && t["rank_table"].is_string()) {
      std::string rt = t["rank_table"].get<std::string>();
      if (!rt.empty() && rt[0] != '/') t["rank_table"] = absolute(dir_of(p.topology_path) + rt);
    }
    const std::string tpath = out + "/layout" + std::to_string(li) + ".topology.json";
    if (!write_file(tpath, t.dump(2) + "\n", &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    sim::Diagnostics td(tpath);
    auto topo = sim::topology_from_json(t, td, dir_of(p.topology_path));
    if (!topo) {
      for (auto& m : td.messages())
        std::fprintf(stderr, "%s: layout %zu (%s): %s\n", file.c_str(), li, L.label.c_str(), m.c_str());
      bad = true;
      continue;
    }
    L.servers = topo->servers.size();
    L.npus = topo->npus.size();
    for (auto& s : topo->switches) L.switches += s.tier >= 1;
    for (auto& l : topo->links) L.cables += l.type == sim::LinkType::Roce;
    L.cost = p.prices.server * L.servers + p.prices.sw * L.switches + p.prices.cable * L.cables;
    for (std::size_t wi = 0; wi < p.workloads.size(); ++wi) {
      const Workload& w = p.workloads[wi];
      json sc = {{"format", "hcsim-scenario"}, {"version", 1}, {"name", p.name + "-l" + std::to_string(li) + "-w" + std::to_string(wi)},
                 {"topology", "layout" + std::to_string(li) + ".topology.json"}, {"fidelity", w.fidelity}, {"payload", p.payload}};
      json steps = json::array();
      for (auto b : w.sizes) {
        json s = {{"op", w.op}, {"repeat", w.repeat}};
        if (w.op != "barrier") s["bytes"] = std::to_string(b) + "B";
        if (!w.dtype.empty()) s["dtype"] = w.dtype;
        steps.push_back(s);
      }
      sc["workload"] = steps;
      json env = json::object();
      for (auto& [k, v] : p.env) env[k] = v;
      if (w.algo != "auto") env["HCOMM_ALGO"] = w.algo;
      if (!env.empty()) sc["hcomm_env"] = env;
      const std::string spath = out + "/l" + std::to_string(li) + "-w" + std::to_string(wi) + ".scenario.json";
      if (!write_file(spath, sc.dump(2) + "\n", &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
      // Validate one scenario per workload (the layout's topology was checked above).
      if (li == 0) {
        std::vector<std::string> errs;
        if (!sim::load_scenario(spath, &errs)) {
          for (auto& e : errs) std::fprintf(stderr, "%s: /workloads/%zu: %s\n", file.c_str(), wi, e.c_str());
          bad = true;
        }
      }
    }
  }
  if (bad) return kBadInput;

  // Points: (layout, workload), each a child `hcsim run`.
  struct Point {
    std::size_t layout, workload;
    std::string scen, db, log;
    pid_t pid = 0;
    std::chrono::steady_clock::time_point start;
  };
  std::vector<Point> points;
  for (std::size_t li = 0; li < layouts.size(); ++li)
    for (std::size_t wi = 0; wi < p.workloads.size(); ++wi) {
      const std::string stem = out + "/l" + std::to_string(li) + "-w" + std::to_string(wi);
      points.push_back({li, wi, stem + ".scenario.json", stem + ".hcsim.db", stem + ".log", 0, {}});
    }
  std::vector<std::vector<Result>> results(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Workload& w = p.workloads[points[i].workload];
    for (auto b : w.sizes) {
      Result r;
      r.layout = points[i].layout;
      r.workload = points[i].workload;
      r.bytes = b;
      results[i].push_back(r);
    }
  }
  std::fprintf(stderr, "hcsim plan: %s: %zu layouts x %zu workloads = %zu runs, -j %u, results in %s/\n", file.c_str(),
               layouts.size(), p.workloads.size(), points.size(), jobs, out.c_str());
  int rc = kOk;
  if (!dry) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { std::fprintf(stderr, "hcsim: cannot find its own executable\n"); return kBadInput; }
    self[n] = 0;
    std::size_t next = 0, running = 0, done = 0;
    std::map<pid_t, std::size_t> by_pid;
    while (done < points.size()) {
      while (running < jobs && next < points.size()) {
        Point& pt = points[next];
        std::fflush(nullptr);
        const pid_t pid = fork();
        if (pid < 0) { std::fprintf(stderr, "hcsim: fork: %s\n", std::strerror(errno)); return kBadInput; }
        if (pid == 0) {
          const int fd = open(pt.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
          if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
          execl(self, "hcsim", "run", pt.scen.c_str(), "--db", pt.db.c_str(), "-q", static_cast<char*>(nullptr));
          std::fprintf(stderr, "hcsim: exec %s: %s\n", self, std::strerror(errno));
          _exit(2);
        }
        pt.pid = pid;
        pt.start = std::chrono::steady_clock::now();
        by_pid[pid] = next++;
        ++running;
      }
      int status = 0;
      struct rusage ru {};
      const pid_t pid = wait4(-1, &status, 0, &ru);
      if (pid < 0) {
        if (errno == EINTR) continue;
        std::fprintf(stderr, "hcsim: wait: %s\n", std::strerror(errno));
        return kBadInput;
      }
      auto it = by_pid.find(pid);
      if (it == by_pid.end()) continue;
      const std::size_t i = it->second;
      by_pid.erase(it);
      --running;
      ++done;
      Point& pt = points[i];
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - pt.start).count();
      std::string status_text;
      if (WIFEXITED(status)) {
        const int code = WEXITSTATUS(status);
        status_text = code == 0 ? "ok" : code == 1 ? "expectation failed" : "error: " + last_line(pt.log);
        if (code == 0 || code == 1) read_trace(pt.db, p.workloads[pt.workload], results[i], &why);
        if (code != 0) rc = std::max(rc, code == 1 ? int(kExpectationFailed) : int(kBadInput));
      } else {
        status_text = "killed by signal " + std::to_string(WTERMSIG(status));
        rc = kBadInput;
      }
      for (auto& r : results[i]) {
        r.status = status_text;
        r.wall_s = wall;
        r.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
      }
      std::fprintf(stderr, "hcsim plan: [%zu/%zu] layout %zu (%s) %s: %s, %.1f s, %.0f MiB\n", done, points.size(), pt.layout,
                   layouts[pt.layout].label.c_str(), p.workloads[pt.workload].op.c_str(), status_text.c_str(), wall,
                   static_cast<double>(ru.ru_maxrss) / 1024.0);
    }
  }

  // The table (stdout), CSV and SQLite, in layout, workload, size order.
  std::string csv = "layout";
  for (auto& s : p.sweeps) csv += "," + csv_escape("sweep." + s.name);
  csv += ",servers,npus,switches,cables,cost,op,algo_requested,fidelity,bytes,algorithm,time_us,algbw_GBps,busbw_GBps,wall_s,peak_MiB,status\n";
  std::printf("%-6s %-28s %6s %-13s %10s %-12s %12s %10s %10s %8s %9s %s\n", "layout", "parameters", "npus", "op", "size",
              "algorithm", "time(us)", "algbw", "busbw", "wall(s)", "peak(MiB)", "status");
  std::vector<const Result*> flat;
  for (auto& rs : results)
    for (auto& r : rs) flat.push_back(&r);
  for (const Result* r : flat) {
    const Layout& L = layouts[r->layout];
    const Workload& w = p.workloads[r->workload];
    std::printf("%-6zu %-28s %6zu %-13s %10s %-12s %12s %10s %10s %8s %9s %s\n", r->layout, L.label.c_str(), L.npus, w.op.c_str(),
                w.op == "barrier" ? "-" : sim::format_bytes(r->bytes).c_str(), r->algorithm.empty() ? "-" : r->algorithm.c_str(),
                fmt(r->time_us, 3).c_str(), fmt(r->algbw, 2).c_str(), fmt(r->busbw, 2).c_str(), fmt(r->wall_s, 1).c_str(),
                fmt(r->peak_mib, 0).c_str(), r->status.c_str());
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
    ok = ok && exec_bind("INSERT INTO meta VALUES('generator','hcsim plan'),('plan',?),('name',?)", {absolute(file), p.name});
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
      std::printf("\ntarget %s: cheapest layout %zu (%s): %s us, %s GB/s busbw with %s%s; %zu of %zu layouts meet it\n",
                  what.c_str(), r->layout, L->label.c_str(), fmt(r->time_us, 1).c_str(), fmt(r->busbw, 1).c_str(),
                  (r->algorithm.empty() ? w.algo : r->algorithm).c_str(),
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
  return rc;
}

}  // namespace

const Command kPlan{"plan", "plan PLAN [-j N] [-o DIR] [--force] [--dry-run]",
                    "        Capacity planning: simulate every layout of a sweep (JSON pointers into a base\n"
                    "        topology) with every workload, one `hcsim run` process per point; table on stdout,\n"
                    "        DIR/plan.csv, DIR/plan.db, SVG plots, the cheapest layout meeting a target\n",
                    plan_main};

}  // namespace hcsim
