// What the NPU side's RDMA engine asks of the RoCE network (docs/models/README.md): QPs between
// hosts and the writes posted on them. The composer models::Network implements it, so neither the
// nic room nor the network side includes the other's composer, and the network side reaches
// nothing of the NPU side.
#pragma once
#include <cstdint>
#include <vector>

#include "models/nic/rc_transport.h"

namespace models {

/// What the RDMA engine asks of the RoCE network: QPs between hosts and the writes posted on them
/// (implemented by the composer models::Network, which reaches the RC transport and the fabric).
class RdmaNetwork {
 public:
  virtual void set_listener(NetworkListener* l) = 0;
  virtual std::uint32_t create_qp(std::uint32_t src_host, std::uint32_t dst_host, std::uint16_t udp_sport) = 0;
  virtual void post_write(std::uint32_t qp, std::uint64_t bytes, std::uint64_t tag, bool signaled) = 0;
  virtual std::uint16_t qp_sport(std::uint32_t qp) const = 0;
  virtual void set_qp_rate_cap(std::uint32_t qp, std::uint64_t Bps) = 0;
  virtual void set_qp_retry_count(std::uint32_t qp, std::uint32_t n) = 0;
  virtual void reset_qp(std::uint32_t qp) = 0;
  virtual const std::vector<std::uint32_t>& host_qps(std::uint32_t host) const = 0;

 protected:
  ~RdmaNetwork() = default;
};

}  // namespace models
