// models/net: drops without congestion control, lossless PFC, ECMP spread, the ECN and PFC
// policies, and the flow tier's max-min fairness (docs/models/ethernet-switch.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "models/net/chunk_tier.h"
#include "models/network.h"
#include "incast_rig.h"

using namespace models;
using namespace models_test;

// The same incast with DCQCN and PFC off overflows the buffer and drops: fairness above is not an
// accident of the topology.
static NetParams no_congestion_control(std::uint32_t unit) {
  NetParams p;
  p.unit_bytes = unit;
  p.dcqcn.enabled = false;
  p.ecn.enabled = false;
  p.pfc.enabled = false;  // lossy: the buffer overflows
  return p;
}

// Chunk tier CNPs: a marked unit stands for packets spread since the QP's previous unit, but not
// before it left its sender. Two senders each write one 64 KiB unit at once into one port (ECN
// marks every packet above 1 byte of queue), sit idle 200 us, and write one unit again: each
// second unit, about 13 us from its sender to the receiver behind the other's, yields a few CNPs
// (at most one per 4 us interval of that), not one per interval of the idle time (then all 16
// of its marked packets would count).
TEST(Network, ChunkTierCnpsSkipTheSendersIdleTime) {
  NetParams p;
  p.unit_bytes = 64 * 1024;
  p.ecn.kmin_bytes = 0;
  p.ecn.kmax_bytes = 1;
  p.ecn.pmax = 1.0;
  Incast t(2, p);
  for (auto q : t.qps) t.net.post_write(q, 64 * 1024, q);
  t.sch.run();
  std::vector<std::uint64_t> first;
  for (auto q : t.qps) first.push_back(t.net.qp_stats(q).cnp_rcv);
  t.sch.advance_to(t.sch.now() + 200 * kPsPerUs);
  for (auto q : t.qps) t.net.post_write(q, 64 * 1024, 100 + q);
  t.sch.run();
  ASSERT_EQ(t.done.done.size(), 4u);
  std::uint64_t marked = 0;
  for (std::size_t i = 0; i < t.qps.size(); ++i) {
    const std::uint64_t second = t.net.qp_stats(t.qps[i]).cnp_rcv - first[i];
    marked += second;
    EXPECT_LE(second, 5u) << "qp " << t.qps[i] << ": " << first[i] << " then " << second;
  }
  EXPECT_GT(marked, 0u);  // the second units were marked
}

TEST(Network, NoCongestionControlDrops) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {  // packet and chunk tiers
    SCOPED_TRACE(unit);
    NetParams p = no_congestion_control(unit);
    p.timeout_exp = 8;  // ~1 ms retransmit timeout
    Incast t(8, p, 4ULL << 20);
    for (auto q : t.qps) t.net.post_write(q, 8ULL << 20, q);
    t.sch.run(20 * kPsPerSec / 1000);
    EXPECT_GT(t.net.total_drops(), 0u);
    std::uint64_t retx = 0;
    for (auto q : t.qps) retx += t.net.qp_stats(q).retransmits;
    EXPECT_GT(retx, 0u);
  }
}

// PFC on (no DCQCN): an 8:1 incast loses nothing, pause frames are sent, every write completes.
TEST(Network, PfcIncastIsLossless) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {  // packet and chunk tiers
    SCOPED_TRACE(unit);
    NetParams p = no_congestion_control(unit);
    p.pfc.enabled = true;
    Incast t(8, p, 4ULL << 20);
    for (auto q : t.qps) t.net.post_write(q, 8ULL << 20, q);
    t.sch.run();
    EXPECT_EQ(t.net.total_drops(), 0u);
    std::uint64_t pauses = 0;
    for (std::uint32_t i = 0; i < 8; ++i) pauses += t.net.port_stats(t.sw, i).pause_sent;
    EXPECT_GT(pauses, 0u);
    ASSERT_EQ(t.done.done.size(), 8u);
    Tick last = 0;
    for (auto& [tag, v] : t.done.done) { EXPECT_TRUE(v.second); last = std::max(last, v.first); }
    // 64 MiB through one 100 Gb/s port: at least 64 MiB of wire time.
    EXPECT_GE(static_cast<double>(last), 8.0 * (8 << 20) / G100 * 1e12);
  }
}

// ECMP: flows that differ only in UDP source port spread over the equal-cost uplinks.
TEST(Network, EcmpSpreadsFlowsOverEqualCostPaths) {
  for (EcmpHash h : {EcmpHash::FiveTuple, EcmpHash::SrcDst}) {
  StandaloneScheduler sch;
  NetParams np;
  np.ecmp_hash = h;
  Network net(sch, np);
  auto l0 = net.add_switch("leaf0", 8, 32 << 20, 0), l1 = net.add_switch("leaf1", 8, 32 << 20, 0);
  std::vector<std::uint32_t> spines;
  for (int s = 0; s < 4; ++s) {
    spines.push_back(net.add_switch("spine" + std::to_string(s), 2, 32 << 20, 0));
    net.connect(l0, 4 + s, spines[s], 0, G100, kPsPerUs);
    net.connect(l1, 4 + s, spines[s], 1, G100, kPsPerUs);
  }
  auto a = net.add_host("a"), b = net.add_host("b");
  net.connect(a, 0, l0, 0, G100, kPsPerUs);
  net.connect(b, 0, l1, 0, G100, kPsPerUs);
  net.build_forwarding();
  EXPECT_EQ(net.next_hops(l0, b).size(), 4u);
  EXPECT_EQ(net.next_hops(l1, b), std::vector<std::uint32_t>{0});
  std::map<std::uint32_t, int> used;
  for (int i = 0; i < 400; ++i) used[net.ecmp_port(l0, net.create_qp(a, b, static_cast<std::uint16_t>(1000 + i)))]++;
  if (h == EcmpHash::SrcDst) {  // the policy ignores the UDP source port: one path for the pair
    EXPECT_EQ(used.size(), 1u);
    continue;
  }
  ASSERT_EQ(used.size(), 4u);
  for (auto& [port, c] : used) EXPECT_NEAR(c, 100, 35) << port;  // binomial(400, 1/4): sd 8.7
  }
}

// The ECMP salt (network/ecmp_salt): 0 is the unseeded key; another salt redraws each flow's
// next hop (about 3/4 of them move among 4 uplinks), still spread evenly and the same every time;
// src-dst stays one path per pair whatever the salt.
TEST(Network, EcmpSaltRedrawsNextHops) {
  auto ports = [](std::uint32_t salt, EcmpHash h) {
    StandaloneScheduler sch;
    NetParams np;
    np.ecmp_salt = salt;
    np.ecmp_hash = h;
    Network net(sch, np);
    auto l0 = net.add_switch("leaf0", 8, 32 << 20, 0), l1 = net.add_switch("leaf1", 8, 32 << 20, 0);
    for (std::uint32_t s = 0; s < 4; ++s) {
      auto sp = net.add_switch("spine" + std::to_string(s), 2, 32 << 20, 0);
      net.connect(l0, 4 + s, sp, 0, G100, kPsPerUs);
      net.connect(l1, 4 + s, sp, 1, G100, kPsPerUs);
    }
    auto a = net.add_host("a"), b = net.add_host("b");
    net.connect(a, 0, l0, 0, G100, kPsPerUs);
    net.connect(b, 0, l1, 0, G100, kPsPerUs);
    net.build_forwarding();
    std::vector<std::uint32_t> out;
    std::vector<Network::Hop> hops;
    for (int i = 0; i < 400; ++i) {
      const auto sport = static_cast<std::uint16_t>(1000 + i);
      out.push_back(net.ecmp_port(l0, net.create_qp(a, b, sport)));
      // The path probes and the trace's routes (trace_path) choose as the QP's packets do.
      EXPECT_TRUE(net.trace_path(a, b, sport, &hops, nullptr));
      EXPECT_EQ(hops.at(0).out_port, out.back());
    }
    return out;
  };
  const auto base = ports(0, EcmpHash::FiveTuple);
  for (std::uint32_t salt : {1u, 0xffffffffu}) {
    const auto salted = ports(salt, EcmpHash::FiveTuple);
    EXPECT_EQ(salted, ports(salt, EcmpHash::FiveTuple));  // deterministic
    int moved = 0;
    std::map<std::uint32_t, int> used;
    for (std::size_t i = 0; i < base.size(); ++i) {
      moved += salted[i] != base[i];
      used[salted[i]]++;
    }
    EXPECT_NEAR(moved, 300, 45) << salt;  // independent draws: binomial(400, 3/4), sd 8.7
    ASSERT_EQ(used.size(), 4u);
    for (auto& [port, c] : used) EXPECT_NEAR(c, 100, 35) << port;
  }
  EXPECT_NE(Network::ecmp_flow_key(EcmpHash::FiveTuple, 3, 7, 4242, 1), Network::ecmp_flow_key(EcmpHash::FiveTuple, 3, 7, 4242));
  const auto pair = ports(9, EcmpHash::SrcDst);
  EXPECT_EQ(std::set<std::uint32_t>(pair.begin(), pair.end()).size(), 1u);
}

// Marking and PFC policies as pure functions, against their definitions.
TEST(Network, EcnAndPfcPolicies) {
  EcnParams e = EcnParams::sigcomm2015();  // RED: Kmin 5 KB, Kmax 200 KB, Pmax 1 %
  EXPECT_EQ(Network::ecn_mark_probability(e, 5000), 0.0);
  EXPECT_DOUBLE_EQ(Network::ecn_mark_probability(e, 102500), 0.005);  // halfway: Pmax / 2
  EXPECT_DOUBLE_EQ(Network::ecn_mark_probability(e, 200000), 0.01);
  EXPECT_EQ(Network::ecn_mark_probability(e, 200001), 1.0);
  e.mode = EcnParams::Mode::Step;  // DCTCP: every packet above K = Kmin
  EXPECT_EQ(Network::ecn_mark_probability(e, 5000), 0.0);
  EXPECT_EQ(Network::ecn_mark_probability(e, 5001), 1.0);
  e.enabled = false;
  EXPECT_EQ(Network::ecn_mark_probability(e, 1e9), 0.0);
  std::uint64_t xoff = 0, xon = 0;
  Network::pfc_thresholds(32ULL << 20, 32, 100000, 4154, &xoff, &xon);
  EXPECT_EQ(xoff, ((32ULL << 20) - 32 * 100000) / 32);
  EXPECT_EQ(xon, xoff - 2 * 4154);
}

// Flow tier: max-min fair fluid flows. Two equal writes into one 100 Gb/s port share it equally
// and end together after 2 x bytes of wire time; a third flow elsewhere is unaffected.
TEST(Network, FlowTierMaxMinFairness) {
  NetParams p;
  p.flow = true;
  Incast t(3, p);  // senders tx0, tx1, tx2 -> rx through one switch
  const std::uint64_t B = 8 << 20;
  const double wire = static_cast<double>(B + (B / p.mtu) * p.header_bytes);
  t.net.post_write(t.qps[0], B, 0);
  t.net.post_write(t.qps[1], B, 1);
  t.sch.run();
  ASSERT_EQ(t.done.done.size(), 2u);
  // Both end together: 2 x wire / line rate after the WQE latency, then data one path latency
  // later (2 x 1 us links + 0.6 us switch) and the ACK one more.
  const double expect = p.nic_latency_ps + 2 * wire / G100 * 1e12 + 2 * (2 * kPsPerUs + 600e3);
  for (auto& [tag, v] : t.done.done) {
    EXPECT_TRUE(v.second);
    EXPECT_NEAR(static_cast<double>(v.first), expect, 1e3) << tag;
  }
  EXPECT_EQ(t.net.qp_stats(t.qps[0]).rx_bytes, B);
}

// Flow tier, one-packet messages (docs/models/roce-nic.md#flow-tier): each is serialised at the
// path's slowest line rate, starts after WQE processing (or as the message ahead of it on its QP
// ends), takes no rate from the fluid flows, lands one path latency after its end and is
// acknowledged one later. Closed form, and the events it costs: a delivery and an
// acknowledgement (its start and end are not events when nothing is queued behind it).
TEST(Network, FlowTierOnePacketMessagesClosedForm) {
  NetParams p;
  p.flow = true;
  Incast t(2, p);
  const double lat = 2 * kPsPerUs + 600e3;  // two 1 us links and the switch
  auto ser = [&](std::uint64_t bytes) { return std::ceil(static_cast<double>(p.wire_bytes(bytes)) / G100 * 1e12); };
  const double nic = static_cast<double>(p.nic_latency_ps);
  // qp0: a 1 KiB write and a 4-byte notify behind it, posted together.
  t.net.post_write(t.qps[0], 1024, 1);
  t.net.post_write(t.qps[0], 4, 2);
  // qp1: an 8 MiB fluid flow into the same receiver port, and a 4-byte message queued behind it.
  const std::uint64_t B = 8 << 20;
  t.net.post_write(t.qps[1], B, 3);
  t.net.post_write(t.qps[1], 4, 4);
  const std::uint64_t events = t.sch.run(1000 * kPsPerUs);
  const double end1 = nic + ser(1024), end2 = end1 + ser(4);
  const double fluid_end = nic + static_cast<double>(p.wire_bytes(B)) / G100 * 1e12;  // at the full line: the tiny ones take none
  auto at = [&](std::uint64_t tag) { return static_cast<double>(t.done.done.at(tag).first); };
  ASSERT_EQ(t.done.done.size(), 4u);
  for (auto& [tag, v] : t.done.done) EXPECT_TRUE(v.second) << tag;
  EXPECT_NEAR(at(1), end1 + 2 * lat, 1);
  EXPECT_NEAR(at(2), end2 + 2 * lat, 1);
  EXPECT_NEAR(at(3), fluid_end + 2 * lat, 1e3);
  EXPECT_NEAR(at(4), fluid_end + ser(4) + 2 * lat, 1e3);
  // qp0's two: 2 events each; qp1's: start, rates, done, delivery, ack for the fluid flow, the
  // tiny one behind it delivered and acknowledged.
  EXPECT_LE(events, 4u + 5u + 3u);

  // An idle QP: posted at 2 ms, the message starts after WQE processing. A second posted while
  // the first is still leaving the NIC starts as it ends, not after its own WQE processing.
  t.sch.advance_to(2000 * kPsPerUs);
  t.net.post_write(t.qps[0], 2048, 5);
  t.sch.run(2000 * kPsPerUs + static_cast<Tick>(nic) + 10 * kPsPerNs);  // the first started 10 ns ago
  t.sch.advance_to(2000 * kPsPerUs + static_cast<Tick>(nic) + 10 * kPsPerNs);
  t.net.post_write(t.qps[0], 64, 6);
  t.sch.run();
  const double end5 = 2000.0 * kPsPerUs + nic + ser(2048);
  EXPECT_NEAR(at(5), end5 + 2 * lat, 1);
  EXPECT_NEAR(at(6), end5 + ser(64) + 2 * lat, 1);
  EXPECT_EQ(t.net.qp_stats(t.qps[0]).rx_bytes, 1024u + 4u + 2048u + 64u);
  EXPECT_EQ(t.net.qp_stats(t.qps[0]).tx_bytes, 1024u + 4u + 2048u + 64u);
}

// A write whose landing changes nothing at the receiver (data_is_silent: a data part of a timing
// payload) costs no delivery event in the flow tier: each of its writes is one event fewer, and
// every completion comes at the same time as with the delivery event, end + 2 path latencies.
TEST(Network, FlowTierSilentDeliveriesKeepTheirTimes) {
  std::map<std::uint64_t, std::pair<Tick, bool>> done[2];
  std::uint64_t events[2] = {}, rx[2] = {};
  std::size_t landed[2] = {};
  for (int silent = 0; silent < 2; ++silent) {
    NetParams p;
    p.flow = true;
    Incast t(3, p);
    t.done.silent = silent != 0;
    t.net.post_write(t.qps[0], 1024, 1, false);  // unsignaled, a notify behind it
    t.net.post_write(t.qps[0], 4, 2);
    t.net.post_write(t.qps[1], 8 << 20, 3);  // two fluid flows sharing the receiver's port
    t.net.post_write(t.qps[2], 4 << 20, 4);
    t.net.post_write(t.qps[2], 4096, 5);  // a one-packet message behind a fluid one
    events[silent] = t.sch.run();
    done[silent] = t.done.done;
    landed[silent] = t.done.landed.size();
    for (auto q : t.qps) rx[silent] += t.net.qp_stats(q).rx_bytes;
    if (!silent) {  // the closed form of the lone one-packet messages (as in the test above)
      const double lat = 2 * kPsPerUs + 600e3, nic = static_cast<double>(p.nic_latency_ps);
      auto ser = [&](std::uint64_t b) { return std::ceil(static_cast<double>(p.wire_bytes(b)) / G100 * 1e12); };
      EXPECT_NEAR(static_cast<double>(t.done.landed.at(1)), nic + ser(1024) + lat, 1);
      EXPECT_NEAR(static_cast<double>(t.done.done.at(2).first), nic + ser(1024) + ser(4) + 2 * lat, 1);
    }
  }
  EXPECT_EQ(done[0], done[1]);
  ASSERT_EQ(done[1].size(), 4u);  // the unsignaled write reports nothing
  for (auto& [tag, v] : done[1]) EXPECT_TRUE(v.second) << tag;
  EXPECT_EQ(landed[0], 5u);
  EXPECT_EQ(landed[1], 0u);
  EXPECT_EQ(events[1], events[0] - 5);
  EXPECT_EQ(rx[0], 1024u + 4 + (8u << 20) + (4u << 20) + 4096);
  EXPECT_EQ(rx[1], rx[0]);
}

// An unsignaled write (post_write's `signaled` false) reports no success: a later signaled write
// on the QP completing implies it (RC completes in order); the flow tier spends no
// acknowledgement event on it. It still lands, and a failure is still reported.
TEST(Network, UnsignaledWriteReportsOnlyFailure) {
  for (bool flow : {false, true}) {
    SCOPED_TRACE(flow ? "flow tier" : "packet tier");
    NetParams p;
    p.flow = flow;
    Incast t(2, p);
    t.net.post_write(t.qps[0], 1024, 1, false);
    t.net.post_write(t.qps[0], 4, 2);
    t.sch.run();
    ASSERT_EQ(t.done.done.size(), 1u);
    EXPECT_TRUE(t.done.done.at(2).second);
    EXPECT_EQ(t.net.qp_stats(t.qps[0]).rx_bytes, 1028u);  // both landed
    // The receiver's link down: the unsignaled write fails (retries exhausted; in the flow tier,
    // its path still down after them), and says so.
    t.net.set_link_up(t.rx, 0, false);
    t.net.post_write(t.qps[1], 1024, 3, false);
    t.net.post_write(t.qps[1], 4, 4);
    t.sch.run();
    ASSERT_EQ(t.done.done.count(3), 1u);
    EXPECT_FALSE(t.done.done.at(3).second);
    ASSERT_EQ(t.done.done.count(4), 1u);
    EXPECT_FALSE(t.done.done.at(4).second);
  }
}

// A write behind the sender's own dead port fails once the retries are exhausted (the port
// drops what the QP sends, its retransmit timer runs), as behind a dead link further on; it
// used to wait forever in the packet and chunk tiers. The flow tier tries to start it once per
// timeout as long as the retries last.
TEST(Network, WriteBehindDeadSenderPortFails) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {
    for (bool flow : {false, true}) {
      if (flow && unit) continue;
      SCOPED_TRACE(std::to_string(unit) + (flow ? " flow" : ""));
      NetParams p;
      p.unit_bytes = unit;
      p.flow = flow;
      p.timeout_exp = 8;  // ~1 ms retransmit timeout
      p.retry_count = 3;
      Incast t(2, p);
      t.net.set_link_up(t.senders[1], 0, false);
      t.net.post_write(t.qps[1], 1024, 3);
      t.net.post_write(t.qps[0], 1024, 5);  // the other sender is unaffected
      t.sch.run();
      ASSERT_EQ(t.done.done.count(3), 1u);
      EXPECT_FALSE(t.done.done.at(3).second);
      EXPECT_TRUE(t.done.done.at(5).second);
      EXPECT_GE(t.net.qp_stats(t.qps[1]).timeouts, 4u);  // the first try and 3 retries
    }
  }
}

// The flow tier remembers each QP's path (flow_path's memo): a link that goes down after a QP's
// first message holds up its next one, and the link back up lets a later one through, in the
// closed-form time of an idle QP's one-packet message (WQE processing, serialisation, the
// path's latency out and back). A message whose path is down when it starts tries again once
// per retransmit timeout (rto): with 2 retries it fails one timeout after the last retry, at
// post + nic + 3 rto, if the link stays down (3 timeouts, as the packet tiers' QP; the QP is then
// in error and the next write on it fails at once), and starts at post + nic + 2 rto if the link
// came back between the first and second retry (on another QP).
TEST(Network, FlowTierPathFollowsLinkState) {
  NetParams p;
  p.flow = true;
  p.timeout_exp = 3;  // rto 32.768 us
  p.retry_count = 2;
  Incast t(2, p);
  const double lat = 2 * kPsPerUs + 600e3;  // two 1 us links and the switch
  const double nic = static_cast<double>(p.nic_latency_ps);
  const double ser = std::ceil(static_cast<double>(p.wire_bytes(1024)) / G100 * 1e12);
  const double rto = 4096.0 * kPsPerNs * 8;
  t.net.post_write(t.qps[0], 1024, 1);
  t.sch.run();
  ASSERT_TRUE(t.done.done.at(1).second);
  t.net.set_link_up(t.sw, 2, false);  // the receiver's link (switch port n = 2)
  const Tick t1 = 1000 * kPsPerUs;
  t.sch.advance_to(t1);
  t.net.post_write(t.qps[0], 1024, 2);
  t.sch.run();
  ASSERT_EQ(t.done.done.count(2), 1u);
  EXPECT_FALSE(t.done.done.at(2).second);
  EXPECT_NEAR(static_cast<double>(t.done.done.at(2).first), static_cast<double>(t1) + nic + 3 * rto, 1);
  EXPECT_EQ(t.net.qp_stats(t.qps[0]).timeouts, 3u);  // the first try and 2 retries
  EXPECT_TRUE(t.net.qp_failed(t.qps[0]));
  // Down at the post, back up between the first and the second retry (a fresh QP).
  const std::uint32_t qp = t.net.create_qp(t.senders[0], t.rx, 50000);
  const Tick t2 = 2000 * kPsPerUs;
  t.sch.advance_to(t2);
  t.net.post_write(qp, 1024, 3);
  t.sch.run(t2 + static_cast<Tick>(nic + 1.5 * rto));
  EXPECT_EQ(t.done.done.count(3), 0u);
  t.net.set_link_up(t.sw, 2, true);
  t.sch.run();
  ASSERT_TRUE(t.done.done.at(3).second);
  EXPECT_NEAR(static_cast<double>(t.done.done.at(3).first), static_cast<double>(t2) + nic + 2 * rto + ser + 2 * lat, 1);
  // Up all along: no retry.
  const Tick t0 = 5000 * kPsPerUs;
  t.sch.advance_to(t0);
  t.net.post_write(qp, 1024, 4);
  t.sch.run();
  ASSERT_TRUE(t.done.done.at(4).second);
  EXPECT_NEAR(static_cast<double>(t.done.done.at(4).first), static_cast<double>(t0) + nic + ser + 2 * lat, 1);
}

// A switch port that starts a unit with nothing queued behind it schedules no transmit-done
// event (docs/models/ethernet-switch.md, "What is modelled"): a unit that reaches it before
// that unit has left still waits for the port, one that comes later goes straight on.
// Closed form: one packet from sender 0 reaches the switch at a0 = nic + ser + L + S and leaves
// the egress at a0 + ser; one from sender 1 posted `d` later reaches it `delta` after a0 and
// leaves at max(its arrival, a0 + ser(A)). Each lands one link latency after it leaves the switch.
TEST(Network, SwitchPortBusyWithoutTransmitDoneEvent) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {  // packet and chunk tiers
    NetParams p;
    p.unit_bytes = unit;
    auto ser = [&](std::uint64_t payload) { return serialization_ps(p.wire_bytes(payload), G100); };
    const Tick L = kPsPerUs, S = 600 * kPsPerNs, nic = p.nic_latency_ps;
    const std::uint64_t a = 4096, b = 64;
    const Tick a0 = nic + ser(a) + L + S, a_left = a0 + ser(a);
    // B arrives while A is on the egress wire (waits), exactly as A leaves, and after it.
    for (Tick delta : {100 * kPsPerNs, ser(a), ser(a) + 300 * kPsPerNs}) {
      SCOPED_TRACE(std::to_string(unit) + " delta " + std::to_string(delta));
      Incast t(2, p);
      t.net.post_write(t.qps[0], a, 1);
      const Tick d = ser(a) - ser(b) + delta;  // B's arrival: d + nic + ser(b) + L + S = a0 + delta
      t.sch.run(d - 1);
      t.sch.advance_to(d);
      t.net.post_write(t.qps[1], b, 2);
      t.sch.run();
      ASSERT_EQ(t.done.landed.size(), 2u);
      EXPECT_EQ(t.done.landed.at(1), a_left + L);
      EXPECT_EQ(t.done.landed.at(2), std::max(a0 + delta, a_left) + ser(b) + L);
      EXPECT_EQ(t.net.port_stats(t.sw, 2).busy_ps, ser(a) + ser(b));  // the receiver's port
      EXPECT_TRUE(t.done.done.at(1).second);
      EXPECT_TRUE(t.done.done.at(2).second);
    }
  }
}

// A QP reset (the op retry's device_abort) flushes what was posted: every queued write reports a
// failure at once, and a write posted after it does not wait behind them. Four 1 MiB writes take
// 4 x 84 us at 100 Gb/s; after the reset at 10 us the next write is done well before they would
// be. The packet tier drops the head's unsent rest too (its packets still on the wire arrive as
// duplicates); the flow tier keeps the head, which may be on the wire, and the next write
// follows it: head end + one packet + the path out and back.
TEST(Network, QpResetFlushesPostedWrites) {
  for (bool flow : {false, true}) {
    SCOPED_TRACE(flow ? "flow" : "packet");
    NetParams p;
    p.flow = flow;
    Incast t(1, p);
    for (std::uint64_t tag = 1; tag <= 4; ++tag) t.net.post_write(t.qps[0], 1 << 20, tag);
    const Tick reset_at = 10 * kPsPerUs;
    t.sch.run(reset_at);
    t.sch.advance_to(reset_at);
    t.net.reset_qp(t.qps[0]);
    for (std::uint64_t tag = flow ? 2 : 1; tag <= 4; ++tag) {
      ASSERT_EQ(t.done.done.count(tag), 1u) << tag;
      EXPECT_FALSE(t.done.done.at(tag).second);
      EXPECT_EQ(t.done.done.at(tag).first, reset_at);
    }
    t.net.post_write(t.qps[0], 1024, 9);
    t.sch.run();
    ASSERT_EQ(t.done.done.count(9), 1u);
    EXPECT_TRUE(t.done.done.at(9).second);
    const double lat = 2 * kPsPerUs + 600e3, nic = static_cast<double>(p.nic_latency_ps);
    const double mib = std::ceil(static_cast<double>(p.wire_bytes(1 << 20)) / G100 * 1e12);
    const double ser = std::ceil(static_cast<double>(p.wire_bytes(1024)) / G100 * 1e12);
    if (flow) {
      EXPECT_TRUE(t.done.done.at(1).second);  // the head went on
      EXPECT_NEAR(static_cast<double>(t.done.done.at(9).first), nic + mib + ser + 2 * lat, 1);
    } else {
      EXPECT_LT(static_cast<double>(t.done.done.at(9).first), static_cast<double>(reset_at) + 30e6);  // not behind 4 MiB (335 us)
    }
  }
}

// Go-back-N's two recoveries (docs/models/roce-nic.md#faults): one 4 MiB write (1024 packets)
// over one switch, 100 Gb/s links of 1 us. One packet lost mid-stream (the cable to the receiver
// corrupts every data packet that starts onto it within one packet time: exactly one) is repaired by the
// NAK of the next packet to arrive: the write ends later by about one round trip (the NAK back,
// the resent packet out) plus the packets resent after it that were on the wire (go-back-N),
// i.e. between 1 and 3 round trips. The last packet lost: nothing follows it to draw a NAK, so
// the sender waits out its retransmit timer (4.096 us x 2^timeout_exp) and the write ends one
// timeout plus about a round trip late. Packet tier.
TEST(Network, MidStreamLossCostsARoundTripTailLossTheTimeout) {
  NetParams p;
  p.unit_bytes = 0;
  p.timeout_exp = 8;  // 1.049 ms
  const double rto = 4.096e-6 * 256 * 1e12;  // ps
  const std::uint64_t B = 4ULL << 20;
  double landed = 0;
  auto run = [&](double lose_at_fraction) {
    Incast t(1, p);
    t.net.post_write(t.qps[0], B, 1);
    if (lose_at_fraction >= 0) {
      const double pkt = static_cast<double>(p.mtu + p.header_bytes) / G100 * 1e12;  // one packet's time on the wire
      // The packet that starts onto the receiver's cable at this instant: the write's packets
      // leave the switch back to back from about one hop after they start.
      const Tick at = static_cast<Tick>(lose_at_fraction * 1024 * pkt) + 3 * kPsPerUs;
      t.sch.run(at);
      t.net.set_link_corruption(t.sw, 1, 1.0);
      t.sch.run(at + static_cast<Tick>(pkt) - 1);  // under one packet time: one packet starts in it
      t.net.set_link_corruption(t.sw, 1, 0.0);
    }
    t.sch.run();
    EXPECT_TRUE(t.done.done.count(1) && t.done.done[1].second);
    landed = static_cast<double>(t.done.landed[1]);
    return std::make_pair(static_cast<double>(t.done.done[1].first), t.net.port_stats(t.rx, 0).fcs_errors);
  };
  const double pkt = static_cast<double>(p.mtu + p.header_bytes) / G100 * 1e12;
  const double rtt = 2 * (2 * kPsPerUs + 600e3) + pkt + 2.0 * p.ctrl_bytes / G100 * 1e12;  // data out, ACK back
  const auto clean = run(-1);
  const double clean_landed = landed;
  const auto mid = run(0.5);
  for (double f : {0.1, 0.9}) {  // anywhere mid-stream
    const auto m = run(f);
    EXPECT_EQ(m.second, 1u) << f;
    EXPECT_GE(m.first - clean.first, 1.0 * rtt) << f;
    EXPECT_LE(m.first - clean.first, 3.0 * rtt) << f;
  }
  // The tail: the last packet landed at clean_landed, having started onto the receiver's cable a
  // packet time and the cable's 1 us earlier. Corrupt from three packet times before that start
  // until it landed: the last packet, and at most the two before it.
  const double last_start = clean_landed - kPsPerUs - pkt;
  Incast tail_rig(1, p);
  tail_rig.net.post_write(tail_rig.qps[0], B, 1);
  tail_rig.sch.run(static_cast<Tick>(last_start - 3 * pkt));
  tail_rig.net.set_link_corruption(tail_rig.sw, 1, 1.0);
  tail_rig.sch.run(static_cast<Tick>(clean.first));
  tail_rig.net.set_link_corruption(tail_rig.sw, 1, 0.0);
  tail_rig.sch.run();
  ASSERT_TRUE(tail_rig.done.done.count(1) && tail_rig.done.done[1].second);
  const double tail = static_cast<double>(tail_rig.done.done[1].first);
  const std::uint64_t tail_lost = tail_rig.net.port_stats(tail_rig.rx, 0).fcs_errors;
  std::printf("clean %.3f us; mid-stream loss of %llu packet(s): +%.3f us (round trip %.3f us); tail loss of %llu packet(s): +%.3f us (timeout %.3f us)\n",
              clean.first / 1e6, static_cast<unsigned long long>(mid.second), (mid.first - clean.first) / 1e6, rtt / 1e6,
              static_cast<unsigned long long>(tail_lost), (tail - clean.first) / 1e6, rto / 1e6);
  EXPECT_EQ(clean.second, 0u);
  EXPECT_EQ(mid.second, 1u);
  EXPECT_GE(mid.first - clean.first, 1.0 * rtt);
  EXPECT_LE(mid.first - clean.first, 3.0 * rtt);
  EXPECT_GE(tail_lost, 1u);
  EXPECT_LE(tail_lost, 3u);
  EXPECT_GE(tail - clean.first, rto);
  EXPECT_LE(tail - clean.first, rto + 3.0 * rtt);
}

// Flow tier, fan-in bookkeeping (NetPortStats::fanin_ps, the trigger of its congestion warning):
// two senders into one receiver through one switch fill the receiver's port from two ingress
// ports for the whole transfer (closed form: 2 x wire / line rate); one sender alone, or two QPs
// of one sender (one ingress port, rates split at its NIC), never make it a fan-in bottleneck.
TEST(Network, FlowTierFaninTime) {
  NetParams p;
  p.flow = true;
  const std::uint64_t B = 8 << 20;
  const double wire = static_cast<double>(B + (B / p.mtu) * p.header_bytes);
  {
    Incast t(2, p);
    t.net.post_write(t.qps[0], B, 0);
    t.net.post_write(t.qps[1], B, 1);
    t.sch.run();
    EXPECT_NEAR(static_cast<double>(t.net.port_stats(t.sw, 2).fanin_ps), 2 * wire / G100 * 1e12, 1e3);
    EXPECT_EQ(t.net.port_stats(t.sw, 0).fanin_ps, 0u);  // the senders' ports carry ACKs only
  }
  {
    Incast t(2, p);
    t.net.post_write(t.qps[0], B, 0);
    t.sch.run();
    EXPECT_EQ(t.net.port_stats(t.sw, 2).fanin_ps, 0u);
  }
  {
    Incast t(1, p);
    const std::uint32_t q2 = t.net.create_qp(t.senders[0], t.rx, 50000);
    t.net.post_write(t.qps[0], B, 0);
    t.net.post_write(q2, B, 1);
    t.sch.run();
    EXPECT_EQ(t.done.done.size(), 2u);
    EXPECT_EQ(t.net.port_stats(t.sw, 1).fanin_ps, 0u);
  }
}

// The flow tier with DCQCN over fluid queues (NetParams::flow_cc, docs/models/roce-nic.md#flow-tier-congestion-control)
// against the packet tier on an N:1 incast of 1 MiB writes into one 100 Gb/s port, NVIDIA profile,
// lossless: the packet tier's senders start at the line rate, fill the port's queue past Kmax,
// are cut by CNPs far below their fair share while the queue drains, and wait for DCQCN's
// recovery with the port idle. The ideal flow tier finishes at the line rate (the closed form);
// the DCQCN flow tier must finish, and at most half as far from the packet tier as the ideal
// one, and never faster than the line rate allows.
TEST(Network, FlowTierDcqcnIncastFollowsThePacketTier) {
  for (std::uint32_t n : {4u, 8u}) {
    SCOPED_TRACE(n);
    Tick end[3] = {};
    for (int tier = 0; tier < 3; ++tier) {  // packet, flow ideal, flow DCQCN
      NetParams p;
      p.flow = tier > 0;
      p.flow_cc = tier == 2;
      Incast t(n, p);
      for (std::uint32_t i = 0; i < n; ++i) t.net.post_write(t.qps[i], 1 << 20, i + 1);
      t.sch.run();
      ASSERT_EQ(t.done.done.size(), n);
      for (auto& [tag, v] : t.done.done) { EXPECT_TRUE(v.second) << tag; end[tier] = std::max(end[tier], v.first); }
    }
    const double line = static_cast<double>(NetParams{}.wire_bytes(1 << 20)) * n / G100 * 1e12;  // ps at the line rate
    EXPECT_NEAR(static_cast<double>(end[1]), line, 0.05 * line);                         // ideal: the closed form
    EXPECT_GT(static_cast<double>(end[0]), 1.3 * line);                                  // the packet tier loses time
    const double pk = static_cast<double>(end[0]);
    EXPECT_GE(static_cast<double>(end[2]), line);  // no faster than the receiver's port can carry the bytes
    EXPECT_LE(std::abs(static_cast<double>(end[2]) - pk), 0.5 * std::abs(static_cast<double>(end[1]) - pk));
    if (n == 8) {
      EXPECT_NEAR(static_cast<double>(end[2]), pk, 0.10 * pk);
    }
  }
}

// The chunk tier's fluid queue against its closed form, with more units feeding one port than the
// queue record holds inline (ChunkMarking keeps 3, then spills to the heap). Six 64 KiB units
// (16 packets each) from line-rate senders reach a 1 GB/s egress at t = 0: unit i finds i others
// feeding it, so its packet j sees a queue of j * i * 4096 bytes (the queue each packet would
// build at (i+1) GB/s in, 1 GB/s out), and it leaves at 1/(i+1) of its rate. At 30 us the queue
// holds (6 - 1) GB/s * 30 us = 150,000 bytes; by 1 ms it has drained and its feeds have ended.
TEST(ChunkMarking, FluidQueueOfManyFeedsMatchesClosedForm) {
  for (const std::uint64_t k : {149000u, 151000u}) {
    EcnParams ecn;
    ecn.mode = EcnParams::Mode::Step;
    ecn.kmin_bytes = 20000;
    ChunkMarking cm(ecn);
    XorShift64 rng(1);
    const double C = 1e9;
    auto unit = [](double rate) {
      Pkt u;
      u.bytes = 65536;
      u.npk = 16;
      u.rate = rate;
      return u;
    };
    // Step marking above 20,000 bytes: packet j of unit i is marked when j * i * 4096 > 20000.
    const std::uint32_t want[6] = {0, 11, 13, 14, 14, 15};
    for (std::uint32_t i = 0; i < 6; ++i) {
      Pkt u = unit(C);
      cm.mark(7, 2, static_cast<std::uint64_t>(C), C, u, 0, rng);
      EXPECT_EQ(u.marks, want[i]) << "unit " << i;
      EXPECT_DOUBLE_EQ(u.rate, C / (i + 1)) << "unit " << i;
    }
    // A seventh unit at 30 us: the queue is 150,000 bytes; its first packet is marked only when the
    // threshold is below that, the rest are (each adds (7 - 1) GB/s * 4.096 us = 24,576 bytes).
    ecn.kmin_bytes = k;
    Pkt u = unit(C);
    cm.mark(7, 2, static_cast<std::uint64_t>(C), C, u, 30 * kPsPerUs, rng);
    EXPECT_EQ(u.marks, k < 150000 ? 16u : 15u) << "threshold " << k;
    // Drained by 1 ms, and the old feeds gone: three units from half-rate senders find 0, 0.5
    // and 1 GB/s feeding the port; only the third overfills it (4096 bytes more per packet).
    ecn.kmin_bytes = 1;
    const std::uint32_t late_marks[3] = {0, 0, 15};
    const double late_rate[3] = {C / 2, C / 2, C / 3};
    for (std::uint32_t i = 0; i < 3; ++i) {
      Pkt late = unit(C / 2);
      cm.mark(7, 2, static_cast<std::uint64_t>(C), C, late, 1000 * kPsPerUs, rng);
      EXPECT_EQ(late.marks, late_marks[i]) << "late unit " << i;
      EXPECT_DOUBLE_EQ(late.rate, late_rate[i]) << "late unit " << i;
    }
  }
}
