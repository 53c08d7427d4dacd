// The simulated driver's wiring (sim/driver.h): the concerns, and the machine's signals passed
// to the one each belongs to.
#include "sim/driver.h"

namespace sim {

SimDriver::SimDriver(models::Machine& m, const Topology& t, Trace* trace, bool echo)
    : m_(m),
      ranks_(t),
      observer_(m, t, ranks_, trace, echo),
      events_(m, ranks_, observer_),
      ctrl_(ranks_, waits_),
      runtime_(m, t, ranks_, waits_, observer_, ctrl_, events_),
      sockets_(m, t, ranks_, runtime_, observer_),
      heartbeat_(ranks_, ctrl_, events_, observer_),
      rdma_(m, t, runtime_),
      host_(ctrl_, heartbeat_, sockets_) {
  load_rank_descriptors(t);
  m_.set_listener(this);
}

// Driver load: what the driver registers in the NPUs' configuration space.
void SimDriver::load_rank_descriptors(const Topology& t) {
  const models::Machine& m = m_;
  // Register each rank's descriptor in its NPU's configuration space.
  namespace R = models::npu_regs;
  for (std::uint32_t r = 0; r < t.rank_to_npu.size(); ++r) {
    const std::uint32_t npu = t.rank_to_npu[r];
    const NpuSpec& n = t.npus[npu];
    const auto& srv = t.servers[n.server];
    std::uint64_t map = 0;
    for (std::uint32_t j = 0; j < srv.npus.size() && j < 32; ++j)
      if (m_.port_between(npu, srv.npus[j]) >= 0) map |= 1ULL << j;
    m_.load_config(npu, R::kCfgHostIp, srv.host_ip);
    m_.load_config(npu, R::kCfgBaseAddr, models::npu_base_addr(npu));
    m_.load_config(npu, R::kCfgHccsPortMap, map);
    m_.load_config(npu, R::kCfgDeviceId, n.device_id);
    m_.load_config(npu, R::kCfgServer, n.server);
    m_.load_config(npu, R::kCfgRank, r);
  }
  // Every NPU's identity (device id, server) and the PCIe switch it sits under, rank or not: what
  // an HCCS partner learns in link training and pcie_peer compares (discovery).
  for (std::uint32_t npu = 0; npu < m.npu_count() && npu < t.npus.size(); ++npu) {
    m_.load_config(npu, R::kCfgDeviceId, t.npus[npu].device_id);
    m_.load_config(npu, R::kCfgServer, t.npus[npu].server);
    m_.load_config(npu, R::kCfgPcieSwitch, static_cast<std::uint64_t>(m_.pcie_switch_of(npu) + 1));
  }
}

void SimDriver::trace_tasks(bool on) {
  observer_.trace_tasks(on);
  m_.report_tasks(observer_.task_rows() || runtime_.watching_activity());
}

void SimDriver::watch_activity() {
  runtime_.watch_activity();
  m_.report_tasks(true);
}

void SimDriver::on_marker(std::uint32_t npu, std::uint32_t, std::uint64_t key, models::Tick t) {
  if (HostSockets::owns_marker(key)) sockets_.on_marker(npu, key);
  else observer_.on_marker(npu, key, t);
}

void SimDriver::on_interrupt(std::uint32_t npu, std::uint64_t) { runtime_.interrupt(npu); }

void SimDriver::on_task_done(std::uint32_t s, const models::Task& t, models::Tick start, models::Tick end) {
  const std::uint32_t npu = m_.stream_npu(s);
  runtime_.task_completed(npu);
  if (observer_.task_rows()) observer_.task_done(npu, s, t, start, end);
}

}  // namespace sim
