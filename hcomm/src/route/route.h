// Routing (docs/routing.md): for each peer a communicator talks to, the transport (link-type
// priority HCCS > PCIe peer-to-peer > RoCE) and, over RoCE, the UDP source port of every QP
// stripe — the ECMP entropy that decides which spine a flow crosses. Decided at first use,
// re-decided when the NIC reports congestion or an op retry follows an RDMA write failure (the
// QPs whose re-probe is lost, route.cpp reroute_broken), and every decision is reported to the driver
// (the trace's `routes` table). State is per communicator and sparse: only peers actually used.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail::route {

enum Policy { kProbe = 0, kHash = 1 };

/// The route to `peer` for data (decided and recorded on first use; a peer decided by
/// to_control is routed now, trigger "first data").
const PeerRoute& to(hcomm_comm_t comm, const RankDesc& peer);

/// The route decided to communicator rank `rank` for data, or nullptr when none is (not used yet,
/// or decided for notifies only): a query, it decides and records nothing.
const PeerRoute* known(hcomm_comm_t comm, std::uint32_t rank);

/// The route to `peer` for a notify only (no data): a peer not decided yet that would need path
/// probes (a cross-leaf RoCE peer under the probe policy) gets a few probes for stripe 0 only (the
/// notify's), connected on a port whose probe came back; no uplink is chosen, since a 0-byte write
/// gains nothing from one; the full routing waits until data goes to it
/// (docs/routing.md#control-only-peers). Any other peer is decided as by `to`.
const PeerRoute& to_control(hcomm_comm_t comm, const RankDesc& peer);

/// Decide the routes to these communicator ranks now, together: the cross-leaf RoCE peers among
/// them are probed in one batch (one round trip per probe round for all), as a schedule's peers are
/// before it runs.
void prepare(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks);

/// As prepare, for peers that will only get notifies (a barrier's rounds): those not decided yet
/// are decided together as to_control would, one probe call for the cross-leaf ones.
void prepare_control(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks);

/// At the start of a collective: read the NIC's counters; when it received more CNPs since the
/// last check than HCOMM_ROUTE_CNP_THRESHOLD per operation, re-route this rank's RoCE peers onto
/// other source ports (recorded with trigger "congestion").
void check(hcomm_comm_t comm);

/// Bandwidth reservations on the context's NIC (route/reserve.cpp, docs/routing.md#reservation):
/// the shares other communicators of the context reserved; this communicator's share of a NIC
/// of `line_Bps` (line minus the others' shares, at most its own ceiling; `line_Bps` when nothing
/// is reserved); its RoCE connection policy with the rate cap that follows.
std::uint64_t reserved_by_others_total(hcomm_comm_t comm);
/// The communicator is going: its reservation (if any) ends. The reservations are route's: only
/// this room writes them.
void drop_reservation(hcomm_comm_t comm);
std::uint64_t share_Bps(hcomm_comm_t comm, std::uint64_t line_Bps);
RdmaPolicy rdma_policy(hcomm_comm_t comm);
/// Decide the communicator's RoCE routes again (its QPs or its share changed), recorded with `trigger`.
void redecide_roce(hcomm_comm_t comm, const std::string& trigger);
/// Decide the routes to these communicator ranks again (a link to them went down since: the
/// decision reads the ports as they are now), recorded with `trigger`.
void redecide(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks, const std::string& trigger);
/// Before an op retry's re-execution after an RDMA write failure (called by
/// recovery/failover.cpp): re-probe the paths of the communicator's RoCE QPs and move the ones
/// whose probe is lost onto new source ports, recorded with `trigger`. Returns how many QPs moved.
std::uint32_t reroute_broken(hcomm_comm_t comm, const std::string& trigger);

}  // namespace hcomm::detail::route
