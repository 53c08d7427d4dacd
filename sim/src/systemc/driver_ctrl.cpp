// The simulated driver's host control channel (the bootstrap's TCP between the ranks' host
// processes: docs/discovery.md#costs) and its failover calls (docs/failover.md): urgent messages,
// device abort and notify reset, device progress read by MMIO, and the `failovers` rows.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <utility>

#include "sim/driver.h"

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

}  // namespace

void SimDriver::ctrl_size() {
  const std::uint32_t n = rank_count();
  if (ctrl_box_.size() >= n) return;
  ctrl_box_.resize(n);
  ctrl_tx_free_.assign(n, 0);
  ctrl_rx_free_.assign(n, 0);
  ctrl_ev_.resize(n);
  sig_box_.resize(n);
  sig_ev_.resize(n);
}

// A control message's arrival: serialized on the sender's host link, then one latency, then on
// the receiver's host link (both links' busy times move on).
models::Tick SimDriver::ctrl_arrival(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, models::Tick now) {
  const models::Tick ser = static_cast<models::Tick>(
      static_cast<unsigned __int128>(bytes) * models::kPsPerSec / (ctrl_.bandwidth_Bps ? ctrl_.bandwidth_Bps : 1));
  const models::Tick tx_end = std::max(now, ctrl_tx_free_[from]) + ser;
  ctrl_tx_free_[from] = tx_end;
  const models::Tick arrival = std::max(tx_end + ctrl_.latency_ps, ctrl_rx_free_[to] + ser);
  ctrl_rx_free_[to] = arrival;
  return arrival;
}

DrvStatus SimDriver::ctrl_send(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) {
  const std::uint32_t n = rank_count();
  if (from >= n || to >= n || !msg) return DrvStatus::Invalid;
  ctrl_size();
  const models::Tick now = now_ps();
  const models::Tick arrival = ctrl_arrival(from, to, msg->size(), now);
  post(ctrl_box_[to], ctrl_ev_[to], CtrlEntry{from, arrival, std::move(msg)});
  ++ctrl_msgs_;
  if (ctrl_open_.size() < n) ctrl_open_.resize(n, false);
  ctrl_open_[from] = true;
  return DrvStatus::Ok;
}

DrvStatus SimDriver::ctrl_recv(std::uint32_t to, std::uint32_t from, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg) {
  const std::uint32_t n = rank_count();
  if (to >= n || (from >= n && from != hcomm::kCtrlAnyRank) || !msg) return DrvStatus::Invalid;
  ctrl_size();
  if (!ctrl_ev_[to]) ctrl_ev_[to] = std::make_unique<sc_core::sc_event>();
  const models::Tick deadline = now_ps() + timeout_ns * models::kPsPerNs;
  for (;;) {
    const models::Tick now = now_ps();
    auto& box = ctrl_box_[to];
    models::Tick next = deadline;
    for (auto it = box.begin(); it != box.end(); ++it) {
      if (from != hcomm::kCtrlAnyRank && it->from != from) continue;
      if (it->arrival <= now) {
        *msg = std::move(it->msg);
        ctrl_bytes_ += (*msg)->size();
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
    wait_until(next, to | kCtrlWait, *ctrl_ev_[to]);
  }
}

// ---- failover (docs/failover.md) ----

// An urgent message shares the host links (and their serialization) with the ordinary ones.
DrvStatus SimDriver::ctrl_signal(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) {
  const std::uint32_t n = rank_count();
  if (from >= n || to >= n || !msg) return DrvStatus::Invalid;
  ctrl_size();
  const models::Tick now = now_ps();
  const models::Tick arrival = ctrl_arrival(from, to, msg->size(), now);
  post(sig_box_[to], sig_ev_[to], CtrlEntry{from, arrival, std::move(msg)});
  ++ctrl_sigs_;
  return DrvStatus::Ok;
}

bool SimDriver::signal_pending(std::uint32_t rank) const {
  return rank < sig_box_.size() && !sig_box_[rank].empty() && sig_box_[rank].front().arrival <= now_ps();
}

DrvStatus SimDriver::ctrl_signal_poll(std::uint32_t to, std::uint32_t* from, hcomm::CtrlMsg* msg) {
  if (to >= rank_count() || !from || !msg) return DrvStatus::Invalid;
  ctrl_size();
  if (!signal_pending(to)) return DrvStatus::Timeout;
  auto& box = sig_box_[to];
  *from = box.front().from;
  *msg = std::move(box.front().msg);
  ctrl_bytes_ += (*msg)->size();
  box.pop_front();
  return DrvStatus::Ok;
}

DrvStatus SimDriver::device_abort(std::uint32_t device) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  for (const std::uint32_t s : device < dev_streams_.size() ? dev_streams_[device] : std::vector<std::uint32_t>{}) {
    if (!m_.stream_valid(s) || m_.stream_npu(s) != device) continue;
    m_.abort_stream(s);
    if (s < sq_tail_.size()) m_.mmio_read(device, models::npu_regs::stream_reg(s, models::npu_regs::kSqTail), &sq_tail_[s]);
  }
  m_.reset_qps(device);  // as HCCL's retry resets its links' QPs: the aborted writes are flushed
  if (device < dev_error_.size()) dev_error_[device].clear();
  return DrvStatus::Ok;
}

DrvStatus SimDriver::notify_reset(std::uint32_t device) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  m_.reset_notifies(device);
  return DrvStatus::Ok;
}

// Read from the stream registers by MMIO (SQ head: tasks started, CQ tail: tasks completed).
DrvStatus SimDriver::device_progress(std::uint32_t device, std::uint64_t* completed, bool* head_not_started) {
  if (device >= m_.npu_count() || !completed || !head_not_started) return DrvStatus::Invalid;
  *completed = 0;
  *head_not_started = false;
  namespace R = models::npu_regs;
  if (device >= dev_streams_.size()) return DrvStatus::Ok;
  for (const std::uint32_t s : dev_streams_[device]) {  // the device's own streams only (O(its streams))
    if (!m_.stream_valid(s) || m_.stream_npu(s) != device) continue;
    std::uint64_t started = 0, done = 0;
    m_.mmio_read(device, R::stream_reg(s, R::kSqHead), &started);
    m_.mmio_read(device, R::stream_reg(s, R::kCqTail), &done);
    *completed += done;
    if (!m_.stream_idle(s) && started == done) *head_not_started = true;
  }
  return DrvStatus::Ok;
}

// ---- NIC port events (docs/failover.md#nic-port-event) ----

void SimDriver::port_size() {
  if (port_box_.size() >= m_.npu_count()) return;
  port_box_.resize(m_.npu_count());
  port_down_since_.resize(m_.npu_count(), ~models::Tick{0});
  port_ev_.resize(m_.npu_count());
}

void SimDriver::nic_port_changed(std::uint32_t npu, bool up) {
  if (!port_evp_.on || npu >= m_.npu_count()) return;
  port_size();
  const models::Tick now = now_ps();
  const std::uint32_t rank = npu < npu_rank_.size() ? npu_rank_[npu] : ~0u;
  models::Tick& since = port_down_since_[npu];
  if (!up) {
    if (since != ~models::Tick{0}) return;  // already down
    since = now;
    if (rank == ~0u) return;  // no rank owns the device: nobody to tell
    PortEvt e;
    e.since = now;
    e.arrival = now + port_evp_.delay_ps;
    e.debounce_end = now + port_evp_.debounce_ps;
    queue_event(npu, std::move(e));
    return;
  }
  if (since == ~models::Tick{0}) return;  // already up
  const models::Tick down_at = since;
  since = ~models::Tick{0};
  // Back within the debounce: the NIC never declared the port down, no event.
  auto& box = port_box_[npu];
  bool debounced = false;
  for (auto it = box.begin(); it != box.end(); ++it)
    if (it->kind == hcomm::DeviceEventKind::NicPortDown && it->since == down_at && now < it->debounce_end) {
      debounced = true;
      box.erase(it);
      ++port_debounced_;
      char b[200];
      std::snprintf(b, sizeof b, "NIC of %s: port down for %.3f us, shorter than the debounce (%.3f us): no port event",
                    m_.npu_name(npu).c_str(), static_cast<double>(now - down_at) / 1e6,
                    static_cast<double>(port_evp_.debounce_ps) / 1e6);
      if (rank != ~0u) note(rank, 1, b);
      break;
    }
  // Declared down: the NIC raises the port-active event (IBV_EVENT_PORT_ACTIVE) once the link is
  // back, timed like the port-error event.
  if (!debounced && rank != ~0u) {
    PortEvt e;
    e.since = now;
    e.arrival = now + port_evp_.delay_ps;
    e.kind = hcomm::DeviceEventKind::NicPortUp;
    queue_event(npu, std::move(e));
  }
}

void SimDriver::queue_event(std::uint32_t npu, PortEvt e) {
  port_size();
  if (e.kind != hcomm::DeviceEventKind::NicPortDown) dev_events_ = true;
  const models::Tick now = now_ps();
  const models::Tick arrival = std::max(e.arrival, now);
  e.arrival = arrival;
  auto& box = port_box_[npu];
  auto at = box.end();
  while (at != box.begin() && std::prev(at)->arrival > arrival) --at;  // arrival order, ties in queueing order
  box.insert(at, std::move(e));
  if (!port_ev_[npu]) port_ev_[npu] = std::make_unique<sc_core::sc_event>();
  wake_at(*port_ev_[npu], arrival);
}

bool SimDriver::port_event_pending(std::uint32_t npu) const {
  return npu < port_box_.size() && !port_box_[npu].empty() && port_box_[npu].front().arrival <= now_ps();
}

models::Tick SimDriver::next_interrupt(std::uint32_t rank, std::uint32_t npu) const {
  const models::Tick now = now_ps();
  models::Tick next = ~models::Tick{0};
  if (rank < sig_box_.size())
    for (const CtrlEntry& e : sig_box_[rank])
      if (e.arrival > now) { next = std::min(next, e.arrival); break; }
  if (npu < port_box_.size())
    for (const PortEvt& e : port_box_[npu])
      if (e.arrival > now) { next = std::min(next, e.arrival); break; }
  return next;
}

DrvStatus SimDriver::device_event_poll(std::uint32_t device, hcomm::DeviceEvent* out) {
  if (device >= m_.npu_count() || !out) return DrvStatus::Invalid;
  PortEvt e;
  for (;;) {
    if (!port_event_pending(device)) return DrvStatus::Timeout;
    e = port_box_[device].front();
    port_box_[device].pop_front();
    if (e.kind != hcomm::DeviceEventKind::LinkErrorStorm) break;
    // A CRC storm whose link's rate changed within the window was not seen by the firmware.
    if (e.peer < crc_watch_.size() && crc_watch_[e.peer].gen == e.reporter) {
      e.peer = e.reporter = ~0u;
      ++crc_storms_;
      break;
    }
  }
  out->kind = e.kind;
  out->since_ns = e.since / models::kPsPerNs;
  out->at_ns = e.arrival / models::kPsPerNs;
  out->peer = e.peer;
  out->reporter = e.reporter;
  if (e.kind == hcomm::DeviceEventKind::NicPortUp) {
    char b[200];
    std::snprintf(b, sizeof b, "NIC of %s: port up since %.3f us (link state %s now)", m_.npu_name(device).c_str(),
                  static_cast<double>(e.since) / 1e6,
                  device < port_down_since_.size() && port_down_since_[device] != ~models::Tick{0} ? "down again" : "up");
    out->text = b;
    return DrvStatus::Ok;
  }
  if (e.kind != hcomm::DeviceEventKind::NicPortDown) {
    out->text = e.text;
    return DrvStatus::Ok;
  }
  ++port_raised_;
  char b[200];
  std::snprintf(b, sizeof b, "NIC of %s: port down since %.3f us (link state %s now)", m_.npu_name(device).c_str(),
                static_cast<double>(e.since) / 1e6,
                device < port_down_since_.size() && port_down_since_[device] != ~models::Tick{0} ? "down" : "up again");
  out->text = b;
  return DrvStatus::Ok;
}

void SimDriver::fault_injected() { fault_ps_.push_back(now_ps()); }

void SimDriver::failover_reported(std::uint32_t device, const hcomm::FailoverInfo& f) {
  (void)device;
  failovers_.push_back(f);
  if (!trace_) return;
  FailoverRow row;
  row.comm = f.comm;
  row.detected_by = f.rank;
  row.origin = f.origin;
  row.op_seq = f.op_seq;
  row.bytes_resent = f.bytes_resent;
  row.fault = f.fault;
  row.action = f.action;
  row.path_before = f.path_before;
  row.path_after = f.path_after;
  row.code = f.code;
  row.detected_ns = static_cast<double>(f.detected_ns);
  row.resumed_ns = f.resumed_ns ? static_cast<double>(f.resumed_ns) : std::numeric_limits<double>::quiet_NaN();
  // The injected fault it follows: the last one at or before its detection.
  row.fault_at_ns = std::numeric_limits<double>::quiet_NaN();
  for (const models::Tick t : fault_ps_)
    if (t <= f.detected_ns * models::kPsPerNs) row.fault_at_ns = static_cast<double>(t) / models::kPsPerNs;
  trace_->failover(row);
}

}  // namespace sim
