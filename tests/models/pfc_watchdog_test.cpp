// models/net: the PFC watchdog against a pause storm (pfc_storm: a stuck receiver's NIC pauses its
// switch port), docs/models/ethernet-switch.md#pfc-watchdog. Packet and chunk tiers.
//
// Rig: tx0, tx1 on switch A; A's uplink to switch B; rx0 (the stuck NIC) and rx1 on B; 100 Gb/s,
// 1 us links, 4 MiB buffers. tx0 writes 8 MiB into rx0; tx1 (the victim) writes 64 MiB into rx1
// through the same uplink. With PFC alone the storm fills B's buffer for rx0 above xoff, B pauses
// the uplink, A pauses both senders: the victim waits for the storm's end.
#include <gtest/gtest.h>

#include <cstdio>

#include "incast_rig.h"
#include "models/network.h"

using namespace models;
using namespace models_test;

namespace {

constexpr Tick kMs = 1000 * kPsPerUs;

struct StormRig {
  StandaloneScheduler sch;
  Network net;
  Done done;
  std::uint32_t a = 0, b = 0, tx0 = 0, tx1 = 0, rx0 = 0, rx1 = 0, q_stuck = 0, q_victim = 0;
  StormRig(const NetParams& p) : net(sch, p) {
    done.s = &sch;
    net.set_listener(&done);
    a = net.add_switch("A", 3, 4ULL << 20, 600 * kPsPerNs);
    b = net.add_switch("B", 3, 4ULL << 20, 600 * kPsPerNs);
    tx0 = net.add_host("tx0");
    tx1 = net.add_host("tx1");
    rx0 = net.add_host("rx0");
    rx1 = net.add_host("rx1");
    net.connect(tx0, 0, a, 0, G100, kPsPerUs);
    net.connect(tx1, 0, a, 1, G100, kPsPerUs);
    net.connect(a, 2, b, 0, G100, kPsPerUs);  // the uplink
    net.connect(rx0, 0, b, 1, G100, kPsPerUs);
    net.connect(rx1, 0, b, 2, G100, kPsPerUs);
    net.build_forwarding();
    q_stuck = net.create_qp(tx0, rx0, 49152);
    q_victim = net.create_qp(tx1, rx1, 49153);
  }
  void post() {
    net.post_write(q_stuck, 8ULL << 20, 0);
    net.post_write(q_victim, 64ULL << 20, 1);
  }
  double done_ms(std::uint64_t tag) const {
    auto it = done.done.find(tag);
    return it == done.done.end() ? -1 : static_cast<double>(it->second.first) / kMs;
  }
  bool ok(std::uint64_t tag) const {
    auto it = done.done.find(tag);
    return it != done.done.end() && it->second.second;
  }
};

// Lossless, no congestion control (the storm, not DCQCN, decides), watchdog at 1 ms / 1 ms, a
// retransmit timeout of 8.4 ms (timeout_exp 11: the stuck sender's first retransmission comes
// after the victim's write, so it does not share the uplink with it).
NetParams storm_params(std::uint32_t unit, bool watchdog, PfcParams::WdAction action = PfcParams::WdAction::Drop) {
  NetParams p;
  p.unit_bytes = unit;
  p.dcqcn.enabled = false;
  p.ecn.enabled = false;
  p.pfc.enabled = true;
  p.pfc.watchdog = watchdog;
  p.pfc.detect_ps = kMs;
  p.pfc.restore_ps = kMs;
  p.pfc.action = action;
  p.timeout_exp = 11;
  return p;
}

// The same writes without a storm: the victim's time (6.135 ms in both tiers, measured).
double victim_alone_ms(std::uint32_t unit) {
  StormRig r(storm_params(unit, true));
  r.post();
  r.sch.run();
  EXPECT_TRUE(r.ok(0) && r.ok(1));
  return r.done_ms(1);
}

void report(const char* name, std::uint32_t unit, StormRig& r, double base) {
  const auto& bp = r.net.port_stats(r.b, 1);
  std::printf("[pfcwd] %-7s unit %6u: storms %llu, B->rx0 drops %llu, pause_sent B<-uplink %llu, A uplink paused %.3f ms;"
              " victim %.3f ms (no storm %.3f, %+.1f %%) stuck write %.3f ms %s (timeouts %llu)\n",
              name, unit, (unsigned long long)bp.pfcwd_storms, (unsigned long long)bp.drops,
              (unsigned long long)r.net.port_stats(r.b, 0).pause_sent, static_cast<double>(r.net.port_stats(r.a, 2).paused_ps) / kMs,
              r.done_ms(1), base, 100 * (r.done_ms(1) / base - 1), r.done_ms(0), r.ok(0) ? "ok" : "FAILED",
              (unsigned long long)r.net.qp_stats(r.q_stuck).timeouts);
}

}  // namespace

// Parameters only: the defaults are SONiC's (sonic-utilities pfcwd/main.py).
TEST(PfcWatchdog, Defaults) {
  const PfcParams p;
  EXPECT_TRUE(p.enabled);
  EXPECT_TRUE(p.watchdog);
  EXPECT_EQ(p.detect_ps, 200 * kMs);  // DEFAULT_DETECTION_TIME = 200 (ms)
  EXPECT_EQ(p.restore_ps, 200 * kMs);  // DEFAULT_RESTORATION_TIME = 200 (ms)
  EXPECT_EQ(p.action, PfcParams::WdAction::Drop);  // DEFAULT_ACTION = 'drop'
  EXPECT_NEAR(static_cast<double>(Network::pause_quantum_ps(G100)), 335.5e6, 0.1e6);  // 65535 x 512 bit at 100 Gb/s
}

// (a) A storm shorter than detect: the watchdog does nothing, nothing is dropped, the stuck
// write completes once the storm ends.
TEST(PfcWatchdog, ShortStormNoAction) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    SCOPED_TRACE(unit);
    const double base = victim_alone_ms(unit);
    StormRig r(storm_params(unit, true));
    r.post();
    r.net.pfc_storm(r.rx0, kMs / 2);
    r.sch.run();
    report("short", unit, r, base);
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 0u);
    EXPECT_EQ(r.net.total_drops(), 0u);
    EXPECT_GT(r.net.port_stats(r.b, 1).pause_rcv, 0u);
    ASSERT_TRUE(r.ok(0) && r.ok(1));
    EXPECT_GT(r.done_ms(0), 0.5);  // after the storm
    EXPECT_EQ(r.net.qp_stats(r.q_stuck).timeouts, 0u);
  }
}

// (b) A storm longer than detect, action drop: the watchdog fires within detect + one pause
// quantum of the pause reaching B (1 us), drops what is queued for rx0 and what comes for it, the
// victim loses at most the detection time to the spread pause and then runs as without a storm;
// after the storm + restore the port forwards again and go-back-N recovers the stuck write.
TEST(PfcWatchdog, LongStormDropContains) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    SCOPED_TRACE(unit);
    const double base = victim_alone_ms(unit);
    StormRig r(storm_params(unit, true));
    r.post();
    r.net.pfc_storm(r.rx0, 10 * kMs);
    r.sch.run(kMs);  // detection runs from the first packet queued behind the pause: not yet
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 0u);
    r.sch.run(kMs + 20 * kPsPerUs);  // well within detect + one quantum (335.5 us)
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 1u);
    EXPECT_TRUE(r.net.port(r.b, 1).wd_storm);
    EXPECT_GT(r.net.port_stats(r.b, 1).drops, 0u);
    r.sch.run(11 * kMs);  // the storm ended at 10 ms (+1 us on the cable); restoration 1 ms later
    EXPECT_TRUE(r.net.port(r.b, 1).wd_storm);
    r.sch.run(11 * kMs + 2 * kPsPerUs);
    EXPECT_FALSE(r.net.port(r.b, 1).wd_storm);
    r.sch.run();
    report("drop", unit, r, base);
    const auto& bp = r.net.port_stats(r.b, 1);
    EXPECT_EQ(bp.pfcwd_storms, 1u);
    EXPECT_GT(bp.drops, 0u);
    EXPECT_EQ(bp.pfcwd_drops, bp.drops);
    EXPECT_EQ(r.net.total_drops(), bp.drops);  // only the stuck port drops
    ASSERT_TRUE(r.ok(1));
    EXPECT_GE(r.done_ms(1), base * 0.999);
    EXPECT_LE(r.done_ms(1), base + 1.0 + 0.02 * base);  // at most detect (1 ms) late, +2 %
    // The uplink was paused only until the watchdog drained B's queue for rx0 (under detect).
    EXPECT_LT(r.net.port_stats(r.a, 2).paused_ps, kMs);
    ASSERT_TRUE(r.ok(0));  // recovered: retransmitted after the restoration
    EXPECT_GT(r.done_ms(0), 11.0);
    EXPECT_GT(r.net.qp_stats(r.q_stuck).timeouts, 0u);
  }
}

// A watchdog faster than the spread: with detect 200 us B drops rx0's queue before (packet tier)
// or just as (chunk tier) it holds xoff: the uplink is paused for at most a few us and the victim
// does not notice the storm.
TEST(PfcWatchdog, FastDetectionNoSpread) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    SCOPED_TRACE(unit);
    const double base = victim_alone_ms(unit);
    NetParams p = storm_params(unit, true);
    p.pfc.detect_ps = 200 * kPsPerUs;
    StormRig r(p);
    r.post();
    r.net.pfc_storm(r.rx0, 10 * kMs);
    r.sch.run();
    report("fast", unit, r, base);
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 1u);
    EXPECT_LT(r.net.port_stats(r.a, 2).paused_ps, 50 * kPsPerUs);  // 0 (packet tier), 14 us (chunk tier: larger headroom units)
    ASSERT_TRUE(r.ok(1));
    EXPECT_NEAR(r.done_ms(1), base, 0.01 * base);
    EXPECT_TRUE(r.ok(0));
  }
}

// Action forward: the pauses are ignored, nothing dropped; the stuck NIC (which in the model still
// takes what reaches it) gets its write.
TEST(PfcWatchdog, LongStormForward) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    SCOPED_TRACE(unit);
    const double base = victim_alone_ms(unit);
    StormRig r(storm_params(unit, true, PfcParams::WdAction::Forward));
    r.post();
    r.net.pfc_storm(r.rx0, 10 * kMs);
    r.sch.run();
    report("forward", unit, r, base);
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 1u);
    EXPECT_EQ(r.net.total_drops(), 0u);
    ASSERT_TRUE(r.ok(0) && r.ok(1));
    EXPECT_LT(r.done_ms(0), 10.0);  // before the storm's end
    EXPECT_LE(r.done_ms(1), base + 1.0 + 0.02 * base);
  }
}

// (c) Watchdog off: the storm spreads: B pauses the uplink, the uplink stays paused for the
// storm, and the victim's write waits for the storm's end.
TEST(PfcWatchdog, OffStormSpreads) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    SCOPED_TRACE(unit);
    const double base = victim_alone_ms(unit);
    StormRig r(storm_params(unit, false));
    r.post();
    r.net.pfc_storm(r.rx0, 10 * kMs);
    r.sch.run();
    report("off", unit, r, base);
    EXPECT_EQ(r.net.port_stats(r.b, 1).pfcwd_storms, 0u);
    EXPECT_EQ(r.net.total_drops(), 0u);
    EXPECT_GT(r.net.port_stats(r.b, 0).pause_sent, 0u);
    EXPECT_GT(r.net.port_stats(r.a, 2).paused_ps, 9 * kMs);
    ASSERT_TRUE(r.ok(0) && r.ok(1));
    EXPECT_GT(r.done_ms(1), 10.0);
    EXPECT_GT(r.done_ms(0), 10.0);
  }
}
