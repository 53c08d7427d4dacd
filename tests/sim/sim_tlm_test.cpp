// The NPU's TLM-2.0 face (sim/npu_tlm.h): a plain SystemC initiator writes a copy task's
// descriptor into a stream's submission queue and rings the SQ_TAIL doorbell through the target
// socket, as the simulated driver does by MMIO; the copy happens (bytes checked in HBM) and ends
// at the closed-form time; every transaction is annotated with the NPU's MMIO latency.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/machine.h"
#include "sim/kernel.h"
#include "sim/npu_tlm.h"

using namespace models;

namespace {

struct IdleTimes : MachineListener {
  std::vector<Tick> idle;
  Scheduler* s = nullptr;
  void on_stream_idle(std::uint32_t) override { idle.push_back(s->now()); }
  void on_marker(std::uint32_t, std::uint32_t, std::uint64_t, Tick) override {}
  void on_task_error(std::uint32_t, const std::string& why) override { ADD_FAILURE() << why; }
};

// A CPU stand-in: one thread that issues blocking transactions and waits each annotated delay.
struct Cpu : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Cpu> socket;
  std::uint32_t stream = 0;
  Task task;
  Tick doorbell_at = 0;                 // when the doorbell write reached the NPU
  std::vector<sc_core::sc_time> delays;  // annotated delay of each transaction
  std::vector<tlm::tlm_response_status> status;
  std::uint64_t cq_tail = ~0ull, npu_id = ~0ull;

  SC_HAS_PROCESS(Cpu);
  explicit Cpu(sc_core::sc_module_name n) : sc_core::sc_module(n), socket("socket") { SC_THREAD(run); }

  tlm::tlm_response_status access(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned len) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(static_cast<unsigned char*>(data));
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(gp, delay);
    delays.push_back(delay);
    status.push_back(gp.get_response_status());
    wait(delay);
    return gp.get_response_status();
  }
  std::uint64_t reg_read(std::uint32_t off) {
    std::uint64_t v = 0;
    access(tlm::TLM_READ_COMMAND, off, &v, 8);
    return v;
  }

  void run() {
    sim::SqeWire sqe = sim::encode_sqe(task);  // the descriptor into the stream's queue entry
    access(tlm::TLM_WRITE_COMMAND, sim::NpuTlmTarget::kSqeBase + stream * sim::NpuTlmTarget::kSqeBytes, &sqe, sizeof sqe);
    std::uint64_t tail = 1;  // then ring the doorbell: one task submitted
    doorbell_at = sc_core::sc_time_stamp().value();
    access(tlm::TLM_WRITE_COMMAND, npu_regs::stream_reg(stream, npu_regs::kSqTail), &tail, 8);
    wait(sc_core::sc_time(100, sc_core::SC_US));  // long after the copy
    cq_tail = reg_read(npu_regs::stream_reg(stream, npu_regs::kCqTail));
    npu_id = reg_read(npu_regs::kNpuId);
    std::uint64_t v = 0;
    access(tlm::TLM_READ_COMMAND, 0x4, &v, 8);  // unmapped: an address error
  }
};

// Every field of a task survives the queue entry: each set to a value unlike its default.
TEST(NpuTlm, QueueEntryCarriesEveryTaskField) {
  models::Task t;
  t.kind = models::TaskKind::Compute;
  t.src = 0x1111;
  t.dst = 0x2222;
  t.bytes = 0x3333;
  t.dtype = models::DType::Bf16;
  t.op = models::ReduceOp::Max;
  t.target = 7;
  t.key = 0x4444;
  t.value = 0x5555;
  int host_buf = 0;
  t.host = &host_buf;
  t.rkey = 9;
  t.qp_count = 4;
  t.qp_base = 12;
  t.rate_cap_Bps = 123456789;
  t.retry_count = 3;
  t.via = 5;
  t.wait_ack = true;
  t.passive = true;
  t.tag = 4242;
  t.width = 64;
  t.spitch = 128;
  t.dpitch = 256;
  t.flops = 1.5e12;
  t.efficiency = 0.37;
  const models::Task u = sim::decode_sqe(sim::encode_sqe(t));
  EXPECT_EQ(u.kind, t.kind);
  EXPECT_EQ(u.src, t.src);
  EXPECT_EQ(u.dst, t.dst);
  EXPECT_EQ(u.bytes, t.bytes);
  EXPECT_EQ(u.dtype, t.dtype);
  EXPECT_EQ(u.op, t.op);
  EXPECT_EQ(u.target, t.target);
  EXPECT_EQ(u.key, t.key);
  EXPECT_EQ(u.value, t.value);
  EXPECT_EQ(u.host, t.host);
  EXPECT_EQ(u.rkey, t.rkey);
  EXPECT_EQ(u.qp_count, t.qp_count);
  EXPECT_EQ(u.qp_base, t.qp_base);
  EXPECT_EQ(u.rate_cap_Bps, t.rate_cap_Bps);
  EXPECT_EQ(u.retry_count, t.retry_count);
  EXPECT_EQ(u.via, t.via);
  EXPECT_EQ(u.wait_ack, t.wait_ack);
  EXPECT_EQ(u.passive, t.passive);
  EXPECT_EQ(u.tag, t.tag);
  EXPECT_EQ(u.width, t.width);
  EXPECT_EQ(u.spitch, t.spitch);
  EXPECT_EQ(u.dpitch, t.dpitch);
  EXPECT_EQ(u.flops, t.flops);
  EXPECT_EQ(u.efficiency, t.efficiency);
}

TEST(NpuTlm, CopySubmittedThroughTheSocketRunsAtTheClosedFormTime) {
  sim::configure_kernel();
  sim::ScScheduler sched("fabric");
  Machine m(sched);
  IdleTimes rec;
  rec.s = &sched;
  m.set_listener(&rec);
  NpuParams p;
  p.hbm.capacity_bytes = 1ULL << 30;
  p.sdma_bandwidth_Bps = 100ULL * 1000 * 1000 * 1000;  // 100 GB/s: the engine is the bottleneck
  p.mmio_latency_ps = 10 * kPsPerNs;
  m.add_npu(p);
  const std::uint32_t st = m.create_stream(0);
  const std::uint64_t bytes = 1 << 20;
  std::vector<std::uint8_t> src(bytes);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 3);
  m.backdoor_write(npu_base_addr(0), src.data(), bytes);

  sim::NpuTlmTarget npu("npu0", m, 0);
  Cpu cpu("cpu");
  cpu.socket.bind(npu.socket);
  cpu.stream = st;
  cpu.task.kind = TaskKind::Copy;
  cpu.task.src = npu_base_addr(0);
  cpu.task.dst = npu_base_addr(0) + (256ULL << 20);
  cpu.task.bytes = bytes;
  sc_core::sc_start();

  // The bytes landed.
  std::vector<std::uint8_t> dst(bytes);
  m.backdoor_read(cpu.task.dst, dst.data(), bytes);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), bytes));
  // Time: doorbell (after the 10 ns descriptor write) + dispatch + SDMA setup + source HBM read
  // latency + bytes at the engine's rate (HBM at 1.6 TB/s shared by read and write is faster) +
  // destination HBM write latency; at most 1 ps of rounding per 256 KiB piece.
  ASSERT_EQ(rec.idle.size(), 1u);
  EXPECT_EQ(cpu.doorbell_at, 10 * kPsPerNs);
  const Tick ser = static_cast<Tick>(std::ceil(static_cast<double>(bytes) * 1e12 / 100e9 - 1e-6));
  const Tick expect = cpu.doorbell_at + p.task_dispatch_ps + p.sdma_setup_ps + p.hbm.access_latency_ps + ser + p.hbm.access_latency_ps;
  EXPECT_GE(rec.idle[0], expect);
  EXPECT_LE(rec.idle[0], expect + bytes / m.piece_bytes());
  // Registers read back through the socket; every transaction carries the MMIO latency.
  EXPECT_EQ(cpu.cq_tail, 1u);
  EXPECT_EQ(cpu.npu_id, 0u);
  ASSERT_EQ(cpu.status.size(), 5u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(cpu.status[i], tlm::TLM_OK_RESPONSE) << i;
  EXPECT_EQ(cpu.status[4], tlm::TLM_ADDRESS_ERROR_RESPONSE);
  for (const auto& d : cpu.delays) EXPECT_EQ(d, sc_core::sc_time(10, sc_core::SC_NS));
}

}  // namespace
