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
    case npu_regs::Slot::Fixed: return npus_[npu].regs->read(off, v);
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
    case npu_regs::Slot::Stream: break;
  }
  const std::uint32_t s = slot.index, reg = slot.reg;
  if (s >= streams_.size() || streams_[s].npu != npu || reg != npu_regs::kSqTail) return false;  // SQ_HEAD, CQ_TAIL: RO
  auto& st = streams_[s];
  // Doorbell: the new tail may not pass what was enqueued, nor move back.
  if (v < st.rung || v > st.rung + st.pending.size()) return false;
  for (; st.rung < v; ++st.rung) {
    Task t = std::move(st.pending.front());
    st.pending.pop_front();
    if (!st.failed) st.q.push_back(std::move(t));  // a failed stream drops work until the error is cleared
  }
  if (!st.busy && !st.q.empty()) {
    st.busy = true;
    sch_.schedule(sch_.now() + npus_[st.npu].params.task_dispatch_ps, this, stream_ev(kDispatch, s), 0);
  }
  return true;
}

void Machine::load_config(std::uint32_t npu, std::uint32_t off, std::uint64_t v) { npus_.at(npu).regs->hw_write(off, v); }

}  // namespace models
