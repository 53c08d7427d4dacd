// The real-payload path's host work (README, real payloads): input generation, the all-reduce
// reference and the model's in-place reduction, fp32 (the common payload). The scalar baselines
// compute the same values one element at a time through input_value (the double formula the
// vectorised loops replace), so the ratio is the speed-up of the payload loops.
#include <benchmark/benchmark.h>

#include <vector>

#include "models/mem/reduce.h"
#include "sim/payload.h"

namespace {
constexpr models::DType kF32 = models::DType::Fp32;
constexpr models::ReduceOp kSum = models::ReduceOp::Sum;
}  // namespace

static void BM_FillInputFp32(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::vector<float> buf(n);
  std::uint32_t rank = 0;
  for (auto _ : state) {
    sim::fill_input(buf.data(), n, kF32, kSum, sim::PayloadKey{1, 0, 0, 8}, rank++);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 4));
}
BENCHMARK(BM_FillInputFp32)->Arg(1 << 20)->Arg(16 << 20)->Unit(benchmark::kMillisecond);

static void BM_FillScalarFormulaFp32(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::vector<float> buf(n);
  std::uint32_t rank = 0;
  for (auto _ : state) {
    const sim::PayloadKey k{1, 0, 0, 8};
    for (std::uint64_t i = 0; i < n; ++i) buf[i] = static_cast<float>(sim::input_value(k, rank, i, kF32, kSum));
    ++rank;
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 4));
}
BENCHMARK(BM_FillScalarFormulaFp32)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// The other dtypes: each element's residue on its value grid, then the grid's encoding (arg 1: the
// dtype, models::DType's value: 2 int32, 4 fp16, 5 bf16).
static void BM_FillInputGrid(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const auto t = static_cast<models::DType>(state.range(1));
  std::vector<std::uint8_t> buf(n * models::dtype_size(t));
  std::uint32_t rank = 0;
  for (auto _ : state) {
    sim::fill_input(buf.data(), n, t, kSum, sim::PayloadKey{1, 0, 0, 8}, rank++);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_FillInputGrid)->Args({1 << 20, static_cast<int>(models::DType::Int32)})->Args({1 << 20, static_cast<int>(models::DType::Bf16)})
    ->Unit(benchmark::kMillisecond);

static void BM_FillScalarFormulaInt32(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::vector<std::int32_t> buf(n);
  std::uint32_t rank = 0;
  for (auto _ : state) {
    const sim::PayloadKey k{1, 0, 0, 8};
    for (std::uint64_t i = 0; i < n; ++i) buf[i] = static_cast<std::int32_t>(sim::input_value(k, rank, i, models::DType::Int32, kSum));
    ++rank;
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_FillScalarFormulaInt32)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// The reference of an 8-rank all-reduce (the quickstart's: 16 M elements per rank).
static void BM_AllreduceReferenceFp32(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  sim::Reference out;
  for (auto _ : state) {
    sim::allreduce_reference(n, kF32, kSum, sim::PayloadKey{1, 0, 0, 8}, 8, &out);
    benchmark::DoNotOptimize(out.bytes.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 4 * 8));
}
BENCHMARK(BM_AllreduceReferenceFp32)->Arg(1 << 20)->Arg(16 << 20)->Unit(benchmark::kMillisecond);

static void BM_ReferenceScalarFoldFp32(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::vector<float> out(n);
  for (auto _ : state) {
    const sim::PayloadKey k{1, 0, 0, 8};
    for (std::uint64_t i = 0; i < n; ++i) {
      double a = 0;
      for (std::uint32_t r = 0; r < 8; ++r) a += sim::input_value(k, r, i, kF32, kSum);
      out[i] = static_cast<float>(a);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 4 * 8));
}
BENCHMARK(BM_ReferenceScalarFoldFp32)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// The SDMA engine's reduce on arrival, one piece at a time (64 KiB: in cache; 8 MiB: from memory).
static void BM_ReduceInplaceFp32(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<float> dst(bytes / 4, 1.0f), src(bytes / 4, 0.5f);
  for (auto _ : state) {
    models::reduce_inplace(dst.data(), src.data(), bytes, kF32, kSum);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ReduceInplaceFp32)->Arg(64 << 10)->Arg(8 << 20);

BENCHMARK_MAIN();
