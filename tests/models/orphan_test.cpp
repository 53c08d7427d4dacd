// Work orphaned by a failure stops where it is: a crashed NPU's host copies no longer touch host
// memory, a failed transfer's late pieces neither write nor complete the stream's next task, and
// a bounded submission queue tells its submitter when it has room. References: a reference memory
// (what arrived before the fault) and counts of completed tasks.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "models/event_queue.h"
#include "models/machine.h"

using namespace models;

namespace {

struct Listener : MachineListener {
  Scheduler* s = nullptr;
  std::map<std::uint32_t, Tick> idle_at;
  std::vector<std::string> errors;
  std::vector<std::uint32_t> space;
  void on_stream_idle(std::uint32_t st) override { idle_at[st] = s->now(); }
  void on_marker(std::uint32_t, std::uint32_t, std::uint64_t, Tick) override {}
  void on_task_error(std::uint32_t, const std::string& why) override { errors.push_back(why); }
  void on_sq_space(std::uint32_t st) override { space.push_back(st); }
};

NpuParams npu_params() {
  NpuParams p;
  p.task_dispatch_ps = 0;
  p.sdma_setup_ps = 0;
  p.hbm.access_latency_ps = 0;
  p.hbm.capacity_bytes = 1ULL << 30;
  p.hbm.store_bytes = true;
  return p;
}

struct Rig {
  StandaloneScheduler sch;
  Listener rec;
  Machine m{sch, 64 * 1024};  // 64 KiB pieces
  Rig() {
    rec.s = &sch;
    m.set_listener(&rec);
  }
};

}  // namespace

// A host-to-device copy of 4 MiB at the host link's 63 GB/s takes ~67 us; the NPU crashes at
// 20 us. Pieces that landed before stay, nothing after the crash is read from the host buffer
// (it is poisoned right after the crash, as a dead process's memory is unmapped), and the
// stream is failed, not completed.
TEST(Orphans, CrashStopsHostCopiesAtOnce) {
  Rig r;
  r.m.add_npu(npu_params());
  const std::uint32_t rc = r.m.add_root_complex("rc", LinkParams{750000000000ULL, 0, 16, 256, 0, 0});
  r.m.attach_host(0, rc);
  const std::uint32_t s = r.m.create_stream(0);
  const std::uint64_t B = 4ULL << 20;
  std::vector<std::uint8_t> host(B, 0xab);
  Task t;
  t.kind = TaskKind::HostToDevice;
  t.dst = npu_base_addr(0);
  t.host = host.data();
  t.bytes = B;
  r.m.submit(s, t);
  r.sch.run(20 * kPsPerUs);
  r.m.crash_npu(0);
  std::memset(host.data(), 0xee, B);  // the dead process's buffer: any later read would copy 0xee
  r.sch.run();
  EXPECT_TRUE(r.m.stream_failed(s));
  EXPECT_TRUE(r.m.stream_idle(s));
  std::vector<std::uint8_t> dev(B);
  r.m.backdoor_read(npu_base_addr(0), dev.data(), B);
  std::uint64_t landed = 0, poisoned = 0;
  for (auto b : dev) landed += b == 0xab, poisoned += b == 0xee;
  EXPECT_EQ(poisoned, 0u);
  EXPECT_GT(landed, 0u);      // some pieces had arrived
  EXPECT_LT(landed, B);       // and the rest never did
  EXPECT_EQ(landed % (64 * 1024), 0u);  // whole pieces only
}

// A copy over an HCCS link that goes down mid-transfer fails its stream; the stream's error is
// cleared and a marker is submitted. The failed copy's pieces still in flight must neither write
// the destination after the failure nor complete the marker: it completes on its own.
TEST(Orphans, LatePiecesOfAFailedCopyDoNotCompleteTheNextTask) {
  Rig r;
  r.m.add_npu(npu_params());
  r.m.add_npu(npu_params());
  LinkParams hccs{28000000000ULL, 100 * kPsPerUs, 8, 256, 0, 0};  // long latency: many pieces in flight
  const std::uint32_t link = r.m.add_link(LinkKind::Hccs, 0, 1, hccs, "hccs0");
  const std::uint32_t s = r.m.create_stream(0);
  const std::uint64_t B = 8ULL << 20;
  std::vector<std::uint8_t> src(B, 0x5a);
  r.m.backdoor_write(npu_base_addr(0), src.data(), B);
  Task c;
  c.kind = TaskKind::Copy;
  c.src = npu_base_addr(0);
  c.dst = npu_base_addr(1);
  c.bytes = B;
  r.m.submit(s, c);
  r.sch.run(50 * kPsPerUs);  // ~1.4 MB sent, none arrived yet (100 us latency)
  r.m.set_link_up(link, false);
  r.sch.run(60 * kPsPerUs);  // the next piece finds the link down: the stream fails
  ASSERT_TRUE(r.m.stream_failed(s));
  r.m.clear_stream_error(s);
  const std::uint64_t completed_before = [&] {
    std::uint64_t v = 0;
    r.m.mmio_read(0, npu_regs::stream_reg(s, npu_regs::kCqTail), &v);
    return v;
  }();
  Task w;  // waits for a notify nobody sends: must stay pending
  w.kind = TaskKind::NotifyWait;
  w.key = 77;
  r.m.submit(s, w);
  r.sch.run();
  std::uint64_t completed = 0;
  r.m.mmio_read(0, npu_regs::stream_reg(s, npu_regs::kCqTail), &completed);
  EXPECT_EQ(completed, completed_before);  // the late pieces did not complete the wait
  EXPECT_FALSE(r.m.stream_idle(s));
  std::vector<std::uint8_t> dst(B);
  r.m.backdoor_read(npu_base_addr(1), dst.data(), B);
  std::uint64_t written = 0;
  for (auto b : dst) written += b == 0x5a;
  EXPECT_EQ(written, 0u);  // nothing had arrived before the failure, nothing arrives after it
}

// The SQ-space callback fires once the queue has drained to the requested level, and not before.
TEST(Orphans, SqSpaceIsSignalledAtTheRequestedLevel) {
  Rig r;
  r.m.add_npu(npu_params());
  const std::uint32_t s = r.m.create_stream(0);
  Task c;
  c.kind = TaskKind::Copy;
  c.src = npu_base_addr(0);
  c.dst = npu_base_addr(0) + (1 << 20);
  c.bytes = 1 << 20;
  for (int i = 0; i < 10; ++i) r.m.submit(s, c);
  EXPECT_EQ(r.m.stream_queued(s), 10u);
  r.m.want_sq_space(s, 4);
  for (Tick t = 0; r.rec.space.empty() && !r.sch.idle(); t += 10 * kPsPerNs) r.sch.run(t);  // 10 ns steps
  if (r.rec.space.empty()) FAIL() << "no SQ-space callback";
  ASSERT_EQ(r.rec.space.size(), 1u);
  EXPECT_EQ(r.m.stream_queued(s), 4u);
  r.sch.run();
  EXPECT_EQ(r.rec.space.size(), 1u);  // once per request
}
