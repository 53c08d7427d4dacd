// Event rate of the RoCE fabric (plain C++ event queue, no kernel): N endpoints under one switch
// (8) or a two-tier Clos (1024: radix 64; 8192: radix 128), every host writing 256 KiB to the host
// N/2 away (all traffic crosses the spines), 4 KiB packets. Reports events per second.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "clos_rig.h"
#include "models/network.h"

using namespace models;

namespace {
struct Sink : NetworkListener {
  std::uint64_t done = 0;
  Tick last = 0;
  const Scheduler* s = nullptr;
  void on_write_done(std::uint32_t, std::uint64_t, bool) override {
    ++done;
    if (s) last = s->now();
  }
};

}  // namespace

static void BM_FabricEventRate(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  std::uint64_t events = 0;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StandaloneScheduler sch;
    Network net(sch, NetParams{});
    Sink sink;
    net.set_listener(&sink);
    std::vector<std::uint32_t> hosts;
    bench_rig::build_clos(net, n, hosts);
    net.build_forwarding();
    for (std::uint32_t i = 0; i < n; ++i) net.post_write(net.create_qp(hosts[i], hosts[(i + n / 2) % n], static_cast<std::uint16_t>(i)), 256 << 10, i);
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    events += sch.run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sink.done != n) state.SkipWithError("not all writes completed");
  }
  state.counters["events"] = benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events) / seconds);
}
BENCHMARK(BM_FabricEventRate)->Arg(8)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(1);

// The same traffic in each fidelity tier (0 packet, 1 chunk of 64 KiB, 2 flow): every host writes
// 16 messages of 256 KiB to the host N/2 away, PFC and DCQCN on. Reports wall time per run,
// events and the simulated completion time of the last write (measured: packet 3.56 ms, chunk
// 2.66 ms, flow 0.86 ms: ECMP collisions congest the uplinks and DCQCN's defaults recover slowly).
static void BM_TierWall(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  const auto tier = state.range(1);
  double sim_us = 0;
  std::uint64_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StandaloneScheduler sch;
    NetParams p;
    p.pfc.enabled = true;  // lossless, as RoCE is deployed: no 4.3 s retransmit timeouts after a tail drop
    if (tier == 1) p.unit_bytes = 64 * 1024;
    if (tier == 2) p.flow = true;
    Network net(sch, p);
    Sink sink;
    sink.s = &sch;
    net.set_listener(&sink);
    std::vector<std::uint32_t> hosts;
    bench_rig::build_clos(net, n, hosts);
    net.build_forwarding();
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t qp = net.create_qp(hosts[i], hosts[(i + n / 2) % n], static_cast<std::uint16_t>(i));
      for (int k = 0; k < 16; ++k) net.post_write(qp, 256 << 10, i * 16 + k);
    }
    state.ResumeTiming();
    events += sch.run();
    sim_us = static_cast<double>(sink.last) / 1e6;  // the last write's completion (stale timers run later)
    if (sink.done != 16ULL * n) state.SkipWithError("not all writes completed");
  }
  state.SetLabel(tier == 0 ? "packet" : tier == 1 ? "chunk" : "flow");
  state.counters["events"] = benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
  state.counters["sim_us"] = benchmark::Counter(sim_us);
}
BENCHMARK(BM_TierWall)->Args({1024, 0})->Args({1024, 1})->Args({1024, 2})->Unit(benchmark::kMillisecond)->Iterations(1);

// Path probes (SimDriver::probe_paths, docs/routing.md#probes): the 8192-host two-tier Clos of
// BM_FabricEventRate; per source a batch of 640 probes (the library's first batch: 128 + 512 to
// learn the leaf's uplinks) to one host across the spines, sources taken in rank order as the
// ranks of clos-1024-barrier.json take their turns. Reports time per probe.
static void BM_TracePath(benchmark::State& state) {
  StandaloneScheduler sch;
  Network net(sch, NetParams{});
  std::vector<std::uint32_t> hosts;
  const std::uint32_t n = 8192;
  bench_rig::build_clos(net, n, hosts);
  net.build_forwarding();
  std::vector<Network::Hop> hops;
  std::uint64_t probes = 0, sum = 0;
  std::uint32_t src = 0;
  for (auto _ : state) {
    const std::uint32_t s = hosts[src], d = hosts[(src + 512) % n];
    for (std::uint32_t c = 0; c < 640; ++c) {
      Tick rtt = 0;
      if (net.trace_path(s, d, static_cast<std::uint16_t>(49152 + (c * 7919 + src) % 16384), &hops, &rtt)) sum += hops[0].out_port + rtt;
    }
    probes += 640;
    src = (src + 1) % n;
  }
  benchmark::DoNotOptimize(sum);
  state.counters["ns_per_probe"] =
      benchmark::Counter(static_cast<double>(probes), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TracePath)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
