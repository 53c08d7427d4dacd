// Detection and notification (docs/failover.md): one executable, one ctest entry (one simulation)
// per test.
//   HeartbeatLost:       rank-crash-heartbeat.json: rank 9 crashes during a host-to-device copy
//                        (no collective in flight, nobody transfers to it); its ring neighbours'
//                        host agents find it LOST, every other rank gets a notice. Closed form:
//                        the first LOST within (misses - 1) x period .. misses x period + period +
//                        one heartbeat's control-channel time after the crash; everyone else one
//                        notice later; all 15 survivors HCOMM_E_RANK_LOST; shrink can use it.
//   HeartbeatLostPeriod: the same with period 200 us x 5 misses: the bound moves with the knobs.
//   HeartbeatOff:        the same without the heartbeat: no LOST, the survivors learn only when
//                        their next all-reduce's transfers to the dead rank fail.
//   PortUpClears:        node0/npu7's NIC down 60 us (longer than the debounce) before the
//                        all-reduce: its PORT_ERR event is owed, its PORT_ACTIVE event arrives
//                        port_event after the link came back and clears the NIC-down state; the
//                        all-reduces run as selected (not op retry's ring), rank 7 over its NIC.
//   PortUpRestores:      nic-down-edge-retry.json with the NIC back up 2 ms into the re-executed
//                        all-reduce: its port-active event clears rank 7's NIC-down state, and at
//                        the next all-reduce the members agree that the fault is gone and return to
//                        the selected algorithm (not the op retry's ring), rank 7 on its NIC again.
//   CrcStorm:            hccs-crc-retries.json (CRC rate 1e-3 on HCCS 0-1 from 0 ns): both ends'
//                        hosts get a CRC storm event one window (1 ms) later: a "warn" failovers
//                        row each, code 0, nothing aborted, results correct.
//   BorrowEnds:          nic-down-borrow.json with the NIC back during the re-execution: at the
//                        next all-reduce the lender is dropped, routes 3 <-> 11 on their own NICs.
//   RelayEnds:           hccs-link-down-retry.json with the link back: the relay ends, 2-5 direct.
#include <gtest/gtest.h>
#include <unistd.h>

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

// docs/failover.md#heartbeat-with-neighbours: a heartbeat or notice is 64 B on the control channel
// (10 us one way, 1.25 GB/s per host link, serialized at both ends).
constexpr double kLatNs = 10000, kMsgNs = 64 / 1.25e9 * 1e9;

void check_lost(const std::string& db, double period_ns, double misses) {
  const double crash = num(db, "SELECT MIN(fault_at_ns) FROM failovers");
  ASSERT_GT(crash, 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers"), 15);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE code = 65 AND action = 'abort' AND fault LIKE '%rank 9 LOST%'"), 15);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE detected_by = 9"), 0);
  // The first detection: a neighbour's own (origin NULL/-1), ranks 8 or 10.
  auto first = query(db, "SELECT detected_by, detected_at_ns FROM failovers WHERE origin IS NULL OR origin < 0 ORDER BY detected_at_ns");
  ASSERT_GE(first.size(), 1u);
  EXPECT_TRUE(first[0][0] == "8" || first[0][0] == "10") << first[0][0];
  const double t1 = std::stod(first[0][1]);
  // Closed form: the last heartbeat was sent at most one period before the crash and arrived one
  // message later; LOST at the first check more than misses x period after that arrival; checks
  // come every period. So (misses - 1) x period < t1 - crash <= (misses + 1) x period + message.
  EXPECT_GT(t1 - crash, (misses - 1) * period_ns);
  EXPECT_LE(t1 - crash, (misses + 1) * period_ns + kLatNs + 2 * kMsgNs + 1000);
  // The others: one notice each from the detecting host (serialized on its link: 14 at most).
  const double last = num(db, "SELECT MAX(detected_at_ns) FROM failovers");
  EXPECT_LE(last - t1, kLatNs + 15 * kMsgNs + 1000);
  std::printf("crash %.3f us, first LOST %.3f us (rank %s), all told by %.3f us; bound %.3f us after the crash\n", crash / 1e3, t1 / 1e3,
              first[0][0].c_str(), last / 1e3, ((misses + 1) * period_ns + kLatNs + 2 * kMsgNs) / 1e3);
}

// `file` with its first fault undone: the same fault as kind `up` (NicUp, LinkUp), `at_us` into
// the fault's step (or at `at_us` when the fault's time is absolute).
RunResult run_with_repair(const std::string& file, const std::string& db, FaultKind up, std::uint64_t at_us) {
  return run_file(file, db, [=](Scenario& sc) {
    Fault f = sc.faults[0];
    f.kind = up;
    f.at_ps = at_us * models::kPsPerUs;
    sc.faults.push_back(f);
  });
}

}  // namespace

TEST(SimDetect, HeartbeatLost) {
  const std::string db = tmp_db("detect_hb");
  RunResult r = run_file("rank-crash-heartbeat.json", db);
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  check_lost(db, 500e3, 3);
  // Nobody waited for a timeout (2 s): the survivors' next all-reduce was refused at once.
  EXPECT_LT(r.sim_end_ps, 10ULL * 1000 * 1000 * 1000);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%: rank lost (comm rank 9 (rank 9) LOST, reported by %heartbeat agent%'"), 15);
}

TEST(SimDetect, HeartbeatLostPeriod) {
  const std::string db = tmp_db("detect_hb_period");
  RunResult r = run_file("rank-crash-heartbeat.json", db, [](Scenario& sc) {
    sc.hcomm_env["HCOMM_HEARTBEAT_PERIOD_US"] = "200";
    sc.hcomm_env["HCOMM_HEARTBEAT_MISSES"] = "5";
    sc.expect.max_detection_us.reset();
  });
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  check_lost(db, 200e3, 5);
}

TEST(SimDetect, HeartbeatOff) {
  const std::string db = tmp_db("detect_hb_off");
  RunResult r = run_file("rank-crash-heartbeat.json", db, [](Scenario& sc) {
    sc.hcomm_env["HCOMM_HEARTBEAT_PERIOD_US"] = "0";
    sc.expect = Expectations{};
    sc.expect.api_errors = true;
  });
  EXPECT_EQ(r.exit_code, 0);
  // No heartbeat and no closed connection (network/close_notice "off"): nothing names rank 9 lost
  // before the all-reduce's transfers to it fail; then op retry's agreement does (code 65).
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE fault LIKE '%heartbeat agent%'"), 0);
  // Learned only inside the next all-reduce, after the copy: well after the heartbeat's bound.
  const double crash = num(db, "SELECT MIN(fault_at_ns) FROM failovers");
  const double step2 = num(db, "SELECT MIN(start_ns) FROM operations WHERE step = 2");
  EXPECT_GT(step2, 0);
  EXPECT_GE(num(db, "SELECT MIN(detected_at_ns) FROM failovers"), step2);
  std::printf("without the heartbeat: crash %.3f us, first detection %.3f us (inside step 2, from %.3f us)\n", crash / 1e3,
              num(db, "SELECT MIN(detected_at_ns) FROM failovers") / 1e3, step2 / 1e3);
}

TEST(SimDetect, PortUpClears) {
  const std::string db = tmp_db("detect_port_up");
  RunResult r = run_file("nic-down-edge-retry.json", db, [](Scenario& sc) {
    Fault up = sc.faults[0];
    sc.faults[0].at_step = -1;  // absolute: 1 ms, before the all-reduce starts
    sc.faults[0].at_ps = 1000 * models::kPsPerUs;
    up.kind = FaultKind::NicUp;
    up.at_step = -1;
    up.at_ps = 1060 * models::kPsPerUs;  // down 60 us: longer than the 50 us debounce
    sc.faults.push_back(up);
    sc.expect.failovers_min.reset();
  });
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  for (auto& s : r.steps) EXPECT_EQ(s.failed, 0u);
  // The port-active event: port_event (100 us) after the link came back, taken by rank 7.
  auto up = query(db, "SELECT sim_time_ns, message FROM logs WHERE message LIKE '%IBV_EVENT_PORT_ACTIVE%NIC-down state cleared%'");
  ASSERT_EQ(up.size(), 1u);
  EXPECT_NE(up[0][1].find("NIC of node0/npu7: port up since 1060.000 us"), std::string::npos) << up[0][1];
  EXPECT_GE(std::stod(up[0][0]), 1160e3);
  // Nothing failed over; the all-reduces ran as selected, rank 7 over its NIC (RoCE routes from it).
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE chosen_by = 'op retry'"), 0);
  EXPECT_GT(num(db, "SELECT COUNT(*) FROM routes WHERE src = 7 AND transport = 'roce'"), 0);
}

TEST(SimDetect, PortUpRestores) {
  const std::string db = tmp_db("detect_port_restore");
  // 2 ms after rep 0 started: during the re-execution on the ring.
  RunResult r = run_with_repair("nic-down-edge-retry.json", db, FaultKind::NicUp, 2000);
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 2, 16));  // a step per repetition
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action = 'retry' AND code = 0 AND path_after LIKE 'ring order 0..5 7 6 | 8..15%'"), 16);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%IBV_EVENT_PORT_ACTIVE%NIC-down state cleared%' AND rank = 7"), 1);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%back to the selected algorithms from seq %'"), 16);
  // Rep 1 runs as selected (the hierarchical all-reduce), not on the op retry's ring.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE rep = 1 AND status = 'ok' AND chosen_by != 'op retry' AND algorithm != 'ring'"), 16);
  const double rep1 = num(db, "SELECT MIN(start_ns) FROM operations WHERE rep = 1");
  const double rep1_end = num(db, "SELECT MAX(end_ns) FROM operations WHERE rep = 1");
  std::printf("rep 1: %.3f us (as selected, NIC back)\n", (rep1_end - rep1) / 1e3);
  EXPECT_LT(rep1_end - rep1, 3000e3);  // the ring took ~5.8 ms; the hierarchical all-reduce ~1 ms
}

TEST(SimDetect, CrcStorm) {
  const std::string db = tmp_db("detect_crc");
  RunResult r = run_file("hccs-crc-retries.json", db);
  for (auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.exit_code, 0);
  for (auto& s : r.steps) EXPECT_EQ(s.failed, 0u);
  auto rows = query(db, "SELECT detected_by, detected_at_ns, code, fault FROM failovers WHERE action = 'warn' ORDER BY detected_by");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "0");
  EXPECT_EQ(rows[1][0], "1");
  for (auto& row : rows) {
    EXPECT_DOUBLE_EQ(std::stod(row[1]), 1e6);  // the rate set at 0 ns, one 1 ms window
    EXPECT_EQ(row[2], "0");
    EXPECT_NE(row[3].find("CRC storm"), std::string::npos) << row[3];
  }
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action != 'warn'"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%[HCOMM_WARN]%CRC storm%non-fatal%'"), 2);
}

// The return from NIC borrowing (docs/failover.md#back-to-the-direct-paths): nic-down-borrow.json
// with node0/npu3's NIC back 1.5 ms into repetition 0 (during the re-execution through lender
// rank 0). At repetition 1's start the members agree that the NIC is up, drop the lender and
// decide the borrowed routes again: rank 3's route to its rail peer 11 and 11's to it (8 QP
// stripes each), on their own NICs. Reference: while borrowing, rank 0's NIC carries rank 3's level-1 traffic besides its
// own (8 MiB more each way, >= 335 us at 25 GB/s: docs/failover.md#nic-borrowing), so a
// repetition 1 more than 300 us under the borrowed one (1410 us) has left the lender's NIC.
TEST(SimDetect, BorrowEnds) {
  const std::string db = tmp_db("detect_borrow_ends");
  RunResult r = run_with_repair("nic-down-borrow.json", db, FaultKind::NicUp, 1500);
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 2, 16));
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM failovers WHERE action IN ('retry', 'resume') AND code = 0"), 16);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE trigger = 'port up: nic 3 (lender 0) back' AND transport = 'roce'"), 16);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE trigger = 'port up: nic 3 (lender 0) back' AND src = 3 AND dst = 11 AND nic = 'node0/npu3/nic'"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE trigger = 'port up: nic 3 (lender 0) back' AND src = 11 AND dst = 3"), 8);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM logs WHERE message LIKE '%nic 3 (lender 0) back on their own paths from seq 2%'"), 16);
  const double rep1 = num(db, "SELECT MAX(end_ns) - MIN(start_ns) FROM operations WHERE rep = 1 AND status = 'ok'");
  std::printf("rep 1: %.3f us (NIC back on its own path)\n", rep1 / 1e3);
  EXPECT_LT(rep1, 1100e3);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM operations WHERE rep = 1 AND status = 'ok' AND algorithm = 'mesh+ring'"), 16);
}

// The return from an HCCS relay: hccs-link-down-retry.json with the link 2-5 back at 3 ms (after
// the re-execution): at repetition 1 the pair's two routes are decided again, direct HCCS, and
// the mesh runs as healthy (docs/failover.md measures 628.6 us healthy, 1295.2 us through the
// relay: the relayed pair's bytes cross rank 0's links twice), so well under 900 us.
TEST(SimDetect, RelayEnds) {
  const std::string db = tmp_db("detect_relay_ends");
  RunResult r = run_with_repair("hccs-link-down-retry.json", db, FaultKind::LinkUp, 3000);
  ASSERT_NO_FATAL_FAILURE(expect_checked(r, 2, 8));
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM routes WHERE trigger = 'port up: hccs 2-5 back' AND transport = 'hccs' AND "
                    "((src = 2 AND dst = 5) OR (src = 5 AND dst = 2))"), 2);
  const double rep1 = num(db, "SELECT MAX(end_ns) - MIN(start_ns) FROM operations WHERE rep = 1 AND status = 'ok'");
  std::printf("rep 1: %.3f us (HCCS 2-5 back)\n", rep1 / 1e3);
  EXPECT_LT(rep1, 900e3);
}
