// Topology loading at scale: clos-1024 (1024 servers, 8192 NPUs, 192 switches) from JSON to a
// validated graph. The issue's budget: <= 2 s wall and <= 500 MB peak on a 2-core machine.
// Parsing: a file of N empty objects in "servers" (3 MB at 1M) must parse in time linear in N
// with the depth limit kept; BM_ParseWithDepthCallback is the former approach (nlohmann parser
// callback), kept to show the quadratic cost it had.
#include <benchmark/benchmark.h>

#include "sim/config/json_reader.h"
#include "sim/config/topology.h"

namespace {
std::string wide(std::int64_t n) {
  std::string s = R"({"format":"hcsim-topology","version":1,"name":"w","servers":[)";
  for (std::int64_t i = 0; i < n; ++i) s += i ? ",{}" : "{}";
  return s + "]}";
}
}  // namespace

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

// 65,536 NPUs (8192 Atlas 800T A2 under a 3-tier Clos of radix 64): the whole of
// `hcsim topo --summary` after loading, i.e. max flow and exact diameter.
static void BM_Summary65536(benchmark::State& state) {
  sim::Diagnostics d("big.json");
  auto t = sim::topology_from_json(sim::json::parse(R"({"format":"hcsim-topology","version":1,"name":"big",
    "server_groups":[{"name":"n{i}","count":8192,"type":"atlas800t-a2","host_ip":"10.0.0.1"}],
    "fabric":{"type":"clos","tiers":3,"switch_radix":64,"link_bandwidth":"200Gb/s"}})"), d);
  if (!t) { state.SkipWithError("load failed"); return; }
  for (auto _ : state) benchmark::DoNotOptimize(sim::summarize(*t));
}
BENCHMARK(BM_Summary65536)->Unit(benchmark::kMillisecond)->Iterations(2);

static void BM_ParseWideObjects(benchmark::State& state) {
  const std::string text = wide(state.range(0));
  for (auto _ : state) {
    sim::Diagnostics d("wide.json");
    auto j = sim::parse_json_text(text, d);
    if (!j) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_ParseWideObjects)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

static void BM_ParseWithDepthCallback(benchmark::State& state) {
  const std::string text = wide(state.range(0));
  for (auto _ : state) {
    bool too_deep = false;
    sim::json::parser_callback_t cb = [&](int depth, sim::json::parse_event_t, sim::json&) {
      if (depth > 64) too_deep = true;
      return !too_deep;
    };
    auto j = sim::json::parse(text, cb);
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ParseWithDepthCallback)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
