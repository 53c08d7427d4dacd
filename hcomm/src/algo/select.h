// Algorithm selection (docs/algorithms/README.md#selection): per operation, from the shape the
// communicator sees (ranks, servers, ranks per server, whether a server's ranks reach each other
// by SDMA) and the size, by an alpha-beta-gamma estimate of every candidate; or as the user
// forces it with HCOMM_ALGO / HCCL_ALGO (HCCL's "level0:NA;level1:<algo>" syntax, globally or per
// operation), HCOMM_ALLREDUCE_ALGO, or the communicator config's `algo` (config beats env).
#pragma once
#include <cstdint>
#include <string>

#include "algo/family.h"
#include "core/objects.h"

namespace hcomm::detail {

/// The shape a communicator presents to its algorithms.
struct Shape {
  std::uint32_t n = 1;        ///< ranks
  std::uint32_t servers = 1;  ///< S
  std::uint32_t local = 1;    ///< L: ranks per server (equal on every server)
  bool mesh = false;          ///< every server's ranks reach each other by SDMA (HCCS / PCIe p2p)
  bool v = false;             ///< a -v operation (per-block counts)
  std::uint32_t esz = 1;      ///< bytes per element
};

/// What runs an operation.
struct Choice {
  enum Kind : std::uint8_t { Mesh, Hier, Flat } kind = Flat;
  const Family* family = nullptr;  ///< Hier: level 1; Flat: over all ranks
  std::string name;                ///< as recorded: "mesh", "mesh+NHR", "ring", ...
  double est_ns = 0;
  double contention = 1;           ///< Hier: the leaf-uplink factor on its RoCE bandwidth term (algo/contention.h)
  double plain_ns = 0;             ///< est_ns without the leaf-uplink term
  std::string runner_up;           ///< "" when there was one candidate
  double runner_up_ns = 0;
  std::string by;                  ///< "auto", "HCOMM_ALGO", "HCCL_ALGO", "HCOMM_ALLREDUCE_ALGO", "config", "op retry"
  bool retry_ring = false;         ///< Flat: an op retry's ring, in the order the recovery agreement chose (by "op retry")
};

/// Choose for `op` of `bytes` (busbw convention, family.h) on `shape`. Logs a fallback when the
/// forced family does not do the operation. Never fails: the flat ring does every operation
/// but all-to-all, pairwise does all-to-all.
Choice select_algo(hcomm_comm_t comm, CollOp op, std::uint64_t bytes, const Shape& shape);

/// The most bytes of an operation (op_bytes' measure: the vector, or all n blocks) one pass
/// through a collective buffer of `ccl` bytes carries when it runs as kind `k` with family `f` (algo/passes.h, as the
/// runners cut it); 0: the operation goes in one pass whatever its size (all-to-all).
std::uint64_t pass_bytes(Choice::Kind k, const Family* f, CollOp op, const Shape& s, std::uint64_t ccl);

/// The cost model's link parameters: HCCS inside a server, RoCE across (docs/algorithms/README.md).
LinkCost hccs_cost();
LinkCost roce_cost();

}  // namespace hcomm::detail
