// Result checks that catch one wrong bit (docs/algorithms/mesh.md#result-checks). For every dtype
// and reduction, at the rank counts the docs state: a result with one flipped bit, with one rank's
// contribution missing, or (sum, prod) with one rank's contribution counted twice fails the check;
// the device's own arithmetic (models::reduce_inplace) folding the inputs in several orders passes
// it, bit for bit wherever the check is exact.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "models/mem/reduce.h"
#include "sim/payload.h"

namespace {

using models::DType;
using models::ReduceOp;
using sim::CheckResult;
using sim::PayloadKey;
using sim::Reference;

const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min};

// The rank counts each dtype's checks are proven at (the docs' table): exact up to the last
// exact count, and bound mode above it for fp16 and bf16.
std::vector<std::uint32_t> rank_counts(DType t) {
  switch (t) {
    case DType::Fp16: return {2, 3, 16, 64, 65, 256};
    case DType::Bf16: return {2, 3, 16, 17, 64};
    default: return {2, 3, 16, 64, 1024};
  }
}

// Ranks whose missing or duplicated contribution is tried: all of a small communicator, else the
// ends and two inside.
std::vector<std::uint32_t> tried_ranks(std::uint32_t p) {
  if (p <= 16) {
    std::vector<std::uint32_t> all(p);
    for (std::uint32_t r = 0; r < p; ++r) all[r] = r;
    return all;
  }
  return {0, 1, p / 2, p - 1};
}

std::string what(DType t, ReduceOp op, std::uint32_t p) {
  return std::string(models::dtype_name(t)) + " " + models::reduce_op_name(op) + " p=" + std::to_string(p);
}

void expect_caught(DType t, ReduceOp op, std::uint32_t p, std::size_t max_tried = SIZE_MAX) {
  const std::uint64_t count = 2 * std::uint64_t{p} + 3;  // one probe element of every rank, and a partial block
  const PayloadKey k{21, 1, 2, p};
  const Reference ref = allreduce_reference(count, t, op, k, p);
  const bool exact = sim::reduction_exact(t, op, p);
  ASSERT_EQ(ref.tol.empty(), exact) << what(t, op, p);
  const std::size_t esz = models::dtype_size(t);
  const CheckResult self = sim::compare(ref.bytes.data(), ref.bytes.data(), ref.tol_at(0), count, t);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(self.exact, exact);

  // One flipped bit, every bit of: rank 0's and rank p-1's probe elements (0 and p-1) and, in
  // exact mode, bulk elements (p: block 1 is not a probe block; the last element).
  std::vector<std::uint64_t> elems = {0, p - 1};
  if (exact) elems.insert(elems.end(), {std::uint64_t{p}, count - 1});
  for (std::uint64_t e : elems)
    for (std::size_t bit = 0; bit < 8 * esz; ++bit) {
      auto bad = ref.bytes;
      bad[e * esz + bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      const CheckResult cr = sim::compare(bad.data(), ref.bytes.data(), ref.tol_at(0), count, t);
      ASSERT_EQ(cr.mismatches, 1u) << what(t, op, p) << ": bit " << bit << " of element " << e << " flipped";
      EXPECT_EQ(cr.first_bad, e);
    }

  // One rank's contribution missing; counted twice (sum and prod: max and min are idempotent).
  std::vector<std::uint32_t> tried = tried_ranks(p);
  if (tried.size() > max_tried) tried = {0, p - 1};
  for (std::uint32_t d : tried) {
    std::vector<std::uint32_t> without, twice;
    for (std::uint32_t r = 0; r < p; ++r) {
      if (r != d) without.push_back(r);
      twice.push_back(r);
      if (r == d) twice.push_back(r);
    }
    Reference got;
    sim::allreduce_reference(count, t, op, k, without, &got);
    EXPECT_FALSE(sim::compare(got.bytes.data(), ref.bytes.data(), ref.tol_at(0), count, t).ok())
        << what(t, op, p) << ": rank " << d << "'s contribution missing passed";
    if (op == ReduceOp::Sum || op == ReduceOp::Prod) {
      sim::allreduce_reference(count, t, op, k, twice, &got);
      EXPECT_FALSE(sim::compare(got.bytes.data(), ref.bytes.data(), ref.tol_at(0), count, t).ok())
          << what(t, op, p) << ": rank " << d << "'s contribution counted twice passed";
    }
  }
}

// The device's arithmetic over the inputs, in an order: ranks forward, backward, or as a pairwise
// tree (a ring's chain, its reverse, recursive halving).
std::vector<std::uint8_t> device_fold(DType t, ReduceOp op, const PayloadKey& k, std::uint32_t p, std::uint64_t count, int order) {
  const std::size_t esz = models::dtype_size(t);
  std::vector<std::vector<std::uint8_t>> in(p, std::vector<std::uint8_t>(count * esz));
  for (std::uint32_t r = 0; r < p; ++r) sim::fill_input(in[r].data(), count, t, op, k, r);
  if (order == 0)
    for (std::uint32_t r = 1; r < p; ++r) models::reduce_inplace(in[0].data(), in[r].data(), count * esz, t, op);
  else if (order == 1)
    for (std::uint32_t r = p - 1; r-- > 0;) models::reduce_inplace(in[p - 1].data(), in[r].data(), count * esz, t, op);
  else
    for (std::uint32_t step = 1; step < p; step *= 2)
      for (std::uint32_t r = 0; r + step < p; r += 2 * step) models::reduce_inplace(in[r].data(), in[r + step].data(), count * esz, t, op);
  return order == 1 ? in[p - 1] : in[0];
}

}  // namespace

// Which checks are exact: the rank counts docs/algorithms/mesh.md states.
TEST(PayloadDetection, ExactUpToTheDocumentedRankCounts) {
  EXPECT_TRUE(sim::reduction_exact(DType::Fp32, ReduceOp::Sum, 8192));
  EXPECT_FALSE(sim::reduction_exact(DType::Fp32, ReduceOp::Sum, 8193));
  EXPECT_TRUE(sim::reduction_exact(DType::Fp16, ReduceOp::Sum, 64));
  EXPECT_FALSE(sim::reduction_exact(DType::Fp16, ReduceOp::Sum, 65));
  EXPECT_TRUE(sim::reduction_exact(DType::Bf16, ReduceOp::Sum, 16));
  EXPECT_FALSE(sim::reduction_exact(DType::Bf16, ReduceOp::Sum, 17));
  EXPECT_TRUE(sim::reduction_exact(DType::Fp64, ReduceOp::Sum, 1u << 30));
  for (DType t : {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Fp16, DType::Bf16, DType::Fp32, DType::Fp64})
    for (ReduceOp op : {ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) EXPECT_TRUE(sim::reduction_exact(t, op, 1u << 20)) << what(t, op, 1u << 20);
  for (DType t : {DType::Int8, DType::Int16, DType::Int32, DType::Int64}) EXPECT_TRUE(sim::reduction_exact(t, ReduceOp::Sum, 1u << 20));
}

TEST(PayloadDetection, EveryDtypeAndOpCatchesAFlippedBitAMissingAndADuplicatedContribution) {
  for (DType t : {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Fp16, DType::Bf16, DType::Fp32, DType::Fp64})
    for (ReduceOp op : kOps)
      for (std::uint32_t p : rank_counts(t)) ASSERT_NO_FATAL_FAILURE(expect_caught(t, op, p)) << what(t, op, p);
}

// fp32 sums stay exact (bit for bit) up to 8192 ranks, the largest layout the project ships.
TEST(PayloadDetection, Fp32SumAt8192Ranks) { expect_caught(DType::Fp32, ReduceOp::Sum, 8192, 2); }

// No false alarm: the device's arithmetic in three orders passes every check, and gives the
// reference's very bytes wherever the check is exact.
TEST(PayloadDetection, DeviceArithmeticInAnyOrderPasses) {
  for (DType t : {DType::Int8, DType::Int32, DType::Fp16, DType::Bf16, DType::Fp32, DType::Fp64})
    for (ReduceOp op : kOps)
      for (std::uint32_t p : rank_counts(t)) {
        if (p > 256) continue;
        const std::uint64_t count = 2 * std::uint64_t{p} + 301;
        const PayloadKey k{5, 0, 1, p};
        const Reference ref = allreduce_reference(count, t, op, k, p);
        for (int order = 0; order < 3; ++order) {
          const auto got = device_fold(t, op, k, p, count, order);
          const CheckResult cr = sim::compare(got.data(), ref.bytes.data(), ref.tol_at(0), count, t);
          EXPECT_TRUE(cr.ok()) << what(t, op, p) << " order " << order << ": " << cr.detail;
          if (ref.tol.empty()) {
            EXPECT_EQ(got, ref.bytes) << what(t, op, p) << " order " << order;
          }
        }
      }
}

// Every 2W consecutive elements hold one probe of each of the W ranks, so a reduce-scatter's
// block (or any checked part) of at least 2W elements catches a missing rank wherever it starts.
TEST(PayloadDetection, AnyWindowOfTwiceTheWorldHoldsEveryRanksProbe) {
  const std::uint32_t p = 12;
  const PayloadKey k{3, 0, 0, p};
  const std::uint64_t count = 10 * p;
  const Reference ref = allreduce_reference(count, DType::Fp32, ReduceOp::Max, k, p);
  for (std::uint64_t start = 0; start + 2 * p <= count; ++start)
    for (std::uint32_t d = 0; d < p; ++d) {
      std::vector<std::uint32_t> without;
      for (std::uint32_t r = 0; r < p; ++r)
        if (r != d) without.push_back(r);
      Reference got;
      sim::allreduce_reference(count, DType::Fp32, ReduceOp::Max, k, without, &got);
      EXPECT_FALSE(sim::compare(got.bytes.data() + 4 * start, ref.bytes.data() + 4 * start, nullptr, 2 * p, DType::Fp32).ok())
          << "window at " << start << ", rank " << d << " missing";
    }
}
