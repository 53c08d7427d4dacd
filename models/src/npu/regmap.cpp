#include "models/npu/regmap.h"

namespace models {

RegLayout::RegLayout(std::vector<RegDef> d) : defs(std::move(d)) {
  for (std::size_t i = 0; i < defs.size(); ++i) {
    const std::uint32_t o = defs[i].offset;
    if (o % 8 || o / 8 >= 4096) { by_slot.clear(); return; }  // no dense index: index() scans
    if (by_slot.size() <= o / 8) by_slot.resize(o / 8 + 1, -1);
    if (by_slot[o / 8] < 0) by_slot[o / 8] = static_cast<std::int16_t>(i);  // the first definition wins, as in a scan
  }
}

int RegLayout::index(std::uint32_t offset) const {
  if (!by_slot.empty()) {
    if (offset % 8 || offset / 8 >= by_slot.size()) return -1;
    return by_slot[offset / 8];
  }
  for (std::size_t i = 0; i < defs.size(); ++i)
    if (defs[i].offset == offset) return static_cast<int>(i);
  return -1;
}

RegisterBlock::RegisterBlock(std::vector<RegDef> defs, std::function<void(std::uint32_t, std::uint64_t)> on_write)
    : RegisterBlock(std::make_shared<const RegLayout>(std::move(defs)), std::move(on_write)) {}

RegisterBlock::RegisterBlock(std::shared_ptr<const RegLayout> layout, std::function<void(std::uint32_t, std::uint64_t)> on_write)
    : layout_(std::move(layout)), on_write_(std::move(on_write)) {
  for (const auto& d : layout_->defs) val_.push_back(d.reset);
}

bool RegisterBlock::read(std::uint32_t offset, std::uint64_t* value) const {
  int i = index(offset);
  if (i < 0) return false;
  *value = val_[i];
  return true;
}

bool RegisterBlock::write(std::uint32_t offset, std::uint64_t value) {
  int i = index(offset);
  if (i < 0) { ++ignored_; return false; }
  switch (layout_->defs[i].access) {
    case RegAccess::RO: ++ignored_; return false;
    case RegAccess::RW: case RegAccess::Doorbell: val_[i] = value; break;
    case RegAccess::W1C: val_[i] &= ~value; break;
  }
  if (on_write_) on_write_(offset, value);
  return true;
}

void RegisterBlock::hw_write(std::uint32_t offset, std::uint64_t value) {
  int i = index(offset);
  if (i >= 0) val_[i] = value;
}

void RegisterBlock::hw_set_bits(std::uint32_t offset, std::uint64_t bits) {
  int i = index(offset);
  if (i >= 0) val_[i] |= bits;
}

namespace npu_regs {
std::shared_ptr<const RegLayout> layout() {
  static const std::shared_ptr<const RegLayout> l = std::make_shared<const RegLayout>(table());
  return l;
}

std::vector<RegDef> table() {
  return {
      {"NPU_ID", kNpuId, RegAccess::RO, 0, "NPU index in the cluster"},
      {"INT_STATUS", kIntStatus, RegAccess::W1C, 0, "bit 0: a stream task failed; bit 1: a link changed state; bit 2: a notify record found no free notify register"},
      {"INT_MASK", kIntMask, RegAccess::RW, 0, "interrupt mask"},
      {"NOTIFY_IN_USE", kNotifyInUse, RegAccess::RO, 0, "notify registers bound to a notify now"},
      {"CFG_HOST_IP", kCfgHostIp, RegAccess::RO, 0, "rank descriptor: host IPv4"},
      {"CFG_DEVICE_BASE_ADDR", kCfgBaseAddr, RegAccess::RO, 0, "rank descriptor: HBM base in the device address space"},
      {"CFG_HCCS_PORT_MAP", kCfgHccsPortMap, RegAccess::RO, 0, "rank descriptor: HCCS port bitmap (bit i: link to device id i)"},
      {"CFG_DEVICE_ID", kCfgDeviceId, RegAccess::RO, 0, "device id inside the server"},
      {"CFG_SERVER", kCfgServer, RegAccess::RO, 0, "server index"},
      {"CFG_RANK", kCfgRank, RegAccess::RO, 0, "rank"},
      {"CFG_PCIE_SWITCH", kCfgPcieSwitch, RegAccess::RO, 0, "PCIe switch the NPU sits under, id + 1 (0: directly under the root complex)"},
  };
}

const Bank& stream_bank() {
  static const Bank b{"STREAM", kStreamBase, 0x20,
                      {{"SQ_TAIL", kSqTail, RegAccess::Doorbell, 0, "tasks submitted on the stream (doorbell)"},
                       {"SQ_HEAD", kSqHead, RegAccess::RO, 0, "tasks the engine has started"},
                       {"CQ_TAIL", kCqTail, RegAccess::RO, 0, "tasks completed"}}};
  return b;
}

const Bank& notify_bank() {
  static const Bank b{"NOTIFY", kNotifyBase, 8,
                      {{"NOTIFY", 0, RegAccess::RW, 0, "read: records not consumed by a wait; write v: record v times"}}};
  return b;
}

const Bank& hccs_port_bank() {
  static const Bank b{"HCCS_PORT", kHccsPortBase, kHccsPortStride,
                      {{"HCCS_PORT_STATUS", kHccsPortStatus, RegAccess::RO, 0, "bit 0 cabled, bit 1 up, bits 8-15 active lanes, bits 32-63 rate in MB/s"},
                       {"HCCS_PORT_PARTNER", kHccsPortPartner, RegAccess::RO, 0, "link partner learnt in training: bits 0-31 device id, 32-63 server"}}};
  return b;
}

Slot decode(std::uint32_t off) {
  if (off >= kHccsPortBase && off < kHccsPortBase + kHccsPorts * kHccsPortStride) {
    const std::uint32_t r = (off - kHccsPortBase) % kHccsPortStride;
    if (r != kHccsPortStatus && r != kHccsPortPartner) return Slot{Slot::Unmapped};
    return Slot{Slot::HccsPort, (off - kHccsPortBase) / kHccsPortStride, r};
  }
  const Bank& n = notify_bank();
  if (off >= n.base) {
    if ((off - n.base) % n.stride) return Slot{Slot::Unmapped};
    return Slot{Slot::Notify, (off - n.base) / n.stride, 0};
  }
  const Bank& s = stream_bank();
  if (off < s.base) return Slot{Slot::Fixed};
  return Slot{Slot::Stream, (off - s.base) / s.stride, (off - s.base) % s.stride};
}
}  // namespace npu_regs

}  // namespace models
