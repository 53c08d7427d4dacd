// The simulated host's heartbeat agent (docs/failover.md#heartbeat-with-neighbours) and the CRC
// storm event (docs/failover.md#crc-storm).
//
// HCCL runs a heartbeat thread per process beside the application; here the host's agent is one
// method process of the driver for all ranks, woken at each agent's period. At each tick an agent
// sends a heartbeat (kHeartbeatBytes) to each of its neighbours over the control channel (timed and
// serialized on the host links like every control message, ctrl_arrival) and checks its
// neighbours: one from which no heartbeat arrived for miss × period is LOST. Its host then gets a
// PeerLost device event at once and every rank of its notify set gets a notice (a control message
// of kHeartbeatBytes), raised as PeerLost on that rank's device when it arrives. A crashed rank's
// agent stops sending; an exited rank's agent stops and its neighbours stop watching it.
#include <algorithm>
#include <cstdio>

#include "sim/driver.h"

namespace sim {

using hcomm::DrvStatus;

namespace {
std::uint64_t pair_key(std::uint32_t from, std::uint32_t to) { return static_cast<std::uint64_t>(from) << 32 | to; }
}  // namespace

DrvStatus SimDriver::heartbeat_register(std::uint32_t rank, const hcomm::HeartbeatSpec& spec) {
  const std::uint32_t n = rank_count();
  if (rank >= n) return DrvStatus::Invalid;
  for (const std::uint32_t r : spec.neighbours)
    if (r >= n) return DrvStatus::Invalid;
  if (!spec.neighbours.empty() && (spec.period_ns == 0 || spec.miss_limit == 0)) return DrvStatus::Invalid;
  if (hb_.size() < n) { hb_.resize(n); hb_state_.resize(n, 0); }
  ctrl_size();
  HbAgent& a = hb_[rank];
  const models::Tick now = now_ps();
  const bool was_on = a.on;
  // A neighbour dropped: this host closes the connection (that side stops watching it, not a
  // loss); one added: its silence is counted from now.
  for (const std::uint32_t r : a.nb)
    if (!std::binary_search(spec.neighbours.begin(), spec.neighbours.end(), r)) hb_closed_.insert(pair_key(rank, r));
  for (const std::uint32_t r : spec.neighbours) {
    hb_closed_.erase(pair_key(rank, r));
    if (!std::binary_search(a.nb.begin(), a.nb.end(), r)) { HbPair& p = hb_pair_[pair_key(r, rank)]; p.last = std::max(p.last, now); }
  }
  a.on = !spec.neighbours.empty() && hb_state_[rank] == 0;
  a.nb = spec.neighbours;
  a.notify = spec.notify;
  a.miss = spec.miss_limit;
  const models::Tick period = spec.period_ns * models::kPsPerNs;
  if (!a.on) { ++a.gen; return DrvStatus::Ok; }
  if (a.first_reg == ~models::Tick{0}) a.first_reg = now;
  if (was_on && period == a.period_ps) return DrvStatus::Ok;  // same period: keeps its phase (new neighbours counted from now)
  ++a.gen;
  a.period_ps = period;
  a.base = now;  // silence is counted from the registration at the latest
  dev_events_ = true;
  if (!hb_wake_) hb_wake_ = std::make_unique<sc_core::sc_event>();
  if (!hb_spawned_) {
    hb_spawned_ = true;
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.set_sensitivity(hb_wake_.get());
    o.dont_initialize();
    sc_core::sc_spawn([this] { hb_run(); }, "heartbeat_agents", &o);
  }
  hb_heap_.push_back(HbTick{now, rank, a.gen});  // the first heartbeat goes out at registration
  std::push_heap(hb_heap_.begin(), hb_heap_.end(), std::greater<HbTick>());
  hb_arm();
  return DrvStatus::Ok;
}

void SimDriver::hb_arm() {
  if (hb_heap_.empty() || !hb_wake_) return;
  const models::Tick now = now_ps();
  const models::Tick at = hb_heap_.front().at;
  wake_at(*hb_wake_, at > now ? at : now);  // an earlier notify replaces a later one
}

void SimDriver::hb_run() {
  const models::Tick now = now_ps();
  while (!hb_heap_.empty() && hb_heap_.front().at <= now) {
    std::pop_heap(hb_heap_.begin(), hb_heap_.end(), std::greater<HbTick>());
    const HbTick t = hb_heap_.back();
    hb_heap_.pop_back();
    HbAgent& a = hb_[t.rank];
    if (t.gen != a.gen || !a.on || hb_state_[t.rank] != 0) continue;  // re-registered or stopped
    hb_tick(t.rank, now);
    hb_heap_.push_back(HbTick{now + a.period_ps, t.rank, a.gen});
    std::push_heap(hb_heap_.begin(), hb_heap_.end(), std::greater<HbTick>());
  }
  hb_arm();
}

void SimDriver::hb_tick(std::uint32_t m, models::Tick now) {
  HbAgent& a = hb_[m];
  auto known = [&](std::uint32_t r) { return std::binary_search(a.lost_known.begin(), a.lost_known.end(), r); };
  for (const std::uint32_t r : a.nb) {  // send
    if (known(r) || hb_state_[r] == 2) continue;
    hb_pair_[pair_key(m, r)].flight.push_back(ctrl_arrival(m, r, kHeartbeatBytes, now));
    ++hb_sent_;
  }
  const models::Tick timeout = a.period_ps * a.miss;
  for (std::size_t i = 0; i < a.nb.size(); ++i) {  // check (a LOST declaration may grow lost_known: index loop)
    const std::uint32_t r = a.nb[i];
    if (known(r) || hb_state_[r] == 2 || hb_closed_.count(pair_key(r, m))) continue;
    // Watched once both ends registered (the connection exists): a neighbour still creating its
    // communicator is not silent, it is not connected yet.
    if (r >= hb_.size() || hb_[r].first_reg == ~models::Tick{0}) continue;
    HbPair& p = hb_pair_[pair_key(r, m)];
    while (!p.flight.empty() && p.flight.front() <= now) { p.last = p.flight.front(); p.flight.pop_front(); }
    const models::Tick ref = std::max({p.last, a.base, hb_[r].first_reg});
    if (now - ref > timeout) hb_declare(m, r, ref, now);
  }
}

void SimDriver::hb_declare(std::uint32_t m, std::uint32_t r, models::Tick last, models::Tick now) {
  HbAgent& a = hb_[m];
  a.lost_known.insert(std::lower_bound(a.lost_known.begin(), a.lost_known.end(), r), r);
  ++hb_lost_;
  char b[300];
  std::snprintf(b, sizeof b,
                "heartbeat: rank %u LOST: no heartbeat from it for %.3f us (last at %.3f us; period %.3f us x %u), detected by rank %u's agent at %.3f us",
                r, static_cast<double>(now - last) / 1e6, static_cast<double>(last) / 1e6, static_cast<double>(a.period_ps) / 1e6, a.miss, m,
                static_cast<double>(now) / 1e6);
  note(m, 0, b);
  PortEvt e;
  e.kind = hcomm::DeviceEventKind::PeerLost;
  e.since = last;
  e.arrival = now;
  e.peer = r;
  e.reporter = m;
  e.text = b;
  const std::uint32_t n = static_cast<std::uint32_t>(topo_.rank_to_npu.size());
  queue_event(topo_.rank_to_npu[m], e);
  // The notices, in rank order, serialized on this host's link.
  for (const auto& [lo, hi] : a.notify)
    for (std::uint32_t x = lo; x < hi && x < n; ++x) {
      if (x == m || x == r) continue;
      const models::Tick arrival = ctrl_arrival(m, x, kHeartbeatBytes, now);
      ++ctrl_sigs_;
      if (x < hb_state_.size() && hb_state_[x] == 1) continue;  // a dead host reads nothing
      if (x < hb_.size()) {  // that agent knows from now on (it would drop a second notice)
        auto& k = hb_[x].lost_known;
        auto it = std::lower_bound(k.begin(), k.end(), r);
        if (it != k.end() && *it == r) continue;
        k.insert(it, r);
      }
      PortEvt f = e;
      f.arrival = arrival;
      queue_event(topo_.rank_to_npu[x], f);
    }
}

void SimDriver::rank_crashed(std::uint32_t rank) {
  if (rank >= hb_state_.size()) { if (rank >= rank_count()) return; hb_.resize(rank_count()); hb_state_.resize(rank_count(), 0); }
  hb_state_[rank] = 1;
  hb_[rank].on = false;
  // A process that never used the control channel (e.g. killed before it first ran) has no
  // connection to close.
  if (!close_notice_ || rank >= ctrl_open_.size() || !ctrl_open_[rank]) return;
  // The kernel closes the dead process's sockets: each peer host reads the close (a FIN, one
  // small control message serialized on the dead host's link) and raises PeerLost on its device.
  ctrl_size();
  const models::Tick now = now_ps();
  const std::uint32_t n = static_cast<std::uint32_t>(topo_.rank_to_npu.size());
  for (std::uint32_t x = 0; x < n; ++x) {
    if (x == rank || (x < hb_state_.size() && hb_state_[x] != 0)) continue;  // itself, dead or exited hosts
    const models::Tick arrival = ctrl_arrival(rank, x, kHeartbeatBytes, now);
    closed_[pair_key(rank, x)] = arrival;
    char b[200];
    std::snprintf(b, sizeof b, "rank %u's host connection closed at %.3f us: its process died at %.3f us", rank,
                  static_cast<double>(arrival) / 1e6, static_cast<double>(now) / 1e6);
    PortEvt e;
    e.kind = hcomm::DeviceEventKind::PeerLost;
    e.since = now;
    e.arrival = arrival;
    e.peer = rank;
    e.reporter = rank;  // the lost rank itself: its connection closed (no agent detected it)
    e.text = b;
    queue_event(topo_.rank_to_npu[x], e);
    if (!ctrl_ev_[x]) ctrl_ev_[x] = std::make_unique<sc_core::sc_event>();
    wake_at(*ctrl_ev_[x], arrival);  // a ctrl_recv from it waiting now fails at the close
  }
}

void SimDriver::rank_exited(std::uint32_t rank) {
  if (rank >= hb_state_.size()) return;  // no agent ever ran
  if (hb_state_[rank] == 0) hb_state_[rank] = 2;
  hb_[rank].on = false;
}

// ---- CRC storm (docs/failover.md#crc-storm) ----

void SimDriver::link_error_rate(const std::string& link, const std::vector<std::uint32_t>& npus, double rate) {
  if (!crc_p_.on) return;
  CrcWatch* w = nullptr;
  for (CrcWatch& c : crc_watch_)
    if (c.link == link) w = &c;
  if (!w) { crc_watch_.push_back(CrcWatch{link, npus, 0, 0}); w = &crc_watch_.back(); }
  w->rate = rate;
  ++w->gen;
  if (rate < crc_p_.threshold) return;
  // The firmware counts the link's CRC errors over one window; at its end the rate still holds
  // (the same setting: generation unchanged): the storm is raised on both ends' hosts.
  const models::Tick now = now_ps();
  for (const std::uint32_t npu : npus) {
    if (npu >= npu_rank_.size() || npu_rank_[npu] == ~0u) continue;
    PortEvt e;
    e.kind = hcomm::DeviceEventKind::LinkErrorStorm;
    e.since = now;
    e.arrival = now + crc_p_.window_ps;
    char b[300];
    std::snprintf(b, sizeof b, "link %s: CRC error rate %.3g per frame over the last %.3f us, above the threshold %.3g (CRC storm)",
                  link.c_str(), rate, static_cast<double>(crc_p_.window_ps) / 1e6, crc_p_.threshold);
    e.text = b;
    e.peer = static_cast<std::uint32_t>(w - crc_watch_.data());  // which watch (dropped when its rate changed)
    e.reporter = static_cast<std::uint32_t>(w->gen);
    queue_event(npu, e);
  }
}

}  // namespace sim
