// The cost of one driver call under hcsim exec (docs/exec.md#speed): run it as a rank program,
//   hcsim exec --topology atlas800t-a2 -n 1 --no-trace -q -- bench_exec
// Each hcomm call the library turns into driver calls crosses the rank's socket to its proxy and
// back; these time that round trip from the program's side.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hcomm/hcomm.h"

namespace {
hcomm_context_t g_ctx;
hcomm_stream_t g_st;
void* g_dev;
}  // namespace

// hcomm_wtime: one driver call (now_ns), nothing simulated.
static void BM_ExecWtime(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(hcomm_wtime());
}
BENCHMARK(BM_ExecWtime);

// An event record and its query: two driver calls and a device task.
static void BM_ExecRecordQueryEvent(benchmark::State& state) {
  hcomm_event_t ev;
  hcomm_create_event(g_ctx, &ev);
  for (auto _ : state) {
    hcomm_record_event(ev, g_st);
    hcomm_stream_synchronize(g_st);
    benchmark::DoNotOptimize(hcomm_query_event(ev));
  }
  hcomm_destroy_event(ev);
}
BENCHMARK(BM_ExecRecordQueryEvent);

// A host-to-device copy of `bytes` and its synchronize: the bytes are read from this process by
// the simulator's host DMA (no copy through the socket).
static void BM_ExecCopyToDevice(benchmark::State& state) {
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  std::vector<char> host(bytes, 1);
  for (auto _ : state) {
    hcomm_memcpy_host_to_device(g_dev, host.data(), bytes, g_st);
    hcomm_stream_synchronize(g_st);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ExecCopyToDevice)->Arg(4096)->Arg(1 << 20)->Arg(16 << 20);

int main(int argc, char** argv) {
  const char* dev = std::getenv("LOCAL_RANK");
  if (!dev) { std::fprintf(stderr, "bench_exec runs under hcsim exec (see its first lines)\n"); return 2; }
  if (hcomm_create_context(static_cast<std::uint32_t>(std::atoi(dev)), &g_ctx) || hcomm_create_stream(g_ctx, &g_st) ||
      hcomm_malloc(g_ctx, 16 << 20, &g_dev))
    return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  hcomm_free(g_ctx, g_dev);
  hcomm_destroy_stream(g_st);
  hcomm_destroy_context(g_ctx);
  return 0;
}
