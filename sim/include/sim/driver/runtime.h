// The device runtime over the models (hcomm::DeviceRuntime): rank descriptors registered in and
// read back from the NPUs' configuration space, device memory, streams whose tasks go into the
// NPU's submission queue with an MMIO doorbell, events, synchronisation (a blocking wait in the
// calling rank's SC_THREAD, cut short by a device error, an urgent control message or a device
// event), the recovery calls (abort, notify reset, progress) and time.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/config/topology.h"
#include "sim/device_heap.h"
#include "sim/driver/ctrl_channel.h"
#include "sim/driver/device_events.h"
#include "sim/driver/host_waits.h"

namespace sim {

class SimObserver;

class SimRuntime final : public hcomm::DeviceRuntime {
 public:
  SimRuntime(models::Machine& m, const Topology& t, const RankMap& ranks, HostWaits& waits, SimObserver& obs,
             CtrlChannel& ctrl, DeviceEvents& events);

  std::uint32_t rank_count() override { return ranks_.count(); }
  hcomm::DrvStatus rank_desc(std::uint32_t rank, hcomm::RankDesc* out) override;
  hcomm::DrvStatus device_of(std::uint32_t device_id, std::uint32_t* device) override;
  hcomm::PairLink pair_link(std::uint32_t a, std::uint32_t b) override;
  std::uint64_t device_memory_size(std::uint32_t device) override;
  hcomm::DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) override;
  hcomm::DrvStatus mem_free(std::uint32_t device, std::uint64_t addr) override;
  hcomm::DrvStatus stream_create(std::uint32_t device, std::uint32_t* stream) override;
  hcomm::DrvStatus stream_destroy(std::uint32_t stream) override;
  hcomm::DrvStatus submit(std::uint32_t stream, const hcomm::DrvTask& t) override;
  hcomm::DrvStatus stream_synchronize(std::uint32_t stream, std::uint64_t timeout_ns, std::string* error) override;
  bool stream_idle(std::uint32_t stream) override;
  std::uint64_t event_completed(std::uint32_t device, std::uint64_t event) override;
  std::uint64_t event_time_ns(std::uint32_t device, std::uint64_t event) override;
  std::uint64_t now_ns() override;
  void host_delay(std::uint64_t ns) override;
  hcomm::DrvStatus hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) override;
  hcomm::DrvStatus pcie_peer(std::uint32_t device, std::uint32_t peer_device, bool* reachable) override;
  hcomm::DrvStatus device_rank(std::uint32_t device, std::uint32_t* rank) override;
  hcomm::DrvStatus device_abort(std::uint32_t device) override;
  hcomm::DrvStatus notify_reset(std::uint32_t device) override;
  hcomm::DrvStatus device_progress(std::uint32_t device, std::uint64_t* completed, bool* head_not_started) override;
  hcomm::DrvStatus device_event_poll(std::uint32_t device, hcomm::DeviceEvent* out) override { return events_.poll(device, out); }

  /// A submission blocked on a full SQ for this long (simulated) fails with Timeout: the
  /// stream is stuck (e.g. waiting for a notify that never comes), as HCOMM's default timeout.
  static constexpr std::uint64_t kSubmitTimeoutNs = 30ULL * 1000 * 1000 * 1000;

  // What the NPUs signal (the wiring's models::MachineListener forwards it).
  /// Stream `s` went idle or has room in its queue: its waiting host thread goes on.
  void stream_progress(std::uint32_t s);
  /// A task of stream `s` failed: the device is in error.
  void task_error(std::uint32_t s, const std::string& why);
  /// Interrupt handler: reads INT_STATUS by MMIO, logs what it says (trace, debug level) and
  /// clears it (write 1 to clear).
  void interrupt(std::uint32_t npu);
  /// NPU `npu` completed a task (watch_activity).
  void task_completed(std::uint32_t npu);

  /// hcsim exec: keep a per-device activity event that every completed task of the device
  /// notifies, for wait_activity (docs/exec.md#time).
  void watch_activity();
  bool watching_activity() const { return activity_; }
  /// hcsim exec: block the calling rank's thread until its device completes a task, a control
  /// message, urgent message or device event arrives for it, or max_ns of simulated time passes
  /// (what a polling program waits for when its poll answers "not done"). False: nothing came.
  bool wait_activity(std::uint32_t rank, std::uint64_t max_ns);

 private:
  std::string stuck_report(std::uint32_t stream) const;
  bool device_failed(std::uint32_t npu) const { return npu < dev_error_.size() && !dev_error_[npu].empty(); }
  sc_core::sc_event& stream_event(std::uint32_t s);
  models::Machine& m_;
  const Topology& topo_;
  const RankMap& ranks_;
  HostWaits& waits_;
  SimObserver& obs_;
  CtrlChannel& ctrl_;
  DeviceEvents& events_;
  std::vector<DeviceHeap> heaps_;  // one per device
  std::vector<std::uint64_t> sq_tail_;  // shadow of each stream's SQ tail doorbell
  std::vector<std::unique_ptr<sc_core::sc_event>> stream_ev_;
  bool activity_ = false;
  std::vector<std::unique_ptr<sc_core::sc_event>> act_ev_;  // per NPU (watch_activity)
  std::vector<std::string> dev_error_;            // per NPU: the first task failure (device in error), "" = none
  std::vector<std::uint32_t> dev_error_stream_;   // per NPU: the stream it happened on (its synchronize clears it)
  std::vector<std::vector<std::uint32_t>> dev_streams_;  // per device: its live streams
};

}  // namespace sim
