// The device's RoCE NIC as the library's RDMA agent sees it (hcomm::RdmaNic, docs/routing.md): the
// NIC's state and LLDP neighbour, its counters, path probes that carry a flow's 5-tuple, a QP's
// UDP source port, memory registration.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/config/topology.h"

namespace sim {

class SimRdma final : public hcomm::RdmaNic {
 public:
  /// `host`: the calling host thread waits for the probes' replies on it (host_delay).
  SimRdma(models::Machine& m, const Topology& t, hcomm::DeviceRuntime& host) : m_(m), topo_(t), host_(host) {}
  hcomm::DrvStatus nic_info(std::uint32_t device, hcomm::NicInfo* out) override;
  hcomm::DrvStatus nic_counters(std::uint32_t device, hcomm::NicCounters* out) override;
  hcomm::DrvStatus probe_paths(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                               std::vector<hcomm::PathHop>* hops, std::vector<std::uint32_t>* start) override;
  hcomm::DrvStatus probe_egress(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                std::vector<hcomm::ProbeEgress>* out) override;
  hcomm::DrvStatus qp_connect(std::uint32_t device, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) override;
  hcomm::DrvStatus mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                               std::uint32_t* key) override;
  hcomm::DrvStatus mr_deregister(std::uint32_t device, std::uint32_t key) override;
  /// Time a path probe costs besides its round trip: the NIC sends probes from one posted template
  /// at about its line rate (a 64-byte frame is 2.6 ns at 200 Gb/s) and the host reads each reply.
  /// An assumption, docs/routing.md.
  static constexpr std::uint64_t kProbeHostNs = 5;

 private:
  hcomm::DrvStatus trace_probes(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                const std::function<void(std::uint32_t, const std::vector<models::Network::Hop>&)>& on_reply);
  models::Machine& m_;
  const Topology& topo_;
  hcomm::DeviceRuntime& host_;
  std::vector<models::Network::Hop> probe_hops_;  // trace_probes' scratch
  /// Per network node: a switch's cabled bandwidth (toward hosts, toward switches), read once
  /// (nic_info's management view of a NIC's neighbour); ~0ULL first: not read yet.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> switch_bw_;
};

}  // namespace sim
