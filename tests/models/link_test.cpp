// models/link: HCCS links (closed-form timing, backlog, CRC replay, lanes and credits, link
// down), PCIe switches and the root complex (docs/models/links.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "models/event_queue.h"
#include "models/mem/hbm.h"
#include "models/machine.h"
#include "models/mem/reduce.h"
#include "models/npu/regmap.h"
#include "machine_rig.h"

using namespace models;
using namespace models_test;

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
  EXPECT_EQ(m.path(0, 2).p2 >= 0, true);
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

