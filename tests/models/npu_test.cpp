// models/npu: stream engine, SDMA copies, notify registers, the register map and MSI
// (docs/models/npu.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "models/event_queue.h"
#include "models/mem/hbm.h"
#include "models/machine.h"
#include "models/mem/reduce.h"
#include "models/npu/regmap.h"
#include "models/npu/task_queue.h"
#include "machine_rig.h"

using namespace models;
using namespace models_test;

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
  // The shared layout's index against a scan of the table: every 4-byte offset of the fixed window.
  const auto table = npu_regs::table();
  RegisterBlock shared(npu_regs::layout());
  for (std::uint32_t off = 0; off < npu_regs::kStreamBase; off += 4) {
    bool mapped = false;
    for (const RegDef& d : table) mapped = mapped || d.offset == off;
    EXPECT_EQ(shared.read(off, &v), mapped) << off;
  }
  // A table that cannot be indexed densely (an odd offset) is scanned.
  RegisterBlock odd({{"A", 0x3, RegAccess::RW, 7, ""}, {"B", 0x100000, RegAccess::RW, 9, ""}});
  ASSERT_TRUE(odd.read(0x3, &v));
  EXPECT_EQ(v, 7u);
  ASSERT_TRUE(odd.read(0x100000, &v));
  EXPECT_EQ(v, 9u);
  EXPECT_FALSE(odd.read(0x8, &v));
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
  m.mmio_read(0, npu_regs::kNotifyInUse, &in_use);
  EXPECT_EQ(in_use, 0u);
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


// The submission queue's 64-byte entries (models/npu/task_queue.h) give back every field of every
// task, in order, against a plain deque of whole tasks: common tasks packed, rare ones (host
// buffer, 2-D shape, rate cap, borrowed NIC, wide QP range, odd retry count) through the side
// pool, with slots reused after pops, moves between queues and a clear.
TEST(SubmissionQueue, EntriesGiveBackEveryFieldInOrder) {
  std::mt19937_64 rng(7);
  auto draw = [&rng](std::uint64_t n) { return rng() % n; };
  static char host_buf[16];
  auto random_task = [&]() {
    Task t;
    t.kind = static_cast<TaskKind>(draw(10));
    t.src = rng();
    t.dst = rng();
    t.bytes = rng() >> draw(64);
    t.dtype = static_cast<DType>(draw(8));
    t.op = static_cast<ReduceOp>(draw(4));
    t.target = static_cast<std::uint32_t>(rng());
    t.key = rng();
    t.value = draw(2) ? rng() : 0;
    t.rkey = static_cast<std::uint32_t>(rng());
    t.qp_count = static_cast<std::uint32_t>(1 + draw(draw(8) == 0 ? 100000 : 8));
    t.qp_base = static_cast<std::uint32_t>(draw(draw(8) == 0 ? 1u << 20 : 64));
    t.retry_count = draw(4) == 0 ? ~0u : draw(8) == 0 ? static_cast<std::uint32_t>(255 + draw(1000)) : static_cast<std::uint32_t>(draw(11));
    t.tag = draw(3) == 0 ? -1 : static_cast<std::int64_t>(rng() >> 1);
    switch (draw(8)) {  // a rare field now and then
      case 0: t.host = host_buf + draw(16); break;
      case 1: t.width = 1 + draw(64); t.spitch = t.width + draw(8); t.dpitch = t.width + draw(8); break;
      case 2: t.rate_cap_Bps = 1 + rng() % 100000000000ULL; break;
      case 3: t.via = static_cast<std::uint32_t>(draw(8192)); break;
      default: break;
    }
    return t;
  };
  auto same = [](const Task& a, const Task& b) {
    return a.kind == b.kind && a.src == b.src && a.dst == b.dst && a.bytes == b.bytes && a.dtype == b.dtype && a.op == b.op &&
           a.target == b.target && a.key == b.key && a.value == b.value && a.host == b.host && a.rkey == b.rkey &&
           a.qp_count == b.qp_count && a.qp_base == b.qp_base && a.rate_cap_Bps == b.rate_cap_Bps &&
           a.retry_count == b.retry_count && a.via == b.via && a.tag == b.tag && a.width == b.width &&
           a.spitch == b.spitch && a.dpitch == b.dpitch;
  };
  TaskQueue pending, q;
  std::deque<Task> ref_pending, ref_q;
  for (int i = 0; i < 200000; ++i) {
    switch (draw(5)) {
      case 0: case 1: {
        const Task t = random_task();
        pending.push_back(t);
        ref_pending.push_back(t);
        break;
      }
      case 2:
        if (!ref_pending.empty()) {
          pending.move_front_to(q);
          ref_q.push_back(ref_pending.front());
          ref_pending.pop_front();
        }
        break;
      case 3:
        if (!ref_q.empty()) {
          ASSERT_TRUE(same(q.front(), ref_q.front())) << "step " << i;
          q.pop_front();
          ref_q.pop_front();
        }
        break;
      default:
        if (draw(5000) == 0) { q.clear(); ref_q.clear(); }
        break;
    }
    ASSERT_EQ(q.size(), ref_q.size());
    ASSERT_EQ(pending.size(), ref_pending.size());
  }
  while (!ref_pending.empty()) {
    ASSERT_TRUE(same(pending.front(), ref_pending.front()));
    pending.pop_front();
    ref_pending.pop_front();
  }
}
