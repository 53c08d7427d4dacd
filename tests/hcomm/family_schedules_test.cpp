// Every algorithm family's schedules, run by the in-memory interpreter (schedule_interp.h) against host
// references: all-reduce, reduce-scatter, all-gather, broadcast, reduce, scatter, gather and
// all-to-all on member counts 1..17, 24, 31..33 (powers of two and not), several roots, sizes
// that do not divide evenly, and staging slots smaller than a block (transfers in pieces).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "algo/contention.h"
#include "algo/family.h"
#include "schedule_interp.h"

using namespace hcomm::detail;

namespace {

struct Case {
  const Family* f;
  CollOp op;
  std::uint32_t n, root;
  std::uint64_t elems;       // AllReduce/Broadcast/Reduce: W elements; block ops: elements per block
  std::uint64_t slot_bytes;  // staging slot
  std::uint32_t local = 1;   // ranks per server (the pipeline)
};

std::int64_t val(std::uint32_t m, std::uint64_t i) { return static_cast<std::int64_t>(m) * 1000003 + static_cast<std::int64_t>(i) * 7 + 1; }

bool blocky(CollOp op) { return op != CollOp::AllReduce && op != CollOp::Broadcast && op != CollOp::Reduce; }
// W's bytes: n blocks or the whole vector, 8-byte elements; the all-to-all buffers follow it.
std::uint64_t w_bytes(const Case& c) { return blocky(c.op) ? std::uint64_t{c.n} * c.elems * 8 : c.elems * 8; }

// Member m's ScheduleIn for case c: W at 0, the all-to-all input and output after it.
ScheduleIn schedule_in(const Case& c, std::uint32_t m) {
  const std::uint64_t wbytes = w_bytes(c);
  ScheduleIn in;
  in.op = c.op;
  in.n = c.n;
  in.me = m;
  in.root = c.root;
  in.esz = 8;
  in.w = 0;
  in.bytes = blocky(c.op) ? 0 : wbytes;
  in.blocks = Blocks{c.n, 8, c.elems, nullptr, nullptr};
  in.send_blocks = in.blocks;
  in.in = wbytes;
  in.out = 2 * wbytes;
  in.slot_bytes = c.slot_bytes;
  in.slots = c.f->slots ? c.f->slots : 2 * c.local;
  in.local = c.local;
  return in;
}

// Returns "" when right, else what is wrong.
std::string run_case(const Case& c) {
  const std::uint64_t n = c.n;
  const bool blocky = ::blocky(c.op);
  const std::uint64_t wbytes = w_bytes(c);
  const std::uint64_t in_addr = wbytes, out_addr = 2 * wbytes;  // AllToAll buffers after W
  schedule_interp::Interp it(c.n, 3 * wbytes + 64);
  std::vector<Schedule> schedules(c.n);
  for (std::uint32_t m = 0; m < c.n; ++m) {
    if (!c.f->build(schedule_in(c, m), &schedules[m])) return "not built";
    // Inputs.
    const std::uint64_t words = blocky ? n * c.elems : c.elems;
    for (std::uint64_t i = 0; i < words; ++i) {
      switch (c.op) {
        case CollOp::AllReduce: case CollOp::Reduce: case CollOp::ReduceScatter: *it.at(m, i * 8) = val(m, i); break;
        case CollOp::Broadcast: case CollOp::Scatter: *it.at(m, i * 8) = m == c.root ? val(m, i) : -1; break;
        case CollOp::AllGather: case CollOp::Gather:
          *it.at(m, i * 8) = i / c.elems == m ? val(m, i) : -1; break;
        case CollOp::AllToAll: *it.at(m, in_addr + i * 8) = val(m, i); *it.at(m, i * 8) = -1; break;
      }
    }
  }
  std::string err;
  if (!it.run(schedules, &err)) return err;
  for (std::uint32_t m = 0; m < c.n; ++m) {
    const std::uint64_t words = blocky ? n * c.elems : c.elems;
    for (std::uint64_t i = 0; i < words; ++i) {
      std::int64_t want = 0, got = *it.at(m, i * 8);
      bool check = true;
      switch (c.op) {
        case CollOp::AllReduce:
          for (std::uint32_t q = 0; q < c.n; ++q) want += val(q, i);
          break;
        case CollOp::Reduce:
          check = m == c.root;
          for (std::uint32_t q = 0; q < c.n; ++q) want += val(q, i);
          break;
        case CollOp::ReduceScatter:
          check = i / c.elems == m;
          for (std::uint32_t q = 0; q < c.n; ++q) want += val(q, i);
          break;
        case CollOp::Broadcast: want = val(c.root, i); break;
        case CollOp::Scatter: check = i / c.elems == m; want = val(c.root, i); break;
        case CollOp::AllGather: want = val(static_cast<std::uint32_t>(i / c.elems), i); break;
        case CollOp::Gather: check = m == c.root; want = val(static_cast<std::uint32_t>(i / c.elems), i); break;
        case CollOp::AllToAll: {
          // recv block j at member m = send block m of member j
          const std::uint32_t j = static_cast<std::uint32_t>(i / c.elems);
          got = *it.at(m, out_addr + i * 8);
          want = val(j, m * c.elems + i % c.elems);
          break;
        }
      }
      if (check && got != want)
        return "member " + std::to_string(m) + " word " + std::to_string(i) + ": " + std::to_string(got) + " != " +
               std::to_string(want);
    }
  }
  return "";
}

const CollOp kOps[] = {CollOp::AllReduce, CollOp::ReduceScatter, CollOp::AllGather, CollOp::Broadcast,
                       CollOp::Reduce,    CollOp::Scatter,       CollOp::Gather,    CollOp::AllToAll};

void sweep(const Family& f) {
  const std::uint32_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 31, 32, 33};
  int built = 0;
  for (CollOp op : kOps)
    for (std::uint32_t n : ns)
      for (std::uint64_t elems : {std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{37}})
        for (std::uint64_t slot : {std::uint64_t{16}, std::uint64_t{4096}})
          for (std::uint32_t root : {0u, n / 2, n - 1}) {
            if (op != CollOp::Broadcast && op != CollOp::Reduce && op != CollOp::Scatter && op != CollOp::Gather && root)
              continue;
            const Case c{&f, op, n, root, elems, slot};
            const std::string r = run_case(c);
            if (r == "not built") continue;
            ++built;
            EXPECT_EQ(r, "") << f.name << " " << coll_op_name(op) << " n=" << n << " root=" << root << " elems=" << elems
                             << " slot=" << slot;
          }
  EXPECT_GT(built, 0) << f.name << " builds nothing";
}

// The most steps of any member's all-reduce schedule: n members, `elems` 8-byte elements, staging slots
// of `slot_bytes`. A member without a schedule is a test failure (and 0).
std::size_t most_allreduce_steps(const Family& f, std::uint32_t n, std::uint64_t elems, std::uint64_t slot_bytes) {
  std::size_t steps = 0;
  for (std::uint32_t m = 0; m < n; ++m) {
    ScheduleIn in;
    in.op = CollOp::AllReduce;
    in.n = n;
    in.me = m;
    in.esz = 8;
    in.bytes = elems * 8;
    in.slot_bytes = slot_bytes;
    in.slots = f.slots;
    Schedule p;
    if (!f.build(in, &p)) {
      ADD_FAILURE() << f.name << " n=" << n << " member " << m << ": no schedule";
      return 0;
    }
    steps = std::max(steps, p.steps.size());
  }
  return steps;
}

}  // namespace

TEST(Schedule, Ring) { sweep(kRing); }

// The pipeline on S servers x L ranks: all-reduce, reduce-scatter, all-gather; and what it refuses.
TEST(Schedule, Pipeline) {
  int built = 0;
  for (std::uint32_t L : {2u, 3u, 4u, 8u})
    for (std::uint32_t S : {2u, 3u, 4u, 5u, 16u})
      for (CollOp op : {CollOp::AllReduce, CollOp::ReduceScatter, CollOp::AllGather})
        for (std::uint64_t elems : {std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{37}})
          for (std::uint64_t slot : {std::uint64_t{16}, std::uint64_t{4096}}) {
            const Case c{&kPipeline, op, S * L, 0, op == CollOp::AllReduce ? elems * S * L + 3 : elems, slot, L};
            const std::string r = run_case(c);
            ++built;
            EXPECT_EQ(r, "") << coll_op_name(op) << " " << S << "x" << L << " elems=" << elems << " slot=" << slot;
          }
  EXPECT_EQ(built, 4 * 5 * 3 * 3 * 2);
  // One server, one rank per server, ranks not a multiple of L, or rooted operations: not built.
  EXPECT_EQ(run_case(Case{&kPipeline, CollOp::AllReduce, 8, 0, 64, 4096, 8}), "not built");
  EXPECT_EQ(run_case(Case{&kPipeline, CollOp::AllReduce, 8, 0, 64, 4096, 1}), "not built");
  EXPECT_EQ(run_case(Case{&kPipeline, CollOp::AllGather, 10, 0, 4, 4096, 4}), "not built");
  EXPECT_EQ(run_case(Case{&kPipeline, CollOp::Broadcast, 8, 0, 64, 4096, 4}), "not built");
}

// The two-level all-to-all (mesh+pairwise) on S servers x L ranks: blocks smaller and larger
// than a staging slot; not built on one server, one rank per server, n not a multiple of L, or for
// other operations.
TEST(Schedule, HierAllToAll) {
  int built = 0;
  for (std::uint32_t L : {2u, 3u, 4u, 8u})
    for (std::uint32_t S : {2u, 3u, 4u, 5u, 16u})
      for (std::uint64_t elems : {std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{37}})
        for (std::uint64_t slot : {std::uint64_t{16}, std::uint64_t{4096}}) {
          const std::string r = run_case(Case{&kHierAllToAll, CollOp::AllToAll, S * L, 0, elems, slot, L});
          ++built;
          EXPECT_EQ(r, "") << S << "x" << L << " elems=" << elems << " slot=" << slot;
        }
  EXPECT_EQ(built, 4 * 5 * 3 * 2);
  EXPECT_EQ(run_case(Case{&kHierAllToAll, CollOp::AllToAll, 8, 0, 4, 4096, 8}), "not built");
  EXPECT_EQ(run_case(Case{&kHierAllToAll, CollOp::AllToAll, 8, 0, 4, 4096, 1}), "not built");
  EXPECT_EQ(run_case(Case{&kHierAllToAll, CollOp::AllToAll, 10, 0, 4, 4096, 4}), "not built");
  EXPECT_EQ(run_case(Case{&kHierAllToAll, CollOp::AllGather, 8, 0, 4, 4096, 4}), "not built");
}

#include "algo/double_tree.h"

TEST(Schedule, DoubleTree) { sweep(kTree); }
TEST(Schedule, Pairwise) { sweep(kPairwise); }
TEST(Schedule, Star) { sweep(kStar); }

// The double tree's two trees are complementary (no member interior in both), well formed
// (parents and children agree, one root, depth <= ceil_log2(n & ~1)), and its all-reduce takes
// P + 2 * ceil_log2(n & ~1) - 1 steps at most (P slices per tree).
TEST(Schedule, DoubleTreeParentIsTheNodes) {
  for (std::uint32_t n : {2u, 3u, 7u, 8u, 33u, 100u, 1024u, 1025u})
    for (std::uint32_t t = 0; t < 2; ++t)
      for (std::uint32_t m = 0; m < n; ++m) EXPECT_EQ(double_tree_parent(n, m, t), double_tree_node(n, m, t).up) << n << " " << m << " " << t;
}

TEST(Schedule, DoubleTreeShapeAndSteps) {
  for (std::uint32_t n = 2; n <= 64; ++n) {
    const std::uint32_t H = ceil_log2(n & ~1u);
    for (std::uint32_t m = 0; m < n; ++m) {
      const TreeNode a = double_tree_node(n, m, 0), b = double_tree_node(n, m, 1);
      EXPECT_FALSE(a.interior() && b.interior()) << "n=" << n << " member " << m;
      for (std::uint32_t t = 0; t < 2; ++t) {
        const TreeNode nd = double_tree_node(n, m, t);
        EXPECT_LE(nd.depth, H) << "n=" << n << " member " << m << " tree " << t;
        if (nd.up >= 0) {
          const TreeNode up = double_tree_node(n, static_cast<std::uint32_t>(nd.up), t);
          EXPECT_EQ(up.down[nd.child_index], m) << "n=" << n << " member " << m << " tree " << t;
          EXPECT_EQ(up.depth + 1, nd.depth);
        } else {
          EXPECT_EQ(m, t == 0 ? 0u : (n & ~1u) - 1) << "n=" << n << " tree " << t;
        }
        for (std::int64_t c : nd.down)
          if (c >= 0) {
            EXPECT_EQ(double_tree_node(n, static_cast<std::uint32_t>(c), t).up, m);
          }
      }
    }
    // 1000 elements, 16-byte slots: 2 elements a slice, P = 250 per tree.
    EXPECT_LE(most_allreduce_steps(kTree, n, 1000, 16), 250 + 2 * H - 1) << "n=" << n;
  }
}

TEST(Schedule, Hd) { sweep(kHd); }
TEST(Schedule, Nhr) { sweep(kNhr); }
TEST(Schedule, Nb) { sweep(kNb); }
// The logarithmic families' all-reduce step counts (the most steps of any member) against their
// closed forms (docs/algorithms/halving-doubling.md, nhr.md, nb.md).
TEST(Schedule, LogStepCounts) {
  for (std::uint32_t n = 2; n <= 33; ++n) {
    std::uint32_t p = 1;
    while (p * 2 <= n) p *= 2;
    const std::uint32_t want_hd = 2 * ceil_log2(p) + (p == n ? 0 : 2), want_log = 2 * ceil_log2(n);
    for (const Family* f : {&kHd, &kNhr, &kNb}) {
      EXPECT_EQ(most_allreduce_steps(*f, n, 1000, 1 << 20), f == &kHd ? want_hd : want_log) << f->name << " n=" << n;
    }
  }
}

TEST(Schedule, DoubleRing) { sweep(kDoubleRing); }

namespace {

// "" when steps a and b are the same transfers and copies, field by field; else the first difference.
std::string diff(const Step& a, const Step& b) {
  if (a.sends.size() != b.sends.size() || a.recvs.size() != b.recvs.size() || a.locals.size() != b.locals.size())
    return "entry counts";
  for (std::size_t i = 0; i < a.sends.size(); ++i) {
    const Send &x = a.sends[i], &y = b.sends[i];
    if (x.to != y.to || x.src != y.src || x.bytes != y.bytes || x.mode != y.mode || x.dst_off != y.dst_off || x.slot != y.slot)
      return "send " + std::to_string(i);
  }
  for (std::size_t i = 0; i < a.recvs.size(); ++i) {
    const Recv &x = a.recvs[i], &y = b.recvs[i];
    if (x.from != y.from || x.dst != y.dst || x.bytes != y.bytes || x.mode != y.mode || x.slot != y.slot ||
        x.width != y.width || x.dpitch != y.dpitch)
      return "recv " + std::to_string(i);
  }
  for (std::size_t i = 0; i < a.locals.size(); ++i) {
    const Local &x = a.locals[i], &y = b.locals[i];
    if (x.dst != y.dst || x.src != y.src || x.bytes != y.bytes || x.reduce != y.reduce || x.width != y.width ||
        x.spitch != y.spitch || x.dpitch != y.dpitch)
      return "local " + std::to_string(i);
  }
  return "";
}

}  // namespace

// A family with a step count builds any window [first, end) of a schedule as exactly the whole schedule's
// steps there (the executor submits long schedules a window at a time: algo/exec.h), and its count is
// the whole schedule's length.
TEST(Schedule, WindowsAreTheWholeSchedulesSteps) {
  int windows = 0;
  for (const Family* f : {&kRing, &kDoubleRing, &kPairwise, &kHierAllToAll, &kPipeline, &kTree, &kNhr}) {
    for (CollOp op : kOps)
      for (std::uint32_t n : {2u, 3u, 8u, 13u, 24u, 40u})
        for (std::uint64_t slot : {std::uint64_t{16}, std::uint64_t{4096}}) {
          const bool shaped = f == &kHierAllToAll || f == &kPipeline;  // servers of 4 ranks where n allows
          const Case c{f, op, n, n / 2, 37, slot, shaped && n % 4 == 0 ? 4u : 1u};
          for (std::uint32_t m = 0; m < n; ++m) {
            const ScheduleIn in = schedule_in(c, m);
            Schedule whole;
            if (!f->build(in, &whole)) {
              if (f->count) {
                EXPECT_EQ(f->count(in), 0u) << f->name << " " << coll_op_name(op) << " n=" << n;
              }
              continue;
            }
            if (!f->count) continue;  // whole schedules only
            const std::uint64_t total = whole.steps.size();
            ASSERT_EQ(f->count(in), total) << f->name << " " << coll_op_name(op) << " n=" << n << " member " << m;
            for (std::uint64_t w : {1u, 3u, 7u})
              for (std::uint64_t first = 0; first < total; first += w) {
                Schedule p;
                p.first = first;
                p.end = std::min(total, first + w);
                ASSERT_TRUE(f->build(in, &p));
                ASSERT_EQ(p.steps.size(), p.end - first) << f->name << " window " << first;
                for (std::uint64_t k = first; k < p.end; ++k)
                  EXPECT_EQ(diff(p.steps[k - first], whole.steps[k]), "")
                      << f->name << " " << coll_op_name(op) << " n=" << n << " member " << m << " step " << k << " window of " << w;
                ++windows;
              }
          }
        }
  }
  EXPECT_GT(windows, 10000);
}

// Leaf-uplink contention (algo/contention.h), computed by hand. `leaf`: each member's leaf, in
// member (server) order; every leaf `rho` times more bandwidth down than up.
namespace {
FabricView fabric(std::vector<std::uint32_t> leaf, std::uint32_t leaves, double rho) {
  FabricView v;
  v.leaf = std::move(leaf);
  v.rho.assign(leaves, rho);
  v.known = rho > 1;
  return v;
}
}  // namespace

TEST(Contention, HandComputedFactors) {
  const FabricView v = fabric({0, 0, 0, 0, 1, 1, 1, 1}, 2, 4);  // 8 members, 2 leaves of 4, 4:1
  // The ring: one of a leaf's four members sends across (x = 1/4, x * rho = 1): no growth.
  EXPECT_DOUBLE_EQ(contention_factor(&kRing, CollOp::AllReduce, v), 1.0);
  // H-D_R: masks 4, 2, 1 move 4:2:1; at mask 4 every member's partner is under the other leaf
  // (x = 1: 4 x the bytes' time), masks 2 and 1 stay under the leaf.
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::AllReduce, v), (4 * 4 + 2 + 1) / 7.0);
  // NHR: pairs at distance 4 (all across, half the volume), then 2 and 1 (a quarter, an eighth) inside.
  EXPECT_DOUBLE_EQ(contention_factor(&kNhr, CollOp::ReduceScatter, v), (0.5 * 4 + 0.25 + 0.125) / 0.875);
  // NB: d = 1 moves 1 block (1 of 4 members across: 1), d = 2 two (2 of 4: 2), d = 4 four (all: 4).
  EXPECT_DOUBLE_EQ(contention_factor(&kNb, CollOp::AllGather, v), (1 * 1 + 2 * 2 + 4 * 4) / 7.0);
  // The double tree keeps most edges under a leaf: more than the ring's 1, well under H-D_R's.
  const double tree = contention_factor(&kTree, CollOp::AllReduce, v);
  EXPECT_GE(tree, 1.0);
  EXPECT_LT(tree, contention_factor(&kHd, CollOp::AllReduce, v));
  // Families and operations without a step pattern here are not priced.
  EXPECT_DOUBLE_EQ(contention_factor(&kPairwise, CollOp::AllToAll, v), 1.0);
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::Broadcast, v), 1.0);
}

TEST(Contention, FoldAndLeafOrder) {
  // H-D_R over 6 members (p = 4, r = 2): members 1 and 3 fold into 0 and 2; survivors 0, 2, 4, 5
  // (virtual 0..3). Leaves {0,1,2} and {3,4,5} at 2:1: mask 2 pairs 0-4 and 2-5, all across
  // (x = 1: 2), weight 2; mask 1 pairs 0-2 and 4-5, inside, weight 1.
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::AllReduce, fabric({0, 0, 0, 1, 1, 1}, 2, 2)), (2 * 2 + 1) / 3.0);
  // Leaves that alternate in server order: every ring step crosses (x = 1): the whole rho.
  EXPECT_DOUBLE_EQ(contention_factor(&kRing, CollOp::AllReduce, fabric({0, 1, 0, 1, 0, 1}, 2, 3)), 3.0);
  // A 1:1 fabric, or one not read: nothing grows.
  FabricView flat = fabric({0, 0, 1, 1}, 2, 1);
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::AllReduce, flat), 1.0);
  flat.known = true;
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::AllReduce, flat), 1.0);
  EXPECT_DOUBLE_EQ(contention_factor(&kHd, CollOp::AllReduce, FabricView{}), 1.0);
}
