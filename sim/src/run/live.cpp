// The live view's sampler (sim/live.h, run/live.h).
#include "run/live.h"

#include <algorithm>

#include "models/machine.h"
#include "models/network.h"
#include "run/cluster.h"
#include "sim/counters.h"

namespace sim {

LiveMonitor::LiveMonitor(Cluster& c, const LiveOptions& o)
    : c_(c), o_(o), start_(std::chrono::steady_clock::now()), next_s_(o.period_s) {}

void LiveMonitor::poll() {
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (t < next_s_) return;
  next_s_ = t + o_.period_s;
  o_.report(snapshot(t));
}

LiveSnapshot LiveMonitor::snapshot(double wall_s) {
  LiveSnapshot s;
  s.wall_s = wall_s;
  s.sim_ps = c_.sched().now();
  s.events = c_.sched().events_processed();
  s.events_per_s = wall_s > last_s_ ? static_cast<double>(s.events - last_events_) / (wall_s - last_s_) : 0;
  last_s_ = wall_s;
  last_events_ = s.events;
  s.ops_total = c_.ops_total_;
  s.ops_done = c_.ops_done_;
  if (!o_.detailed) return s;
  const double now = static_cast<double>(std::max<std::uint64_t>(1, s.sim_ps));
  const models::Machine& m = c_.machine();
  const auto& ports = m.ports();
  // A link end by its short name: "npu3", "host", "switch" (a PCIe switch).
  auto end = [&](std::uint32_t e) -> std::string {
    if (e == models::kHost) return "host";
    if (e < m.npu_count()) {
      const std::string& n = m.npu_name(e);
      return n.substr(n.rfind('/') + 1);
    }
    return "switch";
  };
  for (const auto& l : m.links()) {
    if (l.kind != models::LinkKind::Hccs && l.kind != models::LinkKind::Pcie) continue;  // not HBM
    for (int dir = 0; dir < 2; ++dir) {
      const models::Port& p = ports[dir == 0 ? l.port_ab : l.port_ba];
      if (p.bytes == 0) continue;
      LiveLink x;
      x.name = l.name + " " + (dir == 0 ? end(l.a) + "->" + end(l.b) : end(l.b) + "->" + end(l.a));
      x.kind = models::link_kind_name(l.kind);
      x.busy = std::min(1.0, static_cast<double>(p.busy_ps) / now);
      x.bytes = p.bytes;
      s.links.push_back(std::move(x));
    }
  }
  auto busier = [](const LiveLink& a, const LiveLink& b) { return a.busy != b.busy ? a.busy > b.busy : a.bytes > b.bytes; };
  if (s.links.size() > o_.top_n) {
    std::partial_sort(s.links.begin(), s.links.begin() + static_cast<std::ptrdiff_t>(o_.top_n), s.links.end(), busier);
    s.links.resize(o_.top_n);
  } else {
    std::sort(s.links.begin(), s.links.end(), busier);
  }
  if (const models::Network* net = c_.network()) {
    for (std::uint32_t n = 0; n < net->nodes(); ++n)
      for (std::uint32_t k = 0; k < net->node_ports(n); ++k) {
        const auto& st = net->port_stats(n, k);
        if (st.tx_bytes == 0 && st.drops == 0 && st.pause_sent == 0) continue;
        s.ports.push_back({net->node_name(n) + "/" + std::to_string(k), st.tx_bytes, st.drops, st.ecn_marked, st.pause_sent,
                           static_cast<double>(st.tx_bytes) / (now / 1e12) / 1e9});
      }
    auto more = [](const LivePort& a, const LivePort& b) { return a.tx_bytes > b.tx_bytes; };
    if (s.ports.size() > o_.top_n) {
      std::partial_sort(s.ports.begin(), s.ports.begin() + static_cast<std::ptrdiff_t>(o_.top_n), s.ports.end(), more);
      s.ports.resize(o_.top_n);
    } else {
      std::sort(s.ports.begin(), s.ports.end(), more);
    }
  }
  s.counters = read_counters(m, c_.network());
  return s;
}

}  // namespace sim
