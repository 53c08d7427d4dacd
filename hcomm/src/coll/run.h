// One runner for every collective (docs/architecture.md#hcomm, docs/algorithms/README.md): the
// operation's shape, the algorithm selection (algo/select.h), the operation's markers, and the
// chosen algorithm — the one-server mesh, the hierarchical all-reduce, or any family's plan over
// all ranks in chunks of the collective buffer.
#pragma once
#include <cstdint>

#include "algo/plan.h"
#include "core/objects.h"

namespace hcomm::detail {

/// A validated collective request. Counts are elements; for the -v operations the arrays have
/// nranks entries (displacements in elements).
struct CollReq {
  CollOp op = CollOp::AllReduce;
  const char* kind = "";     ///< as recorded: "allreduce", "allgatherv", ...
  int dtype = 0, redop = 0;
  std::uint32_t root = 0;
  std::uint64_t in = 0, out = 0;
  std::uint64_t count = 0;   ///< AllReduce/Broadcast/Reduce: the vector; block ops: per block
  const std::uint64_t* counts = nullptr;   ///< AG-v: receive counts; RS-v: send counts; A2A-v: receive counts
  const std::uint64_t* displs = nullptr;   ///< their displacements
  const std::uint64_t* scounts = nullptr;  ///< A2A-v: send counts
  const std::uint64_t* sdispls = nullptr;  ///< A2A-v: send displacements
  /// Op retry's resumption (docs/failover.md#resumption): elements (per block) already delivered
  /// to every rank; the run starts there.
  std::uint64_t from = 0;
};

/// Submit the operation on `main`. HCOMM_E_NOT_SUPPORT (logged) when no algorithm can run on
/// this communicator (e.g. the collective buffer cannot hold one element per rank).
hcomm_result_t run_collective(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r);

/// HCOMM_OP_RETRY's re-execution (called by recovery/failover.cpp): the pending operation
/// again, from its inputs (from p.from on, a resumption), on p.stream; not marked for a second
/// resumption (one recovery per operation).
hcomm_result_t rerun(hcomm_comm_t comm, const PendingOp& p);

}  // namespace hcomm::detail
