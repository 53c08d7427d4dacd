// MMIO of the NPUs (docs/models/npu.md; the banks as data in models/npu/regmap.h): the fixed
// registers and configuration space, the per-stream queue bank (SQ tail doorbell), the notify
// registers and the HCCS port status. Mmio owns each NPU's register block and how its HCCS ports
// are cabled; it decodes an offset and reads or writes the register where its state is kept (the
// stream engine's queues, the notify registers, the links' live state).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/npu/regmap.h"
#include "models/time.h"

namespace models {

class Links;
class Msi;
class NotifyRegisters;
class StreamEngine;

class Mmio {
 public:
  Mmio(StreamEngine& streams, NotifyRegisters& notify, const Links& links, Msi& msi)
      : streams_(streams), notify_(notify), links_(links), msi_(msi) {}
  /// The next NPU: its register block, and its MSI line (latency msi_latency_ps).
  void add_npu(Tick msi_latency_ps);
  // False for unmapped offsets, read-only registers, or a doorbell value beyond what was enqueued.
  bool read(std::uint32_t npu, std::uint32_t offset, std::uint64_t* value) const;
  bool write(std::uint32_t npu, std::uint32_t offset, std::uint64_t value);
  /// The driver registers the rank descriptor in the configuration space at load (privileged).
  void load_config(std::uint32_t npu, std::uint32_t offset, std::uint64_t value) { regs_.at(npu)->hw_write(offset, value); }
  /// HCCS port `number` of `npu` is the directional port `port` (from `npu`) of an HCCS link;
  /// `port` = kHccsUntrained: the port is cabled but never trained.
  void set_hccs_port(std::uint32_t npu, std::uint32_t number, std::uint32_t port);
  static constexpr std::uint32_t kHccsUntrained = ~0u;

 private:
  std::uint64_t hccs_port_reg_value(std::uint32_t npu, std::uint32_t number, std::uint32_t reg) const;

  StreamEngine& streams_;
  NotifyRegisters& notify_;
  const Links& links_;
  Msi& msi_;
  std::vector<std::unique_ptr<RegisterBlock>> regs_;  // per NPU (stays in place: Msi holds it)
  std::vector<std::vector<int>> hccs_port_;  // per NPU: HCCS port number -> directional port (-1: not cabled)
};

}  // namespace models
