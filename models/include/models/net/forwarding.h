// Forwarding tables of the Ethernet fabric (docs/models/ethernet-switch.md): the hosts' attachment switches,
// equal-cost next hops per switch toward every attachment switch, the ECMP choice among them, and
// path probes (trace_path) over them. It reads the fabric's nodes and global port ids (the
// fabric's, given at construction) and owns its tables.
#pragma once
#include <cstdint>
#include <vector>

#include "models/net/switch.h"
#include "models/time.h"

namespace models {

/// One switch on a traced path: the port the flow came in on and the one it leaves by.
struct PathHop {
  std::uint32_t node = 0, in_port = 0, out_port = 0;
};

class Forwarding {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  /// `nodes`: the fabric's nodes (cabling, latencies); `port_base`: node -> its first global port id.
  Forwarding(const std::vector<NetNode>& nodes, const std::vector<std::uint32_t>& port_base) : nodes_(nodes), port_base_(port_base) {}

  /// A node was added (after it is in `nodes`): a host takes the next host ordinal.
  void add_node(std::uint32_t node, bool host) {
    host_index_.resize(node + 1, kNone);
    if (host) {
      host_index_[node] = static_cast<std::uint32_t>(hosts_.size());
      hosts_.push_back(node);
    }
  }
  std::uint32_t hosts() const { return static_cast<std::uint32_t>(hosts_.size()); }
  /// A link goes from `was_up` to `up` (the path probes' fast tables hold while no link is down).
  void link_set(bool was_up, bool up) {
    if (was_up && !up) ++links_down_;
    if (!was_up && up && links_down_) --links_down_;
  }
  /// Compute the tables (after all connects and after the global port ids).
  void build();

  /// Equal-cost egress ports of switch `sw` toward host node `dst`: count, and *first points at them.
  std::uint32_t route_choices(std::uint32_t sw, std::uint32_t dst, const std::uint32_t** first) const;
  std::vector<std::uint32_t> next_hops(std::uint32_t sw, std::uint32_t dst) const;
  /// The egress port switch `sw` picks toward host node `dst` for a flow whose ECMP key is `hash` (kNone: none).
  std::uint32_t ecmp_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const;
  /// The port a control frame of a flow with ECMP key `hash` leaves switch `sw` by towards host `dst`.
  std::uint32_t ctrl_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const;
  /// Whether control frames from host `from` reach host `to` along ctrl_port_for's choices (every port up).
  bool ctrl_path_up(std::uint32_t from, std::uint32_t to, std::uint64_t hash) const;
  /// The switches a data packet of the flow with ECMP key `hash` crosses from host `src` to host
  /// `dst` (models::Network::trace_path).
  bool trace_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash, std::vector<PathHop>* hops, Tick* rtt_ps) const;

 private:
  using Port = NetPort;
  using Node = NetNode;
  const std::vector<NetNode>& nodes_;
  const std::vector<std::uint32_t>& port_base_;
  std::vector<std::vector<std::uint32_t>> hop_start_;  // per switch: offsets into hops_ by attachment switch
  std::vector<std::vector<std::uint32_t>> hops_;       // per switch: egress ports toward each attachment switch
  std::vector<std::uint32_t> attach_, attach_port_;    // host ordinal -> its switch (or ~0) and that switch's port to it
  std::vector<std::uint32_t> att_index_, att_nodes_;   // switch node <-> attachment ordinal
  std::vector<std::uint32_t> host_index_;              // node -> host ordinal (or ~0)
  std::vector<std::uint32_t> hosts_;                   // host ordinal -> node
  // Path probes (trace_path): per switch ordinal x attachment ordinal where the switch has exactly
  // one next hop, that hop in 16 bytes (egress, where it leads, the latency it adds; out ~0: none),
  // so a probe crossing a spine reads one cache line there instead of the switch's node, port and
  // route-table lines. Used while no link is down (links_down_), as then `up` needs no check.
  struct OneHop {
    std::uint32_t out, peer, peer_port, lat_ps;
  };
  std::vector<std::uint32_t> sw_ord_;  // node -> switch ordinal (or ~0: a host)
  std::vector<OneHop> one_hop_;        // empty when the table would be too large
  std::uint32_t links_down_ = 0;       // links set down and not up again
};

}  // namespace models
