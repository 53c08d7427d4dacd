// Double ring (docs/algorithms/double-ring.md): HCCL's intra-server double ring. The data is cut
// in two halves; the first runs the ring family's schedule clockwise (member m sends to m+1),
// the second counter-clockwise (to m-1), both in the same steps: every step a member sends two
// transfers (on two helper streams, over two different links) and receives two. Staging slots
// 0-1 for the clockwise ring, 2-3 for the other.
//   all-reduce      2(n-1) steps of two D/(2n) transfers
//   reduce-scatter  n-1 steps; every block's halves reduced on the two rings
//   all-gather      n-1 steps
#include <algorithm>

#include "algo/family.h"
#include "algo/partition.h"
#include "algo/ring_steps.h"

namespace hcomm::detail {

namespace {

// Half h (0 or 1) of every block of a layout: the first half rounded up to whole elements.
template <class B>
struct HalfBlocks {
  const B& blk;
  std::uint64_t esz;
  int h;
  std::uint64_t first(std::uint32_t j) const { return (blk.len(j) / esz + 1) / 2 * esz; }
  std::uint64_t off(std::uint32_t j) const { return blk.off(j) + (h ? first(j) : 0); }
  std::uint64_t len(std::uint32_t j) const { return h ? blk.len(j) - first(j) : first(j); }
};

struct PartBlocks {
  Partition part;
  std::uint64_t off(std::uint32_t j) const { return part.off(j); }
  std::uint64_t len(std::uint32_t j) const { return part.len(j); }
};

template <class B>
void both(const ScheduleIn& in, const B& blk, bool rs, bool ag, Schedule* p) {
  const std::uint64_t k = in.n - 1;
  p->size_to((rs ? k : 0) + (ag ? k : 0));
  const RingDir cw{1, 0, in.n}, ccw{-1, 2, in.n};
  const HalfBlocks<B> h0{blk, in.esz, 0}, h1{blk, in.esz, 1};
  if (rs) {
    ring_rs_into(in, h0, cw, p, 0);
    ring_rs_into(in, h1, ccw, p, 0);
  }
  if (ag) {
    ring_ag_into(in, h0, cw, p, rs ? k : 0);
    ring_ag_into(in, h1, ccw, p, rs ? k : 0);
  }
}

// Steps of member in.me's schedule (Family::count); 0 when it does not build in.op.
std::uint64_t count(const ScheduleIn& in) {
  if (in.n == 1) return 0;
  switch (in.op) {
    case CollOp::AllReduce: return 2ULL * (in.n - 1);
    case CollOp::ReduceScatter:
    case CollOp::AllGather: return in.n - 1;
    default: return 0;
  }
}

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.n == 1) return in.op == CollOp::AllReduce || in.op == CollOp::ReduceScatter || in.op == CollOp::AllGather;
  switch (in.op) {
    case CollOp::AllReduce: {
      const PartBlocks blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      both(in, blk, true, true, p);
      return true;
    }
    case CollOp::ReduceScatter: both(in, in.blocks, true, false, p); return true;
    case CollOp::AllGather: both(in, in.blocks, false, true, p); return true;
    default: return false;
  }
}

// Each ring carries half the data over its own links, concurrently.
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes) / 2, s = n - 1.0;
  switch (op) {
    case CollOp::AllReduce: return 2 * s * c.alpha_ns + 2 * s / n * D * c.beta_ns_per_byte + s / n * D * c.gamma_ns_per_byte;
    case CollOp::ReduceScatter: return s * c.alpha_ns + s / n * D * (c.beta_ns_per_byte + c.gamma_ns_per_byte);
    case CollOp::AllGather: return s * c.alpha_ns + s / n * D * c.beta_ns_per_byte;
    default: return -1;
  }
}

}  // namespace

const Family kDoubleRing{"double_ring", build, cost, 4, true, count};

}  // namespace hcomm::detail
