// Route decisions: load (trace, routes file, scenario) and print (docs/routing.md#cli).
#include "routes_io.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trace_db.h"

namespace hcsim {

const char* const kRoutesHeader = "# hcsim routes 1: comm src dst qp n transport nic udp_sport hops reason trigger";

std::string RouteLine::key() const {
  char b[96];
  std::snprintf(b, sizeof b, "comm %u rank %u -> %u qp %u #%u", comm, src, dst, qp, n);
  return b;
}

std::string RouteLine::decision() const {
  return transport + " " + (nic.empty() ? "-" : nic) + " sport " + std::to_string(udp_sport) + " [" + hops + "] (" + reason + ")";
}

namespace {

bool key_less(const RouteLine& a, const RouteLine& b) {
  return std::tie(a.comm, a.src, a.dst, a.qp, a.n) < std::tie(b.comm, b.src, b.dst, b.qp, b.n);
}

void number(std::vector<RouteLine>* rs) {  // n: order of the decisions of one (comm, src, dst, qp)
  std::stable_sort(rs->begin(), rs->end(), [](const RouteLine& a, const RouteLine& b) {
    return std::tie(a.comm, a.src, a.dst, a.qp, a.t_ns) < std::tie(b.comm, b.src, b.dst, b.qp, b.t_ns);
  });
  for (std::size_t i = 0; i < rs->size(); ++i) {
    RouteLine& r = (*rs)[i];
    r.n = i > 0 && (*rs)[i - 1].comm == r.comm && (*rs)[i - 1].src == r.src && (*rs)[i - 1].dst == r.dst && (*rs)[i - 1].qp == r.qp
              ? (*rs)[i - 1].n + 1
              : 0;
  }
}

bool is_sqlite(const std::string& f) {
  char head[16] = {};
  std::FILE* fp = std::fopen(f.c_str(), "rb");
  if (!fp) return false;
  const std::size_t n = std::fread(head, 1, sizeof head, fp);
  std::fclose(fp);
  return n == sizeof head && std::memcmp(head, "SQLite format 3", 16) == 0;
}

bool from_db(const std::string& file, std::vector<RouteLine>* out, std::string* why) {
  TraceDb db;
  if (!db.open(file, why)) return false;
  db.print_banner();
  if (!db.has_table("routes")) { *why = file + ": the trace has no routes table (written by hcsim before trace schema 5)"; return false; }
  std::string e;
  const bool ok = db.query(
      "SELECT comm, src, dst, qp, transport, nic, udp_sport, hops, reason, trigger, sim_time_ns, bandwidth_GBps, latency_us, "
      "congestion, cost FROM routes ORDER BY comm, src, dst, qp, sim_time_ns, rowid",
      [&](const Row& r) {
        RouteLine l;
        l.comm = static_cast<std::uint32_t>(r.i(0));
        l.src = static_cast<std::uint32_t>(r.i(1));
        l.dst = static_cast<std::uint32_t>(r.i(2));
        l.qp = static_cast<std::uint32_t>(r.i(3));
        l.transport = r.s(4);
        l.nic = r.s(5);
        l.udp_sport = static_cast<std::uint32_t>(r.i(6));
        l.hops = r.s(7);
        l.reason = r.s(8);
        l.trigger = r.s(9);
        l.t_ns = r.d(10);
        l.bandwidth_GBps = r.d(11);
        l.latency_us = r.d(12);
        l.congestion = r.d(13);
        l.cost = r.d(14);
        out->push_back(std::move(l));
      },
      &e);
  if (!ok) { *why = e; return false; }
  number(out);
  return true;
}

bool from_text(const std::string& file, std::vector<RouteLine>* out, std::string* why) {
  std::ifstream in(file);
  if (!in) { *why = file + ": cannot read it: " + std::strerror(errno); return false; }
  std::string line;
  std::size_t ln = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++ln;
    if (line.empty()) continue;
    if (line[0] == '#') { header = header || line == kRoutesHeader; continue; }
    if (!header) { *why = file + ": not a trace, a scenario or a routes file (no \"" + std::string(kRoutesHeader) + "\" line)"; return false; }
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) f.push_back(cell);
    if (f.size() == 10) f.push_back("");  // an empty trigger
    if (f.size() != 11) { *why = file + ":" + std::to_string(ln) + ": expected 11 tab-separated fields, got " + std::to_string(f.size()); return false; }
    RouteLine l;
    try {
      l.comm = static_cast<std::uint32_t>(std::stoul(f[0]));
      l.src = static_cast<std::uint32_t>(std::stoul(f[1]));
      l.dst = static_cast<std::uint32_t>(std::stoul(f[2]));
      l.qp = static_cast<std::uint32_t>(std::stoul(f[3]));
      l.n = static_cast<std::uint32_t>(std::stoul(f[4]));
      l.udp_sport = static_cast<std::uint32_t>(std::stoul(f[7]));
    } catch (const std::exception&) {
      *why = file + ":" + std::to_string(ln) + ": comm, src, dst, qp, n and udp_sport must be numbers";
      return false;
    }
    l.transport = f[5];
    l.nic = f[6] == "-" ? "" : f[6];
    l.hops = f[8];
    l.reason = f[9];
    l.trigger = f[10];
    out->push_back(std::move(l));
  }
  if (!header) { *why = file + ": not a trace, a scenario or a routes file (no \"" + std::string(kRoutesHeader) + "\" line)"; return false; }
  std::sort(out->begin(), out->end(), key_less);
  return true;
}

bool from_scenario(const std::string& file, std::vector<RouteLine>* out, std::string* why, std::string* db_path, bool inherit_env) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) { *why = "cannot find hcsim's own executable"; return false; }
  self[n] = 0;
  char dir[] = "/tmp/hcsim-routes-XXXXXX";
  if (!mkdtemp(dir)) { *why = std::string("cannot make a temporary directory: ") + std::strerror(errno); return false; }
  const std::string db = std::string(dir) + "/trace.db", log = std::string(dir) + "/run.log";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) { *why = std::string("fork: ") + std::strerror(errno); return false; }
  if (pid == 0) {
    std::FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), 2);
    if (inherit_env) execl(self, "hcsim", "run", file.c_str(), "--db", db.c_str(), "-q", "--inherit-env", static_cast<char*>(nullptr));
    else execl(self, "hcsim", "run", file.c_str(), "--db", db.c_str(), "-q", static_cast<char*>(nullptr));
    _exit(2);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
  bool ok = code == 0 || code == 1;
  if (!ok) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line)) if (!line.empty()) last = line;
    *why = last.empty() ? file + ": hcsim run failed (exit " + std::to_string(code) + ")" : last;
  } else {
    ok = from_db(db, out, why);
  }
  if (db_path && ok) *db_path = db;
  else { std::remove(db.c_str()); std::remove(log.c_str()); rmdir(dir); }
  if (db_path && ok) std::remove(log.c_str());
  return ok;
}

}  // namespace

bool load_routes(const std::string& file, bool allow_scenario, std::vector<RouteLine>* out, std::string* why, std::string* db_path,
                 bool inherit_env) {
  out->clear();
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) { *why = file + ": no such file"; return false; }
  if (!S_ISREG(st.st_mode)) { *why = file + ": not a regular file"; return false; }
  if (is_sqlite(file)) return from_db(file, out, why);
  std::ifstream in(file);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {}
  if (c == '{') {
    if (!allow_scenario) { *why = file + ": a JSON file: give a trace database or a routes file"; return false; }
    return from_scenario(file, out, why, db_path, inherit_env);
  }
  return from_text(file, out, why);
}

std::string routes_text(const std::vector<RouteLine>& rs) {
  std::vector<RouteLine> v = rs;
  std::sort(v.begin(), v.end(), key_less);
  std::string s = std::string(kRoutesHeader) + "\n";
  for (const auto& r : v) {
    char b[64];
    std::snprintf(b, sizeof b, "%u\t%u\t%u\t%u\t%u\t", r.comm, r.src, r.dst, r.qp, r.n);
    s += b + r.transport + "\t" + (r.nic.empty() ? "-" : r.nic) + "\t" + std::to_string(r.udp_sport) + "\t" + r.hops + "\t" + r.reason +
         "\t" + r.trigger + "\n";
  }
  return s;
}

std::string routes_json(const std::vector<RouteLine>& rs) {
  std::vector<RouteLine> v = rs;
  std::sort(v.begin(), v.end(), key_less);
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& r : v)
    a.push_back({{"comm", r.comm}, {"src", r.src}, {"dst", r.dst}, {"qp", r.qp}, {"n", r.n}, {"transport", r.transport},
                 {"nic", r.nic}, {"udp_sport", r.udp_sport}, {"hops", r.hops}, {"reason", r.reason}, {"trigger", r.trigger},
                 {"sim_time_ns", r.t_ns}, {"bandwidth_GBps", r.bandwidth_GBps}, {"latency_us", r.latency_us},
                 {"congestion", r.congestion}, {"cost", r.cost}});
  return a.dump(1) + "\n";
}

RouteLoad route_load(const std::vector<RouteLine>& rs) {
  RouteLoad load;
  for (const auto& r : rs) {
    std::vector<std::pair<std::string, std::string>> sw;  // (switch, egress port) per switch hop
    std::set<std::string> crossed;
    std::stringstream ss(r.hops);
    std::string hop;
    while (ss >> hop) {
      const std::size_t colon = hop.rfind(':'), gt = hop.rfind('>');
      if (colon != std::string::npos && gt != std::string::npos && gt > colon) {
        sw.emplace_back(hop.substr(0, colon), hop.substr(gt + 1));
        crossed.insert(sw.back().first + ":" + sw.back().second);
      } else {
        crossed.insert(hop);
      }
    }
    for (const auto& p : crossed) ++load.ports[p];
    for (std::size_t i = 0; sw.size() > 1 && i < (sw.size() - 1) / 2; ++i) load.uplinks[sw[i].first].insert(sw[i].second);
  }
  return load;
}

}  // namespace hcsim
