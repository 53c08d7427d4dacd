// The hcomm_top view (top_view.h).
#include "top_view.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>

namespace hcsim {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char b[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

// A name in `w` columns: long ones keep their end ("...rver1/npu2-server1/npu3").
std::string fit(const std::string& s, std::size_t w) {
  if (s.size() <= w) return s;
  return "..." + s.substr(s.size() - (w - 3));
}

std::string bytes_h(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (b >= 1024 && k < 5) { b /= 1024; ++k; }
  return k == 0 ? fmt("%.0f %s", b, u[k]) : fmt("%.1f %s", b, u[k]);
}

std::string count_h(double v) {
  if (v < 1e6) return fmt("%.0f", v);
  return fmt("%.3g", v);
}

}  // namespace

std::string render_top(const TopData& d, const TopOptions& o) {
  std::string s;
  const double T = d.sim_ns;
  s += fmt("hcsim top  %-50s  status %s\n", fit(d.title, 50).c_str(), fit(d.status.empty() ? "-" : d.status, 28).c_str());
  std::uint64_t total_ops = 0;
  for (auto& r : d.ranks) total_ops += r.ops;
  s += fmt("sim time %.3f us   ranks %zu   operations %llu\n", T / 1e3, d.ranks.size(), static_cast<unsigned long long>(total_ops));

  // Operations per rank.
  s += "\nOPERATIONS PER RANK\n";
  if (d.ranks.empty()) {
    s += "  (no ranks)\n";
  } else {
    std::vector<std::uint64_t> ops;
    for (auto& r : d.ranks) ops.push_back(r.ops);
    std::sort(ops.begin(), ops.end());
    const double median = ops.size() % 2 ? static_cast<double>(ops[ops.size() / 2])
                                          : (static_cast<double>(ops[ops.size() / 2 - 1]) + static_cast<double>(ops[ops.size() / 2])) / 2;
    std::vector<double> times;
    for (auto& r : d.ranks) times.push_back(r.op_time_ns);
    std::sort(times.begin(), times.end());
    const double tmed = times.size() % 2 ? times[times.size() / 2] : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
    s += fmt("  done:          min %llu  median %g  max %llu\n", static_cast<unsigned long long>(ops.front()), median,
             static_cast<unsigned long long>(ops.back()));
    s += fmt("  op time (us):  min %.3f  median %.3f  max %.3f\n", times.front() / 1e3, tmed / 1e3, times.back() / 1e3);
    // Slowest: fewest operations done, then the longest total operation time.
    std::vector<const TopRank*> v;
    for (auto& r : d.ranks) v.push_back(&r);
    std::sort(v.begin(), v.end(), [](const TopRank* a, const TopRank* b) {
      if (a->ops != b->ops) return a->ops < b->ops;
      if (a->op_time_ns != b->op_time_ns) return a->op_time_ns > b->op_time_ns;
      return a->rank < b->rank;
    });
    s += fmt("  slowest ranks (fewest done, then longest op time):\n  %8s  %-24s %8s %16s %10s\n", "rank", "device", "ops",
             "op time (us)", "vs median");
    for (std::size_t k = 0; k < v.size() && k < o.rows; ++k)
      s += fmt("  %8lld  %-24s %8llu %16.3f %9.2fx\n", static_cast<long long>(v[k]->rank), fit(v[k]->name, 24).c_str(),
               static_cast<unsigned long long>(v[k]->ops), v[k]->op_time_ns / 1e3, tmed > 0 ? v[k]->op_time_ns / tmed : 0.0);
  }

  // Links that carried traffic, HCCS and PCIe apart: by busy time, bytes, then name and direction.
  for (const char* kind : {"hccs", "pcie"}) {
    std::vector<const TopLink*> links;
    std::size_t all = 0;
    for (auto& l : d.links)
      if (l.kind == kind) {
        ++all;
        if (l.bytes > 0) links.push_back(&l);
      }
    std::sort(links.begin(), links.end(), [](const TopLink* a, const TopLink* b) {
      if (a->busy_ns != b->busy_ns) return a->busy_ns > b->busy_ns;
      if (a->bytes != b->bytes) return a->bytes > b->bytes;
      if (a->name != b->name) return a->name < b->name;
      return a->direction < b->direction;
    });
    s += fmt("\nBUSIEST %s LINKS (%zu of %zu link directions carried traffic)\n", kind[0] == 'h' ? "HCCS" : "PCIE", links.size(), all);
    if (links.empty()) { s += "  (none)\n"; continue; }
    s += fmt("  %-36s %-4s %12s %7s %9s %9s\n", "link", "dir", "bytes", "busy%", "GB/s", "retries");
    for (std::size_t k = 0; k < links.size() && k < o.rows; ++k) {
      const TopLink& l = *links[k];
      s += fmt("  %-36s %-4s %12s %6.1f%% %9.2f %9llu\n", fit(l.name, 36).c_str(), l.direction.c_str(),
               bytes_h(static_cast<double>(l.bytes)).c_str(), T > 0 ? 100 * l.busy_ns / T : 0.0,
               T > 0 ? static_cast<double>(l.bytes) / T : 0.0, static_cast<unsigned long long>(l.retries));
    }
  }

  // Ports: by bytes, then node and port.
  std::vector<const TopPort*> ports;
  for (auto& p : d.ports) ports.push_back(&p);
  std::sort(ports.begin(), ports.end(), [](const TopPort* a, const TopPort* b) {
    if (a->tx_bytes != b->tx_bytes) return a->tx_bytes > b->tx_bytes;
    if (a->node != b->node) return a->node < b->node;
    return a->port < b->port;
  });
  s += fmt("\nBUSIEST ROCE PORTS (%zu ports carried traffic)\n", ports.size());
  if (!ports.empty()) s += fmt("  %-28s %12s %9s %8s %9s %9s %9s\n", "port", "tx bytes", "GB/s", "paused%", "drops", "ecn", "pfc sent");
  for (std::size_t k = 0; k < ports.size() && k < o.rows; ++k) {
    const TopPort& p = *ports[k];
    s += fmt("  %-28s %12s %9.2f %7.1f%% %9s %9s %9s\n", fit(p.node + ":" + std::to_string(p.port), 28).c_str(),
             bytes_h(static_cast<double>(p.tx_bytes)).c_str(), T > 0 ? static_cast<double>(p.tx_bytes) / T : 0.0,
             T > 0 ? 100 * p.paused_ns / T : 0.0, count_h(static_cast<double>(p.drops)).c_str(),
             count_h(static_cast<double>(p.ecn_marked)).c_str(), count_h(static_cast<double>(p.pause_sent)).c_str());
  }
  if (ports.empty()) s += "  (none)\n";

  s += "\nERRORS (cluster-wide counters)\n";
  if (d.errors.empty()) s += "  (none recorded)\n";
  std::string line;
  for (auto& [name, v] : d.errors) {
    const std::string item = fmt("%s %s", name.c_str(), count_h(v).c_str());
    if (!line.empty() && line.size() + 3 + item.size() > 98) { s += "  " + line + "\n"; line.clear(); }
    line += (line.empty() ? "" : "   ") + item;
  }
  if (!line.empty()) s += "  " + line + "\n";

  // Faults (one line each, the first `rows`; the rest counted) and what the ranks did about them.
  if (d.have_faults || !d.failovers.empty()) {
    std::size_t fired = 0;
    for (auto& f : d.faults) fired += f.fired;
    s += fmt("\nFAULTS (%zu injected, %zu fired)\n", d.faults.size(), fired);
    if (d.faults.empty()) s += d.have_faults ? "  (none)\n" : "  (no faults table in this trace)\n";
    auto t_us = [](double ns) { return fmt("%.3f us", ns / 1e3); };
    for (std::size_t k = 0; k < d.faults.size() && k < o.rows; ++k) {
      const TopFault& f = d.faults[k];
      s += fmt("  %3lld %-12s %s\n", static_cast<long long>(f.id), fit(f.type, 12).c_str(), fit(f.target, 80).c_str());
      if (!f.fired) {
        s += "      NOT FIRED (the run ended first)\n";
        continue;
      }
      std::string when = "fired " + t_us(f.injected_ns);
      when += f.first_detected_ns < 0 ? ", no detection"
                                      : ", detected " + t_us(f.first_detected_ns) +
                                            (f.last_detected_ns > f.first_detected_ns ? " to " + t_us(f.last_detected_ns) : "");
      when += f.resumed_ns < 0 ? ", not resumed" : ", resumed " + t_us(f.resumed_ns);
      s += "      " + fit(when, 92) + "\n";
      std::string hit;
      if (f.step >= 0) {
        hit = fmt("step %lld rep %lld", static_cast<long long>(f.step), static_cast<long long>(f.rep));
        if (f.op_time_us >= 0) hit += fmt(" took %.3f us", f.op_time_us);
        if (f.median_us >= 0) hit += fmt(" (median %.3f us)", f.median_us);
      }
      if (!f.actions.empty()) hit += (hit.empty() ? "" : "; ") + f.actions;
      if (!hit.empty()) s += "      " + fit(hit, 92) + "\n";
    }
    if (d.faults.size() > o.rows) {
      std::size_t more_fired = 0;
      for (std::size_t k = o.rows; k < d.faults.size(); ++k) more_fired += d.faults[k].fired;
      s += fmt("  ... and %zu more (%zu fired, %zu not fired; -n to show more)\n", d.faults.size() - o.rows, more_fired,
               d.faults.size() - o.rows - more_fired);
    }
    // Failovers: rows per action, how many never resumed, the slowest recovery.
    std::vector<std::pair<std::string, std::size_t>> per_action;
    // A rank's rows for one fault (an abort then a shrink, retries) are one recovery: resumed when
    // the last of them resumed, never if none did.
    std::map<std::pair<std::int64_t, double>, double> recovery;  // (rank, fault or detection) → resumed (-1: never)
    for (auto& f : d.failovers) {
      auto it = std::find_if(per_action.begin(), per_action.end(), [&](const auto& p) { return p.first == f.action; });
      if (it == per_action.end()) per_action.emplace_back(f.action, 1);
      else ++it->second;
      if (f.action == "warn") continue;
      auto [r, fresh] = recovery.emplace(std::make_pair(f.rank, f.fault_ns >= 0 ? f.fault_ns : f.detected_ns), f.resumed_ns);
      if (!fresh) r->second = std::max(r->second, f.resumed_ns);
    }
    std::size_t never = 0;
    double slowest = -1;
    std::int64_t slowest_rank = -1;
    for (auto& [key, resumed] : recovery) {
      if (resumed < 0) { ++never; continue; }
      if (resumed - key.second > slowest) { slowest = resumed - key.second; slowest_rank = key.first; }
    }
    std::sort(per_action.begin(), per_action.end());
    std::string acts;
    for (auto& [a, n] : per_action) acts += fmt("%s%s %zu", acts.empty() ? "" : ", ", a.c_str(), n);
    s += fmt("FAILOVERS (%zu rows)%s%s\n", d.failovers.size(), acts.empty() ? "" : ": ", acts.c_str());
    if (!d.failovers.empty())
      s += fmt("  ranks' recoveries %zu, never resumed %zu   slowest resume %s\n", recovery.size(), never,
               slowest < 0 ? "-" : fmt("%.3f us after its fault (rank %lld)", slowest / 1e3, static_cast<long long>(slowest_rank)).c_str());
  }
  return s;
}

}  // namespace hcsim
