// One simulation of two Atlas 800T A2 servers under one leaf (a2-2node): point-to-point across
// servers over RoCE and the hierarchical all-reduce (mesh inside servers, ring across), against
// closed-form wire times, with every result checked against a host reference.
#include <gtest/gtest.h>

#include <cstdio>

#include "sim/config/scenario.h"
#include "sim/runner.h"
#include "sim_test_util.h"

using namespace sim;

TEST(SimNetwork, CrossServerP2pAndHierarchicalAllReduce) {
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  static Scenario sc;
  sc.name = "sim_network_test";
  sc.topology = *topo;
  WorkloadStep p2p;
  p2p.set_op(WorkloadOp::SendRecv);
  p2p.pattern = "halves";  // rank r <-> r+8: always the other server
  p2p.bytes = 16 << 20;
  WorkloadStep ar;
  ar.set_op(WorkloadOp::AllReduce);
  ar.bytes = 64 << 20;
  WorkloadStep odd;  // uneven slices and blocks
  odd.set_op(WorkloadOp::AllReduce);
  odd.bytes = (1 << 20) + 36;
  odd.dtype = models::DType::Int32;
  odd.reduce = models::ReduceOp::Min;
  sc.workload = {p2p, ar, odd};
  sc.hcomm_env["HCOMM_ALGO"] = "level0:NA;level1:ring";  // the bound below is the ring's
  RunResult r = run_scenario(sc, sim_test::quiet());
  for (auto& f : r.failures) ADD_FAILURE() << f;
  ASSERT_EQ(r.steps.size(), 3u);
  for (auto& s : r.steps) EXPECT_EQ(s.checked, 16u) << s.step;

  const double nic = 25e9, hccs = 28e9, local = 400e9, wire = (4096.0 + 58) / 4096;  // 58 B of headers per 4 KiB packet
  // P2P: 16 MiB cross the RoCE link once (wire time); the receiver's 8 MiB window splits it in two
  // chunks, each followed by a local copy out of the window and a handshake (READY notify, data,
  // DATA notify: ~3 one-way trips of NIC 0.5 us + 2 x (link 0.5 + switch 0.6 us) each). With
  // num_qp = 8 (the default) the data is striped over 8 QPs and the DATA notify follows the ACKs
  // of all parts: 2 trips more.
  const double p2p_wire = (16 << 20) * wire / nic * 1e6;
  const double p2p_extra = 2 * ((8 << 20) / local * 1e6 + 5 * (0.5 + 2 * 1.1) + 1);
  std::printf("cross-server p2p 16 MiB: %.2f us, wire time %.2f us (+%.1f %%)\n", r.steps[0].time_us, p2p_wire,
              100 * (r.steps[0].time_us / p2p_wire - 1));
  EXPECT_GE(r.steps[0].time_us, p2p_wire);
  EXPECT_LE(r.steps[0].time_us, p2p_wire + p2p_extra);

  // Hierarchical all-reduce, n = 64 MiB, L = 8 ranks per server, S = 2 servers:
  // mesh reduce-scatter + all-gather 2 (n/L)/hccs, ring 2 (S-1)/S (n/L)/nic (with headers).
  const double n = 64 << 20, L = 8, S = 2;
  const double formula = (2 * (n / L) / hccs + 2 * (S - 1) / S * (n / L) * wire / nic) * 1e6;
  // Beyond it: the local copy into the CCL (n/L), the ring's staging copies (2(S-1) blocks of
  // n/(L S)), the mesh handshakes (6.9 us, see sim_allreduce_test), and per ring step four one-way
  // RoCE trips of at most 2.7 us each (NIC WQE 0.5 + 2 links x 0.5 + switch 0.6 + 2 packet
  // serializations of 0.17 us) — the write's first byte, its ACK back to the sender (the task ends
  // there), the credit returned by the receiver, the notify — plus 2 more because the striped data
  // (num_qp = 8) is acknowledged before its notify is sent, plus 1 us of stream-task dispatches.
  const double extra = ((n / L) + 2 * (S - 1) * n / (L * S)) / local * 1e6 + 6.9 + 2 * (S - 1) * (6 * 2.7 + 1);
  std::printf("hierarchical all-reduce 64 MiB on 2 x 8 NPUs: %.2f us, formula %.2f us (+%.1f %%), bound +%.1f us\n", r.steps[1].time_us,
              formula, 100 * (r.steps[1].time_us / formula - 1), extra);
  EXPECT_GE(r.steps[1].time_us, formula);
  EXPECT_LE(r.steps[1].time_us, formula + extra);
}
