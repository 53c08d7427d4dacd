// Leaf-uplink contention of the level-1 families (docs/algorithms/README.md#oversubscription): on
// a fabric whose leaf switches have less bandwidth up than down, the steps of a family whose
// partners sit under other leaves share the leaf's uplinks, and the alpha-beta estimate, which
// prices every byte at the NIC's rate, is too low for them. A family that talks to neighbours (the
// ring, the double tree) crosses few leaf boundaries; halving-doubling, NHR and NB send their
// largest blocks to the farthest partners.
#pragma once
#include <cstdint>
#include <vector>

#include "algo/family.h"
#include "core/objects.h"

namespace hcomm::detail {

/// The fabric under the communicator's first rail (every server's rank of index 0, in server
/// order), read once per communicator through the driver's NIC info (the LLDP neighbour of each
/// NIC and that switch's cabled bandwidth down and up). All ranks read the same group, so they all
/// reach the same choice; the other rails are taken to be cabled alike.
void read_fabric(hcomm_comm_t comm, std::uint32_t servers, std::uint32_t local);

/// By how much family f's RoCE bandwidth term grows on the fabric (>= 1) for op over the group:
/// the volume-weighted mean over its steps of max(1, max over leaves L of x_L * rho_L), x_L the
/// share of L's members whose partner at that step is under another leaf. 1 for the families and
/// operations it does not model (their partners do not follow a pattern of steps: star, pairwise,
/// the double ring, broadcast and reduce).
double contention_factor(const Family* f, CollOp op, const FabricView& v);

}  // namespace hcomm::detail
