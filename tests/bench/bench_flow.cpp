// Hot spots of the flow tier and the RoCE transport at 8192 endpoints (clos-1024-allreduce.json
// runs in the flow tier): the event rate of the flow solver under cross-spine traffic, the cost of
// a QP's state, and the per-write calls the RDMA engine makes (rate cap, retry count, post).
// The fabric is bench_fabric's two-tier Clos (8192 hosts: radix 128, 64 leaves, 64 spines).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include "clos_rig.h"
#include "models/network.h"
#include "models/nic/qp_table.h"

using namespace models;

namespace {
struct Sink : NetworkListener {
  std::uint64_t done = 0;
  void on_write_done(std::uint32_t, std::uint64_t, bool) override { ++done; }
};

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
    bench_rig::build_clos(net, n, hosts);
    net.build_forwarding();
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

// A QP's memory: heap bytes per created QP (mallinfo2), 64 QPs from each of 8192 hosts, in the
// packet tier (Arg 0: RcQp + RcQpTx + DCQCN state) and the flow tier (Arg 1: RcQp only).
static void BM_QpMemory(benchmark::State& state) {
  const std::uint32_t n = 8192, per = 64;
  double bytes_per_qp = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StandaloneScheduler sch;
    NetParams p;
    p.flow = state.range(0) != 0;
    Network net(sch, p);
    std::vector<std::uint32_t> hosts;
    bench_rig::build_clos(net, n, hosts);
    net.build_forwarding();
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
BENCHMARK(BM_QpMemory)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(1);

// One source's QPs by (target, stripe) as a pairwise all-to-all meets them (me+1, ..., n-1, then
// 0, ..., me-1; 8 stripes each), each looked up again as its write is posted: the machine's
// per-source hash table (QpTable, first Arg 0) against the sorted array it replaced (1), for 16
// sources among n ranks (second Arg: 1024, a rank's peers on its rail in the two-level
// all-to-all at 1024 servers; 8192, the flat pairwise). The array's insertions move half of it:
// O(peers^2) per source.
static void BM_QpLookupPairwise(benchmark::State& state) {
  const bool sorted = state.range(0) != 0;
  const auto n = static_cast<std::uint32_t>(state.range(1));
  const std::uint32_t stripes = 8, sources = 16;
  std::uint64_t found = 0;
  for (auto _ : state) {
    for (std::uint32_t s = 0; s < sources; ++s) {
      const std::uint32_t me = s * (n / sources) + 7;
      QpTable t;
      std::vector<std::pair<std::uint64_t, std::uint32_t>> v;
      std::uint32_t next = 0;
      for (std::uint32_t i = 1; i < n; ++i)
        for (std::uint32_t k = 0; k < stripes; ++k) {
          const std::uint32_t dst = (me + i) % n;
          if (!sorted) {
            if (!t.find(dst, k)) t.insert(dst, k, next++);
            found += *t.find(dst, k);
          } else {
            const std::uint64_t key = (static_cast<std::uint64_t>(dst) << 16) | k;
            auto it = std::lower_bound(v.begin(), v.end(), key, [](const auto& e, std::uint64_t x) { return e.first < x; });
            if (it == v.end() || it->first != key) it = v.insert(it, {key, next++});
            found += it->second;
          }
        }
    }
  }
  benchmark::DoNotOptimize(found);
  state.counters["lookups_per_s"] = benchmark::Counter(static_cast<double>(sources) * (n - 1) * stripes, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_QpLookupPairwise)->Args({0, 1024})->Args({1, 1024})->Args({0, 8192})->Args({1, 8192})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
