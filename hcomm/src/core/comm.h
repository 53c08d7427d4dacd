// Communicators (docs/architecture.md#hcomm): rank, size, resolved configuration, the streams the
// library owns, and descriptors/links of the peers actually used.
#pragma once
#include <cstdint>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail {
/// The descriptor of comm rank `rank` (asked from the driver once for its global rank, then
/// cached); its `rank` field is the comm rank. Null when unknown.
const RankDesc* peer_desc(hcomm_comm_t comm, std::uint32_t rank);
/// The global (cluster) rank of comm rank `rank`: the identity on a world communicator.
inline std::uint32_t global_rank(hcomm_comm_t comm, std::uint32_t rank) {
  return comm->members.empty() ? rank : comm->members[rank];
}
/// Take / give back a notify-key comm id on the communicator's context (ctx->comm_id_use).
void hold_comm_id(hcomm_comm_t comm);
void release_comm_id(hcomm_comm_t comm);

/// hcomm_comm_init_config's two halves around topology discovery (its entry point is
/// init/init.cpp, which runs discovery between them). comm_init_check: the context, the
/// configuration (`user` over the environment), the algorithm override and this rank's
/// descriptor, into `in`. comm_init_make: the communicator, its streams and comm id, announced to
/// the recovery (core/recovery.h).
struct CommInit {
  hcomm_config_t cfg{};
  AlgoOverride algo;
  RankDesc me;
};
hcomm_result_t comm_init_check(hcomm_context_t ctx, std::uint32_t nranks, std::uint32_t rank, const hcomm_config_t* user,
                               hcomm_comm_t* out, CommInit* in);
hcomm_result_t comm_init_make(hcomm_context_t ctx, std::uint32_t nranks, std::uint32_t rank, const CommInit& in,
                              hcomm_comm_t* out);
/// A child of `parent` (split, create_group: coll/split.cpp agrees on what): comm id `id`,
/// `members` (global ranks), my rank in it, its ranks per server (0: unequal), the parent's
/// configuration; its streams and comm id, announced to the recovery. Core makes every
/// communicator: the communicator's fields are written here, not by the rooms that ask.
hcomm_result_t comm_make_child(hcomm_comm_t parent, std::uint32_t id, std::vector<std::uint32_t> members, std::uint32_t rank,
                               std::uint32_t server_size, hcomm_comm_t* out);
}  // namespace hcomm::detail
