// The simulated driver (docs/architecture.md#the-driver-boundary): hcomm's driver boundary
// implemented over the hardware models, one class per concern, wired here:
//   SimRuntime      hcomm::DeviceRuntime   streams, tasks, memory, synchronisation, recovery calls
//   SimRdma         hcomm::RdmaNic         NIC state, counters, path probes, QP ports, MRs
//   SimHostChannel  hcomm::HostChannel     CtrlChannel, HeartbeatAgents, HostSockets
//   SimObserver     hcomm::DriverObserver  operations, routes, logs, failovers, tasks -> the trace
//   DeviceEvents    the devices' asynchronous events (port, CRC storm, peer lost)
// SimDriver owns them and is the machine's listener: it passes what the NPUs signal to the
// concern it belongs to. Blocking calls wait in the calling rank's SC_THREAD.
#pragma once
#include <cstdint>
#include <string>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/config/topology.h"
#include "sim/driver/ctrl_channel.h"
#include "sim/driver/device_events.h"
#include "sim/driver/heartbeat.h"
#include "sim/driver/host_channel.h"
#include "sim/driver/host_sockets.h"
#include "sim/driver/host_waits.h"
#include "sim/driver/observer.h"
#include "sim/driver/rdma.h"
#include "sim/driver/runtime.h"
#include "sim/trace.h"

namespace sim {

class SimDriver final : public models::MachineListener {
 public:
  SimDriver(models::Machine& m, const Topology& t, Trace* trace, bool echo_logs);
  SimDriver(const SimDriver&) = delete;
  SimDriver& operator=(const SimDriver&) = delete;

  /// The four parts the library calls (hcomm::set_driver).
  hcomm::DriverSet parts() { return {&runtime_, &rdma_, &host_, &observer_}; }
  RankMap& ranks() { return ranks_; }
  SimRuntime& runtime() { return runtime_; }
  SimRdma& rdma() { return rdma_; }
  SimObserver& observer() { return observer_; }
  DeviceEvents& events() { return events_; }
  CtrlChannel& ctrl() { return ctrl_; }
  HeartbeatAgents& heartbeats() { return heartbeat_; }
  HostSockets& host_sockets() { return sockets_; }
  /// The waits' deadlines go on the fabric's flat event queue `s` (HostWaits).
  void set_wait_queue(models::Scheduler* s) { waits_.set_queue(s); }
  /// Write one `tasks` row per completed stream task (docs/trace-schema.md).
  void trace_tasks(bool on);
  /// hcsim exec: the per-device activity events (SimRuntime::wait_activity).
  void watch_activity();
  /// hcsim exec: the host memory NPU `npu`'s host DMA reaches (the rank process's).
  void set_host_memory(std::uint32_t npu, models::HostMemory* mem) { m_.set_host_memory(npu, mem); }

  // models::MachineListener
  void on_stream_idle(std::uint32_t stream) override { runtime_.stream_progress(stream); }
  void on_sq_space(std::uint32_t stream) override { runtime_.stream_progress(stream); }
  void on_marker(std::uint32_t npu, std::uint32_t stream, std::uint64_t key, models::Tick t) override;
  void on_task_error(std::uint32_t stream, const std::string& why) override { runtime_.task_error(stream, why); }
  void on_interrupt(std::uint32_t npu, std::uint64_t pending) override;
  void on_task_done(std::uint32_t stream, const models::Task& t, models::Tick start, models::Tick end) override;

 private:
  void load_rank_descriptors(const Topology& t);
  models::Machine& m_;
  RankMap ranks_;
  HostWaits waits_;
  SimObserver observer_;
  DeviceEvents events_;
  CtrlChannel ctrl_;
  SimRuntime runtime_;
  HostSockets sockets_;
  HeartbeatAgents heartbeat_;
  SimRdma rdma_;
  SimHostChannel host_;
};

}  // namespace sim
