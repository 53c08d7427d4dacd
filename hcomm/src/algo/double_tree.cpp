// Double binary tree (docs/algorithms/double-tree.md), NCCL's tree all-reduce as a schedule builder.
//   all-reduce  two complementary binary trees (algo/double_tree.h), each over half of W; within a
//               tree the half is cut into P slices (<= slot_bytes); slice i is reduced up toward
//               the tree's root (StagedReduce into the parent's W) and broadcast back down (Direct
//               into the children's W). Global round schedule, H = ceil_log2(n & ~1):
//                 a member at depth d >= 1 sends slice i up at round i + H - d and receives it from
//                 its children at round i + H - d - 1; the root sends slice i down at round H + i,
//                 a member at depth d receives it at H + i + d - 1 and passes it on at H + i + d.
//               P + 2H - 1 rounds; the two trees run in the same rounds.
//   broadcast   one binary tree rooted at the root (positions relative to the root), the down
//               phase alone: P + H - 1 rounds, H = ceil_log2(n)
//   reduce      the same tree, the up phase alone: P + H - 1 rounds
// Staging slots: a receiver's slot for child k and slice i is 2k + i % 2 (4 slots); a member is
// interior in at most one of the two trees, so the trees never share a receiver's slot.
#include "algo/double_tree.h"

#include <algorithm>
#include <vector>

#include "algo/partition.h"

namespace hcomm::detail {

namespace {

// Parent and children of position `pos` in the btree over n positions (no depth, no index).
void btree_raw(std::uint32_t n, std::uint32_t pos, std::int64_t* up, std::int64_t* d0, std::int64_t* d1) {
  *up = *d0 = *d1 = -1;
  if (n < 2) return;
  std::uint64_t bit = 1;
  while (bit < n && !(bit & pos)) bit <<= 1;
  if (pos == 0) {  // the root: one child, the largest power of two below n
    *d1 = static_cast<std::int64_t>(bit >> 1);
    return;
  }
  std::uint64_t u = (pos ^ bit) | (bit << 1);
  if (u >= n) u = pos ^ bit;
  *up = static_cast<std::int64_t>(u);
  std::uint64_t low = bit >> 1;
  if (low == 0) return;  // odd positions are leaves
  *d0 = static_cast<std::int64_t>(pos - low);
  while (low && pos + low >= n) low >>= 1;
  if (low) *d1 = static_cast<std::int64_t>(pos + low);
}

std::uint32_t slice_count(std::uint64_t elems, const ScheduleIn& in) {
  if (elems == 0) return 0;
  const std::uint64_t per_slot = std::max<std::uint64_t>(1, in.slot_bytes / in.esz);
  return static_cast<std::uint32_t>(
      std::max<std::uint64_t>(std::min<std::uint64_t>(elems, 8), (elems + per_slot - 1) / per_slot));
}

// A region of W cut into slices: `off` bytes into W, `elems` elements.
struct Region {
  std::uint64_t off = 0;
  std::uint32_t P = 0;
  Partition sl;
  Region(const ScheduleIn& in, std::uint64_t off_, std::uint64_t elems)
      : off(off_), P(slice_count(elems, in)), sl(elems, std::max<std::uint32_t>(1, slice_count(elems, in)), in.esz) {}
};

Step& round(Schedule* p, std::uint64_t t) {
  if (p->steps.size() <= t) p->steps.resize(t + 1);
  return p->steps[t];
}

std::uint32_t slot_of(std::uint32_t child, std::uint32_t i) { return 2 * child + i % 2; }

// Reduce every slice up toward the tree's root (rounds from 0; H bounds the depth).
void up_phase(const ScheduleIn& in, const TreeNode& nd, const Region& r, std::uint32_t H, Schedule* p) {
  const std::uint32_t d = nd.depth;
  for (std::uint32_t i = 0; i < r.P; ++i) {
    const std::uint64_t a = in.w + r.off + r.sl.off(i), len = r.sl.len(i);
    if (d >= 1)
      round(p, i + H - d).sends.push_back(Send{static_cast<std::uint32_t>(nd.up), a, len, Mode::StagedReduce, 0,
                                               slot_of(nd.child_index, i)});
    for (std::uint32_t k = 0; k < 2; ++k)
      if (nd.down[k] >= 0)
        round(p, i + H - d - 1).recvs.push_back(
            Recv{static_cast<std::uint32_t>(nd.down[k]), a, len, Mode::StagedReduce, slot_of(k, i)});
  }
}

// Broadcast every slice down from the tree's root (rounds from t0).
void down_phase(const ScheduleIn& in, const TreeNode& nd, const Region& r, std::uint32_t t0, Schedule* p) {
  const std::uint32_t d = nd.depth;
  for (std::uint32_t i = 0; i < r.P; ++i) {
    const std::uint64_t o = r.off + r.sl.off(i), len = r.sl.len(i);
    if (d >= 1) round(p, t0 + i + d - 1).recvs.push_back(Recv{static_cast<std::uint32_t>(nd.up), in.w + o, len, Mode::Direct, 0});
    for (std::uint32_t k = 0; k < 2; ++k)
      if (nd.down[k] >= 0)
        round(p, t0 + i + d).sends.push_back(Send{static_cast<std::uint32_t>(nd.down[k]), in.w + o, len, Mode::Direct, o, 0});
  }
}

// The btree node of position `pos` in member indices: member(pos) maps positions to members.
template <class F>
TreeNode mapped_btree(std::uint32_t n, std::uint32_t pos, F member) {
  TreeNode nd = btree_node(n, pos);
  if (nd.up >= 0) nd.up = member(static_cast<std::uint32_t>(nd.up));
  for (auto& c : nd.down)
    if (c >= 0) c = member(static_cast<std::uint32_t>(c));
  return nd;
}

bool build(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n;
  if (in.op != CollOp::AllReduce && in.op != CollOp::Broadcast && in.op != CollOp::Reduce) return false;
  if (n == 1 || in.bytes == 0) return true;
  const std::uint64_t elems = in.bytes / in.esz;
  if (in.op == CollOp::AllReduce) {
    const std::uint32_t H = ceil_log2(n & ~1u);
    const Partition half(elems, 2, in.esz);
    for (std::uint32_t t = 0; t < 2; ++t) {
      const TreeNode nd = double_tree_node(n, in.me, t);
      const Region r(in, half.off(t), half.len(t) / in.esz);
      up_phase(in, nd, r, H, p);
      down_phase(in, nd, r, H, p);
    }
    return true;
  }
  // Broadcast / reduce: one btree over positions relative to the root.
  const std::uint32_t H = ceil_log2(n);
  const TreeNode nd = mapped_btree(n, (in.me + n - in.root) % n, [&](std::uint32_t pos) { return (pos + in.root) % n; });
  const Region r(in, 0, elems);
  if (in.op == CollOp::Broadcast) down_phase(in, nd, r, 0, p);
  else up_phase(in, nd, r, H, p);
  return true;
}

// docs/algorithms/double-tree.md#cost: P = 8 slices per tree (the builder's count when a slice
// fits a slot), h = ceil_log2(n); sends of one round go to different peers and overlap.
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes), P = 8;
  if (n <= 1) return op == CollOp::AllReduce || op == CollOp::Broadcast || op == CollOp::Reduce ? 0 : -1;
  switch (op) {
    case CollOp::AllReduce: {
      // Every member is interior in one tree: it sends its half up once and down to two children,
      // 1.5 D through its NIC; the first slice's way up and down (2h - 1 more hops of one slice
      // each) comes on top, the others stream behind it.
      const double h = ceil_log2(n & ~1u), s = D / (2 * P);
      return (P + 2 * h - 1) * c.alpha_ns + (1.5 * D + (2 * h - 1) * s) * c.beta_ns_per_byte +
             (P + h - 1) * 2 * s * c.gamma_ns_per_byte;
    }
    case CollOp::Broadcast: {  // an interior member sends each slice to its two children in one round: 2 s through its NIC
      const double h = ceil_log2(n), s = D / P;
      return (P + h - 1) * (c.alpha_ns + 2 * s * c.beta_ns_per_byte);
    }
    case CollOp::Reduce: {
      const double h = ceil_log2(n), s = D / P;
      return (P + h - 1) * (c.alpha_ns + s * c.beta_ns_per_byte + 2 * s * c.gamma_ns_per_byte);
    }
    default: return -1;
  }
}

}  // namespace

TreeNode btree_node(std::uint32_t n, std::uint32_t pos) {
  TreeNode nd;
  btree_raw(n, pos, &nd.up, &nd.down[0], &nd.down[1]);
  if (nd.up >= 0) {
    std::int64_t pu, c0, c1;
    btree_raw(n, static_cast<std::uint32_t>(nd.up), &pu, &c0, &c1);
    nd.child_index = c1 == static_cast<std::int64_t>(pos) ? 1 : 0;
  }
  for (std::int64_t q = nd.up; q >= 0; ++nd.depth) {
    std::int64_t c0, c1;
    btree_raw(n, static_cast<std::uint32_t>(q), &q, &c0, &c1);
  }
  return nd;
}

TreeNode double_tree_node(std::uint32_t n, std::uint32_t me, std::uint32_t t) {
  const std::uint32_t N = n & ~1u;
  TreeNode nd;
  if (n < 2) return nd;
  if (me == N) {  // odd n: the last member hangs under each tree's root as its child 0
    nd.up = t == 0 ? 0 : N - 1;
    nd.child_index = 0;
    nd.depth = 1;
    return nd;
  }
  if (t == 0) nd = btree_node(N, me);
  else nd = mapped_btree(N, N - 1 - me, [&](std::uint32_t pos) { return N - 1 - pos; });
  if (nd.up < 0 && (n & 1)) nd.down[0] = N;  // the root's free child place (btree roots use down[1])
  return nd;
}

std::int64_t double_tree_parent(std::uint32_t n, std::uint32_t me, std::uint32_t t) {
  const std::uint32_t N = n & ~1u;
  if (n < 2) return -1;
  if (me == N) return t == 0 ? 0 : N - 1;
  std::int64_t up, d0, d1;
  btree_raw(N, t == 0 ? me : N - 1 - me, &up, &d0, &d1);
  if (up < 0 || t == 0) return up;
  return static_cast<std::int64_t>(N - 1) - up;
}

const Family kTree{"DOUBLE_TREE", build, cost, 4};

}  // namespace hcomm::detail
