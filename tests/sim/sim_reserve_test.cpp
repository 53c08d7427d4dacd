// hcomm_reserve_bandwidth (docs/routing.md#reservation), one simulation in this process: a2-2node
// (two A2 servers, one 200 Gb/s NIC per NPU: R = 25 GB/s, one leaf), chunk tier (DCQCN). Rank 0
// writes X = 32 MiB to rank 8 on two communicators at once (the world A and a split of it B, two
// streams; A's stream is dispatched first). Closed forms:
//   no reservation: both communicators use the NPU pair's shared QPs, so B's write waits behind
//                   A's:                                              T_A = X / R, T_B = 2X / R
//   B reserves m = 20 GB/s (ceiling m): B moves to its own QPs at m, A is capped at R - m:
//                                                                     T_B = X / m, T_A = X / (R - m)
//   B alone, reserved:                                                T_B = X / m
// within 2 % + 10 us, except B under A's competing traffic: up to 20 % more (the two capped
// senders' paced rates sum to the line rate, so the chunk tier's fluid queue marks ECN on their
// bursts and DCQCN cuts B for a while; docs/routing.md#reservation). Bad arguments are
// HCOMM_E_PARA; a reservation that does not fit is HCOMM_E_AGAIN after timeout_ms of host time;
// release, and destroy, give the share back.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"
#include "sim/runner.h"
#include "sim_test_util.h"

namespace {

constexpr std::uint32_t kRanks = 16;
constexpr std::uint64_t kX = 32ULL << 20;
constexpr double kR = 25e9, kM = 20e9;  // B/s

std::map<std::string, int> rc;  // rank 0's results
double t_a[4] = {-1, -1, -1, -1}, t_b[4] = {-1, -1, -1, -1}, again_ms = -1;
std::uint64_t share_a = 0, share_b = 0;

void program(std::uint32_t r) {
  hcomm_context_t ctx = nullptr;
  hcomm_create_context(r % 8, &ctx);
  hcomm_comm_t a = nullptr, b = nullptr;
  hcomm_comm_init(ctx, kRanks, r, &a);
  hcomm_comm_split(a, 0, r, &b);
  hcomm_stream_t sa = nullptr, sb = nullptr;
  hcomm_create_stream(ctx, &sa);
  hcomm_create_stream(ctx, &sb);
  void *ba = nullptr, *bb = nullptr;
  hcomm_malloc(ctx, kX, &ba);
  hcomm_malloc(ctx, kX, &bb);
  hcomm_mr_t ma{}, mb{};
  hcomm_reg_mr(ctx, ba, kX, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &ma);
  hcomm_reg_mr(ctx, bb, kX, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mb);
  std::uint64_t ra = 0, rb = 0;
  hcomm_remote_addr(a, 8, ba, &ra);
  hcomm_remote_addr(b, 8, bb, &rb);
  auto phase = [&](int i, bool wa = true, bool wb = true) {
    if (r != 0) return;
    hcomm_event_t e[4];
    for (auto& x : e) hcomm_create_event(ctx, &x);
    hcomm_record_event(e[0], sa);
    hcomm_record_event(e[2], sb);
    if (wb) rc["write_b" + std::to_string(i)] = hcomm_rdma_write(bb, kX, 8, rb, mb.rkey, b, sb);
    if (wa) rc["write_a" + std::to_string(i)] = hcomm_rdma_write(ba, kX, 8, ra, ma.rkey, a, sa);
    hcomm_record_event(e[1], sa);
    hcomm_record_event(e[3], sb);
    rc["sync" + std::to_string(i)] = hcomm_stream_synchronize(sa) | hcomm_stream_synchronize(sb);
    float ms = 0;
    hcomm_event_elapsed_time(e[0], e[1], &ms);
    t_a[i] = ms * 1e3;
    hcomm_event_elapsed_time(e[2], e[3], &ms);
    t_b[i] = ms * 1e3;
    for (auto& x : e) hcomm_destroy_event(x);
  };
  phase(0);
  if (r == 0) {
    rc["para_zero"] = hcomm_reserve_bandwidth(b, 0, 0, 0);
    rc["para_max_below_min"] = hcomm_reserve_bandwidth(b, 10, 5, 0);
    rc["para_timeout"] = hcomm_reserve_bandwidth(b, 10, 0, 300001);
    rc["para_above_line"] = hcomm_reserve_bandwidth(b, static_cast<std::uint64_t>(kR), 0, 0);
    rc["release_none"] = hcomm_release_bandwidth(b);
    rc["reserve_b"] = hcomm_reserve_bandwidth(b, static_cast<std::uint64_t>(kM), static_cast<std::uint64_t>(kM), 0);
    std::uint64_t m = 0;
    hcomm_get_reserved_bandwidth(b, &m, &share_b);
    hcomm_get_reserved_bandwidth(a, &m, &share_a);
    // A wants 5 GB/s: 20 + 5 > 22.5 (90 % of 25): does not fit, after 5 ms of host time.
    hcomm_event_t e0 = nullptr, e1 = nullptr;
    hcomm_create_event(ctx, &e0);
    hcomm_create_event(ctx, &e1);
    hcomm_record_event(e0, sa);
    hcomm_stream_synchronize(sa);
    rc["again"] = hcomm_reserve_bandwidth(a, 5000000000ULL, 0, 5);
    hcomm_record_event(e1, sa);
    hcomm_stream_synchronize(sa);
    float ms = 0;
    hcomm_event_elapsed_time(e0, e1, &ms);
    again_ms = ms;
  }
  phase(1);
  phase(2, false, true);  // B alone, reserved: at its ceiling
  if (r == 0) {
    rc["release"] = hcomm_release_bandwidth(b);
    rc["reserve_a_after_release"] = hcomm_reserve_bandwidth(a, 5000000000ULL, 0, 0);
    rc["again_b"] = hcomm_reserve_bandwidth(b, static_cast<std::uint64_t>(kM), 0, 0);
  }
  hcomm_barrier(a, nullptr);
  hcomm_comm_destroy(a);  // releases A's share (B, a child, outlives its parent)
  if (r == 0) rc["reserve_b_after_destroy"] = hcomm_reserve_bandwidth(b, static_cast<std::uint64_t>(kM), 0, 0);
  hcomm_comm_destroy(b);
}

}  // namespace

TEST(SimReserve, ClosedForm) {
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  EXPECT_GT(sim::run_program(*topo, program, sim_test::quiet()), 0u);
  for (const char* k : {"write_a0", "write_b0", "sync0", "write_a1", "write_b1", "sync1", "write_b2", "sync2", "reserve_b", "release",
                        "reserve_a_after_release", "reserve_b_after_destroy"})
    EXPECT_EQ(rc[k], HCOMM_SUCCESS) << k;
  for (const char* k : {"para_zero", "para_max_below_min", "para_timeout", "para_above_line"}) EXPECT_EQ(rc[k], HCOMM_E_PARA) << k;
  EXPECT_EQ(rc["release_none"], HCOMM_E_NOT_FOUND);
  EXPECT_EQ(rc["again"], HCOMM_E_AGAIN);
  EXPECT_EQ(rc["again_b"], HCOMM_E_AGAIN);
  EXPECT_GE(again_ms, 5.0);
  EXPECT_LT(again_ms, 5.1);
  EXPECT_EQ(share_b, static_cast<std::uint64_t>(kM));
  EXPECT_EQ(share_a, static_cast<std::uint64_t>(kR - kM));
  const double X = static_cast<double>(kX);
  const double line = X / kR * 1e6, reserved = X / kM * 1e6, capped = X / (kR - kM) * 1e6;  // us
  std::printf("32 MiB writes 0 -> 8 on two communicators, A's dispatched first: without reservation A %.3f us (X/R = %.3f), "
              "B %.3f us (2X/R = %.3f); B reserving 20 GB/s: B %.3f us (X/m = %.3f), A %.3f us (X/(R-m) = %.3f); "
              "B alone reserved %.3f us; E_AGAIN after %.3f ms\n",
              t_a[0], line, t_b[0], 2 * line, t_b[1], reserved, t_a[1], capped, t_b[2], again_ms);
  auto within = [](double t, double f, double tol) { return t >= f * 0.98 && t <= f * (1 + tol) + 10.0; };
  EXPECT_TRUE(within(t_a[0], line, 0.02)) << t_a[0] << " vs " << line;
  EXPECT_TRUE(within(t_b[0], 2 * line, 0.02)) << t_b[0] << " vs " << 2 * line;
  EXPECT_TRUE(within(t_b[1], reserved, 0.20)) << t_b[1] << " vs " << reserved;
  EXPECT_TRUE(within(t_a[1], capped, 0.05)) << t_a[1] << " vs " << capped;
  EXPECT_TRUE(within(t_b[2], reserved, 0.02)) << t_b[2] << " vs " << reserved;
  EXPECT_LT(t_b[1], t_b[0]) << "the reservation must speed B up under A's competing write";
}
