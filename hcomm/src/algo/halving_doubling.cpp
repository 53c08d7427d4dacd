// Recursive halving-doubling, HCCL's "H-D_R" (docs/algorithms/halving-doubling.md).
// p = the largest power of two <= n, r = n - p. When n != p the first 2r members fold: odd member
// 2i+1 hands its data to 2i and sits out; survivor v (0..p-1) is member real(v) = v < r ? 2v : v + r.
//   all-reduce      [fold: 2i+1 -> 2i, whole vector, StagedReduce] recursive-halving reduce-scatter
//                   over p blocks (mask p/2 .. 1, partner v ^ mask), recursive-doubling all-gather
//                   (mask 1 .. p/2, Direct) [unfold: 2i -> 2i+1, whole vector, Direct]
//   reduce-scatter  [fold] halving on virtual blocks (survivor v owns the members' blocks
//                   real(v) .. real(v+1)-1) [2i -> 2i+1 its block, Direct]
//   all-gather      [2i+1 -> 2i its block, Direct] doubling on virtual blocks [2i -> 2i+1 the rest]
//   broadcast       binomial tree from the root, the whole vector Direct: ceil(log2 n) steps
//   reduce          binomial tree toward the root, the whole vector StagedReduce
//   scatter/gather  binomial trees (algo/binomial.h)
#include <algorithm>

#include "algo/binomial.h"
#include "algo/family.h"

namespace hcomm::detail {

namespace {

struct Fold {
  std::uint32_t n, p, r;
  explicit Fold(std::uint32_t members) : n(members), p(1), r(0) {
    while (p * 2 <= n) p *= 2;
    r = n - p;
  }
  bool survivor(std::uint32_t m) const { return m >= 2 * r || m % 2 == 0; }
  std::uint32_t vrank(std::uint32_t m) const { return m < 2 * r ? m / 2 : m - r; }
  std::uint32_t real(std::uint32_t v) const { return v < r ? 2 * v : v + r; }
};

// Recursive halving among the survivors on virtual blocks: vb(v) is the byte offset of virtual
// block v (vb(p) = end). Survivor v ends with virtual block v reduced over all survivors.
template <class VB>
void halving(const ScheduleIn& in, const Fold& f, std::uint32_t v, VB vb, Schedule* p) {
  std::uint32_t t = 0;  // step of the halving: slots alternate with it, so a step's transfer
                        // overlaps the reduction of the previous one out of the other slot
  for (std::uint32_t mask = f.p / 2; mask >= 1; mask /= 2, ++t) {
    const std::uint32_t u = v ^ mask, keep = v & ~(mask - 1), give = u & ~(mask - 1);
    Step st;
    staged(in, &st.sends, f.real(u), in.w + vb(give), nullptr, 0, 0, vb(give + mask) - vb(give), Mode::StagedReduce, t);
    staged(in, nullptr, 0, 0, &st.recvs, f.real(u), in.w + vb(keep), vb(keep + mask) - vb(keep), Mode::StagedReduce, t);
    p->steps.push_back(std::move(st));
  }
}

// Recursive doubling among the survivors: survivor v starts with virtual block v, ends with all.
template <class VB>
void doubling(const ScheduleIn& in, const Fold& f, std::uint32_t v, VB vb, Schedule* p) {
  for (std::uint32_t mask = 1; mask < f.p; mask *= 2) {
    const std::uint32_t u = v ^ mask, mine = v & ~(mask - 1), theirs = u & ~(mask - 1);
    Step st;
    st.sends.push_back(Send{f.real(u), in.w + vb(mine), vb(mine + mask) - vb(mine), Mode::Direct, vb(mine), 0});
    st.recvs.push_back(Recv{f.real(u), in.w + vb(theirs), vb(theirs + mask) - vb(theirs), Mode::Direct, 0});
    p->steps.push_back(std::move(st));
  }
}

// Fold step: odd member 2i+1 (< 2r) reduces its [0, bytes) into 2i's.
void fold(const ScheduleIn& in, const Fold& f, std::uint64_t bytes, Schedule* p) {
  const std::uint32_t m = in.me;
  if (m >= 2 * f.r) return;
  Step st;
  if (m % 2) staged(in, &st.sends, m - 1, in.w, nullptr, 0, 0, bytes, Mode::StagedReduce, 0);
  else staged(in, nullptr, 0, 0, &st.recvs, m + 1, in.w, bytes, Mode::StagedReduce, 0);
  p->steps.push_back(std::move(st));
}

// A Direct transfer of W[off, off + bytes) from `from` to `to`, on the side `me` is.
void direct(const ScheduleIn& in, std::uint32_t from, std::uint32_t to, std::uint64_t off, std::uint64_t bytes, Step* st) {
  if (in.me == from) st->sends.push_back(Send{to, in.w + off, bytes, Mode::Direct, off, 0});
  else if (in.me == to) st->recvs.push_back(Recv{from, in.w + off, bytes, Mode::Direct, 0});
}

void allreduce(const ScheduleIn& in, Schedule* p) {
  const Fold f(in.n);
  const Partition part(in.bytes / in.esz, f.p, in.esz);
  auto vb = [&](std::uint32_t v) { return part.off(v); };
  fold(in, f, in.bytes, p);
  if (f.survivor(in.me)) {
    halving(in, f, f.vrank(in.me), vb, p);
    doubling(in, f, f.vrank(in.me), vb, p);
  }
  if (in.me < 2 * f.r) {  // unfold
    Step st;
    const std::uint32_t even = in.me & ~1u;
    direct(in, even, even + 1, 0, in.bytes, &st);
    p->steps.push_back(std::move(st));
  }
}

void reduce_scatter(const ScheduleIn& in, Schedule* p) {
  const Fold f(in.n);
  const Blocks& b = in.blocks;
  auto vb = [&](std::uint32_t v) { return b.off(f.real(v)); };
  fold(in, f, b.total(), p);
  if (f.survivor(in.me)) halving(in, f, f.vrank(in.me), vb, p);
  if (in.me < 2 * f.r) {  // the odd member's block back
    Step st;
    const std::uint32_t odd = in.me | 1u;
    direct(in, odd - 1, odd, b.off(odd), b.len(odd), &st);
    p->steps.push_back(std::move(st));
  }
}

void all_gather(const ScheduleIn& in, Schedule* p) {
  const Fold f(in.n);
  const Blocks& b = in.blocks;
  auto vb = [&](std::uint32_t v) { return b.off(f.real(v)); };
  const std::uint32_t odd = in.me | 1u;
  if (in.me < 2 * f.r) {  // the odd member's block to its partner
    Step st;
    direct(in, odd, odd - 1, b.off(odd), b.len(odd), &st);
    p->steps.push_back(std::move(st));
  }
  if (f.survivor(in.me)) doubling(in, f, f.vrank(in.me), vb, p);
  if (in.me < 2 * f.r) {  // everything but its own block back to the odd member
    Step st;
    direct(in, odd - 1, odd, 0, b.off(odd), &st);
    direct(in, odd - 1, odd, b.off(odd + 1), b.total() - b.off(odd + 1), &st);
    p->steps.push_back(std::move(st));
  }
}

// Binomial broadcast: at step k every relative v < 2^k sends the vector to v + 2^k.
void broadcast(const ScheduleIn& in, Schedule* p) {
  const Rel r{in.n, in.root, 0};
  const std::uint32_t v = r.rel(in.me), L = ceil_log2(in.n);
  for (std::uint32_t k = 0; k < L; ++k) {
    const std::uint64_t d = 1ULL << k;
    Step st;
    if (v < d && v + d < in.n) st.sends.push_back(Send{r.member(v + d), in.w, in.bytes, Mode::Direct, 0, 0});
    if (v >= d && v < 2 * d) st.recvs.push_back(Recv{r.member(v - d), in.w, in.bytes, Mode::Direct, 0});
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

// Binomial reduce: at step k every relative v with v % 2^(k+1) == 2^k reduces its vector into v - 2^k.
void reduce(const ScheduleIn& in, Schedule* p) {
  const Rel r{in.n, in.root, 0};
  const std::uint32_t v = r.rel(in.me), L = ceil_log2(in.n);
  for (std::uint32_t k = 0; k < L; ++k) {
    const std::uint64_t d = 1ULL << k;
    Step st;
    if (v % (2 * d) == d) staged(in, &st.sends, r.member(v - d), in.w, nullptr, 0, 0, in.bytes, Mode::StagedReduce, 0);
    if (v % (2 * d) == 0 && v + d < in.n)
      staged(in, nullptr, 0, 0, &st.recvs, r.member(v + d), in.w, in.bytes, Mode::StagedReduce, 0);
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.n == 1) return in.op != CollOp::AllToAll;
  switch (in.op) {
    case CollOp::AllReduce: allreduce(in, p); return true;
    case CollOp::ReduceScatter: reduce_scatter(in, p); return true;
    case CollOp::AllGather: all_gather(in, p); return true;
    case CollOp::Broadcast: broadcast(in, p); return true;
    case CollOp::Reduce: reduce(in, p); return true;
    case CollOp::Scatter: binomial_scatter(in, in.blocks, Rel{in.n, in.root, in.root}, p); return true;
    case CollOp::Gather: binomial_gather(in, in.blocks, Rel{in.n, in.root, in.root}, p); return true;
    case CollOp::AllToAll: return false;
  }
  return false;
}

// docs/algorithms/halving-doubling.md#cost. f = 1 when n is not a power of two.
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const Fold fo(n);
  const double D = static_cast<double>(bytes), P = fo.p, lp = ceil_log2(fo.p), f = fo.r ? 1 : 0;
  const double L = ceil_log2(n), a = c.alpha_ns, b = c.beta_ns_per_byte, g = c.gamma_ns_per_byte;
  const double h = (P - 1) / P * D;  // halving or doubling volume
  switch (op) {
    case CollOp::AllReduce: return (2 * lp + 2 * f) * a + (2 * h + 2 * f * D) * b + (h + f * D) * g;
    case CollOp::ReduceScatter: return (lp + 2 * f) * a + (h + f * D + f * D / n) * b + (h + f * D) * g;
    case CollOp::AllGather: return (lp + 2 * f) * a + (h + f * D / n + f * D) * b;
    // Every member posts its sends to all its binomial children at once (a write's task ends at
    // its doorbell), so they share its NIC: the root's L arrive together after L D b, the child
    // with L - 1 children forwards over (L - 1) D b, ...: L (L + 1) / 2 D b along the deepest path.
    case CollOp::Broadcast: return L * a + L * (L + 1) / 2 * D * b;
    case CollOp::Reduce: return L * (a + D * (b + g));
    case CollOp::Scatter:
    case CollOp::Gather: return L * a + (n - 1.0) / n * D * b;
    case CollOp::AllToAll: return -1;
  }
  return -1;
}

}  // namespace

const Family kHd{"H-D_R", build, cost, 2};

}  // namespace hcomm::detail
