// The devices' asynchronous events as the hosts receive them (docs/failover.md): the NIC's port
// error and port active events with their debounce (docs/failover.md#nic-port-event), the CRC
// storm (docs/failover.md#crc-storm), and the PeerLost events the heartbeat agents and closed
// connections raise, queued per NPU in arrival order. A delivered event not yet taken interrupts
// the host's blocking waits on that device (SimRuntime::stream_synchronize).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/driver/host_waits.h"

namespace sim {

class SimObserver;

class DeviceEvents {
 public:
  /// An event on its way to a device's host. PeerLost: `peer` the lost rank, `reporter` who saw it;
  /// LinkErrorStorm: `peer` the CRC watch, `reporter` its generation when raised.
  struct Event {
    models::Tick since = 0, arrival = 0, debounce_end = 0;
    hcomm::DeviceEventKind kind = hcomm::DeviceEventKind::NicPortDown;
    std::uint32_t peer = ~0u, reporter = ~0u;
    std::string text;
  };
  /// The NIC's port-error event (IBV_EVENT_PORT_ERR): delivered to the NPU's rank delay_ps after
  /// its port's link went down, unless the link came back within debounce_ps (a flap: no event).
  /// Off: no events.
  struct PortEventParams {
    bool on = true;
    models::Tick delay_ps = 100 * models::kPsPerUs;
    models::Tick debounce_ps = 50 * models::kPsPerUs;
  };
  /// CRC storm: a link whose CRC error rate (errors per frame) is at least `threshold` raises
  /// LinkErrorStorm on its end devices' hosts `window_ps` after the rate was set, if it still
  /// holds (the firmware counts errors over one window). Off: no events.
  struct CrcStormParams {
    bool on = true;
    double threshold = 1e-5;
    models::Tick window_ps = 1000 * models::kPsPerUs;
  };

  DeviceEvents(const models::Machine& m, const RankMap& ranks, SimObserver& obs) : m_(m), ranks_(ranks), obs_(obs) {}
  void set_port_event_params(const PortEventParams& p) { port_evp_ = p; }
  void set_crc_storm_params(const CrcStormParams& p) { crc_p_ = p; }

  /// NPU `npu`'s NIC port (or its cable to the switch) went down / came up now.
  void nic_port_changed(std::uint32_t npu, bool up);
  /// A link's CRC (or RoCE corruption) rate was set now: `npus` are the devices at its ends.
  void link_error_rate(const std::string& link, const std::vector<std::uint32_t>& npus, double rate);
  /// Queue `e` for `npu`'s host (arrival order, ties in queueing order; not before now).
  void queue(std::uint32_t npu, Event e);
  /// Some event other than a port-down may be queued from now on (the waits must watch for it).
  void expect_events() { others_ = true; }
  /// Whether the host's waits must watch `npu`'s events at all.
  bool watched() const { return port_evp_.on || others_; }
  /// An event of `npu` has arrived and is not taken.
  bool pending(std::uint32_t npu) const;
  /// The earliest arrival after now of an event of `npu` (~0: none).
  models::Tick next_arrival(std::uint32_t npu) const;
  /// The event the arrivals of `npu`'s events notify (made on first use).
  sc_core::sc_event& arrivals(std::uint32_t npu);
  /// Take the earliest arrived event of `device` (Timeout: none).
  hcomm::DrvStatus poll(std::uint32_t device, hcomm::DeviceEvent* out);

  std::uint64_t crc_storms() const { return crc_storms_; }             ///< LinkErrorStorm events the hosts took
  std::uint64_t port_events_taken() const { return port_raised_; }      ///< port-down events the library took
  std::uint64_t port_events_debounced() const { return port_debounced_; }  ///< downs shorter than the debounce

 private:
  void size();  // the per-NPU state covers every NPU
  const models::Machine& m_;
  const RankMap& ranks_;
  SimObserver& obs_;
  PortEventParams port_evp_;
  CrcStormParams crc_p_;
  bool others_ = false;
  std::vector<std::deque<Event>> box_;
  std::vector<models::Tick> down_since_;
  std::vector<std::unique_ptr<sc_core::sc_event>> ev_;
  struct CrcWatch { std::string link; std::vector<std::uint32_t> npus; double rate = 0; std::uint64_t gen = 0; };
  std::vector<CrcWatch> crc_watch_;
  std::uint64_t crc_storms_ = 0, port_raised_ = 0, port_debounced_ = 0;
};

}  // namespace sim
