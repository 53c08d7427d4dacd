// The RdmaWrite stream task (docs/models/roce-nic.md#rdma-write--remote-notify): it ends at its
// doorbell, as the runtime's RDMA_DB_SEND task does, and the peer learns of the bytes from the
// notify behind them; with wait_ack it ends when the notify's write is acknowledged. Closed form
// in the flow tier (NPUs without overheads, two 100 Gb/s 1 us links through one 600 ns switch):
// the data leaves at nic + wire(data) / B, the notify one packet later, lands one path latency
// after that, and its acknowledgement comes back one path latency later still.
#include <gtest/gtest.h>

#include <cmath>

#include "incast_rig.h"
#include "machine_rig.h"
#include "models/npu/address_map.h"

namespace {
using namespace models_test;

// One way through the two links and the switch.
constexpr double kPath = 2 * kPsPerUs + 600e3;
// When a write of `bytes` and the notify behind it on one QP have landed (flow tier): the data
// leaves after the NIC's WQE time at line rate, the notify one packet later, one path latency on.
double landed_at(const NetParams& p, std::uint64_t bytes) {
  const double data = std::ceil(static_cast<double>(p.wire_bytes(bytes)) / G100 * 1e12);
  const double note = std::ceil(static_cast<double>(p.wire_bytes(4)) / G100 * 1e12);
  return static_cast<double>(p.nic_latency_ps) + data + note + kPath;
}

struct TwoNpus {
  Rig rig;
  StandaloneScheduler& sch = rig.sch;
  Network net;
  std::uint32_t rkey = 0;
  explicit TwoNpus(NetParams p) : net(rig.sch, p) {
    rig.m.add_npu(bare_npu(), "a");
    rig.m.add_npu(bare_npu(), "b");
    const std::uint32_t sw = net.add_switch("sw", 2, 32ULL << 20, 600 * kPsPerNs);
    const std::uint32_t ha = net.add_host("a"), hb = net.add_host("b");
    net.connect(ha, 0, sw, 0, G100, kPsPerUs);
    net.connect(hb, 0, sw, 1, G100, kPsPerUs);
    net.build_forwarding();
    rig.m.attach_network(&net, {ha, hb});
    rkey = rig.m.register_mr(1, npu_base_addr(1), 1 << 20, Machine::kRemoteWrite);
  }
  // NPU 0 writes `bytes` into NPU 1 and notifies key 7 there; NPU 1's stream waits for it.
  void run(std::uint64_t bytes, bool wait_ack, std::uint32_t& tx, std::uint32_t& rx) {
    tx = rig.m.create_stream(0);
    rx = rig.m.create_stream(1);
    Task w;
    w.kind = TaskKind::NotifyWait;
    w.key = 7;
    rig.m.submit(rx, w);
    Task t = write(bytes, 7);
    t.wait_ack = wait_ack;
    rig.m.submit(tx, t);
    sch.run();
  }
  // NPU 0's write of `bytes` to the start of NPU 1's region (+ `at`), then notify `key` there.
  Task write(std::uint64_t bytes, std::uint64_t key, std::uint64_t at = 0) const {
    Task t;
    t.kind = TaskKind::RdmaWrite;
    t.src = npu_base_addr(0);
    t.dst = npu_base_addr(1) + at;
    t.bytes = bytes;
    t.target = 1;
    t.key = key;
    t.value = 1;
    t.rkey = rkey;
    return t;
  }
};

TEST(RdmaTask, EndsAtTheDoorbellOrWithWaitAckAtTheAck) {
  for (bool wait_ack : {false, true}) {
    SCOPED_TRACE(wait_ack ? "wait_ack" : "doorbell");
    NetParams p;
    p.flow = true;
    TwoNpus t(p);
    std::uint32_t tx = 0, rx = 0;
    const std::uint64_t bytes = 1 << 20;
    t.run(bytes, wait_ack, tx, rx);
    ASSERT_TRUE(t.rig.rec.errors.empty()) << t.rig.rec.errors.front();
    const double lat = kPath, landed = landed_at(p, bytes);
    EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(rx)), landed, 2);
    if (wait_ack) EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(tx)), landed + lat, 2);
    else EXPECT_EQ(t.rig.rec.idle_at.at(tx), 0u);  // no dispatch overhead: at once
  }
}

// In the packet tier too the doorbell ends the task before anything landed, and wait_ack after
// the receiver has its notify.
TEST(RdmaTask, PacketTierOrder) {
  for (bool wait_ack : {false, true}) {
    SCOPED_TRACE(wait_ack ? "wait_ack" : "doorbell");
    NetParams p;
    TwoNpus t(p);
    std::uint32_t tx = 0, rx = 0;
    t.run(64 * 1024, wait_ack, tx, rx);
    ASSERT_TRUE(t.rig.rec.errors.empty()) << t.rig.rec.errors.front();
    if (wait_ack) EXPECT_GT(t.rig.rec.idle_at.at(tx), t.rig.rec.idle_at.at(rx));
    else EXPECT_EQ(t.rig.rec.idle_at.at(tx), 0u);
    EXPECT_GT(t.rig.rec.idle_at.at(rx), static_cast<Tick>(p.nic_latency_ps));
  }
}

// A write striped over several QPs sends a notify behind each stripe on its QP; the target's
// notify is recorded when the last lands. Two such writes back to back on one stream: the first
// one's notify lands once its own stripes are through, not behind the second's (it used to wait
// for the stripes' acknowledgements and then queue behind the next write's parts on its QP).
TEST(RdmaTask, StripedWriteNotifiesBehindEachStripe) {
  NetParams p;
  p.flow = true;
  TwoNpus t(p);
  const std::uint32_t tx = t.rig.m.create_stream(0), rx7 = t.rig.m.create_stream(1), rx8 = t.rig.m.create_stream(1);
  const std::uint64_t bytes = 1 << 19, k = 4;  // each write: 4 stripes of 128 KiB
  for (auto [s, key] : {std::pair<std::uint32_t, std::uint64_t>{rx7, 7}, {rx8, 8}}) {
    Task w;
    w.kind = TaskKind::NotifyWait;
    w.key = key;
    t.rig.m.submit(s, w);
  }
  for (std::uint64_t key : {7, 8}) {
    Task w = t.write(bytes, key, (key - 7) * bytes);
    w.qp_count = k;
    t.rig.m.submit(tx, w);
  }
  t.sch.run();
  ASSERT_TRUE(t.rig.rec.errors.empty()) << t.rig.rec.errors.front();
  const double nic = static_cast<double>(p.nic_latency_ps), lat = kPath;
  // The k stripes of a write share the link fairly and end together; each QP's notify then takes
  // one packet's time at line rate, and the second write's stripe follows it on the QP.
  const double stripes = static_cast<double>(k) * std::ceil(static_cast<double>(p.wire_bytes(bytes / k)) / G100 * 1e12);
  const double note = std::ceil(static_cast<double>(p.wire_bytes(4)) / G100 * 1e12);
  EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(rx7)), nic + stripes + note + lat, 3 * k);
  EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(rx8)), nic + 2 * (stripes + note) + lat, 6 * k);
  EXPECT_EQ(t.rig.rec.idle_at.at(tx), 0u);  // both doorbells rung at once
}

// The RDMA fence ends when every write its NPU posted before it is acknowledged: behind a write
// on another stream, one round trip after that write's notify landed; with nothing outstanding,
// at once.
TEST(RdmaTask, FenceEndsWhenEarlierWritesAreAcknowledged) {
  NetParams p;
  p.flow = true;
  TwoNpus t(p);
  const std::uint32_t tx = t.rig.m.create_stream(0), fence = t.rig.m.create_stream(0), rx = t.rig.m.create_stream(1),
                      idle = t.rig.m.create_stream(1);
  Task w;
  w.kind = TaskKind::NotifyWait;
  w.key = 7;
  t.rig.m.submit(rx, w);
  const std::uint64_t bytes = 1 << 20;
  t.rig.m.submit(tx, t.write(bytes, 7));
  Task f;
  f.kind = TaskKind::RdmaFence;
  t.rig.m.submit(fence, f);
  t.rig.m.submit(idle, f);  // NPU 1 posted nothing
  t.sch.run();
  ASSERT_TRUE(t.rig.rec.errors.empty()) << t.rig.rec.errors.front();
  const double landed = landed_at(p, bytes);
  EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(rx)), landed, 2);
  EXPECT_NEAR(static_cast<double>(t.rig.rec.idle_at.at(fence)), landed + kPath, 2);
  EXPECT_EQ(t.rig.rec.idle_at.at(idle), 0u);
  EXPECT_EQ(t.rig.rec.idle_at.at(tx), 0u);
}

}  // namespace
