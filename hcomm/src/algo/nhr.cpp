// NHR, HCCL's "NHR" (nonuniform hierarchical ring) — our own schedule, documented in
// docs/algorithms/nhr.md. The members (relative to a root: v = member - rot mod n) are split
// recursively into contiguous halves A = [lo, lo+a), B = [lo+a, lo+s) with a = ceil(s/2),
// b = floor(s/2): ceil(log2 n) levels for any n. At a level, A's i-th member pairs with B's i-th
// (ring distance a); when s is odd A's last member u = lo+b has no partner and deals with every
// B member one block each, so no member moves more than ceil(s/2) blocks at a level.
//   reduce-scatter  levels top-down: a pair exchanges the other half's blocks (StagedReduce);
//                   u sends B's j-th block to B's j-th member (slots 2-3)
//   all-gather      levels bottom-up: a pair exchanges its own half's blocks (Direct); B's j-th
//                   member sends its block to u
//   all-reduce      reduce-scatter + all-gather on n near-equal blocks of the vector
//   scatter/gather  the same tree: the first member of a group hands B's blocks to B's first
//   broadcast       scatter + all-gather on n near-equal blocks, skipping the transfers whose
//                   receiver already holds the blocks from the scatter (B's first -> A's first)
//   reduce          reduce-scatter + gather
#include <algorithm>

#include "algo/binomial.h"
#include "algo/family.h"

namespace hcomm::detail {

namespace {

struct Level {
  std::uint32_t lo, s;
};

// The groups relative index v belongs to, from the whole [0, n) down to (excluding) size 1.
std::vector<Level> path(std::uint32_t n, std::uint32_t v) {
  std::vector<Level> out;
  std::uint32_t lo = 0, s = n;
  while (s > 1) {
    out.push_back({lo, s});
    const std::uint32_t a = (s + 1) / 2;
    if (v < lo + a) s = a;
    else { lo += a; s -= a; }
  }
  return out;
}

// Staged slots: the partner uses 0-1, the unpaired member 2-3 (both may reach one receiver in a step).
constexpr std::uint32_t kPairBase = 0, kOddBase = 2;

template <class B>
void staged_runs(const ScheduleIn& in, const B& blk, const Rel& r, bool send, std::uint32_t peer, std::uint32_t first,
                 std::uint32_t count, std::uint32_t base, Step* st, std::uint32_t step = 0) {
  std::uint32_t k = step;  // slots alternate with the step, so transfers overlap reductions
  block_runs(blk, r.n, r.block(first), count, [&](std::uint64_t off, std::uint64_t len) {
    if (send) staged(in, &st->sends, peer, in.w + off, nullptr, 0, 0, len, Mode::StagedReduce, k, base, 2);
    else staged(in, nullptr, 0, 0, &st->recvs, peer, in.w + off, len, Mode::StagedReduce, k, base, 2);
    ++k;
  });
}

template <class B>
void rs_steps(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t v = r.rel(in.me);
  std::uint32_t t = 0;  // level from the top: the same for both members of a pair
  for (const Level& l : path(r.n, v)) {
    const std::uint32_t a = (l.s + 1) / 2, b = l.s - a;
    Step st;
    ++t;
    if (v < l.lo + a) {
      const std::uint32_t i = v - l.lo;
      if (i < b) {
        staged_runs(in, blk, r, true, r.member(l.lo + a + i), l.lo + a, b, kPairBase, &st, t);
        staged_runs(in, blk, r, false, r.member(l.lo + a + i), l.lo, a, kPairBase, &st, t);
      } else {  // unpaired: B's j-th block to B's j-th member
        for (std::uint32_t j = 0; j < b; ++j)
          staged_runs(in, blk, r, true, r.member(l.lo + a + j), l.lo + a + j, 1, kOddBase, &st);
      }
    } else {
      const std::uint32_t j = v - l.lo - a;
      staged_runs(in, blk, r, true, r.member(l.lo + j), l.lo, a, kPairBase, &st, t);
      staged_runs(in, blk, r, false, r.member(l.lo + j), l.lo + a, b, kPairBase, &st, t);
      if (a > b) staged_runs(in, blk, r, false, r.member(l.lo + b), v, 1, kOddBase, &st);
    }
    p->steps.push_back(std::move(st));
  }
}

// skip_first: the transfer B's first -> A's first is left out (A's first already holds B's blocks).
template <class B>
void ag_steps(const ScheduleIn& in, const B& blk, const Rel& r, bool skip_first, Schedule* p) {
  const std::uint32_t v = r.rel(in.me);
  const std::vector<Level> levels = path(r.n, v);
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const Level& l = *it;
    const std::uint32_t a = (l.s + 1) / 2, b = l.s - a;
    Step st;
    if (v < l.lo + a) {
      const std::uint32_t i = v - l.lo;
      if (i < b) {
        direct_send(in, blk, r, r.member(l.lo + a + i), l.lo, a, &st);
        if (!(skip_first && i == 0)) direct_recv(in, blk, r, r.member(l.lo + a + i), l.lo + a, b, &st);
      } else {
        for (std::uint32_t j = 0; j < b; ++j) direct_recv(in, blk, r, r.member(l.lo + a + j), l.lo + a + j, 1, &st);
      }
    } else {
      const std::uint32_t j = v - l.lo - a;
      if (!(skip_first && j == 0)) direct_send(in, blk, r, r.member(l.lo + j), l.lo + a, b, &st);
      direct_recv(in, blk, r, r.member(l.lo + j), l.lo, a, &st);
      if (a > b) direct_send(in, blk, r, r.member(l.lo + b), v, 1, &st);
    }
    p->steps.push_back(std::move(st));
  }
}

// Scatter down the tree: a group's first member holds its blocks and hands B's to B's first.
template <class B>
void tree_scatter(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t v = r.rel(in.me);
  for (const Level& l : path(r.n, v)) {
    const std::uint32_t a = (l.s + 1) / 2, b = l.s - a;
    Step st;
    if (v == l.lo) direct_send(in, blk, r, r.member(l.lo + a), l.lo + a, b, &st);
    if (v == l.lo + a) direct_recv(in, blk, r, r.member(l.lo), l.lo + a, b, &st);
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

template <class B>
void tree_gather(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t v = r.rel(in.me);
  const std::vector<Level> levels = path(r.n, v);
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const Level& l = *it;
    const std::uint32_t a = (l.s + 1) / 2, b = l.s - a;
    Step st;
    if (v == l.lo + a) direct_send(in, blk, r, r.member(l.lo), l.lo + a, b, &st);
    if (v == l.lo) direct_recv(in, blk, r, r.member(l.lo + a), l.lo + a, b, &st);
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.n == 1) return in.op != CollOp::AllToAll;
  const Rel plain{in.n, 0, 0}, rooted{in.n, in.root, in.root}, rooted_rel{in.n, in.root, 0};
  switch (in.op) {
    case CollOp::AllReduce: {
      const PartLayout blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      rs_steps(in, blk, plain, p);
      ag_steps(in, blk, plain, false, p);
      return true;
    }
    case CollOp::ReduceScatter: rs_steps(in, in.blocks, plain, p); return true;
    case CollOp::AllGather: ag_steps(in, in.blocks, plain, false, p); return true;
    case CollOp::Broadcast: {  // blocks indexed relative to the root
      const PartLayout blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      tree_scatter(in, blk, rooted_rel, p);
      ag_steps(in, blk, rooted_rel, true, p);
      return true;
    }
    case CollOp::Reduce: {  // blocks indexed by member
      const PartLayout blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      rs_steps(in, blk, plain, p);
      tree_gather(in, blk, rooted, p);
      return true;
    }
    case CollOp::Scatter: tree_scatter(in, in.blocks, rooted, p); return true;
    case CollOp::Gather: tree_gather(in, in.blocks, rooted, p); return true;
    case CollOp::AllToAll: return false;
  }
  return false;
}

// docs/algorithms/nhr.md#cost: per level one alpha and ceil(s/2) blocks of D/n on the busiest member.
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes), a = c.alpha_ns, b = c.beta_ns_per_byte, g = c.gamma_ns_per_byte;
  double steps = 0, blocks = 0;  // levels, and the sum of ceil(s/2) over the levels of the larger halves
  for (std::uint32_t s = n; s > 1; s = (s + 1) / 2) {
    steps += 1;
    blocks += (s + 1) / 2;
  }
  const double ph = blocks / n * D;                   // one reduce-scatter or all-gather phase
  const double tree = steps * a + (n - 1.0) / n * D * b;  // scatter or gather: the root sends/receives n-1 blocks
  switch (op) {
    case CollOp::AllReduce: return 2 * steps * a + 2 * ph * b + ph * g;
    case CollOp::ReduceScatter: return steps * a + ph * (b + g);
    case CollOp::AllGather: return steps * a + ph * b;
    case CollOp::Broadcast: return tree + steps * a + ph * b;
    case CollOp::Reduce: return steps * a + ph * (b + g) + tree;
    case CollOp::Scatter:
    case CollOp::Gather: return tree;
    case CollOp::AllToAll: return -1;
  }
  return -1;
}

}  // namespace

const Family kNhr{"NHR", build, cost, 4};

}  // namespace hcomm::detail
