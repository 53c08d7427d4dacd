// hcsim plan: capacity planning sweeps (docs/plan-format.md, docs/architecture.md#tools). A plan
// names a base topology, parameters to sweep (JSON pointers into it) and workloads; every layout
// of the sweep's cartesian product is written out, validated in this process, then each (layout,
// workload) point is simulated by a child `hcsim run` (up to -j at once, one simulation per
// process as SystemC requires) and its trace read back into one table, CSV, SQLite database and
// SVG plots, with the cheapest layout that meets the plan's target.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "sim/scenario.h"
#include "sim/topology.h"
#include "trace_db.h"

#include "plan.h"

namespace hcsim {
namespace {

using namespace plan;

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

  return report(p, layouts, points, results, out, dry, rc);
}

}  // namespace

const Command kPlan{"plan", "plan PLAN [-j N] [-o DIR] [--force] [--dry-run]",
                    "        Capacity planning: simulate every layout of a sweep (JSON pointers into a base\n"
                    "        topology) with every workload, one `hcsim run` process per point; table on stdout,\n"
                    "        DIR/plan.csv, DIR/plan.db, SVG plots, the cheapest layout meeting a target\n",
                    plan_main};

}  // namespace hcsim
