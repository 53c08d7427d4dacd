// Sub-communicators on a simulated cluster (one simulation in this process): a2-2node (two Atlas
// 800T A2 servers, 16 ranks) split by rank parity into two children of 4 + 4 ranks on both servers.
// The split's exchange is real point-to-point traffic over the parent, so it takes simulated
// time; each child's all-reduce (hierarchical: mesh inside the server, RoCE across) must give the
// host reference's bytes, and so must the parent's all-reduce issued after the child's on the same stream.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"
#include "sim/runner.h"
#include "sim_test_util.h"

namespace {

constexpr std::uint32_t kRanks = 16, kPerServer = 8;
constexpr std::size_t kCount = (1 << 20) + 3;  // 4 MiB + 12 B of int32

struct Outcome {
  std::map<std::string, std::vector<int>> rc;  // name -> result per rank
  std::vector<double> split_ms = std::vector<double>(kRanks, -1);
  std::vector<std::uint32_t> child_rank = std::vector<std::uint32_t>(kRanks, ~0u);
  std::vector<std::uint32_t> child_size = std::vector<std::uint32_t>(kRanks, 0);
};
Outcome out;

void note(std::uint32_t r, const std::string& what, int v) {
  auto& x = out.rc[what];
  if (x.size() < kRanks) x.resize(kRanks, -1);
  x[r] = v;
}

std::int32_t elem(std::uint32_t g, std::size_t i) { return static_cast<std::int32_t>((g * 131 + i * 7) % 1001) - 500; }

void program(std::uint32_t r) {
  hcomm_context_t ctx = nullptr;
  note(r, "context", hcomm_create_context(r % kPerServer, &ctx));
  hcomm_comm_t world = nullptr, child = nullptr;
  note(r, "init", hcomm_comm_init(ctx, kRanks, r, &world));
  hcomm_stream_t s = nullptr;
  hcomm_create_stream(ctx, &s);
  hcomm_event_t before = nullptr, after = nullptr;
  hcomm_create_event(ctx, &before);
  hcomm_create_event(ctx, &after);
  hcomm_record_event(before, s);
  hcomm_stream_synchronize(s);
  note(r, "split", hcomm_comm_split(world, r % 2, r, &child));
  hcomm_record_event(after, s);  // recorded once the host is back from the split
  hcomm_stream_synchronize(s);
  float ms = -1;
  note(r, "elapsed", hcomm_event_elapsed_time(before, after, &ms));
  out.split_ms[r] = ms;
  if (!child) return;
  hcomm_comm_rank(child, &out.child_rank[r]);
  hcomm_comm_size(child, &out.child_size[r]);

  std::vector<std::int32_t> mine(kCount), got(kCount), ref(kCount, 0), world_ref(kCount, 0);
  for (std::size_t i = 0; i < kCount; ++i) mine[i] = elem(r, i);
  for (std::uint32_t q = 0; q < kRanks; ++q)
    for (std::size_t i = 0; i < kCount; ++i) {
      world_ref[i] += elem(q, i);
      if (q % 2 == r % 2) ref[i] += elem(q, i);
    }
  void *in = nullptr, *res = nullptr, *wres = nullptr;
  hcomm_malloc(ctx, kCount * 4, &in);
  hcomm_malloc(ctx, kCount * 4, &res);
  hcomm_malloc(ctx, kCount * 4, &wres);
  hcomm_memcpy_host_to_device(in, mine.data(), kCount * 4, s);
  note(r, "child_allreduce", hcomm_allreduce(in, res, kCount, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_SUM, child, s));
  note(r, "world_allreduce", hcomm_allreduce(in, wres, kCount, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_SUM, world, s));
  note(r, "sync", hcomm_stream_synchronize(s));
  hcomm_memcpy_device_to_host(got.data(), res, kCount * 4, s);
  hcomm_stream_synchronize(s);
  note(r, "child_bytes", got == ref ? 0 : 1);
  hcomm_memcpy_device_to_host(got.data(), wres, kCount * 4, s);
  hcomm_stream_synchronize(s);
  note(r, "world_bytes", got == world_ref ? 0 : 1);
  note(r, "barrier", hcomm_barrier(child, nullptr));
  note(r, "destroy", hcomm_comm_destroy(child));
  hcomm_comm_destroy(world);
}

}  // namespace

TEST(SimSplit, ChildAllReduceOnTwoServers) {
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  const std::uint64_t end_ps = sim::run_program(*topo, program, sim_test::quiet());
  EXPECT_GT(end_ps, 0u);
  for (const char* ok : {"context", "init", "split", "elapsed", "child_allreduce", "world_allreduce", "sync", "child_bytes",
                         "world_bytes", "barrier", "destroy"}) {
    ASSERT_EQ(out.rc[ok].size(), kRanks) << ok;
    for (std::uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(out.rc[ok][r], 0) << ok << " on rank " << r;
  }
  for (std::uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(out.child_size[r], kRanks / 2) << "rank " << r;
    EXPECT_EQ(out.child_rank[r], r / 2) << "rank " << r;
    EXPECT_GT(out.split_ms[r], 0.0) << "the split's all-gather took no simulated time on rank " << r;
  }
  std::printf("split of a2-2node by parity: %.3f us simulated on rank 0\n", out.split_ms[0] * 1e3);
}
