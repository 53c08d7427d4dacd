// MMIO decoding of the NPUs' register map (models/npu/mmio.h, docs/models/npu.md).
#include "models/npu/mmio.h"

#include "models/link/links.h"
#include "models/npu/msi.h"
#include "models/npu/notify.h"
#include "models/npu/stream_engine.h"

namespace models {

void Mmio::add_npu(Tick msi_latency_ps) {
  const auto n = static_cast<std::uint32_t>(regs_.size());
  // Unmasking a bit that is already set signals it (the MSI pending-bit rule).
  regs_.push_back(std::make_unique<RegisterBlock>(npu_regs::layout(), [this, n](std::uint32_t off, std::uint64_t) {
    if (off == npu_regs::kIntMask) msi_.signal(n);
  }));
  regs_.back()->hw_write(npu_regs::kNpuId, n);
  msi_.add_npu(regs_.back().get(), msi_latency_ps);
}

bool Mmio::read(std::uint32_t npu, std::uint32_t off, std::uint64_t* v) const {
  if (npu >= regs_.size() || !v) return false;
  const npu_regs::Slot slot = npu_regs::decode(off);
  switch (slot.kind) {
    case npu_regs::Slot::Unmapped: return false;
    case npu_regs::Slot::Notify: {
      std::int64_t count = 0;
      if (!notify_.exists(npu, slot.index)) return false;
      *v = notify_.bound(npu, slot.index, &count, nullptr) ? static_cast<std::uint64_t>(count) : 0;
      return true;
    }
    case npu_regs::Slot::Fixed:
      // NOTIFY_IN_USE is the count of bound notify registers, read where it is kept (a stored
      // copy cost two register-block writes per notify bound and released).
      if (off == npu_regs::kNotifyInUse) { *v = notify_.in_use(npu); return true; }
      return regs_[npu]->read(off, v);
    case npu_regs::Slot::HccsPort: *v = hccs_port_reg_value(npu, slot.index, slot.reg); return true;
    case npu_regs::Slot::Stream: break;
  }
  return streams_.queue_reg(npu, slot.index, slot.reg, v);
}

bool Mmio::write(std::uint32_t npu, std::uint32_t off, std::uint64_t v) {
  if (npu >= regs_.size()) return false;
  const npu_regs::Slot slot = npu_regs::decode(off);
  switch (slot.kind) {
    case npu_regs::Slot::Unmapped: return false;
    case npu_regs::Slot::Notify: {  // a notify record by MMIO: v records
      std::uint64_t key = 0;
      if (!notify_.bound(npu, slot.index, nullptr, &key) || v == 0 || v > (1u << 20)) return false;
      for (std::uint64_t i = 0; i < v; ++i) notify_.record(npu, key);  // a wake-up may release the register
      return true;
    }
    case npu_regs::Slot::Fixed: return regs_[npu]->write(off, v);
    case npu_regs::Slot::HccsPort: return false;  // read-only
    case npu_regs::Slot::Stream: break;
  }
  if (slot.reg != npu_regs::kSqTail) return false;  // SQ_HEAD, CQ_TAIL: RO
  return streams_.ring(npu, slot.index, v);  // the doorbell
}

void Mmio::set_hccs_port(std::uint32_t npu, std::uint32_t number, std::uint32_t port) {
  if (npu >= regs_.size() || number >= npu_regs::kHccsPorts || (port != kHccsUntrained && port >= links_.ports().size())) return;
  if (hccs_port_.size() < regs_.size()) hccs_port_.resize(regs_.size());
  auto& slots = hccs_port_[npu];
  if (slots.size() <= number) slots.resize(number + 1, -1);
  slots[number] = port == kHccsUntrained ? -2 : static_cast<int>(port);
}

// HCCS port status as link training leaves it: a port is up when both directions are; the
// partner's identity is what its configuration space says (device id, server), learnt in training.
std::uint64_t Mmio::hccs_port_reg_value(std::uint32_t npu, std::uint32_t number, std::uint32_t reg) const {
  if (npu >= hccs_port_.size() || number >= hccs_port_[npu].size() || hccs_port_[npu][number] == -1) return 0;
  if (hccs_port_[npu][number] == -2) return reg == npu_regs::kHccsPortStatus ? 1 : 0;  // cabled, never trained
  const Port& p = links_.port(static_cast<std::size_t>(hccs_port_[npu][number]));
  const LinkInfo& l = links_.link(p.link);
  const bool up = links_.port(l.port_ab).up && links_.port(l.port_ba).up;
  if (reg == npu_regs::kHccsPortStatus) {
    const std::uint64_t mbps = up ? p.rate() / 1000000 : 0;
    return 1u | (up ? 2u : 0u) | (static_cast<std::uint64_t>(up ? p.active_lanes & 0xff : 0) << 8) | (mbps << 32);
  }
  if (!up || p.to >= regs_.size()) return 0;
  std::uint64_t dev = 0, server = 0;
  regs_[p.to]->read(npu_regs::kCfgDeviceId, &dev);
  regs_[p.to]->read(npu_regs::kCfgServer, &server);
  return (dev & 0xffffffffu) | (server << 32);
}

}  // namespace models
