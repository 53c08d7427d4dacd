// The public hcomm API on a simulated Atlas 800T A2, driven directly by rank programs (one
// simulation in this process). Real bytes, checked against host copies; error paths included.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "hcomm/hcomm.h"
#include "hcomm/hcomm.hpp"
#include "sim/runner.h"
#include "sim_test_util.h"

using namespace sim;

namespace {

struct Outcome {
  std::map<std::string, std::vector<int>> rc;  // name -> result code per rank
  std::map<std::string, double> value;
};
Outcome out;

void note(std::uint32_t r, const std::string& what, hcomm_result_t rc) {
  auto& v = out.rc[what];
  if (v.size() < 8) v.resize(8, -1);
  v[r] = rc;
}

std::vector<float> pattern(std::uint32_t r, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(r * 1000003u + i % 7919);
  return v;
}

void program(std::uint32_t r) {
  hcomm_context_t ctx = nullptr;
  note(r, "create_context", hcomm_create_context(r, &ctx));
  hcomm_comm_t comm = nullptr;
  note(r, "comm_init", hcomm_comm_init(ctx, 8, r, &comm));
  hcomm_stream_t s1 = nullptr, s2 = nullptr;
  hcomm_create_stream(ctx, &s1);
  hcomm_create_stream(ctx, &s2);
  const std::size_t n = (3 << 20) / 4 + 5;  // 3 MiB + 20 B: not a multiple of the 256 KiB piece
  void *a = nullptr, *b = nullptr;
  hcomm_malloc(ctx, n * 4, &a);
  hcomm_malloc(ctx, n * 4, &b);
  auto mine = pattern(r, n);
  hcomm_memcpy_host_to_device(a, mine.data(), n * 4, s1);
  hcomm_stream_synchronize(s1);

  // Blocking send/recv in a ring direction: even ranks send first, odd ranks receive first.
  const std::uint32_t next = (r + 1) % 8, prev = (r + 7) % 8;
  hcomm_result_t rs, rr;
  if (r % 2 == 0) { rs = hcomm_send(a, n, HCOMM_DATA_TYPE_FP32, next, 7, comm); rr = hcomm_recv(b, n, HCOMM_DATA_TYPE_FP32, prev, 7, comm); }
  else { rr = hcomm_recv(b, n, HCOMM_DATA_TYPE_FP32, prev, 7, comm); rs = hcomm_send(a, n, HCOMM_DATA_TYPE_FP32, next, 7, comm); }
  note(r, "send", rs);
  note(r, "recv", rr);
  std::vector<float> got(n);
  hcomm_memcpy_device_to_host(got.data(), b, n * 4, s1);
  hcomm_stream_synchronize(s1);
  note(r, "ring_data", got == pattern(prev, n) ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);

  // Non-blocking exchange with a partner, two tags in flight, hcomm_test polling then wait.
  const std::uint32_t partner = r ^ 1u;
  hcomm_request_t req[4];
  const std::size_t half = n / 2;
  note(r, "isend", hcomm_isend(a, half, HCOMM_DATA_TYPE_FP32, partner, 1, comm, s1, &req[0]));
  note(r, "isend2", hcomm_isend(static_cast<float*>(a) + half, n - half, HCOMM_DATA_TYPE_FP32, partner, 2, comm, s1, &req[1]));
  note(r, "irecv", hcomm_irecv(b, half, HCOMM_DATA_TYPE_FP32, partner, 1, comm, s2, &req[2]));
  note(r, "irecv2", hcomm_irecv(static_cast<float*>(b) + half, n - half, HCOMM_DATA_TYPE_FP32, partner, 2, comm, s2, &req[3]));
  note(r, "test_inflight", hcomm_test(req[3]));  // nothing has run yet: E_AGAIN
  note(r, "waitall", hcomm_waitall(4, req));
  hcomm_memcpy_device_to_host(got.data(), b, n * 4, s1);
  hcomm_stream_synchronize(s1);
  note(r, "pair_data", got == pattern(partner, n) ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);

  // Events: cross-stream dependency and elapsed time of a device-to-device copy.
  hcomm_event_t e0, e1;
  hcomm_create_event(ctx, &e0);
  hcomm_create_event(ctx, &e1);
  hcomm_record_event(e0, s1);
  hcomm_memcpy_device_to_device(b, a, n * 4, s1);
  hcomm_record_event(e1, s1);
  hcomm_wait_event(e1, s2);
  hcomm_memcpy_device_to_host(got.data(), b, n * 4, s2);  // must see the copy
  note(r, "event_sync", hcomm_stream_synchronize(s2));
  note(r, "d2d_data", got == mine ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
  float ms = 0;
  note(r, "elapsed", hcomm_event_elapsed_time(e0, e1, &ms));
  if (r == 0) out.value["d2d_ms"] = ms;

  // Buffer pool of one device buffer: a release while an isend from it is in flight returns the
  // buffer only once the transfer has finished; the next acquire waits for that.
  {
    hcomm_buffer_pool_t pool = nullptr;
    note(r, "pool_create", hcomm_create_buffer_pool(ctx, 1, 1 << 20, HCOMM_MEMORY_TYPE_DEVICE, &pool));
    hcomm_buffer_t pb{}, pb2{};
    note(r, "pool_acquire", hcomm_buffer_pool_acquire(pool, 1000, &pb));
    note(r, "pool_empty", hcomm_buffer_pool_acquire(pool, 1000, &pb2));  // all acquired: at once
    auto mine1m = pattern(r + 100, (1 << 20) / 4);
    hcomm_memcpy_host_to_device(pb.addr, mine1m.data(), 1 << 20, s1);
    hcomm_request_t rq[2];
    hcomm_isend(pb.addr, (1 << 20) / 4, HCOMM_DATA_TYPE_FP32, partner, 50, comm, s1, &rq[0]);
    hcomm_irecv(b, (1 << 20) / 4, HCOMM_DATA_TYPE_FP32, partner, 50, comm, s2, &rq[1]);
    note(r, "pool_release_inflight", hcomm_buffer_pool_release(pool, &pb, s1));
    uint32_t avail = 9;
    hcomm_buffer_pool_available(pool, &avail);
    if (r == 0) out.value["pool_avail_inflight"] = avail;  // 0: still in flight
    note(r, "pool_reacquire", hcomm_buffer_pool_acquire(pool, 1000, &pb2));  // waits for the isend
    note(r, "pool_same_buffer", pb2.addr == pb.addr ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    note(r, "pool_send_done", hcomm_test(rq[0]) == HCOMM_SUCCESS ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    note(r, "pool_waitall", hcomm_wait(rq[1]));
    std::vector<float> got1m((1 << 20) / 4);
    hcomm_memcpy_device_to_host(got1m.data(), b, 1 << 20, s2);
    hcomm_stream_synchronize(s2);
    note(r, "pool_data", got1m == pattern(partner + 100, (1 << 20) / 4) ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    note(r, "pool_destroy_out", hcomm_destroy_buffer_pool(pool));  // pb2 is still acquired
    hcomm_buffer_t forged = pb2;
    forged.index = 7;  // not a buffer of this pool
    note(r, "pool_bad_release", hcomm_buffer_pool_release(pool, &forged, nullptr));
    hcomm_buffer_pool_release(pool, &pb2, nullptr);
    note(r, "pool_destroy", hcomm_destroy_buffer_pool(pool));
    note(r, "pool_after_destroy", hcomm_buffer_pool_acquire(pool, 0, &pb));
  }

  // Host cache flush costs host time: 0.5 us + 1 MiB / 25 GB/s = 42.44 us between two markers.
  {
    hcomm_event_t f0, f1;
    hcomm_create_event(ctx, &f0);
    hcomm_create_event(ctx, &f1);
    hcomm_record_event(f0, s1);
    hcomm_stream_synchronize(s1);
    note(r, "flush", hcomm_flush_cache(ctx, mine.data(), 1 << 20, HCOMM_FLUSH_TO_DEVICE));
    hcomm_record_event(f1, s1);
    hcomm_stream_synchronize(s1);
    float fms = 0;
    hcomm_event_elapsed_time(f0, f1, &fms);
    if (r == 0) out.value["flush_us"] = fms * 1e3;
    note(r, "flush_null", hcomm_flush_cache(ctx, nullptr, 64, HCOMM_FLUSH_TO_DEVICE));
    hcomm_destroy_event(f0);
    hcomm_destroy_event(f1);
  }

  // The RAII layer: owned handles, errors as exceptions.
  {
    int caught = HCOMM_SUCCESS;
    try {
      hcomm::Context bad(99);
    } catch (const hcomm::Error& e) {
      caught = e.code();
    }
    note(r, "raii_error", static_cast<hcomm_result_t>(caught));
    hcomm::Context c2(r);
    hcomm::Stream st2(c2);
    hcomm::DeviceBuffer db(c2, 4096);
    hcomm::Event ev(c2);
    ev.record(st2);
    st2.synchronize();
    note(r, "raii_ok", ev.done() && c2.device_id() == r ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
  }

  // Misuse: parameter errors, never a crash.
  hcomm_request_t q = nullptr;
  note(r, "bad_rank", hcomm_isend(a, 1, HCOMM_DATA_TYPE_FP32, 8, 0, comm, s1, &q));
  note(r, "self_rank", hcomm_isend(a, 1, HCOMM_DATA_TYPE_FP32, r, 0, comm, s1, &q));
  note(r, "bad_dtype", hcomm_isend(a, 1, static_cast<hcomm_data_type_t>(99), partner, 0, comm, s1, &q));
  note(r, "null_buf", hcomm_isend(nullptr, 4, HCOMM_DATA_TYPE_FP32, partner, 0, comm, s1, &q));
  note(r, "bad_op", hcomm_allreduce(a, b, n, HCOMM_DATA_TYPE_FP32, static_cast<hcomm_reduce_op_t>(9), comm, s1));
  hcomm_comm_t c9 = nullptr;
  note(r, "bad_comm_size", hcomm_comm_init(ctx, 9, r, &c9));
  note(r, "null_out", hcomm_comm_init(ctx, 8, r, nullptr));
  void* huge = nullptr;
  note(r, "oom", hcomm_malloc(ctx, 1ULL << 40, &huge));
  note(r, "free_foreign", hcomm_free(ctx, reinterpret_cast<void*>(0x1234)));
  // A copy beyond the HBM is a device error reported at synchronize.
  char* end_of_hbm = static_cast<char*>(a) + (64ULL << 30);
  hcomm_memcpy_device_to_device(end_of_hbm, a, 16, s1);
  note(r, "device_fault", hcomm_stream_synchronize(s1));
  note(r, "after_fault", hcomm_stream_synchronize(s1));  // the error is reported once

  // A receive whose sender never sends: rank 0 waits on rank 1 with tag 99; times out after
  // HCOMM_TIMEOUT_MS (1000 ms in this test) of simulated time.
  if (r == 0) {
    hcomm_request_t lost = nullptr;
    hcomm_irecv(b, 16, HCOMM_DATA_TYPE_FP32, 1, 99, comm, s2, &lost);
    note(r, "timeout", hcomm_wait(lost));
  }

  // Size mismatch: rank 2 sends 64 elements, rank 3 expects 60 (same chunk count): the receive
  // must not take the wrong bytes; it times out with a message naming the mismatch.
  if (r == 2 || r == 3) {
    hcomm_request_t q = nullptr;
    if (r == 2) note(r, "mismatch_post", hcomm_isend(a, 64, HCOMM_DATA_TYPE_FP32, 3, 77, comm, s1, &q));
    else note(r, "mismatch_post", hcomm_irecv(b, 60, HCOMM_DATA_TYPE_FP32, 2, 77, comm, s2, &q));
    note(r, "mismatch", hcomm_wait(q));
  }

  // Use after destroy.
  hcomm_destroy_event(e0);
  note(r, "event_after_destroy", hcomm_record_event(e0, s1));
  hcomm_destroy_event(e1);
  hcomm_free(ctx, a);
  hcomm_free(ctx, b);
  hcomm_destroy_stream(s2);
  note(r, "stream_after_destroy", hcomm_stream_synchronize(s2));
  hcomm_destroy_stream(s1);
  hcomm_comm_destroy(comm);
  note(r, "comm_after_destroy", hcomm_send(a, 1, HCOMM_DATA_TYPE_FP32, partner, 0, comm));
  note(r, "destroy_context", hcomm_destroy_context(ctx));
  note(r, "ctx_after_destroy", hcomm_destroy_context(ctx));
}

void expect_all(const std::string& what, int code) {
  ASSERT_TRUE(out.rc.count(what)) << what;
  for (std::size_t r = 0; r < 8; ++r) EXPECT_EQ(out.rc[what][r], code) << what << " rank " << r;
}

}  // namespace

TEST(SimApi, PointToPointEventsAndErrors) {
  setenv("HCOMM_TIMEOUT_MS", "1000", 1);
  auto topo = sim_test::preset("atlas800t-a2.json");
  ASSERT_TRUE(topo);
  std::uint64_t end_ps = run_program(*topo, program, sim_test::quiet());
  for (const char* ok : {"create_context", "comm_init", "send", "recv", "ring_data", "isend", "isend2", "irecv", "irecv2",
                         "waitall", "pair_data", "event_sync", "d2d_data", "elapsed", "destroy_context"})
    expect_all(ok, HCOMM_SUCCESS);
  expect_all("test_inflight", HCOMM_E_AGAIN);
  for (const char* ok : {"pool_create", "pool_acquire", "pool_release_inflight", "pool_reacquire", "pool_same_buffer",
                         "pool_send_done", "pool_waitall", "pool_data", "pool_destroy", "flush", "raii_ok"})
    expect_all(ok, HCOMM_SUCCESS);
  expect_all("pool_empty", HCOMM_E_UNAVAIL);
  expect_all("pool_destroy_out", HCOMM_E_AGAIN);
  expect_all("pool_bad_release", HCOMM_E_PARA);
  expect_all("pool_after_destroy", HCOMM_E_UNAVAIL);
  expect_all("flush_null", HCOMM_E_PTR);
  expect_all("raii_error", HCOMM_E_PARA);
  EXPECT_EQ(out.value["pool_avail_inflight"], 0);
  EXPECT_NEAR(out.value["flush_us"], 0.5 + (1 << 20) / 25e3, 0.5);  // +- marker dispatches
  for (const char* para : {"bad_rank", "self_rank", "bad_dtype", "bad_op"}) expect_all(para, HCOMM_E_PARA);
  expect_all("bad_comm_size", HCOMM_E_PARA);
  expect_all("null_out", HCOMM_E_PTR);
  expect_all("null_buf", HCOMM_E_PTR);
  expect_all("oom", HCOMM_E_MEMORY);
  expect_all("free_foreign", HCOMM_E_PTR);
  expect_all("device_fault", HCOMM_E_RUNTIME);
  expect_all("after_fault", HCOMM_SUCCESS);
  for (const char* gone : {"event_after_destroy", "stream_after_destroy", "comm_after_destroy", "ctx_after_destroy"})
    expect_all(gone, HCOMM_E_UNAVAIL);
  EXPECT_EQ(out.rc["timeout"][0], HCOMM_E_TIMEOUT);
  EXPECT_EQ(out.rc["mismatch_post"][2], HCOMM_SUCCESS);
  EXPECT_EQ(out.rc["mismatch_post"][3], HCOMM_SUCCESS);
  EXPECT_EQ(out.rc["mismatch"][2], HCOMM_SUCCESS);   // the sender's data went into the window
  EXPECT_EQ(out.rc["mismatch"][3], HCOMM_E_TIMEOUT); // the receiver never matched it
  EXPECT_GE(end_ps, 1000ULL * 1000 * 1000 * 1000);  // the timeout really waited 1 s of simulated time
  // D2D copy of 3 MiB at min(SDMA 400 GB/s, HBM 1.6 TB/s / 2) + 0.2 us setup, between two markers:
  const double expect_ms = ((3 << 20) + 20) / 400e9 * 1e3 + 0.2e-3;
  EXPECT_NEAR(out.value["d2d_ms"], expect_ms, 0.5e-3);
  std::printf("d2d copy of 3 MiB: %.6f ms simulated, expected %.6f ms\n", out.value["d2d_ms"], expect_ms);  // +- 3 task dispatches of 0.1 us and rounding
}
