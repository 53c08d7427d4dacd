// Ranks of processes and NPUs, and the host threads' timed waits (sim/driver/host_waits.h).
#include "sim/driver/host_waits.h"

namespace sim {

RankMap::RankMap(const Topology& t) : rank_to_npu_(t.rank_to_npu), npu_rank_(t.npus.size(), ~0u) {
  // NPUs without a rank (a subset run) map to ~0
  for (std::uint32_t r = 0; r < rank_to_npu_.size(); ++r) npu_rank_[rank_to_npu_[r]] = r;
}

std::int64_t RankMap::current() const {
  sc_core::sc_process_handle h = sc_core::sc_get_current_process_handle();
  if (!h.valid()) return -1;
  auto it = proc_rank_.find(h.name());
  return it == proc_rank_.end() ? -1 : it->second;
}

// A waiter's deadline record on the flat queue: when it comes due it wakes the waiter's event if
// a wait is on and its deadline has come, re-arms itself at a later deadline of the current wait,
// and is dropped when a record at an earlier deadline superseded it (its number is old).
void HostWaits::on_event(std::uint64_t who, std::uint64_t n) {
  Waiter& w = waiter(who);
  if (n != w.record) return;  // superseded by a record at an earlier deadline
  w.armed = kNoRecord;
  if (!w.waiting) return;  // the wait ended first; the next wait arms its own record
  const models::Tick now = q_->now();
  if (w.want > now) {  // the current wait's deadline is later: re-arm there
    w.armed = w.want;
    q_->schedule(w.want, this, who, ++w.record);
    return;
  }
  wake_at_now(*w.wake, false);
}

}  // namespace sim
