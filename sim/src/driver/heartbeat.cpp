// The hosts' heartbeat agents (sim/driver/heartbeat.h; docs/failover.md#heartbeat-with-neighbours)
// and what a crashed process's kernel does to its connections (docs/failover.md#rank-loss).
#include "sim/driver/heartbeat.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "sim/driver/observer.h"

namespace sim {

using hcomm::DrvStatus;

namespace {
std::uint64_t pair_key(std::uint32_t from, std::uint32_t to) { return static_cast<std::uint64_t>(from) << 32 | to; }
}  // namespace

DrvStatus HeartbeatAgents::register_agent(std::uint32_t rank, const hcomm::HeartbeatSpec& spec) {
  const std::uint32_t n = ranks_.count();
  if (rank >= n) return DrvStatus::Invalid;
  for (const std::uint32_t r : spec.neighbours)
    if (r >= n) return DrvStatus::Invalid;
  if (!spec.neighbours.empty() && (spec.period_ns == 0 || spec.miss_limit == 0)) return DrvStatus::Invalid;
  if (agents_.size() < n) { agents_.resize(n); state_.resize(n, 0); }
  Agent& a = agents_[rank];
  const models::Tick now = now_ps();
  const bool was_on = a.on;
  // A neighbour dropped: this host closes the connection (that side stops watching it, not a
  // loss); one added: its silence is counted from now.
  for (const std::uint32_t r : a.nb)
    if (!std::binary_search(spec.neighbours.begin(), spec.neighbours.end(), r)) closed_.insert(pair_key(rank, r));
  for (const std::uint32_t r : spec.neighbours) {
    closed_.erase(pair_key(rank, r));
    if (!std::binary_search(a.nb.begin(), a.nb.end(), r)) { Pair& p = pair_[pair_key(r, rank)]; p.last = std::max(p.last, now); }
  }
  a.on = !spec.neighbours.empty() && state_[rank] == 0;
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
  events_.expect_events();
  if (!wake_) wake_ = std::make_unique<sc_core::sc_event>();
  if (!spawned_) {
    spawned_ = true;
    spawn_method_on(*wake_, "heartbeat_agents", [this] { run(); });
  }
  heap_.push_back(Tick{now, rank, a.gen});  // the first heartbeat goes out at registration
  std::push_heap(heap_.begin(), heap_.end(), std::greater<Tick>());
  arm();
  return DrvStatus::Ok;
}

void HeartbeatAgents::arm() {
  if (heap_.empty() || !wake_) return;
  const models::Tick now = now_ps();
  const models::Tick at = heap_.front().at;
  wake_at(*wake_, at > now ? at : now);  // an earlier notify replaces a later one
}

void HeartbeatAgents::run() {
  const models::Tick now = now_ps();
  while (!heap_.empty() && heap_.front().at <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Tick>());
    const Tick t = heap_.back();
    heap_.pop_back();
    Agent& a = agents_[t.rank];
    if (t.gen != a.gen || !a.on || state_[t.rank] != 0) continue;  // re-registered or stopped
    tick(t.rank, now);
    heap_.push_back(Tick{now + a.period_ps, t.rank, a.gen});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Tick>());
  }
  arm();
}

void HeartbeatAgents::tick(std::uint32_t m, models::Tick now) {
  Agent& a = agents_[m];
  auto known = [&](std::uint32_t r) { return std::binary_search(a.lost_known.begin(), a.lost_known.end(), r); };
  for (const std::uint32_t r : a.nb) {  // send
    if (known(r) || state_[r] == 2) continue;
    pair_[pair_key(m, r)].flight.push_back(ctrl_.arrival(m, r, kBytes, now));
    ++sent_;
  }
  const models::Tick timeout = a.period_ps * a.miss;
  for (std::size_t i = 0; i < a.nb.size(); ++i) {  // check (a LOST declaration may grow lost_known: index loop)
    const std::uint32_t r = a.nb[i];
    if (known(r) || state_[r] == 2 || closed_.count(pair_key(r, m))) continue;
    // Watched once both ends registered (the connection exists): a neighbour still creating its
    // communicator is not silent, it is not connected yet.
    if (r >= agents_.size() || agents_[r].first_reg == ~models::Tick{0}) continue;
    Pair& p = pair_[pair_key(r, m)];
    while (!p.flight.empty() && p.flight.front() <= now) { p.last = p.flight.front(); p.flight.pop_front(); }
    const models::Tick ref = std::max({p.last, a.base, agents_[r].first_reg});
    if (now - ref > timeout) declare(m, r, ref, now);
  }
}

void HeartbeatAgents::declare(std::uint32_t m, std::uint32_t r, models::Tick last, models::Tick now) {
  Agent& a = agents_[m];
  a.lost_known.insert(std::lower_bound(a.lost_known.begin(), a.lost_known.end(), r), r);
  ++lost_;
  char b[300];
  std::snprintf(b, sizeof b,
                "heartbeat: rank %u LOST: no heartbeat from it for %.3f us (last at %.3f us; period %.3f us x %u), detected by rank %u's agent at %.3f us",
                r, static_cast<double>(now - last) / 1e6, static_cast<double>(last) / 1e6, static_cast<double>(a.period_ps) / 1e6, a.miss, m,
                static_cast<double>(now) / 1e6);
  obs_.note(m, 0, b);
  DeviceEvents::Event e;
  e.kind = hcomm::DeviceEventKind::PeerLost;
  e.since = last;
  e.arrival = now;
  e.peer = r;
  e.reporter = m;
  e.text = b;
  const std::uint32_t n = ranks_.count();
  events_.queue(ranks_.npu_of(m), e);
  // The notices, in rank order, serialized on this host's link.
  for (const auto& [lo, hi] : a.notify)
    for (std::uint32_t x = lo; x < hi && x < n; ++x) {
      if (x == m || x == r) continue;
      const models::Tick arrival = ctrl_.arrival(m, x, kBytes, now);
      ctrl_.count_signal();
      if (x < state_.size() && state_[x] == 1) continue;  // a dead host reads nothing
      if (x < agents_.size()) {  // that agent knows from now on (it would drop a second notice)
        auto& k = agents_[x].lost_known;
        auto it = std::lower_bound(k.begin(), k.end(), r);
        if (it != k.end() && *it == r) continue;
        k.insert(it, r);
      }
      DeviceEvents::Event f = e;
      f.arrival = arrival;
      events_.queue(ranks_.npu_of(x), f);
    }
}

void HeartbeatAgents::rank_crashed(std::uint32_t rank) {
  if (rank >= state_.size()) {
    if (rank >= ranks_.count()) return;
    agents_.resize(ranks_.count());
    state_.resize(ranks_.count(), 0);
  }
  state_[rank] = 1;
  agents_[rank].on = false;
  // A process that never used the control channel (e.g. killed before it first ran) has no
  // connection to close.
  if (!close_notice_ || !ctrl_.used(rank)) return;
  // The kernel closes the dead process's sockets: each peer host reads the close (a FIN, one
  // small control message serialized on the dead host's link) and raises PeerLost on its device.
  const models::Tick now = now_ps();
  const std::uint32_t n = ranks_.count();
  for (std::uint32_t x = 0; x < n; ++x) {
    if (x == rank || (x < state_.size() && state_[x] != 0)) continue;  // itself, dead or exited hosts
    const models::Tick arrival = ctrl_.arrival(rank, x, kBytes, now);
    char b[200];
    std::snprintf(b, sizeof b, "rank %u's host connection closed at %.3f us: its process died at %.3f us", rank,
                  static_cast<double>(arrival) / 1e6, static_cast<double>(now) / 1e6);
    DeviceEvents::Event e;
    e.kind = hcomm::DeviceEventKind::PeerLost;
    e.since = now;
    e.arrival = arrival;
    e.peer = rank;
    e.reporter = rank;  // the lost rank itself: its connection closed (no agent detected it)
    e.text = b;
    events_.queue(ranks_.npu_of(x), e);
    ctrl_.close(rank, x, arrival);
  }
}

void HeartbeatAgents::rank_exited(std::uint32_t rank) {
  if (rank >= state_.size()) return;  // no agent ever ran
  if (state_[rank] == 0) state_[rank] = 2;
  agents_[rank].on = false;
}

}  // namespace sim
