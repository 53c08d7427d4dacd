// The devices' asynchronous events (sim/driver/device_events.h; docs/failover.md#nic-port-event,
// docs/failover.md#crc-storm).
#include "sim/driver/device_events.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "sim/driver/observer.h"

namespace sim {

using hcomm::DrvStatus;

void DeviceEvents::size() {
  if (box_.size() >= m_.npu_count()) return;
  box_.resize(m_.npu_count());
  down_since_.resize(m_.npu_count(), ~models::Tick{0});
  ev_.resize(m_.npu_count());
}

sc_core::sc_event& DeviceEvents::arrivals(std::uint32_t npu) {
  size();
  if (!ev_[npu]) ev_[npu] = std::make_unique<sc_core::sc_event>();
  return *ev_[npu];
}

void DeviceEvents::nic_port_changed(std::uint32_t npu, bool up) {
  if (!port_evp_.on || npu >= m_.npu_count()) return;
  size();
  const models::Tick now = now_ps();
  const std::uint32_t rank = ranks_.rank_of(npu);
  models::Tick& since = down_since_[npu];
  if (!up) {
    if (since != ~models::Tick{0}) return;  // already down
    since = now;
    if (rank == ~0u) return;  // no rank owns the device: nobody to tell
    Event e;
    e.since = now;
    e.arrival = now + port_evp_.delay_ps;
    e.debounce_end = now + port_evp_.debounce_ps;
    queue(npu, std::move(e));
    return;
  }
  if (since == ~models::Tick{0}) return;  // already up
  const models::Tick down_at = since;
  since = ~models::Tick{0};
  // Back within the debounce: the NIC never declared the port down, no event.
  auto& box = box_[npu];
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
      if (rank != ~0u) obs_.note(rank, 1, b);
      break;
    }
  // Declared down: the NIC raises the port-active event (IBV_EVENT_PORT_ACTIVE) once the link is
  // back, timed like the port-error event.
  if (!debounced && rank != ~0u) {
    Event e;
    e.since = now;
    e.arrival = now + port_evp_.delay_ps;
    e.kind = hcomm::DeviceEventKind::NicPortUp;
    queue(npu, std::move(e));
  }
}

void DeviceEvents::queue(std::uint32_t npu, Event e) {
  size();
  if (e.kind != hcomm::DeviceEventKind::NicPortDown) others_ = true;
  const models::Tick now = now_ps();
  const models::Tick arrival = std::max(e.arrival, now);
  e.arrival = arrival;
  auto& box = box_[npu];
  auto at = box.end();
  while (at != box.begin() && std::prev(at)->arrival > arrival) --at;  // arrival order, ties in queueing order
  box.insert(at, std::move(e));
  wake_at(arrivals(npu), arrival);
}

bool DeviceEvents::pending(std::uint32_t npu) const {
  return npu < box_.size() && !box_[npu].empty() && box_[npu].front().arrival <= now_ps();
}

models::Tick DeviceEvents::next_arrival(std::uint32_t npu) const {
  const models::Tick now = now_ps();
  if (npu < box_.size())
    for (const Event& e : box_[npu])
      if (e.arrival > now) return e.arrival;
  return ~models::Tick{0};
}

DrvStatus DeviceEvents::poll(std::uint32_t device, hcomm::DeviceEvent* out) {
  if (device >= m_.npu_count() || !out) return DrvStatus::Invalid;
  Event e;
  for (;;) {
    if (!pending(device)) return DrvStatus::Timeout;
    e = box_[device].front();
    box_[device].pop_front();
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
  const bool down_now = device < down_since_.size() && down_since_[device] != ~models::Tick{0};
  if (e.kind == hcomm::DeviceEventKind::NicPortUp) {
    char b[200];
    std::snprintf(b, sizeof b, "NIC of %s: port up since %.3f us (link state %s now)", m_.npu_name(device).c_str(),
                  static_cast<double>(e.since) / 1e6, down_now ? "down again" : "up");
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
                static_cast<double>(e.since) / 1e6, down_now ? "down" : "up again");
  out->text = b;
  return DrvStatus::Ok;
}

void DeviceEvents::link_error_rate(const std::string& link, const std::vector<std::uint32_t>& npus, double rate) {
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
    if (ranks_.rank_of(npu) == ~0u) continue;
    Event e;
    e.kind = hcomm::DeviceEventKind::LinkErrorStorm;
    e.since = now;
    e.arrival = now + crc_p_.window_ps;
    char b[300];
    std::snprintf(b, sizeof b, "link %s: CRC error rate %.3g per frame over the last %.3f us, above the threshold %.3g (CRC storm)",
                  link.c_str(), rate, static_cast<double>(crc_p_.window_ps) / 1e6, crc_p_.threshold);
    e.text = b;
    e.peer = static_cast<std::uint32_t>(w - crc_watch_.data());  // which watch (dropped when its rate changed)
    e.reporter = static_cast<std::uint32_t>(w->gen);
    queue(npu, e);
  }
}

}  // namespace sim
