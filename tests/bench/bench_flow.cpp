// Hot spots of the flow tier and the RoCE transport at 8192 endpoints (clos-1024-allreduce.json
// runs in the flow tier): the event rate of the flow solver under cross-spine traffic, the cost of
// a QP's state, and the per-write calls the RDMA engine makes (rate cap, retry count, post).
// The fabric is bench_fabric's two-tier Clos (8192 hosts: radix 128, 64 leaves, 64 spines).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <ctime>
#include <vector>

#include "models/network.h"

using namespace models;

namespace {
struct Sink : NetworkListener {
  std::uint64_t done = 0;
  void on_write_done(std::uint32_t, std::uint64_t, bool) override { ++done; }
};

void build(Network& net, std::uint32_t n, std::vector<std::uint32_t>& hosts) {
  const std::uint64_t bw = 25000000000ULL;
  const Tick lat = 500 * kPsPerNs, swl = 600 * kPsPerNs;
  const std::uint32_t radix = n <= 2048 ? 64 : 128, down = radix / 2, leaves = n / down, spines = radix / 2;
  std::vector<std::uint32_t> leaf(leaves), spine(spines);
  for (auto& l : leaf) l = net.add_switch("leaf", radix, 32 << 20, swl);
  for (auto& s : spine) s = net.add_switch("spine", radix, 32 << 20, swl);
  for (std::uint32_t i = 0; i < n; ++i) { hosts.push_back(net.add_host("h")); net.connect(hosts[i], 0, leaf[i / down], i % down, bw, lat); }
  for (std::uint32_t l = 0; l < leaves; ++l)
    for (std::uint32_t s = 0; s < spines; ++s) net.connect(leaf[l], down + s, spine[s], l, bw, lat);
}
}  // namespace

// Flow tier: every host writes `msgs` messages of 1 MiB to each of 4 peers (2^k hosts away, as
// the inter-server steps of halving-doubling), each write preceded by the calls the RDMA engine
// makes for it (set_qp_rate_cap, set_qp_retry_count). Flows start and end all the time, so the
// max-min refill (flow_rates) and the flow events dominate. Reports events per CPU second.
static void BM_FlowTierEventRate(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  const int msgs = 4;
  std::uint64_t events = 0;
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StandaloneScheduler sch;
    NetParams p;
    p.flow = true;
    Network net(sch, p);
    Sink sink;
    net.set_listener(&sink);
    std::vector<std::uint32_t> hosts;
    build(net, n, hosts);
    net.build_routes();
    std::vector<std::uint32_t> qps;
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t k = 0; k < 4; ++k) qps.push_back(net.create_qp(hosts[i], hosts[(i + (n >> (k + 1))) % n], static_cast<std::uint16_t>(i * 4 + k)));
    state.ResumeTiming();
    const std::clock_t c0 = std::clock();
    for (int m = 0; m < msgs; ++m)
      for (std::uint32_t q : qps) {
        net.set_qp_rate_cap(q, 0);
        net.set_qp_retry_count(q, ~0u);
        net.post_write(q, 1 << 20, m);
      }
    events += sch.run();
    cpu += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    if (sink.done != qps.size() * msgs) state.SkipWithError("not all writes completed");
  }
  state.counters["events"] = benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
  state.counters["events_per_cpu_s"] = benchmark::Counter(static_cast<double>(events) / cpu);
}
BENCHMARK(BM_FlowTierEventRate)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(1);

// A QP's memory: heap bytes per created QP (mallinfo2), 64 QPs from each of 8192 hosts.
static void BM_QpMemory(benchmark::State& state) {
  const std::uint32_t n = 8192, per = 64;
  double bytes_per_qp = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StandaloneScheduler sch;
    Network net(sch, NetParams{});
    std::vector<std::uint32_t> hosts;
    build(net, n, hosts);
    net.build_routes();
    const auto heap = [] { const struct mallinfo2 m = mallinfo2(); return m.uordblks + m.hblkhd; };  // small + mmapped blocks
    const auto before = heap();
    state.ResumeTiming();
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t k = 0; k < per; ++k) net.create_qp(hosts[i], hosts[(i + 1 + k * 97) % n], static_cast<std::uint16_t>(k));
    state.PauseTiming();
    bytes_per_qp = static_cast<double>(heap() - before) / (n * per);
    state.ResumeTiming();
  }
  state.counters["heap_bytes_per_qp"] = benchmark::Counter(bytes_per_qp);
}
BENCHMARK(BM_QpMemory)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
