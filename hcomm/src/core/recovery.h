// The recovery's face to the rooms below it (docs/architecture.md#hcomm, docs/failover.md).
//
// The recovery (recovery/) sits above the collectives and the routing it drives: it re-runs a
// pending collective and decides routes again. The rooms below it (core's synchronize and
// communicator bookkeeping, p2p, algo, coll) still tell it what they submit and ask it on every
// failure, so they call it through this interface, which the context holds: the library's entry
// point hcomm_create_context (init/init.cpp) passes recovery/'s implementation in. No global
// function pointer, no registration by static initialisers; core includes nothing above it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail {

/// What the rooms below the recovery tell and ask it; implemented by recovery/failover.cpp
/// (failover::hooks()). Every method is the function of the same name in namespace
/// hcomm::detail::recovery below, which documents it.
class Recovery {
 public:
  virtual hcomm_result_t check(hcomm_comm_t comm) const = 0;
  virtual hcomm_result_t on_sync_failure(hcomm_stream_t s, hcomm_result_t rc, const std::string& why) const = 0;
  virtual hcomm_result_t owed_port_event(hcomm_stream_t s) const = 0;
  virtual std::uint64_t heartbeat_ns(hcomm_stream_t s) const = 0;
  virtual void uses(hcomm_comm_t comm, hcomm_stream_t s) const = 0;
  virtual void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op) const = 0;
  virtual void synced(hcomm_stream_t s) const = 0;
  virtual void slice_done(hcomm_comm_t comm, hcomm_stream_t s, std::uint64_t done, std::uint64_t total) const = 0;
  virtual hcomm_result_t agree_ids(hcomm_comm_t parent, const std::vector<std::uint32_t>& survivors,
                                   const std::uint32_t used[8], std::uint32_t all[8]) const = 0;
  virtual void maybe_restore(hcomm_comm_t comm) const = 0;
  virtual void comm_created(hcomm_comm_t comm) const = 0;
  virtual void comm_destroyed(hcomm_comm_t comm) const = 0;

 protected:
  ~Recovery() = default;
};

// The calls the rooms below make: each forwards to the context's Recovery.
namespace recovery {

/// Read the urgent messages that have arrived for this context (without blocking), then the
/// communicator's sticky error (HCOMM_SUCCESS when healthy). A rank that learns here of a
/// recovery it must take part in joins it (answering that it has nothing to re-execute).
inline hcomm_result_t check(hcomm_comm_t comm) { return comm->ctx->recovery->check(comm); }

/// stream_synchronize on `s` failed with `rc` (HCOMM_E_RUNTIME: a task of this device failed,
/// `why` says which; HCOMM_E_REMOTE: an urgent message interrupted it). Returns
/// HCOMM_E_AGAIN when the caller should keep waiting (nothing concerned this context, or every
/// affected operation was re-executed), else the code the caller returns.
inline hcomm_result_t on_sync_failure(hcomm_stream_t s, hcomm_result_t rc, const std::string& why) {
  return s->ctx->recovery->on_sync_failure(s, rc, why);
}

/// A NIC port event that arrived while no communicator work crossed the NIC is owed to the next
/// synchronize of `s` with such work: taken now (as on_sync_failure would; HCOMM_E_AGAIN when
/// nothing was owed, or the recovery re-executed everything).
inline hcomm_result_t owed_port_event(hcomm_stream_t s) { return s->ctx->recovery->owed_port_event(s); }

/// The heartbeat period for a synchronize of `s`: the smallest heartbeat_timeout_ms of the
/// communicators with work on it, in ns (0: no heartbeat).
inline std::uint64_t heartbeat_ns(hcomm_stream_t s) { return s->ctx->recovery->heartbeat_ns(s); }

/// `comm` submits work on `s` (a task failure seen by synchronizing `s` is then the
/// communicator's: it is put in error and its members are told).
inline void uses(hcomm_comm_t comm, hcomm_stream_t s) { comm->ctx->recovery->uses(comm, s); }

/// The collective just submitted on `s` (HCOMM_OP_RETRY keeps it until `s` is synchronized).
inline void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op) {
  comm->ctx->recovery->op_submitted(comm, s, op);
}

/// `s` synchronized successfully: its operations are done.
inline void synced(hcomm_stream_t s) { s->ctx->recovery->synced(s); }

/// HCOMM_OP_RETRY's slice marker (docs/failover.md#resumption): the running collective's slice
/// that ends at element `done` (per block) of `total` is complete on this rank once `s` passes
/// here (an event record; none after the last slice, nor when the collective is not marked).
inline void slice_done(hcomm_comm_t comm, hcomm_stream_t s, std::uint64_t done, std::uint64_t total) {
  comm->ctx->recovery->slice_done(comm, s, done, total);
}

/// hcomm_comm_shrink's agreement among the survivors (comm ranks of `parent`, ascending) over
/// the control channel: the OR of every survivor's `used` bitmap of notify-key comm ids (256
/// bits) into `all`. HCOMM_E_TIMEOUT when a survivor did not answer within the timeout.
inline hcomm_result_t agree_ids(hcomm_comm_t parent, const std::vector<std::uint32_t>& survivors,
                                const std::uint32_t used[8], std::uint32_t all[8]) {
  return parent->ctx->recovery->agree_ids(parent, survivors, used, all);
}

/// At every collective's start. A communicator an op retry left degraded (on its ring, borrowing
/// NICs or relaying HCCS pairs; nothing to do otherwise): the members agree (one round through
/// comm rank 0) whether every dead NIC and dead HCCS link is up again; if so every member returns
/// to the selected algorithms and the direct paths from this collective on. Every member calls
/// it at the same collective (the degraded state is alike on all, decided by the GO).
inline void maybe_restore(hcomm_comm_t comm) { comm->ctx->recovery->maybe_restore(comm); }

/// A communicator of the context was created / is being destroyed.
inline void comm_created(hcomm_comm_t comm) { comm->ctx->recovery->comm_created(comm); }
inline void comm_destroyed(hcomm_comm_t comm) { comm->ctx->recovery->comm_destroyed(comm); }

}  // namespace recovery
}  // namespace hcomm::detail
