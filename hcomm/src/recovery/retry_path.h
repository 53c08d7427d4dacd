// The op retry's path (recovery/retry_path.cpp, docs/failover.md#op-retry-hcomm_op_retry1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"
#include "recovery/ring_order.h"

namespace hcomm::detail::failover {

/// The op retry's ring (recovery/ring_order.h) over the merged dead pairs and these dead NICs.
RingOrderIn ring_input(hcomm_comm_t c, const std::vector<std::uint32_t>& dead_nics);
/// The dead HCCS pairs as "a-b,c-d".
std::string pairs_text(const hcomm_comm_t c);
/// The ring the re-execution runs on, with what it avoids (log line, failovers.path_after).
std::string ring_text(const hcomm_comm_t c);
/// The coordinator's description of a ring order.
std::string describe_order(const RingOrderIn& in, const std::vector<std::uint32_t>& order);
/// The comm ranks whose route from this rank crosses a dead HCCS pair of c->dead_pairs (a direct
/// HCCS route, a relay hop, a borrowed NIC's HCCS leg): to be decided again.
std::vector<std::uint32_t> routes_over_dead(hcomm_comm_t c);
/// HCCS faults only: move every dead pair to PCIe or a relay NPU and re-decide the two ends'
/// routes; *text is the path_after. False: no such path for some pair (use the ring order).
bool reroute_hccs(hcomm_comm_t c, std::string* text);
/// Dead NICs only (no dead HCCS pair, nobody lost; HCOMM_NIC_BORROW=1): give every dead NIC a
/// lender — a server peer with a live NIC and a direct HCCS link to it, fewest borrowers first,
/// then lowest comm rank, decided alike on every rank — store it in c->rec.nic_lender and re-decide
/// this rank's RoCE routes that touch a dead NIC (docs/failover.md#nic-borrowing); *text is the
/// path_after. False: some dead NIC has no lender (the ring order is used instead).
bool borrow_nics(hcomm_comm_t c, std::string* text);

}  // namespace hcomm::detail::failover
