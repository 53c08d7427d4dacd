// The simulated driver's shared plumbing (docs/architecture.md#sim): which rank each host thread
// and each NPU belongs to (RankMap), and the host threads' timed waits (HostWaits).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/event_queue.h"
#include "sim/config/topology.h"
#include "sim/kernel.h"

namespace sim {

/// Ranks, NPUs and the SystemC processes that run the ranks' host threads.
class RankMap {
 public:
  explicit RankMap(const Topology& t);
  std::uint32_t count() const { return static_cast<std::uint32_t>(rank_to_npu_.size()); }
  std::uint32_t npu_of(std::uint32_t rank) const { return rank_to_npu_[rank]; }
  /// The rank owning `npu` (~0u: none, e.g. an NPU outside a subset run).
  std::uint32_t rank_of(std::uint32_t npu) const { return npu < npu_rank_.size() ? npu_rank_[npu] : ~0u; }
  /// Associate SystemC process `name` with `rank`.
  void bind(const std::string& name, std::uint32_t rank) { proc_rank_[name] = rank; }
  /// The rank of the calling SystemC process (-1: none).
  std::int64_t current() const;

 private:
  const std::vector<std::uint32_t>& rank_to_npu_;
  std::vector<std::uint32_t> npu_rank_;
  std::unordered_map<std::string, std::uint32_t> proc_rank_;
};

/// The deadlines of the host threads' waits go on the fabric's flat event queue `s` instead of
/// SystemC's timed notifications: with every rank blocked in a timed wait, SystemC kept 8192
/// entries in its notification heap and reordered it at every time step (docs/architecture.md).
/// Each waiter (a stream, a control-channel receiver) keeps at most one pending record, at the
/// earliest deadline it has been asked for; a record that comes due before the current wait's
/// deadline is re-armed there, so the queue holds one record per waiter, not one per wait.
/// Without a queue (nullptr, the default) the waits are SystemC's timed waits.
class HostWaits final : public models::EventHandler {
 public:
  static constexpr std::uint64_t kCtrlWait = 1ULL << 63;  // in a waiter id: a control-channel receiver, not a stream
  void set_queue(models::Scheduler* s) { q_ = s; }
  /// Block the calling thread until `ev` (an event or an or-list of events) or time `until`;
  /// `wake` (one of them) is notified when the deadline comes. `who`: the stream's number, or a
  /// receiving rank | kCtrlWait.
  template <class Events>
  void wait_until(models::Tick until, std::uint64_t who, sc_core::sc_event& wake, const Events& ev) {
    const models::Tick now = now_ps();
    if (!q_) {
      sc_core::wait(sc_core::sc_time::from_value(until > now ? until - now : 0), ev);
      return;
    }
    Waiter& w = waiter(who);
    w.want = until;
    w.waiting = true;
    w.wake = &wake;
    if (until < w.armed) {  // earlier than the pending record (if any): a new one supersedes it
      w.armed = until;
      q_->schedule(until, this, who, ++w.record);
    }
    sc_core::wait(ev);
    waiter(who).waiting = false;  // (the vector may have grown meanwhile)
  }
  void on_event(std::uint64_t who, std::uint64_t n) override;

 private:
  static constexpr models::Tick kNoRecord = ~models::Tick{0};
  struct Waiter {
    models::Tick want = 0;           // the current wait's deadline
    models::Tick armed = kNoRecord;  // the pending record's time (kNoRecord: none pending)
    std::uint64_t record = 0;        // the pending record's number; older numbers are superseded
    bool waiting = false;            // a wait is on
    sc_core::sc_event* wake = nullptr;  // what the current wait's deadline notifies
  };
  Waiter& waiter(std::uint64_t who) {
    auto& v = (who & kCtrlWait) ? ctrl_ : stream_;
    const std::uint64_t i = who & ~kCtrlWait;
    if (v.size() <= i) v.resize(i + 1);
    return v[i];
  }
  models::Scheduler* q_ = nullptr;
  std::vector<Waiter> stream_, ctrl_;
};

}  // namespace sim
