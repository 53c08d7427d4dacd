// hcsim plan's points as child processes on this machine (docs/plan-format.md): each point is a
// child `hcsim run` of its scenario, and a finished child's trace is read back into the point's
// rows with its status, wall time and peak memory.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <sstream>

#include "commands.h"
#include "plan.h"
#include "sim/provenance.h"
#include "trace_db.h"

namespace hcsim::plan {

namespace {

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
    if (rows[k].step < 0) continue;  // infeasible: not in the scenario
    auto it = acc.find(rows[k].step);
    if (it == acc.end() || it->second[3] == 0) continue;
    rows[k].time_us = it->second[0] / it->second[3];
    rows[k].algbw = it->second[1] / it->second[3];
    rows[k].busbw = it->second[2] / it->second[3];
    if (auto a = algo.find(rows[k].step); a != algo.end()) rows[k].algorithm = a->second.first;
  }
  // Peak port utilisation (--tier-check): the busiest switch egress port (a port_counters row
  // whose node is not an NPU's NIC) over the span of the run's operations, which leaves out the
  // set-up before the first collective.
  const double span = db.scalar("SELECT MAX(end_ns) - MIN(start_ns) FROM operations", 0);
  double util = span > 0 ? 0 : NAN;
  std::string port = "-";
  db.query("SELECT node || ':' || port, busy_ns FROM port_counters WHERE node NOT IN (SELECT name FROM npus) AND busy_ns > 0"
           " ORDER BY busy_ns DESC, node, port LIMIT 1",
           [&](const Row& r) {
             port = r.s(0);
             if (span > 0) util = r.d(1) / span;
           },
           why);
  // Training steps: the iteration's exposed communication and overlap (mean over repetitions).
  std::map<std::int64_t, std::array<double, 3>> steps;  // step -> exposed, overlap, count
  db.query("SELECT step, exposed_comm_us, overlap FROM train_steps ORDER BY step, rep", [&](const Row& r) {
    auto& a = steps[r.i(0)];
    a[0] += r.d(1);
    a[1] += r.d(2);
    a[2] += 1;
  }, why);
  if (why->find("no such table") != std::string::npos) why->clear();  // a trace of a collectives-only run
  for (auto& r : rows) {
    if (r.step < 0) continue;
    if (auto it = steps.find(r.step); it != steps.end() && it->second[2] > 0) {
      r.exposed_us = it->second[0] / it->second[2];
      r.overlap = it->second[1] / it->second[2];
      r.algbw = r.busbw = NAN;  // an iteration moves no one size
    }
    r.peak_util = util;
    r.peak_port = port;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream t;
  t << f.rdbuf();
  return t.str();
}

// FNV-1a 64 of a point's inputs: its scenario, its layout's topology, this hcsim's version and
// commit (--resume, docs/plan-format.md#resume).
std::string inputs_key(const Point& pt) {
  json sc = json::parse(read_text(pt.scen), nullptr, false);
  std::string topo = sc.is_object() && sc.contains("topology") && sc["topology"].is_string()
                         ? read_text(dir_of(pt.scen) + sc["topology"].get<std::string>())
                         : std::string();
  const std::string all = read_text(pt.scen) + '\0' + topo + '\0' + sim::build_version() + ' ' + sim::build_commit();
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : all) h = (h ^ c) * 1099511628211ULL;
  char b[32];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string done_path(const Point& pt) {
  const std::string suffix = ".hcsim.db";
  return pt.db.substr(0, pt.db.size() - suffix.size()) + ".done";
}

std::string last_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

Children::Children(const Plan& p, std::vector<Point>& points, const std::vector<std::vector<Result>>& results)
    : p_(p), points_(points), results_(results) {
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("OMPI_", 0) == 0 || v.rfind("PMIX_", 0) == 0 || v.rfind("PMI_", 0) == 0) continue;
    env_.push_back(v);
  }
  for (auto& v : env_) envp_.push_back(const_cast<char*>(v.c_str()));
  envp_.push_back(nullptr);
}

bool Children::find_self(std::string* why) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) { *why = "cannot find its own executable"; return false; }
  self_.assign(self, static_cast<std::size_t>(n));
  return true;
}

bool Children::spawn(std::size_t i, std::string* why) {
  Point& pt = points_[i];
  // Without --inherit-env the plan has already removed the caller's HCOMM_*/HCCL_* (cmd_plan.cpp).
  const char* argv[] = {"hcsim", "run", pt.scen.c_str(), "--db", pt.db.c_str(), "-q", p_.inherit_env ? "--inherit-env" : nullptr, nullptr};
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
  std::remove(done_path(pt).c_str());  // until this run ends well
  pt.pid = pid;
  pt.start = std::chrono::steady_clock::now();
  by_pid_[pid] = i;
  return true;
}

bool Children::resume(std::size_t i, Finished& f) const {
  const Point& pt = points_[i];
  const json done = json::parse(read_text(done_path(pt)), nullptr, false);
  if (!done.is_object() || done.value("key", "") != inputs_key(pt) || access(pt.db.c_str(), R_OK) != 0) return false;
  f.index = i;
  f.rows = results_[i];
  f.code = done.value("code", int(kBadInput));
  std::string why;
  read_trace(pt.db, p_.workloads[pt.workload], f.rows, &why);
  if (!why.empty()) return false;
  for (auto& r : f.rows) {
    if (r.step < 0) continue;
    r.status = done.value("status", "ok");
    r.wall_s = done.value("wall_s", NAN);
    r.cpu_s = done.value("cpu_s", NAN);
    r.peak_mib = done.value("peak_mib", NAN);
  }
  return true;
}

bool Children::reap(bool block, Finished& f, std::string* why) {
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
    const double peak = static_cast<double>(ru.ru_maxrss) / 1024.0;
    const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    for (auto& r : f.rows) {
      if (r.step < 0) continue;
      r.status = status_text;
      r.wall_s = wall;
      r.cpu_s = cpu;
      r.peak_mib = peak;
    }
    // What --resume needs to keep this point: its inputs' key and how it ended (its rows come
    // back from its trace). Not for a point that ended in error or by a signal.
    if (f.code == kOk || f.code == kExpectationFailed) {
      const json done = {{"key", inputs_key(pt)}, {"code", f.code}, {"status", status_text}, {"wall_s", wall}, {"cpu_s", cpu}, {"peak_mib", peak}};
      std::string ignored2;
      write_file(done_path(pt), done.dump() + "\n", &ignored2);
    }
    return true;
  }
  return false;
}

}  // namespace hcsim::plan
