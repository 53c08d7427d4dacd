// CommConfig on two servers (a2-2node), one simulation: precedence (communicator > environment >
// default), range errors, protocol TCP accepted, and the knobs that change transfers: bandwidth_limit
// caps RDMA writes, buffer_size sets the point-to-point chunk, num_qp stripes writes over QPs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>
#include <string>

#include "hcomm/hcomm.h"
#include "sim/runner.h"
#include "sim_test_util.h"

using namespace sim;

namespace {
std::map<std::string, double> v;  // results recorded by rank 0
std::map<std::string, int> rc;

double timed_send(hcomm_comm_t comm, hcomm_context_t ctx, std::uint32_t r, void* buf, std::uint64_t bytes) {
  // ranks 0 and 8 (different servers) exchange over RoCE; the others idle.
  if (r != 0 && r != 8) return 0;
  hcomm_stream_t s;
  hcomm_create_stream(ctx, &s);
  hcomm_event_t a, b;
  hcomm_create_event(ctx, &a);
  hcomm_create_event(ctx, &b);
  hcomm_record_event(a, s);
  hcomm_request_t q;
  if (r == 0) hcomm_isend(buf, bytes, HCOMM_DATA_TYPE_INT8, 8, 1, comm, s, &q);
  else hcomm_irecv(buf, bytes, HCOMM_DATA_TYPE_INT8, 0, 1, comm, s, &q);
  hcomm_wait(q);
  hcomm_record_event(b, s);
  hcomm_stream_synchronize(s);
  float ms = 0;
  hcomm_event_elapsed_time(a, b, &ms);
  hcomm_destroy_event(a);
  hcomm_destroy_event(b);
  hcomm_destroy_stream(s);
  return ms * 1e3;
}
}  // namespace

TEST(SimConfig, PrecedenceRangesAndEffects) {
  setenv("HCOMM_NUM_QP", "4", 1);        // environment beats the default (8)
  setenv("HCOMM_TIMEOUT_MS", "20000", 1);
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  run_program(*topo, [](std::uint32_t r) {
    hcomm_context_t ctx;
    hcomm_create_context(r % 8, &ctx);
    hcomm_comm_t plain, limited, small, bad;
    hcomm_config_t cfg;
    rc["plain"] = hcomm_comm_init(ctx, 16, r, &plain);
    hcomm_config_t eff;
    hcomm_comm_get_config(plain, &eff);
    if (r == 0) { v["env_num_qp"] = static_cast<double>(eff.num_qp); v["env_timeout"] = static_cast<double>(eff.timeout_ms); v["def_buffer"] = static_cast<double>(eff.buffer_size); }
    hcomm_config_init(&cfg);
    cfg.num_qp = 2;                 // the communicator beats the environment
    cfg.bandwidth_limit = 1000;     // MB/s
    rc["limited"] = hcomm_comm_init_config(ctx, 16, r, &cfg, &limited);
    hcomm_comm_get_config(limited, &eff);
    if (r == 0) v["cfg_num_qp"] = static_cast<double>(eff.num_qp);
    hcomm_config_init(&cfg);
    cfg.buffer_size = 1 << 20;      // 1 MiB point-to-point chunks
    rc["small"] = hcomm_comm_init_config(ctx, 16, r, &cfg, &small);
    hcomm_config_init(&cfg);
    cfg.num_qp = 33;
    rc["num_qp_range"] = hcomm_comm_init_config(ctx, 16, r, &cfg, &bad);
    hcomm_config_init(&cfg);
    cfg.timeout_ms = 10;
    rc["timeout_range"] = hcomm_comm_init_config(ctx, 16, r, &cfg, &bad);
    hcomm_config_init(&cfg);
    cfg.protocol = HCOMM_PROTOCOL_TCP;
    const hcomm_result_t tcp = hcomm_comm_init_config(ctx, 16, r, &cfg, &bad);
    rc["tcp"] = tcp;
    if (tcp == HCOMM_SUCCESS) hcomm_comm_destroy(bad);
    hcomm_comm_t rbuf;
    hcomm_config_init(&cfg);
    cfg.recv_buffer_size = 1 << 20;  // the chunk is also at most the receive buffer (docs/config.md)
    rc["rbuf"] = hcomm_comm_init_config(ctx, 16, r, &cfg, &rbuf);
    void* buf;
    const std::uint64_t bytes = 4 << 20;
    hcomm_malloc(ctx, bytes, &buf);

    const double t_plain = timed_send(plain, ctx, r, buf, bytes);
    const double t_limited = timed_send(limited, ctx, r, buf, bytes);
    const double t_small = timed_send(small, ctx, r, buf, bytes);
    const double t_rbuf = timed_send(rbuf, ctx, r, buf, bytes);
    if (r == 8) { v["t_plain"] = t_plain; v["t_limited"] = t_limited; v["t_small"] = t_small; v["t_rbuf"] = t_rbuf; }
    hcomm_comm_destroy(rbuf);

    // One-sided RDMA into registered symmetric memory, and the target NIC's access checks. Last: a failed
    // write puts the communicators in error (docs/failover.md).
    void* sym = nullptr;
    rc["buffer_alloc"] = hcomm_buffer_alloc(ctx, 1 << 20, &sym);
    hcomm_mr_t mr{}, ro{};
    rc["reg_mr"] = hcomm_reg_mr(ctx, sym, 1 << 20, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mr);
    rc["reg_mr_ro"] = hcomm_reg_mr(ctx, static_cast<char*>(sym) + (1 << 19), 4096, HCOMM_ACCESS_REMOTE_READ, &ro);
    hcomm_mr_t junk{};
    rc["reg_mr_bad_flags"] = hcomm_reg_mr(ctx, sym, 64, 0x80, &junk);
    hcomm_barrier(plain, nullptr);
    if (r == 8) {  // rank 8 writes 64 KiB into rank 0's buffer, then tries three bad writes
      hcomm_stream_t s;
      hcomm_create_stream(ctx, &s);
      std::vector<std::uint8_t> pat(65536);
      for (std::size_t i = 0; i < pat.size(); ++i) pat[i] = static_cast<std::uint8_t>(i * 7 + 3);
      hcomm_memcpy_host_to_device(buf, pat.data(), pat.size(), s);
      std::uint64_t remote = 0;
      hcomm_remote_addr(plain, 0, static_cast<char*>(sym) + 4096, &remote);
      rc["rdma_ok"] = hcomm_rdma_write(buf, pat.size(), 0, remote, mr.rkey, plain, s);
      rc["rdma_ok_sync"] = hcomm_stream_synchronize(s);
      rc["rdma_outside"] = hcomm_rdma_write(buf, pat.size(), 0, remote + (1 << 20), mr.rkey, plain, s);
      rc["rdma_outside_sync"] = hcomm_stream_synchronize(s);
      hcomm_remote_addr(plain, 0, static_cast<char*>(sym) + (1 << 19), &remote);
      // The failed write put the context's communicators in error (docs/failover.md): later
      // writes are refused with that sticky error instead of being posted.
      rc["rdma_noflag_sync"] = hcomm_rdma_write(buf, 1024, 0, remote, ro.rkey, plain, s);  // region without REMOTE_WRITE
      rc["rdma_badkey_sync"] = hcomm_rdma_write(buf, 1024, 0, remote, 0xdead, plain, s);   // unknown key
      hcomm_result_t async = HCOMM_SUCCESS;
      hcomm_get_async_error(plain, &async);
      rc["async_error"] = async;
      hcomm_destroy_stream(s);
    }
    hcomm_barrier(plain, nullptr);
    if (r == 0) {
      std::vector<std::uint8_t> got(65536);
      hcomm_stream_t s;
      hcomm_create_stream(ctx, &s);
      hcomm_memcpy_device_to_host(got.data(), static_cast<char*>(sym) + 4096, got.size(), s);
      hcomm_stream_synchronize(s);
      bool same = true;
      for (std::size_t i = 0; i < got.size(); ++i) same = same && got[i] == static_cast<std::uint8_t>(i * 7 + 3);
      rc["rdma_data"] = same ? HCOMM_SUCCESS : HCOMM_E_INTERNAL;
      hcomm_destroy_stream(s);
    }
    rc["dereg"] = r == 0 ? hcomm_dereg_mr(ctx, &ro) : HCOMM_SUCCESS;
    rc["dereg_twice"] = r == 0 ? hcomm_dereg_mr(ctx, &ro) : HCOMM_E_NOT_FOUND;
    hcomm_comm_destroy(plain);
    hcomm_comm_destroy(limited);
    hcomm_comm_destroy(small);
    hcomm_destroy_context(ctx);
  }, sim_test::quiet(), true);
  EXPECT_EQ(rc["plain"], HCOMM_SUCCESS);
  EXPECT_EQ(rc["limited"], HCOMM_SUCCESS);
  EXPECT_EQ(rc["small"], HCOMM_SUCCESS);
  EXPECT_EQ(rc["num_qp_range"], HCOMM_E_PARA);
  EXPECT_EQ(rc["timeout_range"], HCOMM_E_PARA);
  EXPECT_EQ(rc["tcp"], HCOMM_SUCCESS);  // protocol TCP is modelled (sim_tcp_test)
  for (const char* k : {"buffer_alloc", "reg_mr", "reg_mr_ro", "rdma_ok", "rdma_ok_sync", "rdma_outside", "rdma_data", "dereg"}) EXPECT_EQ(rc[k], HCOMM_SUCCESS) << k;
  EXPECT_EQ(rc["reg_mr_bad_flags"], HCOMM_E_PARA);
  for (const char* k : {"rdma_outside_sync", "rdma_noflag_sync", "rdma_badkey_sync", "async_error"}) EXPECT_EQ(rc[k], HCOMM_E_RUNTIME) << k;
  EXPECT_EQ(rc["dereg_twice"], HCOMM_E_NOT_FOUND);
  EXPECT_EQ(v["env_num_qp"], 4);
  EXPECT_EQ(v["env_timeout"], 20000);
  EXPECT_EQ(v["def_buffer"], 8 << 20);
  EXPECT_EQ(v["cfg_num_qp"], 2);
  // 4 MiB at 1000 MB/s takes at least 4.19 ms; unlimited it takes ~0.18 ms at 25 GB/s.
  std::printf("4 MiB over RoCE: %.1f us plain, %.1f us at 1000 MB/s, %.1f us in 1 MiB chunks\n", v["t_plain"], v["t_limited"], v["t_small"]);
  EXPECT_GE(v["t_limited"], (4 << 20) / 1000e6 * 1e6);
  EXPECT_LT(v["t_limited"], (4 << 20) / 1000e6 * 1e6 * 1.1 + 50);
  EXPECT_LT(v["t_plain"], 250);
  // Four 1 MiB chunks each wait for a handshake: slower than two 8 MiB-window chunks... here one.
  EXPECT_GT(v["t_small"], v["t_plain"]);
  // recv_buffer_size 1 MiB cuts the same four chunks as buffer_size 1 MiB: the same time.
  EXPECT_EQ(rc["rbuf"], HCOMM_SUCCESS);
  EXPECT_NEAR(v["t_rbuf"], v["t_small"], 0.01);
}
