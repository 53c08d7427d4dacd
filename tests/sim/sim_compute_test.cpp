// Compute tasks (hcomm_launch_compute, hcomm_launch_compute_flops; docs/models/npu.md#compute) on
// a simulated Atlas 800T A2 (one simulation in this process): a task keeps its stream busy for
// exactly its duration, or for FLOPs / (the documented peak x efficiency), to the picosecond the
// engine rounds to; bad arguments are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <systemc>

#include "hcomm/hcomm.h"
#include "sim/runner.h"
#include "sim_test_util.h"

namespace {

std::map<std::string, double> got;   // rank 0's measurements, ps
std::map<std::string, int> codes;    // rank 0's result codes

double now_ps() { return sc_core::sc_time_stamp().to_seconds() * 1e12; }

void program(std::uint32_t r) {
  hcomm_context_t ctx = nullptr;
  hcomm_create_context(r, &ctx);
  hcomm_stream_t s = nullptr;
  hcomm_create_stream(ctx, &s);
  // Each measurement: submit at t, synchronize, the time it took. Every one pays the same submit,
  // dispatch and wake-up costs, so differences between them are the tasks' durations alone.
  auto timed = [&](const std::string& name, auto submit) {
    const double t0 = now_ps();
    codes[name] = submit();
    hcomm_stream_synchronize(s);
    if (r == 0) got[name] = now_ps() - t0;
  };
  timed("d1", [&] { return hcomm_launch_compute(s, 1000); });
  timed("d2", [&] { return hcomm_launch_compute(s, 1234567); });
  timed("bf16", [&] { return hcomm_launch_compute_flops(s, 1.5e11, HCOMM_DATA_TYPE_BFP16, 0.37); });
  timed("fp16", [&] { return hcomm_launch_compute_flops(s, 7e10, HCOMM_DATA_TYPE_FP16, 1.0); });
  timed("int8", [&] { return hcomm_launch_compute_flops(s, 3.3e11, HCOMM_DATA_TYPE_INT8, 0.5); });
  if (r == 0) {
    codes["zero duration"] = hcomm_launch_compute(s, 0);
    codes["efficiency 0"] = hcomm_launch_compute_flops(s, 1e9, HCOMM_DATA_TYPE_BFP16, 0.0);
    codes["efficiency 1.5"] = hcomm_launch_compute_flops(s, 1e9, HCOMM_DATA_TYPE_BFP16, 1.5);
    codes["flops 0"] = hcomm_launch_compute_flops(s, 0, HCOMM_DATA_TYPE_BFP16, 0.5);
    codes["flops nan"] = hcomm_launch_compute_flops(s, std::numeric_limits<double>::quiet_NaN(), HCOMM_DATA_TYPE_BFP16, 0.5);
    codes["fp32"] = hcomm_launch_compute_flops(s, 1e9, HCOMM_DATA_TYPE_FP32, 0.5);
    codes["int32"] = hcomm_launch_compute_flops(s, 1e9, HCOMM_DATA_TYPE_INT32, 0.5);
    codes["null stream"] = hcomm_launch_compute(nullptr, 10);
    hcomm_stream_synchronize(s);
  }
  hcomm_destroy_stream(s);
  hcomm_destroy_context(ctx);
}

TEST(SimCompute, DurationsAndPeaks) {
  auto topo = sim_test::preset("atlas800t-a2.json");
  ASSERT_TRUE(topo);
  sim::run_program(*topo, program, sim_test::quiet(), false);
  for (const char* k : {"d1", "d2", "bf16", "fp16", "int8"}) EXPECT_EQ(codes[k], HCOMM_SUCCESS) << k;
  // The duration form: exactly the difference of the durations.
  EXPECT_DOUBLE_EQ(got["d2"] - got["d1"], (1234567.0 - 1000.0) * 1e3);
  // The FLOPs form against the documented peaks (docs/models/npu.md#compute: 280 TFLOPS FP16 and
  // BF16, 560 TOPS INT8), to the ns.
  auto expect_ps = [](double flops, double peak, double eff) { return flops / (peak * eff) * 1e12; };
  EXPECT_NEAR(got["bf16"] - got["d1"], expect_ps(1.5e11, 280e12, 0.37) - 1000e3, 1000);
  EXPECT_NEAR(got["fp16"] - got["d1"], expect_ps(7e10, 280e12, 1.0) - 1000e3, 1000);
  EXPECT_NEAR(got["int8"] - got["d1"], expect_ps(3.3e11, 560e12, 0.5) - 1000e3, 1000);
  EXPECT_EQ(codes["zero duration"], HCOMM_E_PARA);
  EXPECT_EQ(codes["efficiency 0"], HCOMM_E_PARA);
  EXPECT_EQ(codes["efficiency 1.5"], HCOMM_E_PARA);
  EXPECT_EQ(codes["flops 0"], HCOMM_E_PARA);
  EXPECT_EQ(codes["flops nan"], HCOMM_E_PARA);
  EXPECT_EQ(codes["fp32"], HCOMM_E_NOT_SUPPORT);   // no documented FP32 peak
  EXPECT_EQ(codes["int32"], HCOMM_E_NOT_SUPPORT);  // not a matrix-unit type
  EXPECT_EQ(codes["null stream"], HCOMM_E_UNAVAIL);
}

}  // namespace
