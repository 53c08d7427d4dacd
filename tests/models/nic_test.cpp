// models/nic: the RC transport (closed-form idle write, go-back-N, retry exhaustion) and DCQCN
// fairness (Jain index), against independent references (docs/models/roce-nic.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "models/network.h"
#include "models/nic/dcqcn.h"
#include "models/nic/qp_table.h"
#include "incast_rig.h"

using namespace models;
using namespace models_test;

// Idle path: one message of B bytes over host-switch-host completes after the packets' wire time
// at line rate plus the path latency (pipelined store-and-forward: one extra packet time) plus
// the NIC's WQE processing and the last ACK's way back.
TEST(Network, IdleWriteMatchesClosedForm) {
  // The chunk tier (256 KiB units, cut-through at the switch like pipelined packets) must give the
  // same closed form as the packet tier.
  for (std::uint32_t unit : {0u, 256u * 1024}) {
    NetParams p;
    p.ack_every = 1;
    p.unit_bytes = unit;
    Incast t(1, p);
    const std::uint64_t B = 1 << 20;
    t.net.post_write(t.qps[0], B, 7);
    t.sch.run();
    ASSERT_TRUE(t.done.done.count(7));
    const double pkts = std::ceil(static_cast<double>(B) / p.mtu);
    const double wire = pkts * (p.mtu + p.header_bytes) / static_cast<double>(G100) * 1e12;
    const double one_pkt = (p.mtu + p.header_bytes) / static_cast<double>(G100) * 1e12;
    const double ack = 2 * static_cast<double>(p.ctrl_bytes) / G100 * 1e12;
    const double expect = p.nic_latency_ps + wire + one_pkt + 2 * kPsPerUs + 600e3 /*switch*/ + ack + 2 * kPsPerUs + 600e3;
    EXPECT_NEAR(static_cast<double>(t.done.done[7].first), expect, 1000) << "ps, unit " << unit;
    EXPECT_EQ(t.net.qp_stats(t.qps[0]).rx_bytes, B);
    EXPECT_EQ(t.net.port_stats(t.sw, 1).tx_packets, static_cast<std::uint64_t>(pkts)) << unit;
  }
}

// DCQCN with the sigcomm2015 profile of docs/models/roce-nic.md (Kmin 5 KB, Kmax 200 KB,
// Pmax 1 %, g 1/256, 55 us timers, 10 MB byte counter, AI 40 Mb/s), PFC off, 4 KiB MTU: N
// flows into one 100 Gb/s port converge to fair shares with a bounded queue. Converged = from this 5 ms window on, every window has Jain >= 0.95 and
// the bottleneck >= 90 % busy.
// The chunk tier (64 KiB units, its default) runs the same DCQCN on units: a unit is marked if any
// of its packets would be, on the queue packets paced at the senders' rates would build. Measured
// with 256 KiB units: n = 2, 4 converge (12, 26 ms) but n = 8 overflows the buffer first: each
// flow's units reach the receiver only once per 8-unit round (168 us), so CNPs come 3x rarer
// than the 50 us the receivers may send them at (docs/models/roce-nic.md).
TEST(Network, DcqcnConvergesToFairShares) {
  for (std::uint32_t unit : {0u, 64u * 1024})
  for (std::uint32_t n : {2u, 4u, 8u}) {
    NetParams np;
    np.unit_bytes = unit;
    np.dcqcn = DcqcnParams::sigcomm2015();
    np.ecn = EcnParams::sigcomm2015();
    np.pfc.enabled = false;  // DCQCN alone bounds the queue: nothing is dropped without PFC
    Incast t(n, np);
    for (auto q : t.qps) t.net.post_write(q, 1ULL << 36, q);
    const Tick ms = kPsPerSec / 1000, horizon = 80 * ms, win = 5 * ms;
    std::vector<std::vector<double>> bytes;  // per ms: cumulative rx per flow
    std::vector<std::uint64_t> queue;        // per ms: bottleneck queue sample
    for (Tick now = ms; now <= horizon; now += ms) {
      t.sch.run(now);
      bytes.emplace_back();
      for (auto q : t.qps) bytes.back().push_back(static_cast<double>(t.net.qp_stats(q).rx_bytes));
      queue.push_back(t.net.queue_bytes(t.sw, n));
    }
    const std::size_t W = static_cast<std::size_t>(win / ms);
    // The chunk tier with 8 flows: each flow's 64 KiB units leave 42 us apart at its fair share,
    // about one 55 us rate-increase period, and a timer tick inside a unit's gap shortens it (the
    // rate limiter refills at the new rate): the shares drift, Jain over 5 ms windows 0.998 up to
    // 21 ms, then between 0.92 and 0.96 to 80 ms (measured; the packet tier stays >= 0.97). A
    // known limit of the tier (docs/models/roce-nic.md), asserted at 0.90.
    const double jmin = unit && n == 8 ? 0.90 : 0.95;
    std::size_t converged = bytes.size();
    double last_jain = 0, last_util = 0;
    for (std::size_t end = bytes.size(); end >= W + 1; --end) {  // walk back while windows stay good
      std::vector<double> share;
      double total = 0;
      for (std::uint32_t i = 0; i < n; ++i) { share.push_back(bytes[end - 1][i] - bytes[end - 1 - W][i]); total += share.back(); }
      double util = total / (static_cast<double>(win) / 1e12) / G100;
      if (end == bytes.size()) { last_jain = jain(share); last_util = util; }
      if (jain(share) < jmin || util < 0.9) break;
      converged = end - 1 - W;
    }
    std::uint64_t qmax = 0;
    for (std::size_t k = converged; k < queue.size(); ++k) qmax = std::max(qmax, queue[k]);
    std::printf("DCQCN %s, n=%u: converged after %zu ms (Jain %.3f, utilisation %.3f in the last 5 ms); queue after convergence <= %llu B; drops %llu\n",
                unit ? "64 KiB chunks" : "4 KiB packets", n, converged, last_jain, last_util, static_cast<unsigned long long>(qmax), static_cast<unsigned long long>(t.net.total_drops()));
    EXPECT_LE(converged, 60u) << "n=" << n << " did not converge within 60 ms";
    EXPECT_LT(qmax, 1u << 20) << n;  // bounded: well under 1 MiB of a 32 MiB buffer
    EXPECT_EQ(t.net.total_drops(), 0u) << n;
  }
}

// Random loss: go-back-N recovers every byte; retransmissions are counted.
TEST(Network, GoBackNRecoversFromLoss) {
  for (std::uint32_t unit : {0u, 64u * 1024}) {  // packet and chunk tiers
    SCOPED_TRACE(unit);
    NetParams p;
    p.unit_bytes = unit;
    p.drop_rate = 0.01;
    p.timeout_exp = 8;
    Incast t(2, p);
    for (auto q : t.qps) t.net.post_write(q, 4 << 20, q);
    t.sch.run();
    ASSERT_EQ(t.done.done.size(), 2u);
    for (auto& [tag, v] : t.done.done) EXPECT_TRUE(v.second);
    for (auto q : t.qps) {
      EXPECT_EQ(t.net.qp_stats(q).rx_bytes, 4u << 20);
      EXPECT_GT(t.net.qp_stats(q).retransmits, 0u);
    }
  }
}

// A dead link: the QP retries retry_count times and then reports the failure.
TEST(Network, QpFailsAfterRetries) {
  NetParams p;
  p.timeout_exp = 4;
  p.retry_count = 3;
  Incast t(1, p);
  t.net.set_link_up(t.rx, 0, false);
  t.net.post_write(t.qps[0], 1 << 20, 5);
  t.sch.run();
  ASSERT_TRUE(t.done.done.count(5));
  EXPECT_FALSE(t.done.done[5].second);
  EXPECT_EQ(t.net.qp_stats(t.qps[0]).timeouts, 4u);  // retry_count + 1
}

// The per-source QP table against a std::map reference: keys met in a pairwise all-to-all's
// rotated order, in a pseudo-random order, with stripes, and lookups of absent keys (which must
// not be found, including after the table grew past keys that collide on their home slot).
TEST(QpTable, MatchesMapReference) {
  QpTable t;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> ref;
  const std::uint32_t n = 3000, me = 1234;
  std::uint32_t v = 0;
  for (std::uint32_t i = 1; i < n; ++i)  // pairwise order: me+1 .. n-1, 0 .. me-1
    for (std::uint32_t s = 0; s < 3; ++s) {
      const std::uint32_t dst = (me + i) % n;
      ASSERT_EQ(t.find(dst, s), nullptr);
      t.insert(dst, s, v);
      ref[{dst, s}] = v++;
    }
  std::uint64_t x = 88172645463325252ULL;  // xorshift: keys far apart and stripes up to 0xffff
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const std::uint32_t dst = static_cast<std::uint32_t>(x % 1000000) + n, s = static_cast<std::uint32_t>((x >> 40) & 0xffff);
    if (ref.count({dst, s})) continue;
    t.insert(dst, s, v);
    ref[{dst, s}] = v++;
  }
  ASSERT_EQ(t.size(), ref.size());
  for (const auto& [k, val] : ref) {
    const std::uint32_t* p = t.find(k.first, k.second);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, val);
  }
  for (std::uint32_t s = 3; s < 40; ++s) EXPECT_EQ(t.find(7, s), nullptr);
  EXPECT_EQ(t.find(me, 0), nullptr);  // a source has no QP to itself
  *t.find(7, 1) = 42;  // values are updated in place (a routed stripe gets its QP)
  EXPECT_EQ(*t.find(7, 1), 42u);
}

namespace {
// DCQCN's reaction point as Zhu et al. (SIGCOMM 2015) describe it, with both timers as events:
// the reference for the model's alpha timer, which has no events (Dcqcn::alpha_ticks).
struct EagerDcqcn {
  DcqcnParams p;
  double rc, rt, alpha = 1, line;
  std::uint32_t t_stage = 0, bc_stage = 0;
  std::uint64_t bytes = 0, ri_gen = 0, alpha_gen = 0;
  bool limited = false, cnp_seen = false;
  StandaloneScheduler& sch;
  struct Timer : EventHandler {
    EagerDcqcn* d;
    void on_event(std::uint64_t which, std::uint64_t gen) override { d->timer(which, gen); }
  } ev;
  EagerDcqcn(StandaloneScheduler& s, double l) : rc(l), rt(l), line(l), sch(s) { ev.d = this; }
  void increase() {
    const std::uint32_t F = p.fast_recovery_stages;
    if (std::max(t_stage, bc_stage) < F) {
    } else if (std::min(t_stage, bc_stage) > F) {
      rt += static_cast<double>(std::min(t_stage, bc_stage) - F) * static_cast<double>(p.rhai_Bps);
    } else {
      rt += static_cast<double>(p.rai_Bps);
    }
    rt = std::min(rt, line);
    rc = std::min((rt + rc) / 2, line);
    if (rc >= line * (1 - 1e-9)) { rc = line; limited = false; ++ri_gen; ++alpha_gen; }
  }
  void cnp() {
    rt = rc;
    rc = std::max(static_cast<double>(p.min_rate_Bps), rc * (1 - alpha / 2));
    alpha = (1 - p.g) * alpha + p.g;
    t_stage = bc_stage = 0;
    bytes = 0;
    cnp_seen = true;
    sch.schedule(sch.now() + p.rate_increase_timer_ps, &ev, 0, ++ri_gen);
    if (!limited) { limited = true; sch.schedule(sch.now() + p.alpha_timer_ps, &ev, 1, ++alpha_gen); }
  }
  void sent(std::uint64_t b) {
    if (!limited) return;
    bytes += b;
    if (bytes >= p.byte_counter) { bytes = 0; ++bc_stage; increase(); }
  }
  void timer(std::uint64_t which, std::uint64_t gen) {
    if (!limited) return;
    if (which == 0 && gen == ri_gen) {
      ++t_stage;
      increase();
      if (limited) sch.schedule(sch.now() + p.rate_increase_timer_ps, &ev, 0, ri_gen);
    } else if (which == 1 && gen == alpha_gen) {
      if (!cnp_seen) alpha = (1 - p.g) * alpha;
      cnp_seen = false;
      sch.schedule(sch.now() + p.alpha_timer_ps, &ev, 1, alpha_gen);
    }
  }
};

struct CcRig : CcHost {
  StandaloneScheduler& sch;
  explicit CcRig(StandaloneScheduler& s) : sch(s) {}
  Tick cc_now() const override { return sch.now(); }
};
}  // namespace

// The model's DCQCN, whose timers have no events, against the reference with both timers as
// events: CNPs in bursts with gaps long enough for the rate to recover, packets sent at each
// (byte-counter stages), CNPs and sends also falling exactly on alpha ticks and on rate-increase
// ticks, alpha periods shorter than, equal to and longer than the rate-increase period. Each
// CNP's cut (which reads alpha) and the rates at every send are the same to the bit.
TEST(Dcqcn, LazyTimersMatchEagerReference) {
  for (Tick period : {55 * kPsPerUs, 10 * kPsPerUs, 110 * kPsPerUs}) {
    SCOPED_TRACE(period);
    StandaloneScheduler sch;
    CcRig rig(sch);
    DcqcnParams p = DcqcnParams::sigcomm2015();  // the paper's reaction point (no cut period, target always clamped)
    p.alpha_timer_ps = period;
    p.byte_counter = 1 << 20;
    Dcqcn dc(p, rig);
    const double line = 12.5e9;
    dc.add_qp(0, line);
    EagerDcqcn ref(sch, line);
    ref.p = p;
    std::uint64_t rng = 12345;
    auto next = [&] { rng = rng * 6364136223846793005ULL + 1442695040888963407ULL; return rng >> 33; };
    Tick t = 0, first_cnp = 0;
    std::uint64_t cnps = 0, on_tick = 0, on_ri_tick = 0;
    const Tick ri = p.rate_increase_timer_ps;
    for (int burst = 0; burst < 40; ++burst) {
      const int n = 1 + static_cast<int>(next() % 12);
      for (int i = 0; i < n; ++i) {
        // mostly random instants; sometimes exactly on an alpha tick of this limited period, or
        // on a rate-increase tick (the last CNP's phase)
        const std::uint64_t kind = i > 0 ? next() % 6 : 0;
        Tick step = 1 + next() % (120 * kPsPerUs);
        if (kind == 1) step = period * (1 + next() % 3) - (t - first_cnp) % period;
        if (kind == 2) step = ri * (1 + next() % 3);
        const Tick at = t + step;
        sch.run(at);  // timers before `at` (and at it: scheduled a period earlier, they come first)
        sch.advance_to(at);
        t = at;
        if (i == 0) first_cnp = t;
        on_tick += kind == 1;
        on_ri_tick += kind == 2;
        for (int k = 0; k < 3; ++k) {
          const std::uint64_t b = 200000 + next() % 300000;
          dc.on_sent(0, b);
          ref.sent(b);
          ASSERT_EQ(dc.rate_Bps(0), ref.rc) << "burst " << burst << " send " << k;
        }
        dc.on_cnp(0);
        ref.cnp();
        ++cnps;
        ASSERT_EQ(dc.rate_Bps(0), ref.rc) << "burst " << burst << " cnp " << i;
      }
      sch.run(t + 300000 * kPsPerUs);  // recovers to the line in between
      sch.advance_to(t + 300000 * kPsPerUs);
      t += 300000 * kPsPerUs;
      ASSERT_EQ(dc.rate_Bps(0), ref.rc);
      ASSERT_EQ(dc.rate_Bps(0), line);
    }
    EXPECT_GT(cnps, 100u);
    EXPECT_GT(on_tick, 20u);
    EXPECT_GT(on_ri_tick, 20u);
  }
}

// The chunk tier hands a unit's CNPs over as one batch (Dcqcn::on_cnps): c CNPs a packet-level
// receiver would have sent one CNP interval apart. Their effect must be that of c CNPs arriving
// one interval apart (each a rate cut when the interval is at least the rate-reduce period):
// the rate after the batch against the rate after c single CNPs at their own instants, both
// profiles, batches of 1..40. Not bit-equal (the batch applies its cuts at one instant, with
// alpha's decay between them in closed form), within 1 %; and far below the rate one cut leaves.
TEST(Dcqcn, CnpBatchActsAsSpacedCnps) {
  for (const DcqcnParams& prof : {DcqcnParams::nvidia(), DcqcnParams::sigcomm2015()}) {
    for (std::uint64_t c : {1u, 2u, 5u, 12u, 40u}) {
      SCOPED_TRACE(c);
      const Tick iv = prof.cnp_interval_ps;
      StandaloneScheduler sa, sb;
      CcRig ra(sa), rb(sb);
      Dcqcn batch(prof, ra), single(prof, rb);
      const double line = 25e9;
      batch.add_qp(0, line);
      single.add_qp(0, line);
      sb.advance_to(kPsPerUs);
      for (std::uint64_t i = 0; i < c; ++i) {
        if (i) sb.advance_to(sb.now() + iv);
        single.on_cnp(0);
      }
      sa.advance_to(sb.now());
      batch.on_cnps(0, c, iv);
      const double a = batch.rate_Bps(0), b = single.rate_Bps(0);
      EXPECT_NEAR(a / b, 1.0, 0.01) << a << " vs " << b;
      if (c >= 5) { EXPECT_LT(a, 0.2 * line); }  // not one cut: alpha starts at 1, each cut halves or so
    }
  }
}

// A batch's cuts stand for CNPs one interval apart from its arrival on, and a sender cuts at
// most once per rate-reduce period of its own time: a second batch arriving while the first's
// cuts still stand for CNPs to come raises alpha only (without this, two batches of 5 a
// microsecond apart cut 9 times in 1 us), and one arriving after them cuts again.
TEST(Dcqcn, CnpBatchesCutAtMostOncePerPeriod) {
  const DcqcnParams prof = DcqcnParams::nvidia();
  ASSERT_EQ(prof.rate_reduce_period_ps, prof.cnp_interval_ps);
  const Tick iv = prof.cnp_interval_ps;
  StandaloneScheduler s;
  CcRig rig(s);
  Dcqcn dc(prof, rig);
  const double line = 25e9;
  dc.add_qp(0, line);
  s.advance_to(kPsPerUs);
  dc.on_cnps(0, 5, iv);  // cuts standing for CNPs at +0, +4, ..., +16 us
  const double after_a = dc.rate_Bps(0);
  EXPECT_LT(after_a, line / 16);  // five cuts, alpha near 1
  s.advance_to(s.now() + kPsPerUs);
  dc.on_cnps(0, 5, iv);  // its slots (+1 .. +17 us) fall inside the first batch's: no cut
  EXPECT_EQ(dc.rate_Bps(0), after_a);
  s.advance_to(s.now() + 20 * kPsPerUs);  // past the first batch's last slot (+16 us)
  dc.on_cnps(0, 2, iv);
  EXPECT_LT(dc.rate_Bps(0), 0.6 * after_a);  // cuts again
}
