// The hosts' side of the driver (hcomm::HostChannel): the control channel, the heartbeat agents
// and the host sockets, each its own class; this one answers the library's calls to them.
#pragma once
#include "hcomm/driver.h"
#include "sim/driver/ctrl_channel.h"
#include "sim/driver/heartbeat.h"
#include "sim/driver/host_sockets.h"

namespace sim {

class SimHostChannel final : public hcomm::HostChannel {
 public:
  SimHostChannel(CtrlChannel& ctrl, HeartbeatAgents& hb, HostSockets& net) : ctrl_(ctrl), hb_(hb), net_(net) {}
  hcomm::DrvStatus ctrl_send(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) override {
    return ctrl_.send(from, to, std::move(msg));
  }
  hcomm::DrvStatus ctrl_recv(std::uint32_t to, std::uint32_t from, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg) override {
    return ctrl_.recv(to, from, timeout_ns, msg);
  }
  hcomm::DrvStatus ctrl_signal(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) override {
    return ctrl_.signal(from, to, std::move(msg));
  }
  hcomm::DrvStatus ctrl_signal_poll(std::uint32_t to, std::uint32_t* from, hcomm::CtrlMsg* msg) override {
    return ctrl_.signal_poll(to, from, msg);
  }
  hcomm::DrvStatus heartbeat_register(std::uint32_t rank, const hcomm::HeartbeatSpec& spec) override {
    return hb_.register_agent(rank, spec);
  }
  hcomm::DrvStatus host_socket(std::uint32_t stream, const hcomm::HostSocketOp& op) override { return net_.host_socket(stream, op); }
  const CtrlChannel& ctrl() const { return ctrl_; }

 private:
  CtrlChannel& ctrl_;
  HeartbeatAgents& hb_;
  HostSockets& net_;
};

}  // namespace sim
