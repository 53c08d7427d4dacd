// The SystemC face of an NPU (docs/architecture.md#models, docs/models/npu.md): its MMIO window
// as a TLM-2.0 target socket, so any SystemC initiator (a CPU model in a virtual platform, a
// test) drives the NPU as the simulated driver does — write a task into a stream's submission
// queue, ring the stream's SQ_TAIL doorbell, read the registers back. The model itself stays
// plain C++ (models/); this adapter is the only SystemC around it.
//
// Window (byte addresses, little endian):
//   [0, kSqeBase)   the register map of models/npu/regmap.h (npu_regs): 8-byte accesses only.
//   kSqeBase + s * kSqeBytes   submission-queue entry of stream s: one task descriptor (SqeWire),
//                   written whole; it runs after the next SQ_TAIL doorbell (Machine::enqueue).
// Every transaction is annotated with the NPU's MMIO latency (NpuParams::mmio_latency_ps); its
// effect on the model happens when b_transport is called (loosely timed).
#pragma once
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "models/machine.h"

namespace sim {

/// A task descriptor as it lies in a submission-queue entry (little endian, kSqeBytes bytes):
/// every field of models::Task (systemc/task_kinds.h counts them), the driver's tag as its low 32 bits.
struct SqeWire {
  std::uint8_t kind, dtype, op;
  std::uint8_t flags;  ///< bit 0: wait_ack, bit 1: passive
  std::uint32_t target;
  std::uint64_t src, dst, bytes, key, value;
  std::uint64_t host;  ///< host buffer address of H2D / D2H (a pointer in the simulator's process)
  std::uint32_t rkey, qp_count;
  std::uint64_t rate_cap_Bps;
  std::uint32_t retry_count, qp_base;
  std::uint32_t via;
  std::int32_t tag;    ///< the driver's tag (an operation's sequence number; -1: none)
  std::uint64_t width, spitch, dpitch;  ///< a 2-D copy's rows
  double flops, efficiency;             ///< Compute
};
static_assert(sizeof(SqeWire) == 128, "one submission-queue entry is 128 bytes");

SqeWire encode_sqe(const models::Task& t);
models::Task decode_sqe(const SqeWire& w);

class NpuTlmTarget : public sc_core::sc_module {
 public:
  static constexpr std::uint64_t kSqeBase = 0x20000000;  ///< above the notify bank
  static constexpr std::uint32_t kSqeBytes = sizeof(SqeWire);

  tlm_utils::simple_target_socket<NpuTlmTarget> socket;

  NpuTlmTarget(sc_core::sc_module_name name, models::Machine& m, std::uint32_t npu);
  /// The annotated delay of every transaction: the NPU's MMIO latency.
  sc_core::sc_time mmio_latency() const;

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  models::Machine& m_;
  std::uint32_t npu_;
};

}  // namespace sim
