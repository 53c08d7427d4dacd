// What the failover files share (recovery/failover.cpp, failover_agree.cpp, failover_events.cpp): a
// communicator's failure bookkeeping, the recovery agreement and the device events' intake. Not
// part of the library's interface; recovery/failover.h is.
#pragma once
#include <cstdint>
#include <string>

#include "core/objects.h"

namespace hcomm::detail::failover {

/// The communicator of `ctx` with id `id` (null: none, e.g. destroyed here).
hcomm_comm_t find_comm(hcomm_context_t ctx, std::uint32_t id);
/// Record the dead HCCS pair (a, b) (comm ranks), kept sorted and unique.
void add_pair(hcomm_comm_t c, std::uint32_t a, std::uint32_t b);
/// Record comm rank r as lost (sorted, unique).
void add_lost(hcomm_comm_t c, std::uint32_t r);
/// The communicator's failovers row (action retry / abort / warn ...), to the trace.
void report(hcomm_comm_t c, const char* action, const std::string& path_before, const std::string& path_after,
            std::uint64_t bytes, std::uint64_t resumed_ns, const PendingOp* op = nullptr);
/// The first error the communicator learns: sticky, logged, and the callback told.
void set_error(hcomm_comm_t c, hcomm_result_t code, std::int64_t origin, const std::string& text);
/// The communicator's one pending operation (null: none, or more than one).
const PendingOp* pending_of(hcomm_comm_t c);
/// This rank's NIC is present and its link down.
bool nic_down(hcomm_comm_t c);
/// The rank's error is an RDMA write's failure (its own or a peer's report).
bool roce_failure(hcomm_comm_t c);
/// A crashed process's closed connections reach every survivor's host within this bound (an
/// assumption: one small control message; docs/failover.md#rank-loss).
constexpr std::uint64_t kCloseBoundNs = 1000000;
/// An agreement waits this many loss bounds for a member before naming it lost.
constexpr std::uint64_t kAgreeBounds = 4;
/// The bound within which every member learns that a member is lost.
std::uint64_t loss_bound_ns(hcomm_comm_t c);
/// How long an agreement waits for a member: kAgreeBounds x loss_bound_ns, at most timeout_ms.
std::uint64_t agree_timeout_ns(hcomm_comm_t c);
/// Upgrade the communicator's error to HCOMM_E_RANK_LOST when a member is known lost.
void mark_rank_lost(hcomm_comm_t c);

/// Add this rank's dead HCCS links (its port registers) to c's dead pairs (failover_agree.cpp).
void probe_dead_links(hcomm_comm_t c);
/// The op retry's recovery agreement (failover_agree.cpp). True: every rank re-executes, from
/// c->rec.resume_from: the least of every rank's `done` (elements per block of the pending operation
/// this rank completed, docs/failover.md#resumption). `op_seq`: the operation this rank would
/// re-execute (every READY names it; members holding different ones are a NO-GO).
bool agree(hcomm_comm_t c, bool can, std::uint64_t done, std::uint64_t op_seq);

/// Take every delivered device event (failover_events.cpp): port-down events to ctx->rec.port_stash,
/// the others handled.
void take_events(hcomm_context_t ctx);
/// Register this rank's ring neighbours with the host's heartbeat agent (failover_events.cpp).
void hb_update(hcomm_context_t ctx);

}  // namespace hcomm::detail::failover
