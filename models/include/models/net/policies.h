// Network policies apart from the forwarding mechanism (docs/models/ethernet-switch.md): pure
// functions of their parameters. ECN marking probability, the ECMP flow key, PFC thresholds.
#pragma once
#include <cstdint>

#include "models/net/net_params.h"

namespace models {
namespace policy {

/// Probability that a packet entering an egress queue of `queue_bytes` is ECN-marked.
double ecn_mark_probability(const EcnParams& e, double queue_bytes);
/// The flow key ECMP hashes for a QP (salted per switch when a next hop is chosen). `salt` is the
/// fabric's hash seed (NetParams::ecmp_salt): 0 leaves the key as it is; another value remixes it.
std::uint64_t ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t udp_sport, std::uint32_t salt = 0);
/// PFC thresholds of a switch: xoff/xon per ingress port from its shared buffer and headroom.
void pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                    std::uint64_t* xoff, std::uint64_t* xon);

}  // namespace policy
}  // namespace models
