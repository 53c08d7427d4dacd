// Register maps as data (docs/models/npu.md, docs/architecture.md#models): one table of registers with generic access semantics,
// reached by MMIO reads and writes. RW: read/write; RO: reads only (writes are ignored and
// counted); W1C: writing 1 clears that bit (hardware sets bits); WO: a write-only doorbell whose
// value is kept readable. Hardware-side updates bypass the access rules (hw_write).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace models {

enum class RegAccess : std::uint8_t { RW, RO, W1C, Doorbell };

struct RegDef {
  const char* name;
  std::uint32_t offset;     ///< bytes from the block's base; 8-byte registers
  RegAccess access;
  std::uint64_t reset;
  const char* doc;
};

/// A register table with its offset index: shared by every block of that kind (one per NPU), so
/// a block holds only its values and an MMIO access touches no per-NPU copy of the table.
struct RegLayout {
  explicit RegLayout(std::vector<RegDef> d);
  std::vector<RegDef> defs;
  std::vector<std::int16_t> by_slot;  ///< offset / 8 -> index in defs, -1 unmapped (8-byte aligned offsets)
  int index(std::uint32_t offset) const;
};

class RegisterBlock {
 public:
  /// `on_write(offset, value)` runs after an accepted software write (doorbells act through it).
  RegisterBlock(std::vector<RegDef> defs, std::function<void(std::uint32_t, std::uint64_t)> on_write = {});
  RegisterBlock(std::shared_ptr<const RegLayout> layout, std::function<void(std::uint32_t, std::uint64_t)> on_write = {});
  /// MMIO read; false for an unmapped offset.
  bool read(std::uint32_t offset, std::uint64_t* value) const;
  /// MMIO write with the register's semantics; false for unmapped or read-only registers.
  bool write(std::uint32_t offset, std::uint64_t value);
  /// Hardware-side update (status bits, counters, configuration loaded by the driver).
  void hw_write(std::uint32_t offset, std::uint64_t value);
  void hw_set_bits(std::uint32_t offset, std::uint64_t bits);
  const std::vector<RegDef>& defs() const { return layout_->defs; }
  std::uint64_t ignored_writes() const { return ignored_; }

 private:
  int index(std::uint32_t offset) const { return layout_->index(offset); }
  std::shared_ptr<const RegLayout> layout_;
  std::vector<std::uint64_t> val_;
  std::function<void(std::uint32_t, std::uint64_t)> on_write_;
  std::uint64_t ignored_ = 0;
};

/// The Ascend NPU's register map (per NPU). Offsets in the NPU's MMIO window.
namespace npu_regs {
constexpr std::uint32_t kNpuId = 0x000;          ///< RO: NPU index
constexpr std::uint32_t kIntStatus = 0x008;      ///< W1C: bit 0 task error, bit 1 link event, bit 2 notify overflow
constexpr std::uint32_t kIntMask = 0x010;        ///< RW
// Configuration space: the rank descriptor the driver registers at load (RO to software).
constexpr std::uint32_t kCfgHostIp = 0x100;      ///< RO: host IPv4
constexpr std::uint32_t kCfgBaseAddr = 0x108;    ///< RO: device_base_addr
constexpr std::uint32_t kCfgHccsPortMap = 0x110; ///< RO: hccs_port_map (4 bytes, little endian)
constexpr std::uint32_t kCfgDeviceId = 0x118;    ///< RO: device id inside the server
constexpr std::uint32_t kCfgServer = 0x120;      ///< RO: server index
constexpr std::uint32_t kCfgRank = 0x128;        ///< RO: rank
constexpr std::uint32_t kCfgPcieSwitch = 0x130;  ///< RO: PCIe switch the NPU sits under (config space), id + 1; 0: root complex
// HCCS port status (docs/models/npu.md#hccs-ports, docs/discovery.md): one group of 0x10 bytes per
// HCCS port number (= the device id the description cables it to) from kHccsPortBase, computed
// at read time from the port's live state and what link training learnt of its partner.
constexpr std::uint32_t kHccsPortBase = 0x200;
constexpr std::uint32_t kHccsPortStride = 0x10;
constexpr std::uint32_t kHccsPorts = 16;
constexpr std::uint32_t kHccsPortStatus = 0x0;   ///< RO: bit 0 cabled, bit 1 up, bits 8-15 active lanes, bits 32-63 rate MB/s
constexpr std::uint32_t kHccsPortPartner = 0x8;  ///< RO: bits 0-31 partner's device id, bits 32-63 partner's server (0 when down)
inline std::uint32_t hccs_port_reg(std::uint32_t port, std::uint32_t reg) { return kHccsPortBase + port * kHccsPortStride + reg; }
// Per-stream queue registers: bank of 0x20 bytes per stream id from kStreamBase.
constexpr std::uint32_t kStreamBase = 0x10000;   ///< streams up to (kNotifyBase - kStreamBase) / 0x20
constexpr std::uint32_t kSqTail = 0x00;          ///< doorbell: tasks submitted so far
constexpr std::uint32_t kSqHead = 0x08;          ///< RO: tasks the engine has started
constexpr std::uint32_t kCqTail = 0x10;          ///< RO: tasks completed
inline std::uint32_t stream_reg(std::uint32_t stream, std::uint32_t reg) { return kStreamBase + stream * 0x20 + reg; }
// Notify registers: 8 bytes each from kNotifyBase. Read: the count of records not yet consumed by
// a wait. Write v: record v times (wakes waiting streams). Registers not bound to a notify read 0
// and reject writes.
constexpr std::uint32_t kNotifyBase = 0x10000000;
inline std::uint32_t notify_reg(std::uint32_t index) { return kNotifyBase + index * 8; }
constexpr std::uint32_t kNotifyInUse = 0x030;     ///< RO: notify registers bound now
std::vector<RegDef> table();  ///< the fixed registers below kStreamBase
std::shared_ptr<const RegLayout> layout();  ///< table() with its index, built once and shared

/// A bank of identical register groups, one group per index: base + index * stride + reg.
struct Bank {
  const char* name;
  std::uint32_t base, stride;
  std::vector<RegDef> regs;  ///< the registers of one group, offsets relative to the group
};
const Bank& stream_bank();  ///< per stream id: SQ_TAIL (doorbell), SQ_HEAD (RO), CQ_TAIL (RO)
const Bank& notify_bank();  ///< per notify register index: NOTIFY (read: count; write v: record v times)
const Bank& hccs_port_bank();  ///< per HCCS port number: HCCS_PORT_STATUS, HCCS_PORT_PARTNER (RO)

/// Where an MMIO offset lands: a fixed register, a stream's group, or a notify register.
struct Slot {
  enum Kind : std::uint8_t { Fixed, Stream, Notify, Unmapped, HccsPort } kind;
  std::uint32_t index = 0;  ///< stream id, notify register index or HCCS port number
  std::uint32_t reg = 0;    ///< offset inside the group (Stream, HccsPort)
};
Slot decode(std::uint32_t offset);
}  // namespace npu_regs

}  // namespace models
