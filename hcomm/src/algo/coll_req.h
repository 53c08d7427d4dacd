// A collective request as the shapes run it (docs/algorithms/README.md#chunking): what the API
// validated (coll/) and every shape of algo/ reads — the flat schedules, the one-server mesh and the
// hierarchical compositions — with the few questions all of them ask of it.
#pragma once
#include <cstdint>

#include "algo/schedule.h"
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

inline bool is_v(const CollReq& r) { return r.counts != nullptr; }
inline bool block_op(CollOp op) { return op == CollOp::ReduceScatter || op == CollOp::AllGather || op == CollOp::Scatter || op == CollOp::Gather; }

// Block j's element count and displacement in the user buffer that holds all blocks.
inline std::uint64_t cnt(const CollReq& r, std::uint32_t j) { return r.counts ? r.counts[j] : r.count; }
inline std::uint64_t dsp(const CollReq& r, std::uint32_t j) { return r.displs ? r.displs[j] : j * r.count; }

/// A copy on `s` unless it is empty or in place.
void copy_if(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes);
/// The collective buffer cannot hold one element per rank: HCOMM_E_NOT_SUPPORT, logged.
hcomm_result_t too_small(hcomm_comm_t comm, const CollReq& r, std::uint32_t n);

}  // namespace hcomm::detail
