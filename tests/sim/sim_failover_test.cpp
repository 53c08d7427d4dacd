// Failover (docs/failover.md): one executable, one ctest entry (one simulation) per test.
//   NotifyBound:  the HCCS link 2-5 of an Atlas 800T A2 goes down under a 64 MiB all-reduce: the
//                 two ends get HCOMM_E_RUNTIME, the six others HCOMM_E_REMOTE, every one within
//                 the bound docs/failover.md derives (first detection + one control-channel
//                 latency + n - 1 message serializations on the reporter's host link).
//   RetryResults: the same with HCOMM_OP_RETRY=1: both all-reduces' results equal the host
//                 reference, every rank re-executed exactly once (one retry row each, 64 MiB
//                 re-sent), traffic resumed well under 1 ms after the fault.
//   PortEventTime: nic-down-retry.json with network/port_event 37 us and port_debounce 10 us:
//                 the two NIC owners (ranks 3 and 12), blocked in the all-reduce's synchronize,
//                 detect the fault exactly at fault + 37 us
//                 (their NIC's port-error event), the 14 others are told by them; all re-execute.
//   PortEventOwed: nic-down-edge-retry.json with the fault at 1 ms, before the all-reduce: the
//                 event is owed to, and taken by, rank 7's all-reduce synchronize; ring re-ordered.
//   PortFlapDebounced: tests/fixtures/nic-flap-debounce.json: node0/npu3's NIC cable flaps twice,
//                 down 30 us each, under the 50 us debounce: no port event, no failover, results
//                 correct (go-back-N rides it out).
//   NicBorrow:    nic-down-borrow.json + an exchange r <-> r + 8: the dead NIC's traffic goes
//                 through a lender's NIC (routes roce-borrow), the hierarchical all-reduce stays,
//                 results equal the host reduction, the exchange within its closed-form bounds.
//   AsyncErrorApi: a bad RDMA write of rank 8 on a2-2node: rank 8 gets HCOMM_E_RUNTIME, the 15
//                 ranks blocked in a barrier are woken with HCOMM_E_REMOTE; hcomm_get_async_error,
//                 its string and the callback agree; bad arguments are HCOMM_E_PTR / E_UNAVAIL.
#include <gtest/gtest.h>
#include <unistd.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <systemc>

#include "hcomm/hcomm.h"
#include "sim/runner.h"
#include "sim/config/scenario.h"
#include "sim/trace.h"
#include "scenario_rig.h"

using namespace sim;
using namespace sim_test;  // scenario_rig.h: run_file, expect_checked, num, query, tmp_db

namespace {

// docs/failover.md#detection-times: control channel 10 us one way, 1.25 GB/s per host link.
constexpr double kCtrlLatencyNs = 10000, kCtrlBps = 1.25e9;

}  // namespace

TEST(SimFailover, NotifyBound) {
  const std::string db = tmp_db("failover_notify");
  RunResult r = run_file("hccs-link-down.json", db);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_LT(r.sim_end_ps, 2000ULL * 1000 * 1000);  // not the 30 s timeout: the run ends about 17 us after the fault
  auto rows = query(db, "SELECT detected_by, code, action, origin FROM failovers ORDER BY detected_by");
  ASSERT_EQ(rows.size(), 8u);
  for (auto& row : rows) {
    const int rank = std::stoi(row[0]), code = std::stoi(row[1]);
    EXPECT_EQ(code, rank == 2 || rank == 5 ? HCOMM_E_RUNTIME : HCOMM_E_REMOTE) << "rank " << rank;
    EXPECT_EQ(row[2], "abort");
  }
  // The bound: the first rank to see the fault reports it to its 7 peers; each report is one
  // message of at most 1 KiB serialized on its host link, then one latency.
  const double first = num(db, "SELECT MIN(detected_at_ns) FROM failovers");
  const double last = num(db, "SELECT MAX(detected_at_ns) FROM failovers");
  const double fault = num(db, "SELECT MIN(fault_at_ns) FROM failovers");
  EXPECT_DOUBLE_EQ(fault, 1.3e6);
  const double bound = kCtrlLatencyNs + 7 * (1024 / kCtrlBps * 1e9) + 1000;  // + 1 us of host-side slack
  EXPECT_LE(last - first, bound);
  EXPECT_LT(first - fault, 10000);  // the transfer on the link fails within 10 us
  std::printf("fault %.3f us, first detection %.3f us, all notified by %.3f us (bound %.3f us after the first)\n", fault / 1e3,
              first / 1e3, last / 1e3, bound / 1e3);
  // Every rank's failed operation has its row and error (docs/trace-schema.md).
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE status = 'failed' AND error LIKE '%remote error%'"), 6);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE status = 'failed' AND error LIKE '%device task failed%'"), 2);
}

TEST(SimFailover, RetryResults) {
  const std::string db = tmp_db("failover_retry");
  RunResult r = run_file("hccs-link-down-retry.json", db);
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 2, 8));  // real bytes against the host reference, every rank
  // Exactly once: one retry per rank, the operation's 64 MiB re-sent once, no abort.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'retry' AND resumed_at_ns IS NOT NULL AND code = 0"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(DISTINCT detected_by) FROM failovers"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE bytes_resent != 67108864"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE path_after NOT LIKE '%2-5%'"), 0);
  const double worst = num(db, "SELECT MAX(resumed_at_ns - fault_at_ns) FROM failovers");
  EXPECT_GT(worst, 0);
  EXPECT_LT(worst, 1e6);  // the target: <= 1 ms simulated
  std::printf("fault to traffic resumed: at most %.3f us\n", worst / 1e3);
  // Only an HCCS link failed, and the server has relay NPUs: the pair 2-5 goes through one (two
  // HCCS hops) and the re-executed all-reduce, like the next one, keeps the selected mesh.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE path_after = 'as selected, hccs 2-5 through a relay npu'"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE algorithm = 'mesh' AND status = 'ok'"), 16);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE transport = 'hccs-relay' AND trigger = 'op retry: hccs 2-5 down' AND "
                    "((src = 2 AND dst = 5) OR (src = 5 AND dst = 2))"), 2);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%re-executed from its inputs%'"), 8);
}

// The NIC port-error event (docs/failover.md#nic-port-event): closed form. The NIC owners are
// blocked in the all-reduce's synchronize when the event arrives, so they detect it at once.
TEST(SimFailover, PortEventTime) {
  const std::string db = tmp_db("failover_port_event");
  RunResult r = run_file("nic-down-retry.json", db, [](Scenario& sc) {
    sc.net.port_event_ps = 37 * models::kPsPerUs;
    sc.net.port_debounce_ps = 10 * models::kPsPerUs;
  });
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  // The fault is timed 300 us after the all-reduce starts (in the middle of it).
  const double fault = num(db, "SELECT MIN(fault_at_ns) FROM failovers");
  EXPECT_DOUBLE_EQ(fault, num(db, "SELECT MIN(start_ns) FROM operations WHERE step = 0 AND rep = 0") + 300000);
  auto rows = query(db, "SELECT detected_by, detected_at_ns, origin FROM failovers WHERE fault LIKE '%IBV_EVENT_PORT_ERR%' AND origin = detected_by ORDER BY detected_by");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "3");
  EXPECT_EQ(rows[1][0], "12");
  // Closed form: the event arrives port_event after the fault (detected_at_ns is in whole ns).
  for (auto& row : rows) EXPECT_NEAR(std::stod(row[1]), fault + 37000, 1.0) << "rank " << row[0];
  // Everyone else acted on their report, within one control-channel latency and 15 serializations.
  const double last = num(db, "SELECT MAX(detected_at_ns) FROM failovers");
  EXPECT_LE(last - (fault + 37000), kCtrlLatencyNs + 15 * (1024 / kCtrlBps * 1e9) + 1000);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'retry' AND code = 0 AND resumed_at_ns IS NOT NULL"), 16);
  EXPECT_LT(num(db, "SELECT MAX(resumed_at_ns - fault_at_ns) FROM failovers"), 1e6);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%IBV_EVENT_PORT_ERR%' AND message LIKE '%Device%stream%'"), 2);
  std::printf("port event taken at %.3f us (fault %.3f us + 37 us); all told by %.3f us\n", std::stod(rows[0][1]) / 1e3, fault / 1e3, last / 1e3);
}

// A port event that arrives between operations (no communicator work crosses the NIC: the ranks
// are copying their inputs in) is owed to the next synchronize of such work: rank 7's all-reduce
// synchronize takes it at once, the ranks re-execute on the ring order 0..5 7 6 | 8..15.
TEST(SimFailover, PortEventOwed) {
  const std::string db = tmp_db("failover_port_owed");
  RunResult r = run_file("nic-down-edge-retry.json", db, [](Scenario& sc) {
    sc.faults[0].at_step = -1;  // absolute: 1 ms, before the all-reduce starts
    sc.faults[0].at_ps = 1000 * models::kPsPerUs;
  });
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  for (auto& s : r.steps) EXPECT_EQ(s.failed, 0u);
  const double start = num(db, "SELECT MIN(start_ns) FROM operations WHERE step = 0 AND rep = 0");
  EXPECT_GT(start, 1.1e6);  // the event (fault + 100 us) came before the all-reduce
  auto rows = query(db, "SELECT detected_at_ns, fault FROM failovers WHERE detected_by = 7 AND origin = 7");
  ASSERT_EQ(rows.size(), 1u);
  // Taken when rank 7 synchronizes its all-reduce, right after submitting it (the device runs
  // the begin marker a doorbell later): not at the event's arrival, 1100 us.
  EXPECT_GT(std::stod(rows[0][0]), 1.1e6);
  EXPECT_NEAR(std::stod(rows[0][0]), start, 2000);
  EXPECT_NE(rows[0][1].find("taken at the next synchronize of work across servers"), std::string::npos) << rows[0][1];
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'retry' AND code = 0 AND path_after LIKE 'ring order 0..5 7 6 | 8..15%'"), 16);
  EXPECT_LT(num(db, "SELECT MAX(resumed_at_ns - fault_at_ns) FROM failovers"), 1e6);
  std::printf("fault 1000 us, all-reduce from %.3f us, rank 7 took the owed event at %.3f us\n", start / 1e3, std::stod(rows[0][0]) / 1e3);
}

// A flap shorter than the debounce raises no event: nothing fails, nothing is re-executed.
TEST(SimFailover, PortFlapDebounced) {
  const std::string db = tmp_db("failover_flap");
  RunResult r = run_file("tests/fixtures/nic-flap-debounce.json", db);
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  for (auto& s : r.steps) EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%NIC of node0/npu3: port down for 30.000 us, shorter than the debounce (50.000 us): no port event%'"), 2);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%IBV_EVENT_PORT_ERR%'"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE status != 'ok'"), 0);
}

// Rail borrowing (docs/failover.md#nic-borrowing): nic-down-borrow.json plus an 8 MiB exchange
// r <-> r + 8 after it. Rank 3's NIC dies 300 us into the first all-reduce; the op retry gives it
// the lender rank 0 (lowest rank of node0 with a live NIC and an HCCS link to it) on every rank, the
// routes 3 -> 11 and 11 -> 3 become roce-borrow through rank 0's NIC, the all-reduces keep the
// hierarchical algorithm (no flat ring), and every result equals the host reduction.
TEST(SimFailover, NicBorrow) {
  const std::string db = tmp_db("failover_borrow");
  RunResult r = run_file("nic-down-borrow.json", db, [](Scenario& sc) {
    WorkloadStep x;
    x.set_op(WorkloadOp::SendRecv);
    x.bytes = 8ULL << 20;
    x.pattern = "halves";
    sc.workload.push_back(x);
    // The closed form below assumes the NICs share their rate per QP, which the paper's DCQCN
    // profile keeps here (788.8 us); the NVIDIA profile's DCQCN takes the relayed pair to 990.7 us
    // with PFC on, 1067 us with it off, beyond the bound (not analysed further: issue 48).
    sc.net.dcqcn = models::DcqcnParams::sigcomm2015();
    sc.net.ecn = models::EcnParams::sigcomm2015();
  });
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 3, 16));  // real bytes against the host reference, every rank
  // One retry per rank, on the borrowed NIC, not the ring.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'retry' AND code = 0 AND resumed_at_ns IS NOT NULL AND "
                    "path_after = 'as selected, nic 3 via rank 0 (borrowed over hccs)'"), 16);
  const double worst = num(db, "SELECT MAX(resumed_at_ns - fault_at_ns) FROM failovers");
  EXPECT_GT(worst, 0);
  EXPECT_LT(worst, 1e6);
  // The routes name the lender: 3 -> 11 over HCCS to rank 0 and out of its NIC; 11 -> 3 into rank
  // 0's NIC and on over HCCS (one QP: writes into a lender's NIC are not striped).
  EXPECT_GE(num(db, "SELECT COUNT(*) FROM routes WHERE src = 3 AND dst = 11 AND transport = 'roce-borrow' AND trigger = 'op retry: nic 3 down' "
                    "AND nic = 'node0/npu0/nic' AND hops LIKE 'node0/hccs0-3 leaf0:%' AND reason LIKE '%rank 0%'"), 1);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE src = 11 AND dst = 3 AND transport = 'roce-borrow' AND trigger = 'op retry: nic 3 down' "
                    "AND hops LIKE 'leaf0:% node0/hccs0-3' AND reason LIKE '%rank 0%'"), 1);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE transport = 'roce-borrow' AND src NOT IN (3, 11)"), 0);
  // The re-executed all-reduce and the next one keep the selected hierarchical algorithm.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE step = 0 AND status = 'ok' AND algorithm = 'mesh+ring' AND chosen_by = 'auto'"), 32);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE algorithm = 'ring' OR chosen_by = 'op retry'"), 0);
  // Closed form for the exchange: rank 0's NIC carries rank 3's 8 MiB and its own each way, so the
  // pair 3 <-> 11 takes at least 2X/R (R = 200 Gb/s). At most: the NIC shares its rate per QP, and
  // rank 0's own 8 MiB writes take 8 QPs (num_qp; 1 MiB each, over the 512 KiB multi-QP
  // threshold) against the relay's 1 (its 512 KiB slices are at the threshold), so rank 0's own
  // exchange ends within 9/8 of an unaffected pair's time (1 <-> 9, same run) and the relay's
  // within as much again; plus hop 1's first slice over HCCS (512 KiB at 28 GB/s nominal) and 2 us
  // per slice of staging overhead (16 slices; docs/routing.md#relay measured 1.4 us).
  const double X = 8.0 * 1048576, R = 25e9;
  const double pair = num(db, "SELECT MAX(end_ns - start_ns) FROM operations WHERE step = 1 AND rank IN (1, 9)");
  const double t3 = num(db, "SELECT MAX(end_ns - start_ns) FROM operations WHERE step = 1 AND rank IN (3, 11)");
  const double lo = 2 * X / R * 1e9, hi = 2 * pair * 9 / 8 + 524288 / 28e9 * 1e9 + 16 * 2000;
  EXPECT_GE(t3, lo);
  EXPECT_LE(t3, hi);
  std::printf("fault to resumed %.3f us; exchange 3<->11 %.3f us (bounds %.3f .. %.3f us; 1<->9 %.3f us)\n", worst / 1e3, t3 / 1e3,
              lo / 1e3, hi / 1e3, pair / 1e3);
}

namespace {
struct Seen {
  std::map<std::string, std::vector<int>> rc;
  std::vector<int> cb_calls = std::vector<int>(16, 0), cb_code = std::vector<int>(16, 0);
  std::vector<double> woken_us = std::vector<double>(16, 0);
  std::vector<std::string> text = std::vector<std::string>(16);
  double fail_us = 0;
} seen;
void note(std::uint32_t r, const std::string& k, hcomm_result_t v) {
  auto& x = seen.rc[k];
  if (x.size() < 16) x.resize(16, -1);
  x[r] = v;
}
void on_error(hcomm_comm_t, hcomm_result_t code, const char*, void* user) {
  const auto r = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(user));
  ++seen.cb_calls[r];
  seen.cb_code[r] = code;
}
}  // namespace

TEST(SimFailover, AsyncErrorApi) {
  setenv("HCOMM_TIMEOUT_MS", "20000", 1);
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  run_program(*topo, [](std::uint32_t r) {
    hcomm_context_t ctx = nullptr;
    hcomm_create_context(r % 8, &ctx);
    hcomm_comm_t comm = nullptr;
    note(r, "init", hcomm_comm_init(ctx, 16, r, &comm));
    note(r, "cb", hcomm_comm_set_error_callback(comm, on_error, reinterpret_cast<void*>(static_cast<std::uintptr_t>(r))));
    hcomm_result_t e = HCOMM_E_INTERNAL;
    note(r, "async_ok", hcomm_get_async_error(comm, &e));
    note(r, "async_before", e);
    note(r, "async_null", hcomm_get_async_error(comm, nullptr));
    note(r, "string_null", hcomm_get_async_error_string(comm, nullptr));
    note(r, "lost_null", hcomm_comm_lost_ranks(comm, 4, nullptr, nullptr));
    void* sym = nullptr;
    hcomm_buffer_alloc(ctx, 1 << 20, &sym);
    hcomm_mr_t mr{};
    hcomm_reg_mr(ctx, sym, 1 << 20, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mr);
    note(r, "barrier0", hcomm_barrier(comm, nullptr));
    if (r == 8) {  // a write with an unknown key: the target NIC refuses it
      hcomm_stream_t s = nullptr;
      hcomm_create_stream(ctx, &s);
      std::uint64_t remote = 0;
      hcomm_remote_addr(comm, 0, sym, &remote);
      hcomm_rdma_write(sym, 4096, 0, remote, 0xdead, comm, s);
      note(r, "sync", hcomm_stream_synchronize(s));
      seen.fail_us = static_cast<double>(sc_core::sc_time_stamp().value()) / 1e6;
      hcomm_destroy_stream(s);
    } else {  // blocked until rank 8 arrives, which it never does
      note(r, "sync", hcomm_barrier(comm, nullptr));
    }
    seen.woken_us[r] = static_cast<double>(sc_core::sc_time_stamp().value()) / 1e6;
    e = HCOMM_SUCCESS;
    hcomm_get_async_error(comm, &e);
    note(r, "async_after", e);
    const char* msg = nullptr;
    note(r, "string", hcomm_get_async_error_string(comm, &msg));
    seen.text[r] = msg ? msg : "";
    note(r, "sticky", hcomm_barrier(comm, nullptr));  // refused at once with the error
    std::uint32_t n = 99, lost[4];
    note(r, "lost", hcomm_comm_lost_ranks(comm, 4, lost, &n));
    note(r, "lost_n", static_cast<hcomm_result_t>(n));  // no agreement ran (no op retry): nobody found lost
    hcomm_dereg_mr(ctx, &mr);
    hcomm_buffer_free(ctx, sym);
    hcomm_comm_destroy(comm);
    note(r, "after_destroy", hcomm_get_async_error(comm, &e));
    hcomm_destroy_context(ctx);
  }, sim_test::quiet(), true);
  auto all = [&](const char* k, int v) {
    for (std::uint32_t r = 0; r < 16; ++r) EXPECT_EQ(seen.rc[k].at(r), v) << k << " rank " << r;
  };
  all("init", HCOMM_SUCCESS);
  all("cb", HCOMM_SUCCESS);
  all("async_ok", HCOMM_SUCCESS);
  all("async_before", HCOMM_SUCCESS);
  all("async_null", HCOMM_E_PTR);
  all("string_null", HCOMM_E_PTR);
  all("lost_null", HCOMM_E_PTR);
  all("barrier0", HCOMM_SUCCESS);
  all("string", HCOMM_SUCCESS);
  all("lost", HCOMM_SUCCESS);
  all("lost_n", 0);
  all("after_destroy", HCOMM_E_UNAVAIL);
  double last = 0;
  for (double w : seen.woken_us) last = std::max(last, w);
  std::printf("rank 8's write failed at %.3f us; every rank woken by %.3f us\n", seen.fail_us, last);
  for (std::uint32_t r = 0; r < 16; ++r) {
    const int want = r == 8 ? HCOMM_E_RUNTIME : HCOMM_E_REMOTE;
    EXPECT_EQ(seen.rc["sync"].at(r), want) << r;
    EXPECT_EQ(seen.rc["async_after"].at(r), want) << r;
    EXPECT_EQ(seen.rc["sticky"].at(r), want) << r;
    EXPECT_EQ(seen.cb_calls[r], 1) << r;  // once, on the first error
    EXPECT_EQ(seen.cb_code[r], want) << r;
    EXPECT_NE(seen.text[r].find("rank 8"), std::string::npos) << seen.text[r];
    // Woken within one control-channel latency plus 15 message serializations of the failure.
    EXPECT_LE(seen.woken_us[r] - seen.fail_us, (kCtrlLatencyNs + 15 * (1024 / kCtrlBps * 1e9) + 1000) / 1e3) << r;
  }
}

// Shrink: rank 7 of an Atlas 800T A2 leaves (its process ends without a word); the seven others
// shrink the communicator without it and all-reduce on the new one: results equal the host sum
// over ranks 0..6; bad lists are HCOMM_E_PARA, never a crash.
namespace {
std::vector<float> input(std::uint32_t r, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((r + 1) * 3 + i % 101);
  return v;
}
}  // namespace

TEST(SimFailover, ShrinkThenAllReduce) {
  auto topo = sim_test::preset("atlas800t-a2.json");
  ASSERT_TRUE(topo);
  const std::size_t n = (1 << 20) + 3;  // 4 MiB + 12 B of fp32
  static std::vector<double> data_ok(8, 0);
  run_program(*topo, [n](std::uint32_t r) {
    hcomm_context_t ctx = nullptr;
    hcomm_create_context(r, &ctx);
    hcomm_comm_t comm = nullptr;
    note(r, "init", hcomm_comm_init(ctx, 8, r, &comm));
    if (r == 7) {  // gone
      hcomm_comm_destroy(comm);
      hcomm_destroy_context(ctx);
      return;
    }
    hcomm_comm_t small = nullptr;
    const std::uint32_t self[1] = {r}, twice[2] = {7, 7}, out_of_range[1] = {8}, all7[7] = {0, 1, 2, 3, 4, 5, 6};
    note(r, "shrink_null_out", hcomm_comm_shrink(comm, 1, self, nullptr));
    note(r, "shrink_null_list", hcomm_comm_shrink(comm, 1, nullptr, &small));
    note(r, "shrink_self", hcomm_comm_shrink(comm, 1, self, &small));
    note(r, "shrink_twice", hcomm_comm_shrink(comm, 2, twice, &small));
    note(r, "shrink_range", hcomm_comm_shrink(comm, 1, out_of_range, &small));
    note(r, "shrink_everyone", hcomm_comm_shrink(comm, 8, all7, &small));
    const std::uint32_t lost[1] = {7};
    note(r, "shrink", hcomm_comm_shrink(comm, 1, lost, &small));
    std::uint32_t size = 0, rank = 99;
    hcomm_comm_size(small, &size);
    hcomm_comm_rank(small, &rank);
    note(r, "size", static_cast<hcomm_result_t>(size));
    note(r, "rank_same", rank == r ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    hcomm_stream_t s = nullptr;
    hcomm_create_stream(ctx, &s);
    void *a = nullptr, *b = nullptr;
    hcomm_malloc(ctx, n * 4, &a);
    hcomm_malloc(ctx, n * 4, &b);
    auto mine = input(r, n);
    hcomm_memcpy_host_to_device(a, mine.data(), n * 4, s);
    note(r, "allreduce", hcomm_allreduce(a, b, n, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, small, s));
    note(r, "sync", hcomm_stream_synchronize(s));
    std::vector<float> got(n);
    hcomm_memcpy_device_to_host(got.data(), b, n * 4, s);
    hcomm_stream_synchronize(s);
    std::vector<float> want(n, 0.0f);
    for (std::uint32_t q = 0; q < 7; ++q) {
      auto in = input(q, n);
      for (std::size_t i = 0; i < n; ++i) want[i] += in[i];
    }
    note(r, "data", got == want ? HCOMM_SUCCESS : HCOMM_E_INTERNAL);
    hcomm_free(ctx, a);
    hcomm_free(ctx, b);
    hcomm_destroy_stream(s);
    hcomm_comm_destroy(small);
    hcomm_comm_destroy(comm);
    hcomm_destroy_context(ctx);
  }, sim_test::quiet(), true);
  for (std::uint32_t r = 0; r < 7; ++r) {
    EXPECT_EQ(seen.rc["init"].at(r), HCOMM_SUCCESS);
    EXPECT_EQ(seen.rc["shrink_null_out"].at(r), HCOMM_E_PTR);
    EXPECT_EQ(seen.rc["shrink_null_list"].at(r), HCOMM_E_PTR);
    for (const char* k : {"shrink_self", "shrink_twice", "shrink_range", "shrink_everyone"}) EXPECT_EQ(seen.rc[k].at(r), HCOMM_E_PARA) << k;
    for (const char* k : {"shrink", "rank_same", "allreduce", "sync", "data"}) EXPECT_EQ(seen.rc[k].at(r), HCOMM_SUCCESS) << k << " rank " << r;
    EXPECT_EQ(seen.rc["size"].at(r), 7);
  }
}

// Op retry's resumption (docs/failover.md#resumption), hccs-link-down-resume.json: a 64 MiB fp32
// all-reduce on the mesh runs in eight slices of the 8 MiB collective buffer (2097152 elements
// each, equal work); the link 2-5 dies 30 % into it, so two slices (25 %) have completed on every
// rank and the third is in flight. Independent references: the results against the host
// reduction (a slice skipped that was not final everywhere, or one reduced twice, would differ),
// and the slice arithmetic: the re-execution starts at 2 x 2097152 and re-sends 6 x 8 MiB.
TEST(SimFailover, Resume) {
  const std::string db = tmp_db("failover_resume");
  RunResult r = run_file("hccs-link-down-resume.json", db);
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 2, 8));
  constexpr double kCount = 16777216, kSlice = 2097152;
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'resume' AND code = 0 AND resumed_at_ns IS NOT NULL"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(DISTINCT detected_by) FROM failovers"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE bytes_resent != " + std::to_string(static_cast<long long>((kCount - 2 * kSlice) * 4))), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE path_after LIKE '%from element 4194304 of 16777216 (25.0 %%'"), 8);
  EXPECT_LT(num(db, "SELECT MAX(resumed_at_ns - fault_at_ns) FROM failovers"), 1e6);
  // The re-execution is the operation on the 48 MiB not yet delivered (one operations row per
  // rank), and it is logged as a resumption.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE status = 'ok' AND bytes = " + std::to_string(static_cast<long long>((kCount - 2 * kSlice) * 4))), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%resumed from its inputs%'"), 8);
}
