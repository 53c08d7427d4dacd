// The host control channel (sim/driver/ctrl_channel.h; docs/discovery.md#costs, docs/failover.md).
#include "sim/driver/ctrl_channel.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace sim {

using hcomm::DrvStatus;

namespace {

// A message into a receiver's box (ordinary or urgent): in arrival order, ties in send order; the
// box's event, made on first use, fires at the arrival.
template <class Box, class Entry>
void post(Box& box, std::unique_ptr<sc_core::sc_event>& ev, Entry entry) {
  const models::Tick arrival = entry.arrival;
  auto at = box.end();
  while (at != box.begin() && std::prev(at)->arrival > arrival) --at;
  box.insert(at, std::move(entry));
  if (!ev) ev = std::make_unique<sc_core::sc_event>();
  wake_at(*ev, arrival);
}

sc_core::sc_event& made(std::unique_ptr<sc_core::sc_event>& ev) {
  if (!ev) ev = std::make_unique<sc_core::sc_event>();
  return *ev;
}

}  // namespace

void CtrlChannel::size() {
  const std::uint32_t n = ranks_.count();
  if (box_.size() >= n) return;
  box_.resize(n);
  tx_free_.assign(n, 0);
  rx_free_.assign(n, 0);
  ev_.resize(n);
  sig_box_.resize(n);
  sig_ev_.resize(n);
}

sc_core::sc_event& CtrlChannel::signals(std::uint32_t rank) {
  size();
  return made(sig_ev_[rank]);
}
sc_core::sc_event& CtrlChannel::messages(std::uint32_t rank) {
  size();
  return made(ev_[rank]);
}

// A control message's arrival: serialized on the sender's host link, then one latency, then on
// the receiver's host link (both links' busy times move on).
models::Tick CtrlChannel::arrival(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, models::Tick now) {
  size();
  const models::Tick ser = static_cast<models::Tick>(
      static_cast<unsigned __int128>(bytes) * models::kPsPerSec / (p_.bandwidth_Bps ? p_.bandwidth_Bps : 1));
  const models::Tick tx_end = std::max(now, tx_free_[from]) + ser;
  tx_free_[from] = tx_end;
  const models::Tick arr = std::max(tx_end + p_.latency_ps, rx_free_[to] + ser);
  rx_free_[to] = arr;
  return arr;
}

DrvStatus CtrlChannel::send(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) {
  const std::uint32_t n = ranks_.count();
  if (from >= n || to >= n || !msg) return DrvStatus::Invalid;
  size();
  const models::Tick arr = arrival(from, to, msg->size(), now_ps());
  post(box_[to], ev_[to], Entry{from, arr, std::move(msg)});
  ++msgs_;
  if (open_.size() < n) open_.resize(n, false);
  open_[from] = true;
  return DrvStatus::Ok;
}

DrvStatus CtrlChannel::recv(std::uint32_t to, std::uint32_t from, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg) {
  const std::uint32_t n = ranks_.count();
  if (to >= n || (from >= n && from != hcomm::kCtrlAnyRank) || !msg) return DrvStatus::Invalid;
  sc_core::sc_event& ev = messages(to);
  const models::Tick deadline = now_ps() + timeout_ns * models::kPsPerNs;
  for (;;) {
    const models::Tick now = now_ps();
    auto& box = box_[to];
    models::Tick next = deadline;
    for (auto it = box.begin(); it != box.end(); ++it) {
      if (from != hcomm::kCtrlAnyRank && it->from != from) continue;
      if (it->arrival <= now) {
        *msg = std::move(it->msg);
        bytes_ += (*msg)->size();
        box.erase(it);
        return DrvStatus::Ok;
      }
      next = std::min(next, it->arrival);
      break;  // per receiver in arrival order: the first match is the earliest
    }
    // The sender crashed: its connection's close ends the wait (what it sent before arrived first).
    if (from != hcomm::kCtrlAnyRank && !closed_.empty()) {
      auto c = closed_.find(static_cast<std::uint64_t>(from) << 32 | to);
      if (c != closed_.end()) {
        if (c->second <= now) return DrvStatus::Failed;
        next = std::min(next, c->second);
      }
    }
    if (now >= deadline) return DrvStatus::Timeout;
    waits_.wait_until(next, to | HostWaits::kCtrlWait, ev, ev);
  }
}

// An urgent message shares the host links (and their serialization) with the ordinary ones.
DrvStatus CtrlChannel::signal(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) {
  const std::uint32_t n = ranks_.count();
  if (from >= n || to >= n || !msg) return DrvStatus::Invalid;
  size();
  const models::Tick arr = arrival(from, to, msg->size(), now_ps());
  post(sig_box_[to], sig_ev_[to], Entry{from, arr, std::move(msg)});
  ++sigs_;
  return DrvStatus::Ok;
}

bool CtrlChannel::signal_pending(std::uint32_t rank) const {
  return rank < sig_box_.size() && !sig_box_[rank].empty() && sig_box_[rank].front().arrival <= now_ps();
}

models::Tick CtrlChannel::next_signal(std::uint32_t rank) const {
  const models::Tick now = now_ps();
  if (rank < sig_box_.size())
    for (const Entry& e : sig_box_[rank])
      if (e.arrival > now) return e.arrival;
  return ~models::Tick{0};
}

DrvStatus CtrlChannel::signal_poll(std::uint32_t to, std::uint32_t* from, hcomm::CtrlMsg* msg) {
  if (to >= ranks_.count() || !from || !msg) return DrvStatus::Invalid;
  size();
  if (!signal_pending(to)) return DrvStatus::Timeout;
  auto& box = sig_box_[to];
  *from = box.front().from;
  *msg = std::move(box.front().msg);
  bytes_ += (*msg)->size();
  box.pop_front();
  return DrvStatus::Ok;
}

void CtrlChannel::close(std::uint32_t from, std::uint32_t to, models::Tick at) {
  closed_[static_cast<std::uint64_t>(from) << 32 | to] = at;
  wake_at(messages(to), at);  // a receive from it waiting now fails at the close
}

}  // namespace sim
