// MMIO decoding of the NPU's register map (docs/models/npu.md; the banks as data in
// models/npu/regmap.h): fixed registers, the per-stream queue bank (SQ tail doorbell), notify
// registers.
#include "models/machine.h"

namespace models {

bool Machine::mmio_read(std::uint32_t npu, std::uint32_t off, std::uint64_t* v) const {
  if (npu >= npus_.size() || !v) return false;
  const npu_regs::Slot slot = npu_regs::decode(off);
  switch (slot.kind) {
    case npu_regs::Slot::Unmapped: return false;
    case npu_regs::Slot::Notify: {
      const std::uint32_t r = slot.index;
      if (r >= npus_[npu].params.notify_regs) return false;
      *v = r < npus_[npu].nregs.size() && npus_[npu].nregs[r].bound ? static_cast<std::uint64_t>(npus_[npu].nregs[r].count) : 0;
      return true;
    }
    case npu_regs::Slot::Fixed:
      // NOTIFY_IN_USE is the count of bound notify registers, read where it is kept (a stored
      // copy cost two register-block writes per notify bound and released).
      if (off == npu_regs::kNotifyInUse) { *v = npus_[npu].nkey.size(); return true; }
      return npus_[npu].regs->read(off, v);
    case npu_regs::Slot::HccsPort: *v = hccs_port_reg_value(npu, slot.index, slot.reg); return true;
    case npu_regs::Slot::Stream: break;
  }
  const std::uint32_t s = slot.index, reg = slot.reg;
  if (s >= streams_.size() || streams_[s].npu != npu) return false;
  const auto& st = streams_[s];
  switch (reg) {
    case npu_regs::kSqTail: *v = st.rung; return true;
    case npu_regs::kSqHead: *v = st.started; return true;
    case npu_regs::kCqTail: *v = st.completed; return true;
    default: return false;
  }
}

bool Machine::mmio_write(std::uint32_t npu, std::uint32_t off, std::uint64_t v) {
  if (npu >= npus_.size()) return false;
  const npu_regs::Slot slot = npu_regs::decode(off);
  switch (slot.kind) {
    case npu_regs::Slot::Unmapped: return false;
    case npu_regs::Slot::Notify: {  // a notify record by MMIO: v records
      const std::uint32_t r = slot.index;
      if (r >= npus_[npu].nregs.size() || !npus_[npu].nregs[r].bound || v == 0 || v > (1u << 20)) return false;
      const std::uint64_t key = npus_[npu].nregs[r].key;
      for (std::uint64_t i = 0; i < v; ++i) notify_record(npu, key);  // a wake-up may release the register
      return true;
    }
    case npu_regs::Slot::Fixed: return npus_[npu].regs->write(off, v);
    case npu_regs::Slot::HccsPort: return false;  // read-only
    case npu_regs::Slot::Stream: break;
  }
  const std::uint32_t s = slot.index, reg = slot.reg;
  if (s >= streams_.size() || streams_[s].npu != npu || reg != npu_regs::kSqTail) return false;  // SQ_HEAD, CQ_TAIL: RO
  auto& st = streams_[s];
  // Doorbell: the new tail may not pass what was enqueued, nor move back.
  if (v < st.rung || v > st.rung + st.pending.size()) return false;
  for (; st.rung < v; ++st.rung) {
    if (st.failed) st.pending.pop_front();  // a failed stream drops work until the error is cleared
    else st.pending.move_front_to(st.q);
  }
  if (!st.busy) take_marks(s);  // an idle engine writes progress marks at once
  if (!st.busy && !st.q.empty()) {
    st.busy = true;
    sch_.schedule(sch_.now() + st.dispatch_ps, this, stream_ev(kDispatch, s), 0);
  }
  return true;
}

void Machine::set_hccs_port(std::uint32_t npu, std::uint32_t number, std::uint32_t port) {
  if (npu >= npus_.size() || number >= npu_regs::kHccsPorts || (port != kHccsUntrained && port >= links_.ports().size())) return;
  if (hccs_port_.size() < npus_.size()) hccs_port_.resize(npus_.size());
  auto& slots = hccs_port_[npu];
  if (slots.size() <= number) slots.resize(number + 1, -1);
  slots[number] = port == kHccsUntrained ? -2 : static_cast<int>(port);
}

// HCCS port status as link training leaves it: a port is up when both directions are; the
// partner's identity is what its configuration space says (device id, server), learnt in training.
std::uint64_t Machine::hccs_port_reg_value(std::uint32_t npu, std::uint32_t number, std::uint32_t reg) const {
  if (npu >= hccs_port_.size() || number >= hccs_port_[npu].size() || hccs_port_[npu][number] == -1) return 0;
  if (hccs_port_[npu][number] == -2) return reg == npu_regs::kHccsPortStatus ? 1 : 0;  // cabled, never trained
  const Port& p = links_.port(static_cast<std::size_t>(hccs_port_[npu][number]));
  const LinkInfo& l = links_.link(p.link);
  const bool up = links_.port(l.port_ab).up && links_.port(l.port_ba).up;
  if (reg == npu_regs::kHccsPortStatus) {
    const std::uint64_t mbps = up ? p.rate() / 1000000 : 0;
    return 1u | (up ? 2u : 0u) | (static_cast<std::uint64_t>(up ? p.active_lanes & 0xff : 0) << 8) | (mbps << 32);
  }
  if (!up || p.to >= npus_.size()) return 0;
  std::uint64_t dev = 0, server = 0;
  npus_[p.to].regs->read(npu_regs::kCfgDeviceId, &dev);
  npus_[p.to].regs->read(npu_regs::kCfgServer, &server);
  return (dev & 0xffffffffu) | (server << 32);
}

void Machine::load_config(std::uint32_t npu, std::uint32_t off, std::uint64_t v) { npus_.at(npu).regs->hw_write(off, v); }

}  // namespace models
