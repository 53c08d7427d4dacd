// All-gather and reduce-scatter on a simulated Atlas 800T A2 (8 NPUs, HCCS full mesh), driven by
// rank programs through the public API (one simulation in this process): real bytes against
// host-computed references (fp32 sum, int32 max; unequal and chunked sizes), the mesh's timing
// against the alpha-beta closed form, and bad arguments.
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"
#include "hcomm/hcomm.hpp"
#include "sim/runner.h"
#include "sim_test_util.h"

using namespace sim;

namespace {

constexpr std::uint32_t P = 8;

struct Case {
  std::string name;
  bool gather;             // all-gather, else reduce-scatter
  hcomm_data_type_t dtype;  // FP32 or INT32
  hcomm_reduce_op_t op;
  std::uint64_t count;     // per rank (all-gather) or per block (reduce-scatter)
};

// HCOMM_BUFFSIZE_MB is 4 in this test: blocks above 4 MiB run in several chunks.
const std::vector<Case> kCases = {
    {"ag_fp32_4M", true, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, (4 << 20) / 4},
    {"rs_fp32_sum_4M", false, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, (4 << 20) / 4},
    {"ag_fp32_1M", true, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, (1 << 20) / 4},
    {"rs_fp32_sum_1M", false, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, (1 << 20) / 4},
    {"ag_int32_odd", true, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_SUM, 300007},
    {"rs_int32_max_odd", false, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_MAX, 300007},
    {"ag_fp32_chunked", true, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, (9 << 20) / 4 + 3},
    {"rs_int32_max_chunked", false, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_MAX, (9 << 20) / 4 + 3},
    {"rs_fp32_sum_tiny", false, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, 1},
};

struct Outcome {
  std::map<std::string, std::vector<int>> rc;  // name -> result per rank
  std::map<std::string, std::vector<double>> t0, t1;  // name -> simulated us per rank
};
Outcome out;

void note(std::uint32_t r, const std::string& what, hcomm_result_t rc) {
  auto& v = out.rc[what];
  if (v.size() < P) v.resize(P, -1);
  v[r] = rc;
}

double now_us() { return sc_core::sc_time_stamp().to_seconds() * 1e6; }

// Rank r's element i of block b (input of rank r at r-independent layout): fp32 values k/1024 with
// |k| <= 4096 (sums of 8 exact), int32 values in -100..100.
std::uint32_t mix(std::uint32_t r, std::uint64_t i) {
  std::uint64_t h = (r + 1) * 0x9e3779b97f4a7c15ULL ^ (i * 0xbf58476d1ce4e5b9ULL);
  h ^= h >> 31;
  return static_cast<std::uint32_t>(h);
}
float fval(std::uint32_t r, std::uint64_t i) { return static_cast<float>(static_cast<int>(mix(r, i) % 8193) - 4096) / 1024.0f; }
std::int32_t ival(std::uint32_t r, std::uint64_t i) { return static_cast<int>(mix(r, i) % 201) - 100; }

// The 4 bytes of element i of rank r's input.
std::uint32_t word(const Case& c, std::uint32_t r, std::uint64_t i) {
  std::uint32_t w;
  if (c.dtype == HCOMM_DATA_TYPE_FP32) { float f = fval(r, i); std::memcpy(&w, &f, 4); }
  else { std::int32_t v = ival(r, i); std::memcpy(&w, &v, 4); }
  return w;
}

// Host reference of rank r's output.
std::vector<std::uint32_t> reference(const Case& c, std::uint32_t r) {
  std::vector<std::uint32_t> ref;
  if (c.gather) {
    ref.resize(P * c.count);
    for (std::uint32_t q = 0; q < P; ++q)
      for (std::uint64_t i = 0; i < c.count; ++i) ref[q * c.count + i] = word(c, q, i);
    return ref;
  }
  ref.resize(c.count);
  for (std::uint64_t i = 0; i < c.count; ++i) {
    const std::uint64_t e = r * c.count + i;
    if (c.dtype == HCOMM_DATA_TYPE_FP32) {
      double s = 0;
      for (std::uint32_t q = 0; q < P; ++q) s += fval(q, e);
      float f = static_cast<float>(s);
      std::memcpy(&ref[i], &f, 4);
    } else {
      std::int32_t m = ival(0, e);
      for (std::uint32_t q = 1; q < P; ++q) m = std::max(m, ival(q, e));
      std::memcpy(&ref[i], &m, 4);
    }
  }
  return ref;
}

void program(std::uint32_t r) {
  hcomm_context_t ctx = nullptr;
  note(r, "create_context", hcomm_create_context(r, &ctx));
  hcomm_comm_t comm = nullptr;
  note(r, "comm_init", hcomm_comm_init(ctx, P, r, &comm));
  hcomm_stream_t s = nullptr;
  hcomm_create_stream(ctx, &s);
  for (const Case& c : kCases) {
    const std::uint64_t in_elems = c.gather ? c.count : P * c.count, out_elems = c.gather ? P * c.count : c.count;
    void *in = nullptr, *o = nullptr;
    hcomm_malloc(ctx, in_elems * 4, &in);
    hcomm_malloc(ctx, out_elems * 4, &o);
    std::vector<std::uint32_t> host(in_elems);
    for (std::uint64_t i = 0; i < in_elems; ++i) host[i] = word(c, r, i);
    hcomm_memcpy_host_to_device(in, host.data(), in_elems * 4, s);
    hcomm_stream_synchronize(s);
    hcomm_barrier(comm, nullptr);  // every rank ready: the operation's time starts here
    out.t0[c.name].resize(P);
    out.t0[c.name][r] = now_us();
    hcomm_result_t rc = c.gather ? hcomm_allgather(in, o, c.count, c.dtype, comm, s)
                                 : hcomm_reduce_scatter(in, o, c.count, c.dtype, c.op, comm, s);
    if (rc == HCOMM_SUCCESS) rc = hcomm_stream_synchronize(s);
    out.t1[c.name].resize(P);
    out.t1[c.name][r] = now_us();
    note(r, c.name, rc);
    std::vector<std::uint32_t> got(out_elems);
    hcomm_memcpy_device_to_host(got.data(), o, out_elems * 4, s);
    hcomm_stream_synchronize(s);
    note(r, c.name + "_data", got == reference(c, r) ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    hcomm_free(ctx, in);
    hcomm_free(ctx, o);
  }

  // The RAII layer, and misuse: error codes, never a crash.
  void *a = nullptr, *b = nullptr;
  hcomm_malloc(ctx, P * 64, &a);
  hcomm_malloc(ctx, P * 64, &b);
  const auto F = HCOMM_DATA_TYPE_FP32;
  const auto bad_t = static_cast<hcomm_data_type_t>(99);
  const auto bad_op = static_cast<hcomm_reduce_op_t>(9);
  note(r, "ag_null_in", hcomm_allgather(nullptr, b, 4, F, comm, s));
  note(r, "ag_null_out", hcomm_allgather(a, nullptr, 4, F, comm, s));
  note(r, "ag_bad_dtype", hcomm_allgather(a, b, 4, bad_t, comm, s));
  note(r, "ag_null_comm", hcomm_allgather(a, b, 4, F, nullptr, s));
  note(r, "ag_null_stream", hcomm_allgather(a, b, 4, F, comm, nullptr));
  note(r, "ag_overflow", hcomm_allgather(a, b, UINT64_MAX / 8, F, comm, s));
  note(r, "ag_zero", hcomm_allgather(nullptr, nullptr, 0, F, comm, s));
  note(r, "rs_null_in", hcomm_reduce_scatter(nullptr, b, 4, F, HCOMM_REDUCE_SUM, comm, s));
  note(r, "rs_null_out", hcomm_reduce_scatter(a, nullptr, 4, F, HCOMM_REDUCE_SUM, comm, s));
  note(r, "rs_bad_dtype", hcomm_reduce_scatter(a, b, 4, bad_t, HCOMM_REDUCE_SUM, comm, s));
  note(r, "rs_bad_op", hcomm_reduce_scatter(a, b, 4, F, bad_op, comm, s));
  note(r, "rs_null_comm", hcomm_reduce_scatter(a, b, 4, F, HCOMM_REDUCE_SUM, nullptr, s));
  note(r, "rs_null_stream", hcomm_reduce_scatter(a, b, 4, F, HCOMM_REDUCE_SUM, comm, nullptr));
  note(r, "rs_overflow", hcomm_reduce_scatter(a, b, UINT64_MAX / 8, F, HCOMM_REDUCE_SUM, comm, s));
  note(r, "rs_zero", hcomm_reduce_scatter(nullptr, nullptr, 0, F, HCOMM_REDUCE_SUM, comm, s));
  note(r, "zero_sync", hcomm_stream_synchronize(s));
  hcomm_free(ctx, a);
  hcomm_free(ctx, b);
  hcomm_comm_destroy(comm);
  hcomm_destroy_stream(s);
  note(r, "destroy_context", hcomm_destroy_context(ctx));

  // The RAII layer: an all-gather and a reduce-scatter of 8 elements, then an error as exception.
  int caught = HCOMM_SUCCESS;
  try {
    hcomm::Context c2(r);
    hcomm::Stream st2(c2);
    hcomm::Comm cm(c2, P, r);
    hcomm::DeviceBuffer x(c2, P * 8 * 4), y(c2, P * 8 * 4);
    const Case ag{"raii_ag", true, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_SUM, 8};
    const Case rs{"raii_rs", false, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_MAX, 8};
    for (const Case* c : {&ag, &rs}) {
      std::vector<std::uint32_t> host(P * 8), got(c->gather ? P * 8 : 8);
      for (std::uint64_t i = 0; i < host.size(); ++i) host[i] = word(*c, r, i);
      hcomm_memcpy_host_to_device(x.get(), host.data(), host.size() * 4, st2.get());
      if (c->gather) cm.allgather(x.get(), y.get(), 8, c->dtype, st2);
      else cm.reduce_scatter(x.get(), y.get(), 8, c->dtype, c->op, st2);
      hcomm_memcpy_device_to_host(got.data(), y.get(), got.size() * 4, st2.get());
      st2.synchronize();
      note(r, c->name, got == reference(*c, r) ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    }
    cm.reduce_scatter(x.get(), nullptr, 8, F, HCOMM_REDUCE_SUM, st2);
  } catch (const hcomm::Error& e) {
    caught = e.code();
  }
  note(r, "raii_error", static_cast<hcomm_result_t>(caught));
}

void expect_all(const std::string& what, int code) {
  ASSERT_TRUE(out.rc.count(what)) << what;
  for (std::size_t r = 0; r < P; ++r) EXPECT_EQ(out.rc[what][r], code) << what << " rank " << r;
}

// Operation time: from the first rank's start to the last rank's synchronize.
double op_us(const std::string& name) {
  return *std::max_element(out.t1[name].begin(), out.t1[name].end()) -
         *std::min_element(out.t0[name].begin(), out.t0[name].end());
}

}  // namespace

TEST(SimCollectives, MeshAllGatherAndReduceScatter) {
  setenv("HCOMM_BUFFSIZE_MB", "4", 1);
  auto topo = sim_test::preset("atlas800t-a2.json");
  ASSERT_TRUE(topo);
  run_program(*topo, program, sim_test::quiet());
  expect_all("create_context", HCOMM_SUCCESS);
  expect_all("comm_init", HCOMM_SUCCESS);
  for (const Case& c : kCases) {
    expect_all(c.name, HCOMM_SUCCESS);
    expect_all(c.name + "_data", HCOMM_SUCCESS);
  }
  for (const char* e : {"ag_null_in", "ag_null_out", "rs_null_in", "rs_null_out"}) expect_all(e, HCOMM_E_PTR);
  for (const char* e : {"ag_bad_dtype", "rs_bad_dtype", "rs_bad_op", "ag_overflow", "rs_overflow"}) expect_all(e, HCOMM_E_PARA);
  for (const char* e : {"ag_null_comm", "ag_null_stream", "rs_null_comm", "rs_null_stream"}) expect_all(e, HCOMM_E_UNAVAIL);
  for (const char* e : {"ag_zero", "rs_zero", "zero_sync"}) expect_all(e, HCOMM_SUCCESS);  // as hcomm_allreduce
  expect_all("destroy_context", HCOMM_SUCCESS);
  expect_all("raii_ag", HCOMM_SUCCESS);
  expect_all("raii_rs", HCOMM_SUCCESS);
  expect_all("raii_error", HCOMM_E_PTR);

  for (const Case& c : kCases) std::printf("%-22s %10.3f us\n", c.name.c_str(), op_us(c.name));

  // Alpha-beta reference for the mesh with blocks of b bytes (the all-gather's input, the
  // reduce-scatter's output): every one of the p-1 HCCS links of a rank carries one block, all at
  // once, so both take alpha + b beta (HCCL's (p-1)/p n beta over p-1 links, n = p b).
  // alpha = HCCS one-way latency, beta = 1 / (28 GB/s). Beyond it the model pays (derived from
  // the schedule in docs/algorithms/mesh.md, not fitted):
  //  - local copies of one block at min(SDMA 400 GB/s, HBM/2): the all-gather's staging copy B
  //    (its copy F overlaps the pulls); the reduce-scatter's B and F (F follows the reduction);
  //  - one-way latencies beyond the formula's one: REDUCED (all-gather); READY and DONE
  //    (reduce-scatter);
  //  - SDMA setups of 0.2 us with an HBM read and a write latency of 0.1 us each: 2 (B, the pull)
  //    and 3 (B, the reduce-copy, F);
  //  - serial stream-task dispatches of 0.1 us: all-gather 3(p-1) + 8 (markers, fork and REDUCED
  //    records, join waits, B, 4 slave tasks), reduce-scatter 4(p-1) + 8 (READY and fork records,
  //    DONE and join waits as well), plus 2 local notifies of 0.05 us;
  //  - the host clock around it: the ranks leave the host barrier up to one latency apart.
  const double p = P, alpha_us = 0.5, beta_us_per_byte = 1.0 / 28e3, setup_us = 0.2 + 2 * 0.1;
  const double skew_us = alpha_us;
  for (const char* name : {"ag_fp32_1M", "ag_fp32_4M", "rs_fp32_sum_1M", "rs_fp32_sum_4M"}) {
    const Case& c = *std::find_if(kCases.begin(), kCases.end(), [&](const Case& k) { return k.name == name; });
    const double b = c.count * 4.0, t = op_us(name);
    const double formula = alpha_us + b * beta_us_per_byte;
    const double local_copy = b / 400e3;
    const double extra = c.gather ? local_copy + alpha_us + 2 * setup_us + (3 * (p - 1) + 8) * 0.1 + 2 * 0.05 + skew_us
                                  : 2 * local_copy + 2 * alpha_us + 3 * setup_us + (4 * (p - 1) + 8) * 0.1 + 2 * 0.05 + skew_us;
    EXPECT_GE(t, formula) << "cannot beat the links: " << name;
    EXPECT_LE(t, formula + extra) << name;
    std::printf("mesh %-15s %8.0f B blocks: simulated %8.3f us, formula %8.3f us (%+5.1f %%), bound %8.3f us\n", name, b, t,
                formula, 100 * (t - formula) / formula, formula + extra);
  }
}
