// The packet tier against published DCQCN behaviour (docs/models/roce-nic.md#reference-check-dcqcn-fluid-model):
// N:1 incasts against the DCQCN fluid model of Zhu et al., "ECN or Delay: Lessons Learnt from
// Analysis of DCQCN and TIMELY" (CoNEXT 2016), integrated here on its own, with the SIGCOMM 2015
// parameters; and PFC's pause behaviour in a 2:1 fan-in with DCQCN off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "models/network.h"
#include "incast_rig.h"

using namespace models;
using namespace models_test;

namespace {

// ---- The DCQCN fluid model (CoNEXT 2016) ----
//
// N flows share one bottleneck of capacity C. Per flow: current rate RC, target rate RT, alpha.
// The switch marks with RED's probability p(q) (Kmin, Kmax, Pmax); the receiver sends at most one
// CNP per tau (the CNP interval), so a flow at RC packets/s is cut in an interval of length tau
// with probability 1 - (1-p)^(tau RC). With every delayed quantity taken at t - tau*:
//   dq/dt    = sum RC_i - C
//   dalpha/dt = g/tau' ((1 - (1-p)^(tau' RC)) - alpha)
//   dRT/dt   = -(RT - RC)/tau (1 - (1-p)^(tau RC))
//              + R_AI RC (1-p)^(F B) p / ((1-p)^-B - 1)             byte counter, additive stage
//              + R_AI RC (1-p)^(F T RC) p / ((1-p)^-(T RC) - 1)      timer, additive stage
//   dRC/dt   = -RC alpha/(2 tau) (1 - (1-p)^(tau RC))
//              + (RT - RC)/2 RC p / ((1-p)^-B - 1)                   byte-counter events
//              + (RT - RC)/2 RC p / ((1-p)^-(T RC) - 1)              timer events
// Rates in the exponents are in packets/s and B in packets (the model counts packets); the
// state itself is kept in wire bytes/s (the rate the NIC paces). Like the paper's model it has
// no hyper-increase stage (both counters past F), and rates are clamped to [min rate, line].
// Written from the paper's equations: nothing of the simulator's DCQCN (models/nic/dcqcn.cpp) is used.
struct Fluid {
  // inputs
  int n = 2;
  double C = 0, line = 0;  // bottleneck capacity and the senders' line rate, wire bytes/s
  double pkt = 0;          // wire bytes per packet
  double kmin = 0, kmax = 0, pmax = 0;
  double g = 0, tau = 0, tau_a = 0, T = 0, B = 0, F = 0, rai = 0, rmin = 0;  // s, bytes, bytes/s
  double delay0 = 0;       // tau*: feedback delay at an empty queue (s); the queue's delay q/C is added
  double dt = 200e-9;  // results agree to 0.1 KB and 0.001 Gb/s with 25, 50 and 100 ns
  // state
  double q = 0;
  std::vector<double> rc, rt, alpha;
  // History for the delayed terms, a ring of kRing steps: q, and every RC (n a step).
  static constexpr std::size_t kRing = 1 << 16;  // 13 ms at 200 ns: far beyond any feedback delay here
  std::vector<double> hist_q, hist_rc;
  std::size_t step = 0, fb = 0;  // this step; the step whose marks and rates the senders see now

  double p_of(double qq) const {
    if (qq <= kmin) return 0;
    if (qq > kmax) return 1;
    return pmax * (qq - kmin) / (kmax - kmin);
  }
  void start() {
    rc.assign(n, line);
    rt.assign(n, line);
    alpha.assign(n, 1.0);
    q = 0;
    hist_q.assign(kRing, 0);
    hist_rc.assign(kRing * static_cast<std::size_t>(n), 0);
    step = fb = 0;
  }
  // (1-p)^x for x >= 0
  static double surv(double p, double x) { return p >= 1 ? (x > 0 ? 0 : 1) : std::exp(x * std::log1p(-p)); }
  // Rate of increase events of a counter that needs k unmarked packets: RC p / ((1-p)^-k - 1),
  // events per second (RC in packets/s); RC / k at p = 0; none at p = 1.
  static double events(double rc_pk, double p, double k) {
    if (p <= 0) return rc_pk / k;
    if (p >= 1) return 0;
    return rc_pk * p / std::expm1(-k * std::log1p(-p));
  }
  void advance() {
    hist_q[step % kRing] = q;
    std::copy(rc.begin(), rc.end(), hist_rc.begin() + static_cast<std::ptrdiff_t>((step % kRing) * static_cast<std::size_t>(n)));
    // The marks reaching the senders now were made (at enqueue) at the latest t_m with
    // t_m + q(t_m)/C + tau*_0 <= now (t_m + q(t_m)/C never decreases: the queue drains at most at C).
    while (fb + 1 <= step && static_cast<double>(fb + 1) * dt + hist_q[(fb + 1) % kRing] / C + delay0 <= static_cast<double>(step) * dt) ++fb;
    if (step - fb >= kRing) std::abort();  // the ring is too short for this delay
    const std::size_t k = fb % kRing;
    const double pd = p_of(hist_q[k]);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const double xd = hist_rc[k * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)] / pkt;  // delayed rate, packets/s
      const double cut = 1 - surv(pd, tau * xd);
      const double acut = 1 - surv(pd, tau_a * xd);
      const double bc = events(xd, pd, B / pkt);
      const double tm = events(xd, pd, T * xd);
      const double ai = rai * (surv(pd, F * B / pkt) * bc + surv(pd, F * T * xd) * tm);
      const double da = g / tau_a * (acut - alpha[i]);
      const double drt = -(rt[i] - rc[i]) / tau * cut + ai;
      const double drc = -rc[i] * alpha[i] / (2 * tau) * cut + (rt[i] - rc[i]) / 2 * (bc + tm);
      alpha[i] += da * dt;
      rt[i] = std::clamp(rt[i] + drt * dt, rmin, line);
      rc[i] = std::clamp(rc[i] + drc * dt, rmin, line);
      sum += rc[i];
    }
    q = std::max(0.0, q + (sum - C) * dt);
    ++step;
  }
};

constexpr Tick kMs = kPsPerSec / 1000;

// What both sides report over the converged window.
struct Measured {
  double mean_q = 0, q_p99 = 0, q_max = 0;  // bottleneck queue, bytes (time average, 99th percentile, peak)
  std::vector<double> rate;                 // per flow, wire bytes/s averaged over the window
  double max_between_cnps = 0;              // packet tier: most payload bytes a flow sent between two CNPs
  double mean_rate() const { double s = 0; for (double r : rate) s += r; return s / static_cast<double>(rate.size()); }
};

void summarise_queue(std::vector<double>& qs, Measured& m) {
  double sum = 0;
  for (double v : qs) sum += v;
  m.mean_q = sum / static_cast<double>(qs.size());
  std::sort(qs.begin(), qs.end());
  m.q_p99 = qs[qs.size() * 99 / 100];
  m.q_max = qs.back();
}

Fluid fluid_for(int n, const NetParams& np) {
  const DcqcnParams& d = np.dcqcn;
  Fluid f;
  f.n = n;
  f.C = f.line = static_cast<double>(G100);
  f.pkt = static_cast<double>(np.mtu + np.header_bytes);
  f.kmin = static_cast<double>(np.ecn.kmin_bytes);
  f.kmax = static_cast<double>(np.ecn.kmax_bytes);
  f.pmax = np.ecn.pmax;
  f.g = d.g;
  f.tau = static_cast<double>(d.cnp_interval_ps) / 1e12;
  f.tau_a = static_cast<double>(d.alpha_timer_ps) / 1e12;
  f.T = static_cast<double>(d.rate_increase_timer_ps) / 1e12;
  f.B = static_cast<double>(d.byte_counter);
  f.F = d.fast_recovery_stages;
  f.rai = static_cast<double>(d.rai_Bps);
  f.rmin = static_cast<double>(d.min_rate_Bps);
  // The loop of the rig (incast_rig.h): marked at the switch's enqueue, the packet leaves after
  // the queue (added per step), is serialised and crosses 1 us to the receiver; the CNP crosses
  // 1 us, the switch (0.6 us) and 1 us back; the sender's next packet is serialised and crosses
  // 1 us and the switch (0.6 us) to the queue.
  f.delay0 = (2 * f.pkt / f.C) + 4e-6 + 1.2e-6;
  return f;
}

// Integrate from t = 0 (every flow at line rate, alpha 1, empty queue, as the packet tier starts)
// and average over [t0, t1].
Measured run_fluid(Fluid& f, double t0, double t1) {
  f.start();
  Measured m;
  m.rate.assign(static_cast<std::size_t>(f.n), 0);
  std::vector<double> qs;
  const std::size_t s0 = static_cast<std::size_t>(t0 / f.dt), s1 = static_cast<std::size_t>(t1 / f.dt);
  for (std::size_t s = 0; s < s1; ++s) {
    f.advance();
    if (s < s0) continue;
    qs.push_back(f.q);
    for (std::size_t i = 0; i < m.rate.size(); ++i) m.rate[i] += f.rc[i];
  }
  for (double& r : m.rate) r /= static_cast<double>(qs.size());
  summarise_queue(qs, m);
  return m;
}

// The packet tier's N:1 incast of incast_rig.h, every sender with one endless write; the
// bottleneck queue (the switch's port to the receiver) sampled every 1 us over [t0, t1].
Measured run_packets(int n, const NetParams& np, Tick t0, Tick t1, std::uint64_t* pauses, std::uint64_t* drops) {
  Incast t(static_cast<std::uint32_t>(n), np);
  for (auto q : t.qps) t.net.post_write(q, 1ULL << 40, q);
  Measured m;
  std::vector<double> qs, b0;
  t.sch.run(t0);
  for (auto q : t.qps) b0.push_back(static_cast<double>(t.net.qp_stats(q).rx_bytes));
  // Per flow, the most payload sent between two CNPs the sender received (or since t0), to 1 us.
  std::vector<std::uint64_t> cnps(t.qps.size()), since(t.qps.size());
  for (std::size_t i = 0; i < t.qps.size(); ++i) {
    cnps[i] = t.net.qp_stats(t.qps[i]).cnp_rcv;
    since[i] = t.net.qp_stats(t.qps[i]).tx_bytes;
  }
  for (Tick now = t0 + kPsPerUs; now <= t1; now += kPsPerUs) {
    t.sch.run(now);
    qs.push_back(static_cast<double>(t.net.queue_bytes(t.sw, static_cast<std::uint32_t>(n))));
    for (std::size_t i = 0; i < t.qps.size(); ++i) {
      const QpStats st = t.net.qp_stats(t.qps[i]);
      m.max_between_cnps = std::max(m.max_between_cnps, static_cast<double>(st.tx_bytes - since[i]));
      if (st.cnp_rcv != cnps[i]) { cnps[i] = st.cnp_rcv; since[i] = st.tx_bytes; }
    }
  }
  const double secs = static_cast<double>(t1 - t0) / 1e12;
  const double wire = static_cast<double>(np.mtu + np.header_bytes) / np.mtu;  // every packet is a full MTU
  for (std::size_t i = 0; i < b0.size(); ++i)
    m.rate.push_back((static_cast<double>(t.net.qp_stats(t.qps[i]).rx_bytes) - b0[i]) * wire / secs);
  summarise_queue(qs, m);
  *pauses = 0;
  for (int i = 0; i <= n; ++i) *pauses += t.net.port_stats(t.sw, static_cast<std::uint32_t>(i)).pause_sent;
  *drops = t.net.total_drops();
  return m;
}

// N:1 incast, SIGCOMM 2015 profile (DCQCN and RED marking), PFC on. Both sides start at t = 0
// with every flow at line rate; the window is [60, 160] ms. The fluid model's first cut takes the
// flows far below C/N and they climb back by additive increase alone (the queue is empty
// meanwhile; about 0.74 Gb/s per ms), reaching C/N after about 31 ms (N = 2 and 4) and 18 ms
// (N = 8), its queue within 1.5 % of its fixed point by 60 ms. The packet tier converges to
// fairness slowly: its two flows at N = 2 get 65 : 35 of the port in the 1 ms at 30 ms, 55 : 45 at
// 60 ms, within 10 % of each other at 76 ms, and later 1 ms samples still stray up to 20 % apart
// (180 ms); over the window their Jain index is 1.0000.
//
// Tolerances, and why:
//  - Mean queue within 40 % of the fluid model's. The model is a mean-field approximation: it
//    replaces the random marks, the cuts at CNP instants and the rate sawtooth by their means and
//    settles on a fixed point, while the packet tier's queue swings over most of Kmin..Kmax (99th
//    percentile 100-204 KB). Measured with seeds 1-6, the packet tier's mean queue lies above the
//    fluid one by 13-38 % (N = 2: 19-35 %, N = 4: 23-38 %, N = 8: 8-13 %), never below; seed 1,
//    the default, gives 27 %, 29 %, 13 %.
//  - Per-flow mean rate (the bottleneck's throughput / N) within 2 % of C/N and of the model's:
//    a queue that is rarely empty keeps the port busy (measured: within 0.2 %).
//  - Jain index of the per-flow rates over the window >= 0.99 (measured 0.992-1.000 over seeds
//    1-6; the fluid model's flows start equal and stay equal, its index is 1 by symmetry).
//  - The queue stays within Kmin..Kmax: its mean strictly between them, its 99th percentile
//    at most 5 % above Kmax and its peak at most 25 % above (above Kmax every packet is marked,
//    but a flow hears at most one CNP per 50 us, so the queue overshoots briefly; measured peak
//    220 KB = 1.10 Kmax, 99th percentile <= 203.5 KB).
//  - No pause and no drop: DCQCN keeps the queue far below PFC's xoff (3.7 MB at N = 8).
void compare(int n) {
  NetParams np;
  np.dcqcn = DcqcnParams::sigcomm2015();
  np.ecn = EcnParams::sigcomm2015();
  np.pfc.enabled = true;  // lossless, as deployed
  const double t0 = 60e-3, t1 = 160e-3;
  Fluid f = fluid_for(n, np);
  const Measured fl = run_fluid(f, t0, t1);
  std::uint64_t pauses = 0, drops = 0;
  const Measured pk = run_packets(n, np, static_cast<Tick>(t0 * 1e12), static_cast<Tick>(t1 * 1e12), &pauses, &drops);
  const double fair = static_cast<double>(G100) / n;
  std::printf("DCQCN reference, N=%d over [60, 160] ms: mean queue %.1f KB packet / %.1f KB fluid (%+.0f %%); "
              "per-flow rate %.3f / %.3f Gb/s (C/N %.3f; packet flows %.3f..%.3f); Jain %.4f / %.4f; "
              "packet queue p99 %.1f KB, peak %.1f KB (fluid %.1f, %.1f); pauses %llu, drops %llu\n",
              n, pk.mean_q / 1e3, fl.mean_q / 1e3, 100 * (pk.mean_q / fl.mean_q - 1), pk.mean_rate() * 8e-9, fl.mean_rate() * 8e-9,
              fair * 8e-9, *std::min_element(pk.rate.begin(), pk.rate.end()) * 8e-9,
              *std::max_element(pk.rate.begin(), pk.rate.end()) * 8e-9, jain(pk.rate), jain(fl.rate), pk.q_p99 / 1e3,
              pk.q_max / 1e3, fl.q_p99 / 1e3, fl.q_max / 1e3, static_cast<unsigned long long>(pauses),
              static_cast<unsigned long long>(drops));
  EXPECT_NEAR(pk.mean_q, fl.mean_q, 0.40 * fl.mean_q);
  EXPECT_NEAR(pk.mean_rate(), fair, 0.02 * fair);
  EXPECT_NEAR(fl.mean_rate(), fair, 0.02 * fair);
  EXPECT_NEAR(pk.mean_rate(), fl.mean_rate(), 0.02 * fl.mean_rate());
  EXPECT_GE(jain(pk.rate), 0.99);
  const double kmin = static_cast<double>(np.ecn.kmin_bytes), kmax = static_cast<double>(np.ecn.kmax_bytes);
  for (const Measured* m : {&pk, &fl}) {
    EXPECT_GT(m->mean_q, kmin);
    EXPECT_LT(m->mean_q, kmax);
    EXPECT_LE(m->q_p99, 1.05 * kmax);
    EXPECT_LE(m->q_max, 1.25 * kmax);
  }
  EXPECT_EQ(pauses, 0u);
  EXPECT_EQ(drops, 0u);
  // The model has no hyper increase; the simulator's needs both stage counters past F, the byte
  // counter's after (F + 1) x byte_counter wire bytes without a cut. No flow got that far in the
  // window, so the comparison leaves out nothing the packet tier did.
  const double hyper = (np.dcqcn.fast_recovery_stages + 1.0) * static_cast<double>(np.dcqcn.byte_counter) * np.mtu / (np.mtu + np.header_bytes);
  std::printf("  most payload a flow sent between two CNPs: %.2f MiB (hyper increase after %.2f MiB)\n", pk.max_between_cnps / (1 << 20), hyper / (1 << 20));
  EXPECT_LT(pk.max_between_cnps, hyper);
}

}  // namespace

TEST(DcqcnReference, Incast2) { compare(2); }
TEST(DcqcnReference, Incast4) { compare(4); }
TEST(DcqcnReference, Incast8) { compare(8); }

// PFC alone (DCQCN and ECN off): two senders at line rate into one port of the same rate. Each
// ingress port fills at half the line rate until it crosses xoff and pauses its sender; it
// resumes below xon (2 packets lower). In steady state each sender gets half the port, so it is
// paused half of the time; nothing is dropped; an ingress port holds at most xoff plus what was
// in flight when the pause landed, which the headroom covers (net_params.h: 3 x rate x link
// delay + 2 MTU).
TEST(DcqcnReference, PfcFanIn) {
  NetParams np;
  np.dcqcn.enabled = false;
  np.ecn.enabled = false;
  np.pfc.enabled = true;
  const std::uint64_t buffer = 4ULL << 20;
  Incast t(2, np, buffer);
  for (auto q : t.qps) t.net.post_write(q, 1ULL << 40, q);
  // The thresholds as the switch derives them (3 ports, 100 Gb/s, 1 us links).
  const std::uint64_t pkt = np.mtu + np.header_bytes;
  const std::uint64_t headroom = 3 * G100 * kPsPerUs / kPsPerSec + 2 * pkt;
  std::uint64_t xoff = 0, xon = 0;
  Network::pfc_thresholds(buffer, 3, headroom, pkt, &xoff, &xon);
  // Each ingress port reaches xoff after xoff / (C/2) (216 us); measure from 0.5 ms to 2.5 ms.
  const Tick t0 = kMs / 2, t1 = 5 * kMs / 2;
  auto paused = [&](std::uint32_t host) {  // time the host's port has spent paused so far
    const NetPort& p = t.net.port(host, 0);
    return t.net.port_stats(host, 0).paused_ps + (p.paused ? t.sch.now() - p.paused_since : 0);
  };
  t.sch.run(t0);
  t.sch.advance_to(t0);
  std::vector<Tick> p0;
  std::vector<std::uint64_t> r0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    p0.push_back(paused(t.senders[i]));
    r0.push_back(t.net.qp_stats(t.qps[i]).rx_bytes);
  }
  t.sch.run(t1);
  t.sch.advance_to(t1);
  std::uint64_t pauses = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    const double frac = static_cast<double>(paused(t.senders[i]) - p0[i]) / static_cast<double>(t1 - t0);
    const double gbps = static_cast<double>(t.net.qp_stats(t.qps[i]).rx_bytes - r0[i]) * 8 / (static_cast<double>(t1 - t0) / 1e12) / 1e9;
    const NetPortStats in = t.net.port_stats(t.sw, i);
    pauses += in.pause_sent;
    std::printf("PFC 2:1, sender %u: paused %.4f of [0.5, 2.5] ms, goodput %.2f Gb/s; ingress port: %llu pauses sent, peak %llu B "
                "(xoff %llu B, xon %llu B, headroom %llu B)\n",
                i, frac, gbps, static_cast<unsigned long long>(in.pause_sent), static_cast<unsigned long long>(in.max_in_bytes),
                static_cast<unsigned long long>(xoff), static_cast<unsigned long long>(xon), static_cast<unsigned long long>(headroom));
    // Half the port: a sender is unpaused for its share of it, C/2 at line rate C.
    EXPECT_NEAR(frac, 0.5, 0.02) << i;
    EXPECT_GT(in.max_in_bytes, xoff) << i;  // it did pause there ...
    EXPECT_LE(in.max_in_bytes, xoff + headroom) << i;  // ... and the headroom absorbed what was in flight
  }
  EXPECT_GT(pauses, 10u);
  EXPECT_EQ(t.net.total_drops(), 0u);
}
