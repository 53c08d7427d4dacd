// Algorithm families (docs/architecture.md#hcomm, docs/algorithms/README.md): each family is one
// file in algo/ with a schedule builder (algo/schedule.h) and an alpha-beta-gamma cost estimate per
// operation; algo/select.h picks among them.
#pragma once
#include <cstdint>

#include "algo/schedule.h"

namespace hcomm::detail {

/// The cost model's link parameters (the seeds' model): a message of b bytes costs
/// alpha + b * beta, reducing b bytes costs b * gamma.
struct LinkCost {
  double alpha_ns = 0, beta_ns_per_byte = 0, gamma_ns_per_byte = 0;
};

/// Build member in.me's schedule for one chunk; false when the family does not do in.op.
using BuildFn = bool (*)(const ScheduleIn& in, Schedule* out);
/// Estimated time (ns) of `op` over n members for `bytes` (the operation's data per member as
/// the busbw convention counts it: the whole vector for all-reduce/broadcast/reduce, the
/// gathered vector for all-gather, reduce-scatter, scatter, gather, all-to-all); < 0 when the
/// family does not do op.
using CostFn = double (*)(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c);

/// Steps of member in.me's whole schedule; 0 when not known (the schedule is then built whole).
using CountFn = std::uint64_t (*)(const ScheduleIn& in);

struct Family {
  const char* name;   ///< HCCL's name: "ring", "H-D_R", "NHR", "NB", "DOUBLE_TREE", "pairwise", "star", "double_ring"
  BuildFn build;
  CostFn cost;
  std::uint32_t slots;  ///< staging slots its schedules use; 0: 2 x ScheduleIn::local (the pipeline)
  bool alltoallv = true;  ///< builds all-to-all with per-block counts (when it builds all-to-all)
  /// Set for the families whose schedules grow with the member count (ring, double ring, pairwise,
  /// hierarchical all-to-all): their builders also build a window of steps (Schedule::first, end),
  /// and the executor keeps a window at a time (algo/exec.h). Null: whole schedules only.
  CountFn count = nullptr;
};

// One per file in algo/.
extern const Family kRing;      // algo/ring.cpp
extern const Family kHd;        // algo/halving_doubling.cpp
extern const Family kNhr;       // algo/nhr.cpp
extern const Family kNb;        // algo/nb.cpp
extern const Family kTree;      // algo/double_tree.cpp
extern const Family kPairwise;  // algo/pairwise.cpp
extern const Family kStar;      // algo/star.cpp
extern const Family kDoubleRing;  // algo/double_ring.cpp
extern const Family kPipeline;    // algo/pipeline.cpp (needs ScheduleIn::local; its cost is pipeline_cost)
extern const Family kHierAllToAll;  // algo/hier_alltoall.cpp (needs ScheduleIn::local and W; hier_alltoall_cost)

/// The pipeline's estimate (algo/pipeline.cpp) on `servers` x `local` ranks; < 0 when it does not
/// do op.
double pipeline_cost(CollOp op, std::uint32_t servers, std::uint32_t local, std::uint64_t bytes, const LinkCost& hccs,
                     const LinkCost& roce);

/// The hierarchical all-to-all's estimate (algo/hier_alltoall.cpp) on `servers` x `local` ranks,
/// `bytes` = one rank's whole send buffer.
double hier_alltoall_cost(std::uint32_t servers, std::uint32_t local, std::uint64_t bytes, const LinkCost& hccs,
                          const LinkCost& roce);

/// ceil(log2 n) for n >= 1.
inline std::uint32_t ceil_log2(std::uint32_t n) {
  std::uint32_t k = 0;
  while ((1ULL << k) < n) ++k;
  return k;
}

}  // namespace hcomm::detail
