// Failover (docs/failover.md): prompt notification of a fault to every rank of the communicators
// it hits, the sticky asynchronous error, and HCOMM_OP_RETRY's agreement and re-execution.
//
// A rank whose device task fails tells the other members of each of its communicators with an
// urgent control message (the driver's ctrl_signal, which interrupts their blocking waits). A
// recovery, when op_retry is on, is agreed through a coordinator (the lowest comm rank not
// lost) in two rounds over the ordinary control channel: every rank aborts its streams and says
// READY (whether it still holds the operation and which of its HCCS links are down); the
// coordinator sends RESET once all answered (no transfer of the failed attempt is in flight any
// more), every rank zeroes its notify registers and answers; then GO, with the merged dead links,
// and every rank re-executes the operation from its inputs on a flat ring that avoids them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"
#include "core/recovery.h"

namespace hcomm::detail::failover {

/// recovery/'s implementation of the interface the rooms below call it through (core/recovery.h,
/// which documents each call); hcomm_create_context (init/init.cpp) gives it to every context.
const Recovery& hooks();

// The implementations, one per method of Recovery (core/recovery.h).

/// Read the urgent messages that have arrived for this context (without blocking), then the
/// communicator's sticky error (HCOMM_SUCCESS when healthy). A rank that learns here of a
/// recovery it must take part in joins it (answering that it has nothing to re-execute).
hcomm_result_t check(hcomm_comm_t comm);

/// stream_synchronize on `s` failed with `rc` (HCOMM_E_RUNTIME: a task of this device failed,
/// `why` says which; HCOMM_E_REMOTE: an urgent message interrupted it). Returns
/// HCOMM_E_AGAIN when the caller should keep waiting (nothing concerned this context, or every
/// affected operation was re-executed), else the code the caller returns.
hcomm_result_t on_sync_failure(hcomm_stream_t s, hcomm_result_t rc, const std::string& why);

/// A NIC port event that arrived while no communicator work crossed the NIC is owed to the next
/// synchronize of `s` with such work: taken now (as on_sync_failure would; HCOMM_E_AGAIN when
/// nothing was owed, or the recovery re-executed everything).
hcomm_result_t owed_port_event(hcomm_stream_t s);

/// The heartbeat period for a synchronize of `s`: the smallest heartbeat_timeout_ms of the
/// communicators with work on it, in ns (0: no heartbeat).
std::uint64_t heartbeat_ns(hcomm_stream_t s);
/// `comm` submits work on `s` (a task failure seen by synchronizing `s` is then the
/// communicator's: it is put in error and its members are told).
void uses(hcomm_comm_t comm, hcomm_stream_t s);
/// The collective just submitted on `s` (HCOMM_OP_RETRY keeps it until `s` is synchronized).
void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op);
/// `s` synchronized successfully: its operations are done.
void synced(hcomm_stream_t s);

/// HCOMM_OP_RETRY's slice marker (docs/failover.md#resumption): the running collective's slice
/// that ends at element `done` (per block) of `total` is complete on this rank once `s` passes
/// here (an event record; none after the last slice, nor when the collective is not marked).
void slice_done(hcomm_comm_t comm, hcomm_stream_t s, std::uint64_t done, std::uint64_t total);

/// hcomm_comm_shrink's agreement among the survivors (comm ranks of `parent`, ascending) over
/// the control channel: the OR of every survivor's `used` bitmap of notify-key comm ids (256
/// bits) into `all`. HCOMM_E_TIMEOUT when a survivor did not answer within the timeout.
hcomm_result_t agree_ids(hcomm_comm_t parent, const std::vector<std::uint32_t>& survivors, const std::uint32_t used[8],
                         std::uint32_t all[8]);

/// At every collective's start. A communicator an op retry left degraded (on its ring, borrowing
/// NICs or relaying HCCS pairs; nothing to do otherwise): the members agree (one round through
/// comm rank 0) whether every dead NIC and dead HCCS link is up again; if so every member returns
/// to the selected algorithms and the direct paths from this collective on. Every member calls
/// it at the same collective (the degraded state is alike on all, decided by the GO).
void maybe_restore(hcomm_comm_t comm);

void comm_created(hcomm_comm_t comm);
void comm_destroyed(hcomm_comm_t comm);

}  // namespace hcomm::detail::failover
