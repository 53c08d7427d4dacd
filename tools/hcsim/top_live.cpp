// hcsim run's live view: the progress line and --top (top_live.h).
#include "top_live.h"

#include <algorithm>
#include <vector>

namespace hcsim {
namespace {

std::string sim_time(std::uint64_t ps) {
  char b[48];
  const double us = static_cast<double>(ps) / 1e6;
  if (us < 1e3) std::snprintf(b, sizeof b, "%.3f us", us);
  else if (us < 1e6) std::snprintf(b, sizeof b, "%.3f ms", us / 1e3);
  else std::snprintf(b, sizeof b, "%.3f s", us / 1e6);
  return b;
}

std::string rate(double per_s) {
  char b[32];
  if (per_s >= 1e6) std::snprintf(b, sizeof b, "%.2f M", per_s / 1e6);
  else if (per_s >= 1e3) std::snprintf(b, sizeof b, "%.1f k", per_s / 1e3);
  else std::snprintf(b, sizeof b, "%.0f ", per_s);
  return b;
}

std::string bytes(std::uint64_t n) {
  char b[32];
  const double x = static_cast<double>(n);
  if (x >= 1024.0 * 1024 * 1024) std::snprintf(b, sizeof b, "%.2f GiB", x / (1024.0 * 1024 * 1024));
  else if (x >= 1024.0 * 1024) std::snprintf(b, sizeof b, "%.1f MiB", x / (1024.0 * 1024));
  else if (x >= 1024.0) std::snprintf(b, sizeof b, "%.1f KiB", x / 1024.0);
  else std::snprintf(b, sizeof b, "%llu B", static_cast<unsigned long long>(n));
  return b;
}

struct Spread { std::uint64_t min = 0, median = 0, max = 0; };
Spread spread(std::vector<std::uint64_t> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

std::string total(const sim::LiveSnapshot& s) { return s.ops_total ? "/" + std::to_string(s.ops_total) : std::string(); }

double counter(const sim::LiveSnapshot& s, const char* name) {
  auto it = s.counters.find(name);
  return it == s.counters.end() ? 0 : it->second;
}

}  // namespace

std::string progress_line(const sim::LiveSnapshot& s) {
  const Spread o = spread(s.ops_done);
  char b[256];
  if (s.ops_total == 0 && o.max == 0) {  // no workload of the runner's own (hcsim exec): no operation counts
    std::snprintf(b, sizeof b, "hcsim: %.1f s | sim %s | %sevents/s", s.wall_s, sim_time(s.sim_ps).c_str(), rate(s.events_per_s).c_str());
    return b;
  }
  std::snprintf(b, sizeof b, "hcsim: %.1f s | sim %s | ops %llu%s (slowest rank; fastest %llu) | %sevents/s", s.wall_s,
                sim_time(s.sim_ps).c_str(), static_cast<unsigned long long>(o.min), total(s).c_str(),
                static_cast<unsigned long long>(o.max), rate(s.events_per_s).c_str());
  return b;
}

std::string top_block(const sim::LiveSnapshot& s, const std::string& title) {
  std::string t;
  char b[320];
  std::snprintf(b, sizeof b, "hcsim top: %s | wall %.1f s | sim %s | %llu events, %sevents/s\n", title.c_str(), s.wall_s,
                sim_time(s.sim_ps).c_str(), static_cast<unsigned long long>(s.events), rate(s.events_per_s).c_str());
  t += b;
  const Spread o = spread(s.ops_done);
  std::snprintf(b, sizeof b, "ops done per rank%s: min %llu  median %llu  max %llu  (%zu ranks)\n",
                s.ops_total ? (" (of " + std::to_string(s.ops_total) + ")").c_str() : "", static_cast<unsigned long long>(o.min),
                static_cast<unsigned long long>(o.median), static_cast<unsigned long long>(o.max), s.ops_done.size());
  t += b;
  std::size_t w = 28;
  for (const auto& l : s.links) w = std::max(w, l.name.size());
  for (const auto& p : s.ports) w = std::max(w, p.name.size());
  const int wi = static_cast<int>(w);
  std::snprintf(b, sizeof b, "busiest links so far%*s %5s %7s %12s\n", wi - 18, "", "type", "busy", "bytes");
  t += b;
  if (s.links.empty()) t += "  (none has carried data yet)\n";
  for (const auto& l : s.links) {
    std::snprintf(b, sizeof b, "  %-*s %5s %6.1f%% %12s\n", wi, l.name.c_str(), l.kind, 100 * l.busy, bytes(l.bytes).c_str());
    t += b;
  }
  std::snprintf(b, sizeof b, "busiest ports so far%*s %8s %12s %7s %7s %7s\n", wi - 18, "", "GB/s", "bytes", "drops", "ECN", "PFC");
  t += b;
  if (s.ports.empty()) t += "  (no RoCE port has carried traffic yet)\n";
  for (const auto& p : s.ports) {
    std::snprintf(b, sizeof b, "  %-*s %8.2f %12s %7llu %7llu %7llu\n", wi, p.name.c_str(), p.gbps, bytes(p.tx_bytes).c_str(),
                  static_cast<unsigned long long>(p.drops), static_cast<unsigned long long>(p.ecn_marked),
                  static_cast<unsigned long long>(p.pause_sent));
    t += b;
  }
  std::snprintf(b, sizeof b, "errors: drops %.0f  ECN marks %.0f  PFC pauses %.0f  retransmits %.0f  (RDMA timeouts %.0f, HCCS CRC replays %.0f)\n",
                counter(s, "drops"), counter(s, "ecn_marked"), counter(s, "pfc_pause_sent"), counter(s, "rdma_retransmits"),
                counter(s, "rdma_timeouts"), counter(s, "hccs_rx_retry_cnt"));
  t += b;
  return t;
}

void LiveRenderer::operator()(const sim::LiveSnapshot& s) {
  ++reports_;
  if (mode_ == kProgress) {
    const std::string line = progress_line(s);
    if (tty_) {
      std::fprintf(out_, "\r\033[K%s", line.c_str());
      sim::g_status_line = true;
    } else {
      std::fprintf(out_, "%s\n", line.c_str());
    }
  } else {
    const std::string block = top_block(s, title_);
    if (tty_) std::fprintf(out_, "\033[H\033[2J%s", block.c_str());  // cursor home, clear screen
    else std::fprintf(out_, "%s\n", block.c_str());
  }
  std::fflush(out_);
}

void LiveRenderer::finish() {
  if (mode_ == kProgress && tty_ && sim::g_status_line) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
  sim::g_status_line = false;
}

}  // namespace hcsim
