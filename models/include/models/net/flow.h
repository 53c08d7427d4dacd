// A flow of the flow tier (docs/models/roce-nic.md#flow-tier): a QP's head message as a fluid
// flow along its path, and what the tier reads of the fabric to place it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "models/time.h"

namespace models {

/// The egress ports along a flow's path, as global port ids, kept inline: the refill walks them for
/// every flow it visits (a separate allocation per flow was its largest cache-miss cost at scale).
struct PortPath {
  static constexpr std::uint32_t kMax = 16;  ///< hops; a 3-tier Clos path has 6
  std::uint32_t n = 0;
  std::uint32_t p[kMax] = {};
  const std::uint32_t* begin() const { return p; }
  const std::uint32_t* end() const { return p + n; }
  bool operator==(const PortPath& o) const {
    if (n != o.n) return false;
    for (std::uint32_t i = 0; i < n; ++i)
      if (p[i] != o.p[i]) return false;
    return true;
  }
};

/// Cache-line aligned: the first line holds what a flow's events read (a stale completion reads
/// nothing else), the second its path, which the refill's component search walks for every flow
/// it visits (one miss per flow instead of two).
struct alignas(64) Flow {
  std::uint32_t qp = 0;
  bool active = false;
  bool tiny = false;                                  // at most one packet: not a fluid flow (flow_post)
  bool signaled = true;                               // false: no acknowledgement event (post_write)
  std::uint64_t stamp = 0;                            // identifies its current completion event
  std::uint64_t tag = 0, bytes = 0;
  double left = 0, rate = 0;                         // wire bytes still to send at t_set, rate since (bytes/s)
  Tick t_set = 0;
  Tick latency = 0;                                   // one-way path latency
  PortPath gports;                                    // egress ports along the path (offset 64)
  Tick t_end = 0;                                     // projected completion (valid when rate > 0)
  std::uint64_t sampled = 0;                          // payload bytes given to the port samples so far

  /// Wire bytes still to send at `now`, at its rate since t_set.
  double left_at(Tick now) const { return std::max(0.0, left - rate * static_cast<double>(now - t_set) / 1e12); }
};

static_assert(offsetof(Flow, gports) == 64, "a flow's path starts its second cache line");

/// What the flow tier reads of the fabric beyond the port records (bound by FlowTier::bind_ports).
class FlowFabric {
 public:
  virtual ~FlowFabric() = default;
  /// The egress ports (global ids) and one-way latency of the QP's data path now; false when a
  /// link on it is down or there is no route (routing).
  virtual bool flow_walk(std::uint32_t qp, PortPath& path, Tick& latency) const = 0;
  virtual std::uint32_t flow_hosts() const = 0;
  /// The global id of (node, port).
  virtual std::uint32_t flow_port_id(std::uint32_t node, std::uint32_t port) const = 0;
  /// The switch MMU's PFC pause threshold per ingress port at the switch of global port `g`.
  virtual std::uint64_t flow_xoff(std::uint32_t g) const = 0;
};

}  // namespace models
