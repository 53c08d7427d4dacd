// Topology loading at scale: clos-1024 (1024 servers, 8192 NPUs, 192 switches) from JSON to a
// validated graph. The budget: <= 2 s wall and <= 500 MB peak on a 2-core machine.
#include <benchmark/benchmark.h>

#include "sim/topology.h"

static void BM_LoadValidateClos1024(benchmark::State& state) {
  for (auto _ : state) {
    sim::Diagnostics d("clos-1024.json");
    auto t = sim::load_topology(std::string(HCSIM_SOURCE_DIR) + "/topologies/clos-1024.json", d);
    if (!t) state.SkipWithError("load failed");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_LoadValidateClos1024)->Unit(benchmark::kMillisecond);

static void BM_SummaryClos1024(benchmark::State& state) {
  sim::Diagnostics d("clos-1024.json");
  auto t = sim::load_topology(std::string(HCSIM_SOURCE_DIR) + "/topologies/clos-1024.json", d);
  for (auto _ : state) benchmark::DoNotOptimize(sim::summarize(*t));
}
BENCHMARK(BM_SummaryClos1024)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
