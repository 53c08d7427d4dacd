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
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "sim/scenario.h"
#include "sim/topology.h"
#include "trace_db.h"

#ifdef HCSIM_WITH_MPI
#include <mpi.h>
#endif

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


// Load the plan, make DIR and write every layout's topology and every point's scenario into it,
// validating them; `write` false (an MPI rank that shares rank 0's DIR) only computes the layouts.
int setup(const std::string& file, std::string& out, bool force, bool write, Plan& p, std::vector<Layout>& layouts) {
  sim::Diagnostics d(file);
  if (!load_plan(file, p, d)) {
    for (auto& m : d.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return kBadInput;
  }
  if (out.empty()) out = p.name + ".plan";
  std::string why;
  if (write) {
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
    if (!write_file(out + "/" + kMarker, "hcsim plan " + absolute(file) + "\n", &why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      return kBadInput;
    }
  }

  // Layouts: the cartesian product of the sweeps, the first sweep outermost.
  layouts.assign(1, Layout{});
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
    if (!write) continue;  // an MPI rank sharing rank 0's DIR: the files are there
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
  return kOk;
}

// One finished point as the rank that ran it reports it: the child's exit code and its rows
// (status, numbers from its trace, wall time and peak memory). Under MPI this travels to rank 0
// as JSON (doubles round-trip exactly; NaN as null), so rank 0 never reads another machine's files.
struct Finished {
  std::size_t index = 0;
  int code = 0;  // kOk, kExpectationFailed or kBadInput
  std::vector<Result> rows;
};

json to_json(const Finished& f) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json rows = json::array();
  for (auto& r : f.rows)
    rows.push_back({r.status, r.algorithm, num(r.time_us), num(r.algbw), num(r.busbw), num(r.wall_s), num(r.peak_mib)});
  return {{"i", f.index}, {"code", f.code}, {"rows", rows}};
}

bool from_json(const std::string& text, const std::vector<std::vector<Result>>& results, Finished& f) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("i") || !j["i"].is_number_unsigned()) return false;
  f.index = j["i"].get<std::size_t>();
  if (f.index >= results.size() || !j["rows"].is_array() || j["rows"].size() != results[f.index].size()) return false;
  f.code = j.value("code", int(kBadInput));
  f.rows = results[f.index];
  auto num = [](const json& v) { return v.is_number() ? v.get<double>() : NAN; };
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const json& r = j["rows"][k];
    if (!r.is_array() || r.size() != 7 || !r[0].is_string() || !r[1].is_string()) return false;
    Result& o = f.rows[k];
    o.status = r[0].get<std::string>();
    o.algorithm = r[1].get<std::string>();
    o.time_us = num(r[2]);
    o.algbw = num(r[3]);
    o.busbw = num(r[4]);
    o.wall_s = num(r[5]);
    o.peak_mib = num(r[6]);
  }
  return true;
}

// Up to -j child `hcsim run` processes on this machine. The child's environment is this one's
// without Open MPI's and PMIx's variables (OMPI_*, PMIX_*, PMI_*), built before fork so the child
// only calls async-signal-safe functions before exec (docs/plan-format.md#mpi).
class Children {
 public:
  Children(const Plan& p, std::vector<Point>& points, const std::vector<std::vector<Result>>& results)
      : p_(p), points_(points), results_(results) {
    for (char** e = environ; *e; ++e) {
      const std::string v = *e;
      if (v.rfind("OMPI_", 0) == 0 || v.rfind("PMIX_", 0) == 0 || v.rfind("PMI_", 0) == 0) continue;
      env_.push_back(v);
    }
    for (auto& v : env_) envp_.push_back(const_cast<char*>(v.c_str()));
    envp_.push_back(nullptr);
  }
  bool find_self(std::string* why) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { *why = "cannot find its own executable"; return false; }
    self_.assign(self, static_cast<std::size_t>(n));
    return true;
  }
  std::size_t running() const { return by_pid_.size(); }

  bool spawn(std::size_t i, std::string* why) {
    Point& pt = points_[i];
    const char* argv[] = {"hcsim", "run", pt.scen.c_str(), "--db", pt.db.c_str(), "-q", nullptr};
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) { *why = std::string("fork: ") + std::strerror(errno); return false; }
    if (pid == 0) {
      const int fd = open(pt.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
      if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
      execve(self_.c_str(), const_cast<char* const*>(argv), envp_.data());
      const char msg[] = "hcsim: exec of its own executable failed\n";
      (void)!write(2, msg, sizeof msg - 1);
      _exit(2);
    }
    pt.pid = pid;
    pt.start = std::chrono::steady_clock::now();
    by_pid_[pid] = i;
    return true;
  }

  /// Reap one finished child (waiting for one when `block`); false when none finished (or none runs).
  bool reap(bool block, Finished& f, std::string* why) {
    while (!by_pid_.empty()) {
      int status = 0;
      struct rusage ru {};
      const pid_t pid = wait4(-1, &status, block ? 0 : WNOHANG, &ru);
      if (pid == 0) return false;
      if (pid < 0) {
        if (errno == EINTR) continue;
        *why = std::string("wait: ") + std::strerror(errno);
        return false;
      }
      auto it = by_pid_.find(pid);
      if (it == by_pid_.end()) continue;
      f.index = it->second;
      by_pid_.erase(it);
      const Point& pt = points_[f.index];
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - pt.start).count();
      f.rows = results_[f.index];
      std::string status_text, ignored;
      if (WIFEXITED(status)) {
        const int code = WEXITSTATUS(status);
        status_text = code == 0 ? "ok" : code == 1 ? "expectation failed" : "error: " + last_line(pt.log);
        if (code == 0 || code == 1) read_trace(pt.db, p_.workloads[pt.workload], f.rows, &ignored);
        f.code = code == 0 ? int(kOk) : code == 1 ? int(kExpectationFailed) : int(kBadInput);
      } else {
        status_text = "killed by signal " + std::to_string(WTERMSIG(status));
        f.code = kBadInput;
      }
      for (auto& r : f.rows) {
        r.status = status_text;
        r.wall_s = wall;
        r.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
      }
      return true;
    }
    return false;
  }

 private:
  const Plan& p_;
  std::vector<Point>& points_;
  const std::vector<std::vector<Result>>& results_;
  std::vector<std::string> env_;
  std::vector<char*> envp_;
  std::string self_;
  std::map<pid_t, std::size_t> by_pid_;
};

/// Started by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE; PMIx launchers PMIX_RANK).
bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

#ifdef HCSIM_WITH_MPI
constexpr int kTagWork = 1;   // rank k -> 0: a finished point's JSON, or "" (asking for a first point)
constexpr int kTagReply = 2;  // 0 -> rank k: the next point's index, -1 when none is left
constexpr int kTagDone = 3;   // rank k -> 0: k has no children left and asks for nothing more

std::string recv_string(int src, int tag, MPI_Status& st) {
  MPI_Probe(src, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string s(static_cast<std::size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return s;
}
#endif

/// Silences stderr of MPI ranks other than 0 while they repeat rank 0's checks.
struct QuietStderr {
  int saved = -1;
  explicit QuietStderr(bool on) {
    if (!on) return;
    std::fflush(stderr);
    saved = dup(2);
    const int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { dup2(fd, 2); close(fd); }
  }
  ~QuietStderr() {
    if (saved < 0) return;
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
  }
};

// The whole plan on one rank of `size` (1 without MPI): rank 0 checks the plan, writes DIR, hands
// out points (its own -j children first come, first served with the other ranks' requests), gathers
// every point's rows and alone writes the reports; docs/plan-format.md#mpi.
int plan_ranks(const std::vector<std::string>& argv, int rank, int size) {
  std::string file, out;
  unsigned jobs = 1;
  bool force = false, dry = false;
  const Args args(
      kPlan,
      {{"-j", "--jobs", "N", "a number", "simulate up to N points at once, one process each (default 1; per MPI rank)",
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
  {
    // Every rank parses the same arguments the same way; only rank 0 says what is wrong.
    QuietStderr quiet(rank != 0);
    if (auto rc = args.parse(argv)) return *rc;
    if (file.empty()) return args.usage_error("plan needs a plan file");
  }

  Plan p;
  std::vector<Layout> layouts;
  int rc = rank == 0 ? setup(file, out, force, true, p, layouts) : kOk;
  std::vector<int> shared(static_cast<std::size_t>(size), 1);  // rank k reads rank 0's DIR
#ifdef HCSIM_WITH_MPI
  if (size > 1) {
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != kOk) return rc;
    // Is DIR shared with rank 0 (one machine, or a network file system)? Rank 0 writes a token
    // there; a rank that cannot read it back writes its own copy of the layouts and scenarios.
    char token[64] = {0};
    const std::string probe = out.empty() ? std::string() : out + "/.hcsim-plan-mpi";
    if (rank == 0) {
      std::snprintf(token, sizeof token, "%ld.%ld", static_cast<long>(getpid()),
                    static_cast<long>(std::chrono::steady_clock::now().time_since_epoch().count()));
      std::string why;
      if (!write_file(probe, std::string(token) + "\n", &why)) {
        std::fprintf(stderr, "hcsim: %s\n", why.c_str());
        token[0] = 0;  // every rank stops: without the token no rank can tell whether it shares DIR
      }
    }
    MPI_Bcast(token, sizeof token, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!token[0]) return kBadInput;
    int mine = 1;
    if (rank != 0) {
      std::string o = out;
      {
        QuietStderr quiet(true);  // the plan loaded on rank 0; its DIR name is needed here
        Plan q;
        sim::Diagnostics d(file);
        if (o.empty() && load_plan(file, q, d)) o = q.name + ".plan";
      }
      std::ifstream f(o + "/.hcsim-plan-mpi");
      std::string line;
      mine = std::getline(f, line) && line == token;
      if (mine) {
        QuietStderr quiet(true);
        rc = setup(file, out, force, false, p, layouts);
      } else {
        rc = setup(file, out, force, true, p, layouts);
        if (rc != kOk) std::fprintf(stderr, "hcsim plan: MPI rank %d: the checks above failed on this machine\n", rank);
      }
    }
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Gather(&mine, 1, MPI_INT, shared.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) std::remove((out + "/.hcsim-plan-mpi").c_str());
    if (worst != kOk) return worst;
  }
#endif
  if (rc != kOk) return rc;

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
  if (rank == 0) {
    std::string ranks;
    if (size > 1) {
      ranks = ", " + std::to_string(size) + " MPI ranks";
      const auto n = std::count(shared.begin(), shared.end(), 1);
      if (n != size) ranks += " (" + std::to_string(size - n) + " with their own copy of DIR)";
    }
    std::fprintf(stderr, "hcsim plan: %s: %zu layouts x %zu workloads = %zu runs, -j %u%s, results in %s/\n", file.c_str(),
                 layouts.size(), p.workloads.size(), points.size(), jobs, ranks.c_str(), out.c_str());
  }
  std::vector<std::size_t> by_rank(static_cast<std::size_t>(size), 0);
  if (!dry) {
    Children kids(p, points, results);
    std::string why;
    if (!kids.find_self(&why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
#ifdef HCSIM_WITH_MPI
      if (size > 1) MPI_Abort(MPI_COMM_WORLD, kBadInput);
#endif
      return kBadInput;
    }
    auto fail = [&](const std::string& what) {
      std::fprintf(stderr, "hcsim plan: MPI rank %d: %s\n", rank, what.c_str());
#ifdef HCSIM_WITH_MPI
      if (size > 1) MPI_Abort(MPI_COMM_WORLD, kBadInput);  // the other ranks wait on this one
#endif
      return int(kBadInput);
    };
    if (rank == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      std::size_t next = 0, done = 0;
      int finished_ranks = 1;  // rank 0 itself
      // Rank 0 starts its own children only once every rank has asked for its first point, so that
      // with at least as many points as ranks every rank simulates some (and a slow rank start-up
      // does not leave it idle).
      std::vector<bool> asked(static_cast<std::size_t>(size), false);
      int asking = 1;
      auto record = [&](const Finished& f, int from) {
        results[f.index] = f.rows;
        if (f.code != kOk) rc = std::max(rc, f.code);
        ++done;
        ++by_rank[static_cast<std::size_t>(from)];
        const Point& pt = points[f.index];
        const Result& r0 = f.rows.front();
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double eta = el / static_cast<double>(done) * static_cast<double>(points.size() - done);
        std::fprintf(stderr, "hcsim plan: [%zu/%zu] %slayout %zu (%s) %s: %s, %.1f s, %.0f MiB; elapsed %.0f s, ETA %.0f s\n", done,
                     points.size(), size > 1 ? ("rank " + std::to_string(from) + ": ").c_str() : "", pt.layout,
                     layouts[pt.layout].label.c_str(), p.workloads[pt.workload].op.c_str(), r0.status.c_str(), r0.wall_s,
                     r0.peak_mib, el, eta);
      };
      while (done < points.size() || finished_ranks < size) {
        bool busy = false;
        while (asking == size && kids.running() < jobs && next < points.size()) {
          if (!kids.spawn(next++, &why)) return fail(why);
          busy = true;
        }
#ifdef HCSIM_WITH_MPI
        if (size > 1) {
          int flag = 0;
          MPI_Status st;
          MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
          if (flag) {
            busy = true;
            const std::string msg = recv_string(st.MPI_SOURCE, st.MPI_TAG, st);
            if (st.MPI_TAG == kTagDone) {
              ++finished_ranks;
            } else {
              if (!asked[static_cast<std::size_t>(st.MPI_SOURCE)]) {
                asked[static_cast<std::size_t>(st.MPI_SOURCE)] = true;
                ++asking;
              }
              if (!msg.empty()) {
                Finished f;
                if (!from_json(msg, results, f)) return fail("a malformed result from rank " + std::to_string(st.MPI_SOURCE));
                record(f, st.MPI_SOURCE);
              }
              long idx = next < points.size() ? static_cast<long>(next++) : -1;
              MPI_Send(&idx, 1, MPI_LONG, st.MPI_SOURCE, kTagReply, MPI_COMM_WORLD);
            }
          }
        }
#endif
        Finished f;
        if (kids.running() > 0 && kids.reap(size == 1, f, &why)) {
          record(f, 0);
          busy = true;
        } else if (!why.empty()) {
          return fail(why);
        }
        if (!busy) usleep(2000);
      }
    }
#ifdef HCSIM_WITH_MPI
    else {
      // A worker rank: one request per free slot, then every finished point's rows ask for the next.
      auto ask = [&](const std::string& msg) {
        MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagWork, MPI_COMM_WORLD);
        long idx = -1;
        MPI_Recv(&idx, 1, MPI_LONG, 0, kTagReply, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return idx;
      };
      bool more = true;
      for (unsigned s = 0; s < jobs && more; ++s) {
        const long i = ask("");
        if (i < 0) more = false;
        else if (!kids.spawn(static_cast<std::size_t>(i), &why)) return fail(why);
      }
      while (kids.running() > 0) {
        Finished f;
        if (!kids.reap(true, f, &why)) return fail(why);
        const long i = ask(to_json(f).dump());
        if (i >= 0 && !kids.spawn(static_cast<std::size_t>(i), &why)) return fail(why);
      }
      MPI_Send(nullptr, 0, MPI_CHAR, 0, kTagDone, MPI_COMM_WORLD);
    }
#endif
  }

  if (rank == 0) {
    std::vector<std::pair<std::string, std::string>> meta;
    if (size > 1) {
      std::string counts;
      for (auto n : by_rank) counts += (counts.empty() ? "" : ",") + std::to_string(n);
      meta = {{"mpi_ranks", std::to_string(size)}, {"points_by_rank", counts}};
    }
    rc = report(p, layouts, points, results, out, dry, rc, meta);
  }
#ifdef HCSIM_WITH_MPI
  if (size > 1) MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  return rc;
}

int plan_main(const std::vector<std::string>& argv) {
  int rank = 0, size = 1;
  if (under_mpirun()) {
#ifdef HCSIM_WITH_MPI
    // Open MPI 4 warns about fork() only with its openib/verbs transport; the children exec at once.
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#else
    const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
    if (!r || std::string(r) == "0")
      std::fprintf(stderr, "hcsim plan: started by mpirun, but this hcsim was built without MPI (CMake's find_package(MPI) "
                           "found none; install libopenmpi-dev and rebuild, docs/plan-format.md#mpi)\n");
    return kBadInput;
#endif
  }
  const int rc = plan_ranks(argv, rank, size);
#ifdef HCSIM_WITH_MPI
  if (size > 1 || under_mpirun()) MPI_Finalize();
#endif
  return rc;
}

}  // namespace

const Command kPlan{"plan", "plan PLAN [-j N] [-o DIR] [--force] [--dry-run]",
                    "        Capacity planning: simulate every layout of a sweep (JSON pointers into a base\n"
                    "        topology) with every workload, one `hcsim run` process per point; table on stdout,\n"
                    "        DIR/plan.csv, DIR/plan.db, SVG plots, the cheapest layout meeting a target\n",
                    plan_main};

}  // namespace hcsim
