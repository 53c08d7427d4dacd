// Counters over simulated time and the per-task timeline (docs/trace-schema.md counter_samples,
// tasks) against closed forms: one executable, one ctest entry (one simulation) per test.
//   Hccs: 8 NPUs of an Atlas 800T A2 exchange B bytes in pairs (r <-> r^1) over HCCS at 28 GB/s:
//         the bytes samples of link 0-1 sum to B in each direction, its busy time to B / 28 GB/s
//         (plus two 4-byte notifies), util <= 1 in every interval, and rank 0's send and receive
//         are the task sequences the library builds (docs/algorithms/README.md, hcomm/README.md).
//   Roce: 2 x 8 NPUs of a2-2node exchange B bytes across servers (r <-> r+8) over 200 Gb/s RoCE:
//         a NIC's bytes samples carry B payload bytes plus 58 header bytes per 4 KiB packet (and
//         little else: ACKs), its busy time is those bytes at 25 GB/s, util <= 1 and the transfer
//         saturates it (some interval above 90 %); the leaf switch port towards the receiver
//         carries the same data.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "sim/trace.h"
#include "sim/runner.h"
#include "sim/config/scenario.h"
#include "sim_test_db.h"
#include "sim_test_util.h"

using namespace sim;

namespace {

using sim_test::query;

double num(const std::string& db, const std::string& sql) {
  auto r = query(db, sql);
  return r.empty() || r[0].empty() || r[0][0].empty() ? 0 : std::stod(r[0][0]);
}

struct Series {
  double bytes = 0, busy_ns = 0, max_util = 0, first_ns = -1, last_ns = 0;
  std::size_t bins = 0;
};
// The samples of one object: sums, the largest util, the intervals they span.
Series series(const std::string& db, const std::string& object) {
  Series s;
  for (auto& r : query(db, "SELECT t_ns, interval_ns, metric, value FROM counter_samples WHERE object = '" + object + "' ORDER BY rowid")) {
    const double t = std::stod(r[0]), iv = std::stod(r[1]), v = std::stod(r[3]);
    if (r[2] == "bytes") s.bytes += v;
    if (r[2] == "util") {
      s.busy_ns += v * iv;
      s.max_util = std::max(s.max_util, v);
      ++s.bins;
      if (s.first_ns < 0) s.first_ns = t;
      s.last_ns = std::max(s.last_ns, t + iv);
    }
  }
  return s;
}

std::string db_path(const char* name) { return ::testing::TempDir() + name; }

}  // namespace

TEST(SimSamples, Hccs) {
  auto topo = sim_test::preset("atlas800t-a2.json");
  ASSERT_TRUE(topo);
  static Scenario sc;
  sc.name = "sim_samples_hccs";
  sc.topology = *topo;
  WorkloadStep w;
  w.set_op(WorkloadOp::SendRecv);
  w.bytes = 4 << 20;
  sc.workload = {w};
  sc.sample_interval_ps = 1000 * models::kPsPerNs;  // 1 us
  sc.trace_tasks = true;
  RunOptions opt = sim_test::quiet();
  opt.db_path = db_path("sim_samples_hccs.db");
  opt.force_db = true;
  RunResult r = run_scenario(sc, opt);
  for (auto& f : r.failures) ADD_FAILURE() << f;
  const std::string& db = opt.db_path;
  EXPECT_EQ(num(db, "SELECT value FROM meta WHERE key = 'schema_version'"), sim::kTraceSchemaVersion);

  const double B = 4 << 20, W = 28e9;  // the preset's HCCS: 28 GB/s per direction
  auto link = query(db, "SELECT name, bandwidth_Bps FROM links WHERE kind = 'hccs' AND a = 0 AND b = 1");
  ASSERT_EQ(link.size(), 1u);
  ASSERT_EQ(std::stod(link[0][1]), W);
  for (const char* dir : {":ab", ":ba"}) {
    const Series s = series(db, link[0][0] + dir);
    SCOPED_TRACE(link[0][0] + dir);
    EXPECT_EQ(s.bytes, B);                            // every byte, once
    EXPECT_NEAR(s.busy_ns, B / W * 1e9 + 2 * 4 / W * 1e9, 1.0);  // the data and two 4-byte notifies, at 28 GB/s
    EXPECT_LE(s.max_util, 1.0);
    EXPECT_GT(s.max_util, 0.99);                      // the copy holds the link
    EXPECT_GE(s.bins, static_cast<std::size_t>(B / W * 1e6));  // 150 us of 1 us intervals
  }
  // Inside the operations' span, and agreeing with the end-of-run link counters.
  const double op_start = num(db, "SELECT MIN(start_ns) FROM operations WHERE kind = 'send'");
  const double op_end = num(db, "SELECT MAX(end_ns) FROM operations WHERE kind = 'recv'");
  EXPECT_GE(num(db, "SELECT MIN(t_ns + interval_ns) FROM counter_samples WHERE object LIKE 'server0/hccs%'"), op_start);
  EXPECT_LE(num(db, "SELECT MAX(t_ns) FROM counter_samples WHERE object LIKE 'server0/hccs%'"), op_end);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM counter_samples WHERE metric = 'util' AND (value > 1 OR value <= 0)"), 0);
  EXPECT_EQ(num(db, "SELECT SUM(bytes) FROM link_counters"), num(db, "SELECT SUM(value) FROM counter_samples WHERE metric = 'bytes'"));
  // HCCS links have no queue or network counters.
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM counter_samples WHERE kind <> 'link' OR metric NOT IN ('util', 'bytes')"), 0);

  // Tasks: rank 0's send stream is marker, wait for the receiver's READY, the 4 MiB copy into
  // rank 1's window, the DATA notify to rank 1, marker; its receive stream is marker, READY to
  // rank 1, wait for DATA, the local copy out of the window, marker (hcomm/src/p2p/sendrecv.cpp).
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM tasks WHERE end_ns < start_ns"), 0);
  const std::string seq = query(db, "SELECT seq FROM operations WHERE rank = 0 AND kind = 'send'").at(0).at(0);
  auto send_stream = query(db, "SELECT stream FROM tasks WHERE rank = 0 AND op_seq = " + seq + " AND kind = 'copy' AND peer = 1");
  ASSERT_EQ(send_stream.size(), 1u);
  auto kinds = [&](const std::string& where) {
    std::vector<std::string> k;
    for (auto& row : query(db, "SELECT kind, bytes, peer FROM tasks WHERE rank = 0 AND op_seq = " + seq + " AND " + where +
                                   " ORDER BY start_ns, rowid"))
      k.push_back(row[0] + " " + row[1] + " " + row[2]);
    return k;
  };
  const std::vector<std::string> want_send = {"marker 0 -1", "notify_wait 0 -1", "copy 4194304 1", "notify_record 0 1", "marker 0 -1"};
  const std::vector<std::string> want_recv = {"marker 0 -1", "notify_record 0 1", "notify_wait 0 -1", "copy 4194304 -1", "marker 0 -1"};
  EXPECT_EQ(kinds("stream = " + send_stream[0][0]), want_send);
  EXPECT_EQ(kinds("stream <> " + send_stream[0][0]), want_recv);
  // The copy takes B / 28 GB/s (plus SDMA setup and HBM latency: < 2 us) and lies inside the send.
  auto copy = query(db, "SELECT start_ns, end_ns FROM tasks WHERE rank = 0 AND kind = 'copy' AND peer = 1");
  ASSERT_EQ(copy.size(), 1u);
  const double dur = std::stod(copy[0][1]) - std::stod(copy[0][0]);
  EXPECT_GE(dur, B / W * 1e9);
  EXPECT_LE(dur, B / W * 1e9 + 2000);
  auto send = query(db, "SELECT start_ns, end_ns FROM operations WHERE rank = 0 AND kind = 'send'");
  EXPECT_GE(std::stod(copy[0][0]), std::stod(send.at(0)[0]));
  EXPECT_LE(std::stod(copy[0][1]), std::stod(send.at(0)[1]));
}

TEST(SimSamples, Roce) {
  auto topo = sim_test::preset("a2-2node.json");
  ASSERT_TRUE(topo);
  static Scenario sc;
  sc.name = "sim_samples_roce";
  sc.topology = *topo;
  WorkloadStep w;
  w.set_op(WorkloadOp::SendRecv);
  w.pattern = "halves";  // r <-> r+8: always across the leaf
  w.bytes = 4 << 20;
  sc.workload = {w};
  RunOptions opt = sim_test::quiet();
  opt.db_path = db_path("sim_samples_roce.db");
  opt.force_db = true;
  opt.sample_interval_ps = 10 * 1000 * models::kPsPerNs;  // --sample-interval 10us
  RunResult r = run_scenario(sc, opt);
  for (auto& f : r.failures) ADD_FAILURE() << f;
  const std::string& db = opt.db_path;

  const double B = 4 << 20, nic = 25e9;  // 200 Gb/s
  const double wire = B + std::ceil(B / 4096) * 58;  // 58 header bytes per 4 KiB packet
  const std::string me = query(db, "SELECT name FROM npus WHERE id = 0").at(0).at(0);
  const Series s = series(db, me);
  EXPECT_GE(s.bytes, wire);                  // the data it sends ...
  EXPECT_LE(s.bytes, wire * 1.01);           // ... and ACKs for the data it receives (64 B per few packets)
  EXPECT_NEAR(s.busy_ns, s.bytes / nic * 1e9, 1.0);  // every byte at the line rate
  EXPECT_LE(s.max_util, 1.0);
  EXPECT_GT(s.max_util, 0.9);                // saturated while the 4 MiB go (168 us at 25 GB/s)
  EXPECT_GE(s.last_ns - s.first_ns, wire / nic * 1e9);
  // The samples add up to the end-of-run port counters, port by port.
  auto ports = query(db, "SELECT node, port, tx_bytes, busy_ns FROM port_counters");
  ASSERT_GT(ports.size(), 16u);
  bool switch_port = false;
  for (auto& p : ports) {
    const bool nic_port = p[0].find('/') != std::string::npos;  // NICs are named after their NPU
    const Series ps = series(db, nic_port ? p[0] : p[0] + ":" + p[1]);
    SCOPED_TRACE(p[0] + ":" + p[1]);
    EXPECT_EQ(ps.bytes, std::stod(p[2]));
    EXPECT_NEAR(ps.busy_ns, std::stod(p[3]), 1.0);
    EXPECT_LE(ps.max_util, 1.0);
    if (!nic_port && ps.bytes >= wire) switch_port = true;  // a leaf port towards a receiver
  }
  EXPECT_TRUE(switch_port);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM counter_samples WHERE kind = 'port' AND metric = 'util' AND (value > 1 OR value <= 0)"), 0);
  EXPECT_EQ(num(db, "SELECT COUNT(*) FROM tasks"), 0);  // not asked for
}
