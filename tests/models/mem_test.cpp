// models/mem: HBM (access latency, shared bandwidth, sparse store) and reductions, against a
// reference memory and host arithmetic (docs/models/hbm.md).
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

// Page-to-page copies and reductions between two memories and within one (overlapping ranges
// included, both directions) against reference memories: offsets at any alignment, lengths across
// several pages, never-written source pages (read as zeros), fp32 reduces at element alignment.
TEST(SparseMemory, CopyAndReduceFromMatchReferenceMemories) {
  constexpr std::uint64_t kSpan = 6 * SparseMemory::kPageBytes;
  SparseMemory a(1ULL << 30), b(1ULL << 30);
  std::vector<std::uint8_t> ra(kSpan, 0), rb(kSpan, 0);
  std::mt19937_64 rng(11);
  auto fill = [&](SparseMemory& m, std::vector<std::uint8_t>& r, std::uint64_t off, std::uint64_t len) {
    std::vector<float> v(len / 4);
    for (auto& x : v) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 8;
    m.write(off, v.data(), len);
    std::memcpy(r.data() + off, v.data(), len);
  };
  // Pages 0-1 and 4 of each written; 2, 3 and 5 left empty.
  fill(a, ra, 0, 2 * SparseMemory::kPageBytes);
  fill(a, ra, 4 * SparseMemory::kPageBytes, SparseMemory::kPageBytes);
  fill(b, rb, 0, 2 * SparseMemory::kPageBytes);
  fill(b, rb, 4 * SparseMemory::kPageBytes, SparseMemory::kPageBytes);
  for (int k = 0; k < 300; ++k) {
    const bool same = k % 3 == 0, reduce = k % 2 == 1;
    SparseMemory& dst = k % 4 < 2 ? a : b;
    std::vector<std::uint8_t>& rd = &dst == &a ? ra : rb;
    SparseMemory& src = same ? dst : (&dst == &a ? b : a);
    std::vector<std::uint8_t>& rs = &src == &a ? ra : rb;
    std::uint64_t len = rng() % (2 * SparseMemory::kPageBytes + 100);
    std::uint64_t so = rng() % (kSpan - len), d = rng() % (kSpan - len);
    if (reduce) { so -= so % 4; d -= d % 4; len -= len % 4; }
    const std::vector<std::uint8_t> from(rs.begin() + static_cast<std::ptrdiff_t>(so), rs.begin() + static_cast<std::ptrdiff_t>(so + len));
    if (reduce) {
      dst.reduce_from(src, so, d, len, static_cast<int>(DType::Fp32), static_cast<int>(ReduceOp::Sum));
      for (std::uint64_t i = 0; i < len; i += 4) {
        float x, y;
        std::memcpy(&x, rd.data() + d + i, 4);
        std::memcpy(&y, from.data() + i, 4);
        x += y;
        std::memcpy(rd.data() + d + i, &x, 4);
      }
    } else {
      dst.copy_from(src, so, d, len);
      std::memcpy(rd.data() + d, from.data(), len);
    }
    std::vector<std::uint8_t> got(kSpan);
    dst.read(0, got.data(), kSpan);
    ASSERT_EQ(got, rd) << "step " << k << (reduce ? " reduce" : " copy") << (same ? " within one memory" : "") << " so " << so << " d " << d
                       << " len " << len;
  }
  EXPECT_THROW(a.copy_from(b, (1ULL << 30) - 2, 0, 4), std::out_of_range);
  EXPECT_THROW(a.copy_from(b, 0, (1ULL << 30) - 2, 4), std::out_of_range);
  EXPECT_THROW(a.reduce_from(b, 0, 2, 6, static_cast<int>(DType::Fp32), static_cast<int>(ReduceOp::Sum)), std::invalid_argument);
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

// fp32/fp64 reductions (the vectorised loops) are bit-exact against host arithmetic element by
// element — a + b, a * b, std::max, std::min — including NaN, infinities and signed zeros, on
// unaligned buffers whose length is no multiple of any vector width.
TEST(Reduce, FloatsBitExactAgainstHostArithmetic) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> dist(-1e3, 1e3);
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1.0};
  constexpr int n = 1003;
  auto pick = [&](int i) { return i % 11 == 0 ? specials[(i / 11) % 7] : dist(rng); };
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<unsigned char> fd(4 * n + 3), fs(4 * n + 1), dd(8 * n + 5), ds(8 * n + 7);
    std::vector<float> fa(n), fb(n);
    std::vector<double> da(n), db(n);
    for (int i = 0; i < n; ++i) {
      fa[i] = static_cast<float>(pick(i)); fb[i] = static_cast<float>(pick(i + 5));
      da[i] = pick(i + 3); db[i] = pick(i + 7);
    }
    std::memcpy(fd.data() + 3, fa.data(), 4 * n);
    std::memcpy(fs.data() + 1, fb.data(), 4 * n);
    std::memcpy(dd.data() + 5, da.data(), 8 * n);
    std::memcpy(ds.data() + 7, db.data(), 8 * n);
    reduce_inplace(fd.data() + 3, fs.data() + 1, 4 * n, DType::Fp32, op);
    reduce_inplace(dd.data() + 5, ds.data() + 7, 8 * n, DType::Fp64, op);
    for (int i = 0; i < n; ++i) {
      const float fe = op == ReduceOp::Sum ? fa[i] + fb[i] : op == ReduceOp::Prod ? fa[i] * fb[i]
                       : op == ReduceOp::Max ? std::max(fa[i], fb[i]) : std::min(fa[i], fb[i]);
      const double de = op == ReduceOp::Sum ? da[i] + db[i] : op == ReduceOp::Prod ? da[i] * db[i]
                        : op == ReduceOp::Max ? std::max(da[i], db[i]) : std::min(da[i], db[i]);
      ASSERT_EQ(std::memcmp(fd.data() + 3 + 4 * i, &fe, 4), 0) << "fp32 op " << static_cast<int>(op) << " element " << i;
      ASSERT_EQ(std::memcmp(dd.data() + 5 + 8 * i, &de, 8), 0) << "fp64 op " << static_cast<int>(op) << " element " << i;
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


// A 2-D (strided) SDMA copy moves row i from src + i * spitch to dst + i * dpitch, local and over
// HCCS, with pieces cutting rows anywhere: checked byte for byte against a reference memory built
// on the host; it takes the time of a 1-D copy of the same bytes (no per-row cost is modelled).
TEST(Sdma, TwoDimensionalCopyMatchesAReferenceMemory) {
  for (bool remote : {false, true}) {
    for (std::uint64_t piece : {4096ull, 1ull << 30}) {
      Rig rig(piece);
      auto& m = rig.m;
      m.add_npu(bare_npu());
      m.add_npu(bare_npu());
      m.add_link(LinkKind::Hccs, 0, 1, LinkParams{28ULL * 1000 * 1000 * 1000, 500 * kPsPerNs}, "l");
      const std::uint64_t width = 3000, rows = 37, spitch = 5120, dpitch = 7000;
      std::vector<std::uint8_t> src(rows * spitch), before(rows * dpitch + 4096);
      std::mt19937_64 rng(11);
      for (auto& x : src) x = static_cast<std::uint8_t>(rng());
      for (auto& x : before) x = static_cast<std::uint8_t>(rng());
      const std::uint32_t dn = remote ? 1 : 0;
      const std::uint64_t dst_off = remote ? 0 : 1 << 20;
      m.hbm(0).write(0, src.data(), src.size());
      m.hbm(dn).write(dst_off, before.data(), before.size());
      std::vector<std::uint8_t> ref = before;
      for (std::uint64_t r = 0; r < rows; ++r) std::memcpy(ref.data() + r * dpitch, src.data() + r * spitch, width);
      std::uint32_t st = m.create_stream(0);
      Task t;
      t.kind = TaskKind::Copy;
      t.src = npu_base_addr(0);
      t.dst = npu_base_addr(dn) + dst_off;
      t.bytes = width * rows;
      t.width = width;
      t.spitch = spitch;
      t.dpitch = dpitch;
      m.submit(st, t);
      rig.sch.run();
      ASSERT_TRUE(rig.rec.errors.empty()) << rig.rec.errors[0];
      std::vector<std::uint8_t> got(ref.size());
      m.hbm(dn).read(dst_off, got.data(), got.size());
      EXPECT_EQ(got, ref) << remote << " " << piece;
      if (piece > width * rows) {  // one piece: the closed form of a 1-D copy of the same bytes
        const Tick expect = remote ? expected_ps(static_cast<double>(width * rows), 28e9) + 500 * kPsPerNs
                                   : expected_ps(static_cast<double>(width * rows), 800e9);
        EXPECT_GE(rig.rec.idle_at[st], expect) << remote;
        EXPECT_LE(rig.rec.idle_at[st], expect + 1) << remote;
      }
    }
  }
}

// Malformed 2-D copies fail the task with a reason: a width above a pitch (overlapping rows), bytes
// that are not whole rows, rows whose extent runs past the HBM.
TEST(Sdma, TwoDimensionalCopyRejectsBadShapes) {
  struct Case { std::uint64_t bytes, width, spitch, dpitch; };
  for (const Case c : {Case{4096, 1024, 512, 1024}, Case{4000, 1024, 1024, 1024}, Case{2048, 1024, 1024, 1ULL << 31}}) {
    Rig rig;
    auto& m = rig.m;
    m.add_npu(bare_npu());
    std::uint32_t st = m.create_stream(0);
    Task t;
    t.kind = TaskKind::Copy;
    t.src = npu_base_addr(0);
    t.dst = npu_base_addr(0) + (1 << 20);
    t.bytes = c.bytes;
    t.width = c.width;
    t.spitch = c.spitch;
    t.dpitch = c.dpitch;
    m.submit(st, t);
    rig.sch.run();
    EXPECT_EQ(rig.rec.errors.size(), 1u) << c.bytes << " " << c.width;
  }
}
