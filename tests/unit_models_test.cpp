// Model cores without a kernel, each against an independent reference (closed-form timing,
// a reference memory, host arithmetic).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "models/event_queue.h"
#include "models/hbm.h"
#include "models/machine.h"
#include "models/reduce.h"
#include "models/regmap.h"

using namespace models;

namespace {

// Closed form in double, independent of serialization_ps's integer arithmetic.
Tick expected_ps(double bytes, double Bps) { return static_cast<Tick>(std::ceil(bytes * 1e12 / Bps - 1e-6)); }

struct Recorder : MachineListener {
  std::map<std::uint32_t, Tick> idle_at;
  std::vector<std::string> errors;
  Scheduler* s = nullptr;
  void on_stream_idle(std::uint32_t st) override { idle_at[st] = s->now(); }
  void on_marker(std::uint32_t, std::uint32_t, std::uint64_t, Tick) override {}
  void on_task_error(std::uint32_t, const std::string& why) override { errors.push_back(why); }
};

NpuParams bare_npu() {  // no dispatch/setup overheads: timing is the link's alone
  NpuParams p;
  p.task_dispatch_ps = 0;
  p.sdma_setup_ps = 0;
  p.notify_local_ps = 0;
  p.hbm.access_latency_ps = 0;
  p.sdma_bandwidth_Bps = 1000ULL * 1000 * 1000 * 1000;  // 1 TB/s: never the bottleneck
  p.hbm.capacity_bytes = 1ULL << 30;
  return p;
}

// A machine on its own scheduler with a recorder of stream idle times and errors.
struct Rig {
  StandaloneScheduler sch;
  Recorder rec;
  Machine m;
  explicit Rig(std::uint64_t piece_bytes = 256 * 1024) : m(sch, piece_bytes) {
    rec.s = &sch;
    m.set_listener(&rec);
  }
};

}  // namespace

TEST(Time, SerializationRoundsUpToPicoseconds) {
  EXPECT_EQ(serialization_ps(28, 28ULL * 1000 * 1000 * 1000), 1000u);  // 28 B at 28 GB/s = 1 ns
  EXPECT_EQ(serialization_ps(1, 3), 333333333334u);                    // 1/3 s rounded up
  EXPECT_EQ(serialization_ps(64ULL << 30, 1000000000ULL), 68719476736000ULL);  // 64 GiB * 1e12 needs 128 bits
  EXPECT_EQ(serialization_ps(64ULL << 30, 1), kTickMax);                          // saturates, never wraps
  EXPECT_EQ(serialization_ps(0, 5), 0u);
}

TEST(EventQueue, OrdersByTimeThenInsertion) {
  struct H : EventHandler {
    std::vector<std::uint64_t> seen;
    void on_event(std::uint64_t a, std::uint64_t) override { seen.push_back(a); }
  } h;
  StandaloneScheduler s;
  s.schedule(30, &h, 3);
  s.schedule(10, &h, 1);
  s.schedule(30, &h, 4);
  s.schedule(10, &h, 2);
  s.run();
  EXPECT_EQ(h.seen, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

// The idle-path time of one HCCS transfer is exactly bytes/bandwidth + latency.
TEST(HccsLink, IdleTransferIsSerializationPlusLatency) {
  for (std::uint64_t bytes : {1ULL, 4096ULL, 1ULL << 20, 3ULL << 20, 64ULL << 20}) {
    Rig rig(256 * 1024);
    auto& sch = rig.sch;
    auto& rec = rig.rec;
    auto& m = rig.m;
    m.add_npu(bare_npu());
    m.add_npu(bare_npu());
    LinkParams lp{28ULL * 1000 * 1000 * 1000, 500 * kPsPerNs};
    const std::uint32_t link = m.add_link(LinkKind::Hccs, 0, 1, lp, "l");
    std::uint32_t st = m.create_stream(0);
    Task t;
    t.kind = TaskKind::Copy;
    t.src = npu_base_addr(0);
    t.dst = npu_base_addr(1);
    t.bytes = bytes;
    m.submit(st, t);
    sch.run();
    // Pieces leave back to back, so the total equals one serialization of all bytes (to the ps
    // rounding of each piece).
    Tick pieces = (bytes + m.piece_bytes() - 1) / m.piece_bytes();
    Tick expect = expected_ps(static_cast<double>(bytes), 28e9) + 500 * kPsPerNs;
    EXPECT_GE(rec.idle_at[st], expect) << bytes;
    EXPECT_LE(rec.idle_at[st], expect + pieces) << bytes;  // at most 1 ps of rounding per piece
    EXPECT_EQ(m.ports()[m.links()[link].port_ab].bytes, bytes);
  }
}

// HBM access latency: an idle copy pays the source's read latency before its first byte and the
// destination's write latency after its last: local (HBM/2 bandwidth) and over HCCS.
TEST(Hbm, AccessLatencyAddsToAnIdleCopy) {
  for (bool remote : {false, true}) {
    Rig rig(1ULL << 30);
    auto& sch = rig.sch;
    auto& rec = rig.rec;
    auto& m = rig.m;
    NpuParams a = bare_npu(), b = bare_npu();
    a.hbm.access_latency_ps = 120 * kPsPerNs;  // source read
    b.hbm.access_latency_ps = 80 * kPsPerNs;   // destination write (remote case)
    m.add_npu(a);
    m.add_npu(b);
    m.add_link(LinkKind::Hccs, 0, 1, LinkParams{28ULL * 1000 * 1000 * 1000, 500 * kPsPerNs}, "l");
    std::uint32_t st = m.create_stream(0);
    Task t;
    t.kind = TaskKind::Copy;
    t.src = npu_base_addr(0);
    t.dst = remote ? npu_base_addr(1) : npu_base_addr(0) + (1 << 20);
    t.bytes = 1 << 20;
    m.submit(st, t);
    sch.run();
    const Tick expect = remote ? 120 * kPsPerNs + expected_ps(1 << 20, 28e9) + 500 * kPsPerNs + 80 * kPsPerNs
                               : 120 * kPsPerNs + expected_ps(1 << 20, 800e9) + 120 * kPsPerNs;  // 1.6 TB/s read + write
    EXPECT_GE(rec.idle_at[st], expect) << remote;
    EXPECT_LE(rec.idle_at[st], expect + 1) << remote;
  }
}

// Two transfers on one port: the second waits exactly the first one's serialization backlog.
TEST(HccsLink, SecondTransferWaitsTheBacklog) {
  Rig rig(1ULL << 30);  // one piece per transfer
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  m.add_npu(bare_npu());
  m.add_npu(bare_npu());
  LinkParams lp{10ULL * 1000 * 1000 * 1000, 700 * kPsPerNs};
  m.add_link(LinkKind::Hccs, 0, 1, lp, "l");
  std::uint32_t a = m.create_stream(0), b = m.create_stream(0);
  Task t;
  t.kind = TaskKind::Copy;
  t.src = npu_base_addr(0);
  t.dst = npu_base_addr(1);
  t.bytes = 1000000;  // 100 us at 10 GB/s
  m.submit(a, t);
  t.bytes = 500000;   // 50 us
  m.submit(b, t);
  sch.run();
  EXPECT_EQ(rec.idle_at[a], 100 * kPsPerUs + 700 * kPsPerNs);
  EXPECT_EQ(rec.idle_at[b], 150 * kPsPerUs + 700 * kPsPerNs);  // 100 us backlog + its own 50 us
}

TEST(Machine, CopyMovesRealBytesAndReduceCopyReduces) {
  Rig rig(4096);
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  m.add_npu(bare_npu());
  m.add_npu(bare_npu());
  m.add_link(LinkKind::Hccs, 0, 1, LinkParams{}, "l");
  const std::size_t n = 10000;
  std::vector<std::int32_t> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) { a[i] = static_cast<std::int32_t>(i * 7 - 3000); b[i] = static_cast<std::int32_t>(i); }
  m.backdoor_write(npu_base_addr(0), a.data(), n * 4);
  m.backdoor_write(npu_base_addr(1) + 4096, b.data(), n * 4);
  std::uint32_t st = m.create_stream(0);
  Task t;
  t.kind = TaskKind::ReduceCopy;
  t.src = npu_base_addr(0);
  t.dst = npu_base_addr(1) + 4096;
  t.bytes = n * 4;
  t.dtype = DType::Int32;
  t.op = ReduceOp::Sum;
  m.submit(st, t);
  sch.run();
  std::vector<std::int32_t> got(n);
  m.backdoor_read(npu_base_addr(1) + 4096, got.data(), n * 4);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
  EXPECT_TRUE(rec.errors.empty());
}

TEST(Machine, NotifyWaitBlocksUntilRemoteRecord) {
  Rig rig;
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  m.add_npu(bare_npu());
  m.add_npu(bare_npu());
  m.add_link(LinkKind::Hccs, 0, 1, LinkParams{28ULL * 1000 * 1000 * 1000, 500 * kPsPerNs}, "l");
  std::uint32_t s0 = m.create_stream(0), s1 = m.create_stream(1);
  Task w;
  w.kind = TaskKind::NotifyWait;
  w.key = 42;
  m.submit(s1, w);
  sch.run();
  EXPECT_FALSE(m.stream_idle(s1));  // parked
  Task r;
  r.kind = TaskKind::NotifyRecord;
  r.target = 1;
  r.key = 42;
  m.submit(s0, r);
  sch.run();
  EXPECT_TRUE(m.stream_idle(s1));
  // A 4-byte register write: serialization (ceil of 4 B at 28 GB/s) + 0.5 us latency.
  EXPECT_EQ(rec.idle_at[s1], serialization_ps(4, 28ULL * 1000 * 1000 * 1000) + 500 * kPsPerNs);
}

TEST(Machine, BadAddressFailsTheStreamWithAMessage) {
  Rig rig;
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  m.add_npu(bare_npu());
  std::uint32_t st = m.create_stream(0);
  Task t;
  t.kind = TaskKind::Copy;
  t.src = npu_base_addr(0);
  t.dst = npu_base_addr(0) + (2ULL << 30);  // beyond 1 GiB of HBM
  t.bytes = 16;
  m.submit(st, t);
  sch.run();
  ASSERT_EQ(rec.errors.size(), 1u);
  EXPECT_NE(rec.errors[0].find("exceeds HBM"), std::string::npos);
  EXPECT_TRUE(m.stream_failed(st));
}

TEST(SparseMemory, MatchesAReferenceMemory) {
  SparseMemory mem(1ULL << 30);
  std::vector<std::uint8_t> ref(1 << 20, 0);  // reference over the first MiB
  std::mt19937_64 rng(7);
  for (int k = 0; k < 200; ++k) {
    std::uint64_t off = rng() % (ref.size() - 5000), len = rng() % 5000;
    std::vector<std::uint8_t> buf(len);
    for (auto& x : buf) x = static_cast<std::uint8_t>(rng());
    mem.write(off, buf.data(), len);
    std::memcpy(ref.data() + off, buf.data(), len);
  }
  std::vector<std::uint8_t> got(ref.size());
  mem.read(0, got.data(), got.size());
  EXPECT_EQ(got, ref);
  EXPECT_LE(mem.pages_allocated(), 16u + 1);  // only the touched 64 KiB pages
  EXPECT_THROW(mem.write((1ULL << 30) - 2, got.data(), 4), std::out_of_range);
}

TEST(SparseMemory, TimingOnlyStoresNothing) {
  SparseMemory mem(1ULL << 40, false);
  std::vector<std::uint8_t> buf(1 << 20, 0xab);
  mem.write(123, buf.data(), buf.size());
  EXPECT_EQ(mem.pages_allocated(), 0u);
  mem.read(123, buf.data(), 16);
  EXPECT_EQ(buf[0], 0);
}

// Integer reductions are bit-exact against host arithmetic (wrapping modulo 2^bits).
TEST(Reduce, IntegersAreBitExact) {
  std::mt19937_64 rng(1);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<std::int8_t> a(1000), b(1000);
    std::vector<std::int64_t> c(1000), d(1000);
    for (int i = 0; i < 1000; ++i) {
      a[i] = static_cast<std::int8_t>(rng()); b[i] = static_cast<std::int8_t>(rng());
      c[i] = static_cast<std::int64_t>(rng()); d[i] = static_cast<std::int64_t>(rng());
    }
    auto a0 = a;
    auto c0 = c;
    reduce_inplace(a.data(), b.data(), a.size(), DType::Int8, op);
    reduce_inplace(c.data(), d.data(), c.size() * 8, DType::Int64, op);
    for (int i = 0; i < 1000; ++i) {
      int x = a0[i], y = b[i];
      int e8 = op == ReduceOp::Sum ? x + y : op == ReduceOp::Prod ? x * y : op == ReduceOp::Max ? std::max(x, y) : std::min(x, y);
      ASSERT_EQ(a[i], static_cast<std::int8_t>(static_cast<std::uint8_t>(e8 & 0xff))) << i;
      std::uint64_t ux = static_cast<std::uint64_t>(c0[i]), uy = static_cast<std::uint64_t>(d[i]);
      std::int64_t e64 = op == ReduceOp::Sum ? static_cast<std::int64_t>(ux + uy)
                         : op == ReduceOp::Prod ? static_cast<std::int64_t>(ux * uy)
                         : op == ReduceOp::Max ? std::max(c0[i], d[i]) : std::min(c0[i], d[i]);
      ASSERT_EQ(c[i], e64) << i;
    }
  }
}

// fp16/bf16: the result is the correctly rounded fp32 result (tolerance: half an ulp of the type).
TEST(Reduce, HalfAndBfloatWithinHalfUlp) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-100.f, 100.f);
  for (int i = 0; i < 5000; ++i) {
    float x = dist(rng), y = dist(rng);
    std::uint16_t hx = float_to_half(x), hy = float_to_half(y);
    std::uint16_t bx = float_to_bf16(x), by = float_to_bf16(y);
    std::uint16_t hr = hx, br = bx;
    reduce_inplace(&hr, &hy, 2, DType::Fp16, ReduceOp::Sum);
    reduce_inplace(&br, &by, 2, DType::Bf16, ReduceOp::Sum);
    double exact_h = static_cast<double>(half_to_float(hx)) + half_to_float(hy);
    double exact_b = static_cast<double>(bf16_to_float(bx)) + bf16_to_float(by);
    double ulp_h = std::ldexp(1.0, std::ilogb(exact_h == 0 ? 1 : exact_h) - 10);
    double ulp_b = std::ldexp(1.0, std::ilogb(exact_b == 0 ? 1 : exact_b) - 7);
    ASSERT_LE(std::fabs(half_to_float(hr) - exact_h), ulp_h / 2 + 1e-12) << x << " + " << y;
    ASSERT_LE(std::fabs(bf16_to_float(br) - exact_b), ulp_b / 2 + 1e-12) << x << " + " << y;
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);       // overflow to +inf
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
}

namespace {
// One 2-NPU machine with a single HCCS link, timing-only HBM, no overheads.
struct TwoNpus {
  StandaloneScheduler sch;
  Recorder rec;
  Machine m{sch, 256 * 1024};
  std::uint32_t link = 0, st = 0;
  explicit TwoNpus(LinkParams lp) {
    rec.s = &sch;
    m.set_listener(&rec);
    NpuParams p = bare_npu();
    p.hbm.store_bytes = false;
    p.hbm.capacity_bytes = 1ULL << 36;
    m.add_npu(p);
    m.add_npu(p);
    link = m.add_link(LinkKind::Hccs, 0, 1, lp, "l");
    st = m.create_stream(0);
  }
  Tick copy(std::uint64_t bytes) {
    Task t;
    t.kind = TaskKind::Copy;
    t.src = npu_base_addr(0);
    t.dst = npu_base_addr(1);
    t.bytes = bytes;
    Tick t0 = sch.now();
    m.submit(st, t);
    sch.run();
    return rec.idle_at[st] - t0;
  }
  const Port& port() { return m.ports()[m.links()[link].port_ab]; }
};
}  // namespace

// CRC errors at rate r: replays ~ Binomial(frames, r) (checked within 5 sigma), and the time grows
// by exactly replays x (round trip + one frame).
TEST(HccsLink, CrcErrorsAreRetriedAndCostTime) {
  LinkParams lp;  // 28 GB/s, 0.5 us, 256 B frames
  for (double r : {1e-4, 1e-3, 1e-2}) {
    lp.crc_error_rate = r;
    TwoNpus t(lp);
    const std::uint64_t bytes = 256ULL << 20;  // 1 Mi frames
    Tick took = t.copy(bytes);
    const double frames = static_cast<double>(t.port().frames), retries = static_cast<double>(t.port().rx_retry);
    EXPECT_EQ(frames, static_cast<double>(bytes / 256));
    const double mean = frames * r, sd = std::sqrt(frames * r * (1 - r));
    EXPECT_NEAR(retries, mean, 5 * sd) << r;
    const Tick clean = serialization_ps(bytes, lp.bandwidth_Bps) + lp.latency_ps;
    const Tick per = 2 * lp.latency_ps + serialization_ps(256, lp.bandwidth_Bps);
    EXPECT_NEAR(static_cast<double>(took), static_cast<double>(clean + t.port().rx_retry * per), 1024) << r;  // ps rounding per piece
    std::printf("CRC rate %.0e: %.0f retries of %.0f frames (expected %.0f +- %.0f), effective %.2f GB/s\n", r, retries, frames, mean, sd,
                static_cast<double>(bytes) / static_cast<double>(took) * 1e3);
  }
}

// Lane degrade: 8 -> 2 lanes quarters the bandwidth; the credit limit caps a link whose receive
// buffer is smaller than its bandwidth-delay product at buffer / round trip.
TEST(HccsLink, LaneDegradeAndCredits) {
  LinkParams lp;
  TwoNpus t(lp);
  const std::uint64_t bytes = 64ULL << 20;
  EXPECT_NEAR(static_cast<double>(t.copy(bytes)), static_cast<double>(serialization_ps(bytes, 28000000000ULL) + lp.latency_ps), 256);  // 1 ps per piece
  t.m.set_link_lanes(t.link, 2);
  Tick slow = t.copy(bytes);
  EXPECT_NEAR(static_cast<double>(slow), static_cast<double>(serialization_ps(bytes, 7000000000ULL) + lp.latency_ps), 256);
  LinkParams small = lp;
  small.rx_buffer_bytes = 14000;  // 14 KB per 1 us round trip = 14 GB/s < 28 GB/s
  TwoNpus c(small);
  Tick capped = c.copy(bytes);
  EXPECT_NEAR(static_cast<double>(capped), static_cast<double>(serialization_ps(bytes, 14000000000ULL) + lp.latency_ps), 256);
  EXPECT_GT(c.port().credit_stall_ps, 0u);
}

// Link down: the transfer fails with a message; both ends hear of it (link event).
TEST(HccsLink, LinkDownFailsTransfers) {
  TwoNpus t(LinkParams{});
  std::vector<std::string> events;
  struct L : Recorder {
    std::vector<std::string>* ev;
    void on_link_event(std::uint32_t, const std::string& w) override { ev->push_back(w); }
  } l;
  l.s = &t.sch;
  l.ev = &events;
  t.m.set_listener(&l);
  t.m.set_link_up(t.link, false);
  Task c;
  c.kind = TaskKind::Copy;
  c.src = npu_base_addr(0);
  c.dst = npu_base_addr(1);
  c.bytes = 4096;
  t.m.submit(t.st, c);
  t.sch.run();
  ASSERT_EQ(l.errors.size(), 1u);
  EXPECT_NE(l.errors[0].find("is down"), std::string::npos);
  EXPECT_EQ(events, std::vector<std::string>{"down"});
  // Up again: the next transfer succeeds.
  t.m.clear_stream_error(t.st);
  t.m.set_link_up(t.link, true);
  t.m.submit(t.st, c);
  t.sch.run();
  EXPECT_EQ(l.errors.size(), 1u);
}

// HCCS vs PCIe peer-to-peer through a switch: with the parameters of the presets (HCCS 0.5 us;
// PCIe links 1 us each, switch 0.5 us) a small copy's latency over HCCS is 1/5 of PCIe P2P, the
// ratio the HCOMM documentation reports. Bandwidth through the switch is the PCIe link's.
TEST(PcieSwitch, PeerToPeerLatencyAndBandwidthFollowParameters) {
  Rig rig(256 * 1024);
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  NpuParams p = bare_npu();
  for (int i = 0; i < 3; ++i) m.add_npu(p);
  m.add_link(LinkKind::Hccs, 0, 1, LinkParams{}, "hccs");
  LinkParams pcie{31500000000ULL, 1000 * kPsPerNs, 16, 256, 0, 256 * 1024};
  std::uint32_t sw = m.add_pcie_switch("sw", 500 * kPsPerNs);
  for (std::uint32_t n : {0u, 2u}) m.add_pcie_switch_link(n, sw, pcie, "pcie" + std::to_string(n));
  auto copy = [&](std::uint32_t to, std::uint64_t bytes) {
    std::uint32_t st = m.create_stream(0);
    Task t;
    t.kind = TaskKind::Copy;
    t.src = npu_base_addr(0);
    t.dst = npu_base_addr(to);
    t.bytes = bytes;
    Tick t0 = sch.now();
    m.submit(st, t);
    sch.run();
    return rec.idle_at[st] - t0;
  };
  const double hccs = static_cast<double>(copy(1, 64)), p2p = static_cast<double>(copy(2, 64));
  EXPECT_NEAR(hccs / p2p, 0.2, 0.01);
  EXPECT_EQ(m.route(0, 2).p2 >= 0, true);
  const std::uint64_t big = 64ULL << 20;
  EXPECT_NEAR(static_cast<double>(copy(2, big)), static_cast<double>(serialization_ps(big, 31500000000ULL) + 2500 * kPsPerNs), 512);
  EXPECT_TRUE(rec.errors.empty());
}

// A two-hop path behind a busy port: NPU 1 -> switch -> NPU 2 shares the switch's port to NPU 2
// with a transfer from NPU 0 already in flight; the second waits exactly the first's backlog.
TEST(PcieSwitch, TwoHopPathWaitsTheBacklog) {
  Rig rig(1ULL << 30);  // one piece per transfer: the backlog is the whole first transfer
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  NpuParams p = bare_npu();
  for (int i = 0; i < 3; ++i) m.add_npu(p);
  LinkParams pcie{10000000000ULL, 1000 * kPsPerNs, 16, 256, 0, 1ULL << 30};  // 10 GB/s, 1 us, ample credits
  std::uint32_t sw = m.add_pcie_switch("sw", 500 * kPsPerNs);
  for (std::uint32_t n : {0u, 1u, 2u}) m.add_pcie_switch_link(n, sw, pcie, "pcie" + std::to_string(n));
  std::uint32_t a = m.create_stream(0), b = m.create_stream(1);
  Task t;
  t.kind = TaskKind::Copy;
  t.dst = npu_base_addr(2);
  t.src = npu_base_addr(0);
  t.bytes = 1000000;  // 100 us at 10 GB/s
  m.submit(a, t);
  t.src = npu_base_addr(1);
  t.bytes = 500000;   // 50 us
  m.submit(b, t);
  sch.run();
  const Tick path = 2 * 1000 * kPsPerNs + 500 * kPsPerNs;  // two links and the switch
  EXPECT_EQ(rec.idle_at[a], 100 * kPsPerUs + path);
  EXPECT_EQ(rec.idle_at[b], 150 * kPsPerUs + path);  // waited the 100 us on the shared down port
}

// Attach NPUs 0..n-1 to root complex `rc`, let each DMA host.size() bytes at once (H2D or D2H),
// run, and return when the last finished (each NPU's finish in *each).
static Tick host_dma_all(Machine& m, Recorder& rec, StandaloneScheduler& sch, std::uint32_t n, std::uint32_t rc, TaskKind kind,
                  std::vector<std::uint8_t>& host, std::vector<Tick>* each = nullptr) {
  std::vector<std::uint32_t> st;
  for (std::uint32_t k = 0; k < n; ++k) {
    m.attach_host(k, rc);
    st.push_back(m.create_stream(k));
    Task t;
    t.kind = kind;
    (kind == TaskKind::HostToDevice ? t.dst : t.src) = npu_base_addr(k);
    t.host = host.data();
    t.bytes = host.size();
    m.submit(st.back(), t);
  }
  sch.run();
  Tick last = 0;
  for (auto s : st) {
    last = std::max(last, rec.idle_at[s]);
    if (each) each->push_back(rec.idle_at[s]);
  }
  return last;
}

// Root complex: 8 NPUs DMA 16 MiB each from the host at once. Below the root complex's capacity
// (750 GB/s > 8 x 63 GB/s) every NPU runs at its link rate as if alone; above it (100 GB/s) the
// last finishes after all bytes at the root complex's rate, and no earlier than its own bytes at
// its link rate. Behind a PCIe switch, the upstream link (10 GB/s) is the shared limit.
TEST(RootComplex, HostDmaSharesItsBandwidth) {
  const std::uint64_t B = 16ULL << 20;
  const double link = 63e9;
  std::vector<std::uint8_t> host(B, 1);
  for (std::uint64_t rc_bw : {750000000000ULL, 100000000000ULL}) {
    Rig rig;
    auto& sch = rig.sch;
    auto& rec = rig.rec;
    auto& m = rig.m;
    for (int i = 0; i < 8; ++i) m.add_npu(bare_npu());
    const std::uint32_t rc = m.add_root_complex("rc", LinkParams{rc_bw, 0, 16, 256, 0, 0});
    std::vector<Tick> each;
    const Tick last = host_dma_all(m, rec, sch, 8, rc, TaskKind::HostToDevice, host, &each);
    const double lat = 1000 * kPsPerNs;  // host link latency
    const double alone = B / link * 1e12 + lat;
    const double shared = 8.0 * B / static_cast<double>(rc_bw) * 1e12 + lat;
    const double expect = std::max(alone, shared);
    EXPECT_GE(static_cast<double>(last), expect * (1 - 1e-9)) << rc_bw;
    EXPECT_LE(static_cast<double>(last), expect + 8 * (256 * 1024 / link * 1e12)) << rc_bw;  // within a piece per NPU
    if (rc_bw > 8 * 63e9) {
      for (Tick t : each) EXPECT_NEAR(static_cast<double>(t), alone, 1000) << "unshared: as if alone";
    }
  }
  // Four NPUs behind a PCIe switch whose upstream link runs at 10 GB/s.
  Rig rig;
  auto& sch = rig.sch;
  auto& rec = rig.rec;
  auto& m = rig.m;
  for (int i = 0; i < 4; ++i) m.add_npu(bare_npu());
  LinkParams pcie{31500000000ULL, 1000 * kPsPerNs, 16, 256, 0, 0};
  const std::uint32_t sw = m.add_pcie_switch("sw", 500 * kPsPerNs);
  for (std::uint32_t n = 0; n < 4; ++n) m.add_pcie_switch_link(n, sw, pcie, "pcie" + std::to_string(n));
  const std::uint32_t rc = m.add_root_complex("rc", LinkParams{750000000000ULL, 0, 16, 256, 0, 0});
  LinkParams up = pcie;
  up.bandwidth_Bps = 10000000000ULL;
  up.latency_ps = 0;
  m.add_pcie_switch_upstream(sw, rc, up, "up");
  const Tick last = host_dma_all(m, rec, sch, 4, rc, TaskKind::DeviceToHost, host);
  const double expect = 4.0 * B / 10e9 * 1e12 + 1000 * kPsPerNs + 500 * kPsPerNs;  // + link and switch latency
  EXPECT_GE(static_cast<double>(last), expect * (1 - 1e-9));
  EXPECT_LE(static_cast<double>(last), expect + 4 * (256 * 1024 / 10e9 * 1e12));
}

// Register map semantics, one table: RO ignores writes, W1C clears the written bits, RW stores.
TEST(RegisterMap, GenericAccessSemantics) {
  RegisterBlock b(npu_regs::table());
  std::uint64_t v = 0;
  b.hw_write(npu_regs::kNpuId, 5);
  EXPECT_FALSE(b.write(npu_regs::kNpuId, 9));
  ASSERT_TRUE(b.read(npu_regs::kNpuId, &v));
  EXPECT_EQ(v, 5u);
  b.hw_set_bits(npu_regs::kIntStatus, 0b11);
  EXPECT_TRUE(b.write(npu_regs::kIntStatus, 0b01));  // write 1 to clear bit 0
  b.read(npu_regs::kIntStatus, &v);
  EXPECT_EQ(v, 0b10u);
  EXPECT_TRUE(b.write(npu_regs::kIntMask, 0xff));
  b.read(npu_regs::kIntMask, &v);
  EXPECT_EQ(v, 0xffu);
  EXPECT_FALSE(b.read(0x7777, &v));  // unmapped
  EXPECT_EQ(b.ignored_writes(), 1u);
}

// Tasks written into a stream's queue run only when the doorbell (SQ tail, by MMIO) says so;
// SQ head and CQ tail count started and completed tasks; a task failure raises INT_STATUS bit 0;
// the configuration space is read-only to software.
TEST(RegisterMap, DoorbellQueuesAndInterruptStatus) {
  Rig rig;
  auto& sch = rig.sch;
  auto& m = rig.m;
  m.add_npu(bare_npu());
  std::uint32_t st = m.create_stream(0);
  Task marker;
  marker.kind = TaskKind::Marker;
  m.enqueue(st, marker);
  m.enqueue(st, marker);
  sch.run();
  std::uint64_t head = 9, tail = 9, cq = 9;
  m.mmio_read(0, npu_regs::stream_reg(st, npu_regs::kSqHead), &head);
  EXPECT_EQ(head, 0u);  // nothing rung yet
  EXPECT_FALSE(m.mmio_write(0, npu_regs::stream_reg(st, npu_regs::kSqTail), 3));  // beyond what was enqueued
  EXPECT_TRUE(m.mmio_write(0, npu_regs::stream_reg(st, npu_regs::kSqTail), 1));
  sch.run();
  m.mmio_read(0, npu_regs::stream_reg(st, npu_regs::kSqHead), &head);
  m.mmio_read(0, npu_regs::stream_reg(st, npu_regs::kCqTail), &cq);
  EXPECT_EQ(head, 1u);
  EXPECT_EQ(cq, 1u);
  EXPECT_TRUE(m.mmio_write(0, npu_regs::stream_reg(st, npu_regs::kSqTail), 2));
  sch.run();
  m.mmio_read(0, npu_regs::stream_reg(st, npu_regs::kSqTail), &tail);
  m.mmio_read(0, npu_regs::stream_reg(st, npu_regs::kCqTail), &cq);
  EXPECT_EQ(tail, 2u);
  EXPECT_EQ(cq, 2u);
  EXPECT_FALSE(m.mmio_write(0, npu_regs::stream_reg(st, npu_regs::kCqTail), 0));  // RO
  Task bad;
  bad.kind = TaskKind::Copy;
  bad.src = npu_base_addr(0);
  bad.dst = npu_base_addr(0) + (4ULL << 30);
  bad.bytes = 8;
  m.submit(st, bad);
  sch.run();
  std::uint64_t irq = 0;
  m.mmio_read(0, npu_regs::kIntStatus, &irq);
  EXPECT_EQ(irq & 1, 1u);
  m.load_config(0, npu_regs::kCfgRank, 42);
  std::uint64_t rank = 0;
  EXPECT_FALSE(m.mmio_write(0, npu_regs::kCfgRank, 7));
  m.mmio_read(0, npu_regs::kCfgRank, &rank);
  EXPECT_EQ(rank, 42u);
}

// Notify registers in the MMIO map: a wait binds the notify to a register that reads 0; a host
// MMIO write of 1 records it and wakes the stream; an unconsumed record reads back as its count;
// a consumed notify releases its register; a full table fails the wait and a record that finds
// no register sets INT_STATUS bit 2.
TEST(RegisterMap, NotifyRegistersAreReachedByMmio) {
  Rig rig;
  auto& sch = rig.sch;
  auto& m = rig.m;
  NpuParams p = bare_npu();
  p.notify_regs = 2;
  m.add_npu(p);
  std::uint32_t a = m.create_stream(0), b = m.create_stream(0);
  Task wait;
  wait.kind = TaskKind::NotifyWait;
  wait.key = 0xabc;
  m.submit(a, wait);
  sch.run();
  EXPECT_FALSE(m.stream_idle(a));
  const int r = m.notify_index(0, 0xabc);
  ASSERT_GE(r, 0);
  std::uint64_t v = 9, in_use = 0;
  EXPECT_TRUE(m.mmio_read(0, npu_regs::notify_reg(static_cast<std::uint32_t>(r)), &v));
  EXPECT_EQ(v, 0u);
  m.mmio_read(0, npu_regs::kNotifyInUse, &in_use);
  EXPECT_EQ(in_use, 1u);
  EXPECT_FALSE(m.mmio_write(0, npu_regs::notify_reg(1), 1));  // not bound to a notify
  EXPECT_TRUE(m.mmio_write(0, npu_regs::notify_reg(static_cast<std::uint32_t>(r)), 1));
  sch.run();
  EXPECT_TRUE(m.stream_idle(a));
  EXPECT_EQ(m.notify_index(0, 0xabc), -1);  // consumed: released
  // Two records without a waiter: the register holds 2; two waits consume them.
  Task rec2;
  rec2.kind = TaskKind::NotifyRecord;
  rec2.target = 0;
  rec2.key = 0xdef;
  m.submit(b, rec2);
  m.submit(b, rec2);
  sch.run();
  const int r2 = m.notify_index(0, 0xdef);
  ASSERT_GE(r2, 0);
  m.mmio_read(0, npu_regs::notify_reg(static_cast<std::uint32_t>(r2)), &v);
  EXPECT_EQ(v, 2u);
  wait.key = 0xdef;
  m.submit(a, wait);
  m.submit(a, wait);
  sch.run();
  EXPECT_TRUE(m.stream_idle(a));
  EXPECT_EQ(m.notify_index(0, 0xdef), -1);
  // Table full: two waits hold both registers; a third key cannot be bound.
  std::uint32_t c = m.create_stream(0);
  wait.key = 1;
  m.submit(a, wait);
  wait.key = 2;
  m.submit(b, wait);
  wait.key = 3;
  m.submit(c, wait);
  sch.run();
  EXPECT_TRUE(m.stream_failed(c));
  EXPECT_NE(m.stream_error(c).find("notify registers of npu0 are in use"), std::string::npos) << m.stream_error(c);
  Task rec3 = rec2;
  rec3.key = 4;
  std::uint32_t d = m.create_stream(0);
  m.submit(d, rec3);
  sch.run();
  EXPECT_EQ(m.notify_overflows(), 1u);
  std::uint64_t irq = 0;
  m.mmio_read(0, npu_regs::kIntStatus, &irq);
  EXPECT_EQ(irq & 4, 4u);
}

// HBM bandwidth is shared by every SDMA transfer that reads or writes it: 8 concurrent local
// copies (each reads and writes the HBM) of B bytes on 8 engines take 2 x 8 x B / bandwidth, not
// B / engine bandwidth; one copy alone is engine-bound.
TEST(Hbm, BandwidthIsSharedBySdmaChannels) {
  for (std::uint32_t copies : {1u, 8u}) {
    Rig rig;
    auto& sch = rig.sch;
    auto& rec = rig.rec;
    auto& m = rig.m;
    NpuParams p = bare_npu();
    p.sdma_bandwidth_Bps = 400ULL * 1000 * 1000 * 1000;
    p.hbm.bandwidth_Bps = 1600ULL * 1000 * 1000 * 1000;
    m.add_npu(p);
    const std::uint64_t B = 64ULL << 20;
    std::vector<std::uint32_t> st;
    for (std::uint32_t i = 0; i < copies; ++i) {
      st.push_back(m.create_stream(0));
      Task t;
      t.kind = TaskKind::Copy;
      t.src = npu_base_addr(0) + i * 2 * B;
      t.dst = t.src + B;
      t.bytes = B;
      m.submit(st.back(), t);
    }
    sch.run();
    Tick last = 0;
    for (auto s : st) last = std::max(last, rec.idle_at[s]);
    const double expect = std::max(B / 400e9, 2.0 * copies * B / 1600e9) * 1e12;
    EXPECT_GE(static_cast<double>(last), expect * (1 - 1e-9)) << copies;
    EXPECT_LE(static_cast<double>(last), expect + copies * (256 * 1024 / 400e9 * 1e12)) << copies;  // within a piece each
  }
}

// Interrupts (MSI, edge-triggered): a failing task sets INT_STATUS bit 0 and the host handler runs
// msi_latency later with that bit pending; a bit that stays set raises nothing more; after the
// handler clears it (W1C) a new error raises a new interrupt; a masked bit raises none until it is
// unmasked.
TEST(RegisterMap, InterruptsAreDeliveredByMsi) {
  struct Isr : Recorder {
    Machine* m = nullptr;
    bool clear = false;
    std::vector<std::pair<Tick, std::uint64_t>> irqs;
    void on_interrupt(std::uint32_t npu, std::uint64_t pending) override {
      irqs.emplace_back(s->now(), pending);
      if (clear) m->mmio_write(npu, npu_regs::kIntStatus, pending);
    }
  };
  StandaloneScheduler sch;
  Isr isr;
  isr.s = &sch;
  Machine m(sch);
  isr.m = &m;
  m.set_listener(&isr);
  NpuParams p = bare_npu();
  p.msi_latency_ps = 2 * kPsPerUs;
  m.add_npu(p);
  std::uint32_t st = m.create_stream(0);
  Task bad;
  bad.kind = TaskKind::Copy;
  bad.src = npu_base_addr(0);
  bad.dst = npu_base_addr(0) + (4ULL << 30);  // beyond the 1 GiB HBM
  bad.bytes = 8;
  auto fail_once = [&] {
    const Tick t0 = sch.now();
    m.submit(st, bad);
    sch.run();
    m.clear_stream_error(st);
    return t0;
  };
  const Tick t0 = fail_once();
  ASSERT_EQ(isr.irqs.size(), 1u);
  EXPECT_EQ(isr.irqs[0].first, t0 + 2 * kPsPerUs);  // dispatch is 0 in bare_npu: error at t0
  EXPECT_EQ(isr.irqs[0].second, 1u);
  fail_once();  // bit 0 still set (nobody cleared it): no new edge
  EXPECT_EQ(isr.irqs.size(), 1u);
  isr.clear = true;
  m.mmio_write(0, npu_regs::kIntStatus, 1);
  fail_once();
  fail_once();  // the handler cleared it: each error is a new edge
  EXPECT_EQ(isr.irqs.size(), 3u);
  EXPECT_EQ(m.interrupts(), 3u);
  m.mmio_write(0, npu_regs::kIntMask, 1);  // mask task errors
  fail_once();
  EXPECT_EQ(isr.irqs.size(), 3u);
  std::uint64_t status = 0;
  m.mmio_read(0, npu_regs::kIntStatus, &status);
  EXPECT_EQ(status & 1, 1u);  // still recorded, just not signalled
  const Tick unmask_at = sch.now();
  m.mmio_write(0, npu_regs::kIntMask, 0);  // unmasking a set bit signals it
  sch.run();
  ASSERT_EQ(isr.irqs.size(), 4u);
  EXPECT_EQ(isr.irqs[3].first, unmask_at + 2 * kPsPerUs);
}
