// MSI of the NPU (docs/models/npu.md): INT_STATUS bits set by the hardware send an edge-triggered
// message-signalled interrupt msi_latency later, unless masked; messages coalesce in flight.
#include "models/npu/msi.h"

namespace models {

void Msi::raise(std::uint32_t npu, std::uint64_t bits) {
  // Edge-triggered (MSI): bits that become set and are not masked send one message; bits that
  // stay set send nothing more. Messages coalesce while one is in flight.
  RegisterBlock& regs = *lines_[npu].regs;
  std::uint64_t status = 0, mask = 0;
  regs.read(npu_regs::kIntStatus, &status);
  regs.read(npu_regs::kIntMask, &mask);
  regs.hw_set_bits(npu_regs::kIntStatus, bits);
  if ((bits & ~status & ~mask) != 0) signal(npu);
}

void Msi::signal(std::uint32_t npu) {
  Line& n = lines_[npu];
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  if ((status & ~mask) == 0 || n.pending) return;
  n.pending = true;
  sch_.schedule(sch_.now() + n.latency_ps, this, npu, 0);
}

void Msi::on_event(std::uint64_t a, std::uint64_t) {
  const auto npu = static_cast<std::uint32_t>(a);
  Line& n = lines_[npu];
  n.pending = false;
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  if ((status & ~mask) == 0) return;  // cleared (or masked) before it was taken
  ++interrupts_;
  if (listener_) listener_->on_interrupt(npu, status & ~mask);
}

}  // namespace models
