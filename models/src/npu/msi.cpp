// MSI of the NPU (docs/models/npu.md): INT_STATUS bits set by the hardware send an edge-triggered
// message-signalled interrupt msi_latency later, unless masked; messages coalesce in flight.
#include "models/machine.h"

namespace models {

void Machine::raise(std::uint32_t npu, std::uint64_t bits) {
  // Edge-triggered (MSI): bits that become set and are not masked send one message; bits that
  // stay set send nothing more. Messages coalesce while one is in flight.
  NpuState& n = npus_[npu];
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  n.regs->hw_set_bits(npu_regs::kIntStatus, bits);
  if ((bits & ~status & ~mask) != 0) signal(npu);
}

void Machine::signal(std::uint32_t npu) {
  NpuState& n = npus_[npu];
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  if ((status & ~mask) == 0 || n.msi_pending) return;
  n.msi_pending = true;
  sch_.schedule(sch_.now() + n.params.msi_latency_ps, this, ev(kInterrupt, npu), 0);
}

void Machine::take_interrupt(std::uint32_t npu) {
  NpuState& n = npus_[npu];
  n.msi_pending = false;
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  if ((status & ~mask) == 0) return;  // cleared (or masked) before it was taken
  ++interrupts_;
  if (listener_) listener_->on_interrupt(npu, status & ~mask);
}

}  // namespace models
