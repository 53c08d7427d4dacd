// One simulation (SystemC cannot be reset): the quickstart server running a multi-step scenario.
// Timing is compared with HCCL's alpha-beta formula for mesh all-reduce, 2a + (2/p) n b, and every
// result with a host-computed reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "sim/config/scenario.h"
#include "sim/runner.h"
#include "sim_test_util.h"

using namespace sim;

namespace {

Scenario make_scenario() {
  auto topo = sim_test::preset("atlas800t-a2.json");
  EXPECT_TRUE(topo);
  Scenario sc;
  sc.name = "sim_allreduce_test";
  sc.topology = *topo;
  sc.seed = 99;
  auto step = [](const char* op, std::uint64_t bytes, models::DType t, models::ReduceOp r) {
    WorkloadStep w;
    w.set_op(*workload_op_from(op));
    w.bytes = bytes;
    w.dtype = t;
    w.reduce = r;
    return w;
  };
  sc.workload = {
      step("allreduce", 1 << 20, models::DType::Fp32, models::ReduceOp::Sum),
      step("allreduce", 16 << 20, models::DType::Fp32, models::ReduceOp::Sum),
      step("allreduce", 64 << 20, models::DType::Fp32, models::ReduceOp::Sum),
      step("allreduce", (3 << 20) + 12, models::DType::Int32, models::ReduceOp::Max),  // slices of unequal size
      step("allreduce", 1 << 20, models::DType::Fp16, models::ReduceOp::Prod),
      step("allreduce", 1 << 20, models::DType::Bf16, models::ReduceOp::Sum),
      step("allreduce", 1 << 20, models::DType::Int8, models::ReduceOp::Sum),
      step("sendrecv", 5 << 20, models::DType::Fp32, models::ReduceOp::Sum),
  };
  return sc;
}

}  // namespace

TEST(SimAllReduce, MeshMatchesAlphaBetaAndEveryResultIsCorrect) {
  static Scenario sc = make_scenario();
  RunResult r = run_scenario(sc, sim_test::quiet());
  for (auto& f : r.failures) ADD_FAILURE() << f;
  ASSERT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.steps.size(), sc.workload.size());
  for (auto& s : r.steps) {
    EXPECT_EQ(s.checked, 8u) << "step " << s.step;
    EXPECT_EQ(s.failed, 0u) << "step " << s.step;
  }

  // Alpha-beta reference. alpha = HCCS one-way latency, beta = 1 / (28 GB/s).
  const double p = 8, alpha_us = 0.5, beta_us_per_byte = 1.0 / 28e3;
  // The model pays, beyond the formula (the tolerance, derived from the algorithm, not fitted):
  //  - the local copy of the rank's own slice into the collective buffer: n/p bytes at
  //    min(SDMA 400 GB/s, HBM/2 = 800 GB/s);
  //  - 3 one-way latencies more than the formula's 2 (READY, DONE, REDUCED notifies);
  //  - 3 SDMA descriptor setups of 0.2 us (local copy, reduce-scatter, all-gather), each with an
  //    HBM read latency before its first byte and a write latency after its last (0.1 us each);
  //  - the serial stream-task dispatches on the critical path, 0.1 us each: 5(p-1)+12 = 47
  //    (begin/end markers, p-1 PULLED waits, READY and fork records, DONE waits, REDUCED
  //    records, join waits, 4 tasks on each slave per phase), plus 2 local notifies of 0.05 us.
  const double handshake_us = 3 * 0.5 + 3 * (0.2 + 2 * 0.1) + (5 * (p - 1) + 12) * 0.1 + 2 * 0.05;
  for (int i = 0; i < 3; ++i) {
    const auto& s = r.steps[i];
    const double n = static_cast<double>(s.bytes);
    const double formula = 2 * alpha_us + 2.0 / p * n * beta_us_per_byte;
    const double local_copy = n / p / 400e3;
    EXPECT_GE(s.time_us, formula) << "cannot beat the links: " << s.bytes;
    EXPECT_LE(s.time_us, formula + local_copy + handshake_us) << s.bytes;
    std::printf("mesh all-reduce %9.0f B: simulated %9.3f us, formula %9.3f us, error %+6.2f %%\n", n, s.time_us, formula,
                100 * (s.time_us - formula) / formula);
    // busbw definition (nccl-tests): algbw * 2(p-1)/p
    EXPECT_NEAR(s.busbw_GBps, n / (s.time_us * 1e3) * 2 * (p - 1) / p, 1e-9);
  }
  // At 64 MiB the formula is within 5 %: the local copy (n/p at 400 GB/s vs 2 (n/p) at 28 GB/s) is
  // 3.5 % of the time, handshakes 1 %.
  EXPECT_LT((r.steps[2].time_us - (1 + 2.0 / p * (64 << 20) * beta_us_per_byte)) / r.steps[2].time_us, 0.05);

  // Point-to-point: 5 MiB through the receiver's window takes at least one serialization over HCCS
  // plus one latency, and at most that plus the copy out of the window and the handshakes.
  const auto& sr = r.steps[7];
  const double ser = (5 << 20) * beta_us_per_byte;
  EXPECT_GE(sr.time_us, ser + alpha_us);
  EXPECT_LE(sr.time_us, ser + alpha_us + (5 << 20) / 400e3 + handshake_us);
}
