// One runner for every collective (docs/architecture.md#hcomm, docs/algorithms/README.md): the
// operation's prologue (recovery state, the routes to my server's peers, the shape), the
// algorithm selection (algo/select.h), the operation's markers, and the dispatch to the chosen
// shape, all of which live in algo/: the one-server mesh (algo/mesh.h), the hierarchical
// compositions (algo/hierarchical.h) or a family's schedule over all ranks (algo/flat.h).
#pragma once
#include <cstdint>

#include "algo/coll_req.h"
#include "core/objects.h"

namespace hcomm::detail {


/// Submit the operation on `main`. HCOMM_E_NOT_SUPPORT (logged) when no algorithm can run on
/// this communicator (e.g. the collective buffer cannot hold one element per rank).
hcomm_result_t run_collective(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r);

/// HCOMM_OP_RETRY's re-execution (called by recovery/failover.cpp): the pending operation
/// again, from its inputs (from p.from on, a resumption), on p.stream; not marked for a second
/// resumption (one recovery per operation).
hcomm_result_t rerun(hcomm_comm_t comm, const PendingOp& p);

}  // namespace hcomm::detail
