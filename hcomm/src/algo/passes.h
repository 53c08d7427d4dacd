// How much of an operation one pass through the collective buffer (of `ccl` bytes) carries, for
// each way of running it (docs/algorithms/README.md#chunking). The runners cut an operation into
// passes with these, and the selection's estimates and HCOMM_DEBUG=3's decision line count the
// passes with them: one formula per runner, so that what is estimated and logged is what runs.
#pragma once
#include <algorithm>
#include <cstdint>

namespace hcomm::detail::passes {

/// A family's schedule over all ranks (vector operations, and block operations' n blocks together):
/// the first half of the buffer is the work area, the second the staging slots.
inline std::uint64_t flat_area(std::uint64_t ccl, std::uint64_t esz) { return ccl / 2 / esz * esz; }

/// A family's schedule over all ranks for a block operation: elements of every block in a pass.
inline std::uint64_t flat_block_elems(std::uint64_t ccl, std::uint64_t n, std::uint64_t esz) { return flat_area(ccl, esz) / esz / n; }

/// The one-server mesh all-reduce: the whole buffer, no staging.
inline std::uint64_t mesh_area(std::uint64_t ccl) { return ccl; }

/// The one-server mesh all-gather / reduce-scatter: elements per rank in a pass (each rank's block
/// of the pass sits in its own buffer).
inline std::uint64_t mesh_block_elems(std::uint64_t ccl, std::uint64_t esz) { return std::max<std::uint64_t>(1, ccl / esz); }

/// The hierarchical all-reduce, L ranks per server, `slots` staging slots of the level-1 family:
/// a chunk's slice is 1/L of it and no family stages more than half a slice per slot, so a chunk
/// takes L / (L + slots / 2) of the buffer (a multiple of L elements); one rank per server: half.
inline std::uint64_t hier_allreduce_area(std::uint64_t ccl, std::uint64_t L, std::uint64_t slots, std::uint64_t esz) {
  if (L <= 1) return flat_area(ccl, esz);
  return ccl / (2 * L + slots) * (2 * L) / (L * esz) * (L * esz);
}

/// The hierarchical all-gather: elements per rank in a pass (the n blocks gathered in the first half).
inline std::uint64_t hier_allgather_elems(std::uint64_t ccl, std::uint64_t n, std::uint64_t esz) { return ccl / 2 / (n * esz); }

/// The hierarchical reduce-scatter: elements per rank in a pass (n blocks rearranged plus the S of
/// the rail's area in the first half).
inline std::uint64_t hier_reduce_scatter_elems(std::uint64_t ccl, std::uint64_t n, std::uint64_t S, std::uint64_t esz) {
  return ccl / 2 / ((n + S) * esz);
}

}  // namespace hcomm::detail::passes
