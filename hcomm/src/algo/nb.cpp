// NB, HCCL's "NB" (nonuniform Bruck) — our own schedule, documented in docs/algorithms/nb.md.
// L = ceil(log2 n) steps for any n; at step k (d = 2^k, c = min(d, n - d)) relative member v
//   all-gather      sends the blocks [v, v+c) (mod n) to v-d and receives [v+d, v+d+c) from v+d,
//                   Direct into their final places: v then holds [v, v + min(2d, n)). No rotation
//                   is needed because blocks go to their absolute offsets in W.
//   reduce-scatter  the all-gather reversed (k = L-1 .. 0): sends its partials of [v+d, v+d+c) to
//                   v+d (StagedReduce) and reduces [v, v+c) from v-d.
//   all-reduce      reduce-scatter + all-gather on n near-equal blocks of the vector
//   broadcast       binomial scatter (algo/binomial.h) + all-gather, the all-gather leaving out the
//                   blocks a member already holds from the scatter
//   scatter/gather  binomial trees (algo/binomial.h);  reduce  reduce-scatter + binomial gather
#include <algorithm>

#include "algo/binomial.h"
#include "algo/family.h"

namespace hcomm::detail {

namespace {

std::uint32_t pos(std::int64_t x, std::uint32_t n) { return static_cast<std::uint32_t>(((x % n) + n) % n); }

template <class B>
void rs_steps(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t n = r.n, v = r.rel(in.me), L = ceil_log2(n);
  for (std::uint32_t k = L; k-- > 0;) {
    const std::uint32_t d = 1u << k, c = std::min(d, n - d);
    Step st;
    std::uint32_t i = L - 1 - k;  // slots alternate with the step (and the runs of one step)
    block_runs(blk, n, r.block(pos(v + d, n)), c, [&](std::uint64_t off, std::uint64_t len) {
      staged(in, &st.sends, r.member(pos(v + d, n)), in.w + off, nullptr, 0, 0, len, Mode::StagedReduce, i++);
    });
    i = L - 1 - k;
    block_runs(blk, n, r.block(v), c, [&](std::uint64_t off, std::uint64_t len) {
      staged(in, nullptr, 0, 0, &st.recvs, r.member(pos(std::int64_t{v} - d, n)), in.w + off, len, Mode::StagedReduce, i++);
    });
    p->steps.push_back(std::move(st));
  }
}

// held(x): the end (exclusive, as an unwrapped relative index) of the run [x, held(x)) relative
// member x already holds before the all-gather: x + 1 normally, its binomial subtree after a scatter.
template <class B, class H>
void ag_steps(const ScheduleIn& in, const B& blk, const Rel& r, H held, Schedule* p) {
  const std::uint32_t n = r.n, v = r.rel(in.me), L = ceil_log2(n);
  for (std::uint32_t k = 0; k < L; ++k) {
    const std::uint32_t d = 1u << k, c = std::min(d, n - d);
    Step st;
    // To x = v - d: the blocks [x + d, x + d + c) that x does not hold yet.
    const std::uint32_t x = pos(std::int64_t{v} - d, n);
    {
      const std::uint64_t from = std::max<std::uint64_t>(std::uint64_t{x} + d, held(x)), to = std::uint64_t{x} + d + c;
      if (from < to) direct_send(in, blk, r, r.member(x), pos(static_cast<std::int64_t>(from), n),
                                 static_cast<std::uint32_t>(to - from), &st);
    }
    {
      const std::uint64_t from = std::max<std::uint64_t>(std::uint64_t{v} + d, held(v)), to = std::uint64_t{v} + d + c;
      if (from < to) direct_recv(in, blk, r, r.member(pos(v + d, n)), pos(static_cast<std::int64_t>(from), n),
                                 static_cast<std::uint32_t>(to - from), &st);
    }
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.n == 1) return in.op != CollOp::AllToAll;
  const std::uint32_t n = in.n;
  const Rel plain{n, 0, 0}, rooted{n, in.root, in.root}, rooted_rel{n, in.root, 0};
  auto own = [](std::uint32_t x) { return std::uint64_t{x} + 1; };
  switch (in.op) {
    case CollOp::AllReduce: {
      const PartLayout blk{Partition(in.bytes / in.esz, n, in.esz)};
      rs_steps(in, blk, plain, p);
      ag_steps(in, blk, plain, own, p);
      return true;
    }
    case CollOp::ReduceScatter: rs_steps(in, in.blocks, plain, p); return true;
    case CollOp::AllGather: ag_steps(in, in.blocks, plain, own, p); return true;
    case CollOp::Broadcast: {  // blocks indexed relative to the root
      const PartLayout blk{Partition(in.bytes / in.esz, n, in.esz)};
      binomial_scatter(in, blk, rooted_rel, p);
      auto subtree = [n](std::uint32_t x) {  // binomial_scatter leaves x with [x, min(x + lowbit(x), n))
        return x == 0 ? std::uint64_t{n} : std::min<std::uint64_t>(std::uint64_t{x} + (x & (~x + 1)), n);
      };
      ag_steps(in, blk, rooted_rel, subtree, p);
      return true;
    }
    case CollOp::Reduce: {
      const PartLayout blk{Partition(in.bytes / in.esz, n, in.esz)};
      rs_steps(in, blk, plain, p);
      binomial_gather(in, blk, rooted, p);
      return true;
    }
    case CollOp::Scatter: binomial_scatter(in, in.blocks, rooted, p); return true;
    case CollOp::Gather: binomial_gather(in, in.blocks, rooted, p); return true;
    case CollOp::AllToAll: return false;
  }
  return false;
}

// docs/algorithms/nb.md#cost: L steps per phase, n-1 blocks of D/n received per phase.
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes), L = ceil_log2(n), a = c.alpha_ns, b = c.beta_ns_per_byte,
               g = c.gamma_ns_per_byte;
  const double ph = (n - 1.0) / n * D;
  switch (op) {
    case CollOp::AllReduce: return 2 * L * a + 2 * ph * b + ph * g;
    case CollOp::ReduceScatter: return L * a + ph * (b + g);
    case CollOp::AllGather:
    case CollOp::Scatter:
    case CollOp::Gather: return L * a + ph * b;
    case CollOp::Broadcast: return 2 * L * a + 2 * ph * b;
    case CollOp::Reduce: return 2 * L * a + ph * (2 * b + g);
    case CollOp::AllToAll: return -1;
  }
  return -1;
}

}  // namespace

const Family kNb{"NB", build, cost, 2};

}  // namespace hcomm::detail
