// MSI of the NPUs (docs/models/npu.md): INT_STATUS bits set by the hardware send an edge-triggered
// message-signalled interrupt msi_latency later, unless masked; messages coalesce in flight. Msi
// owns the in-flight state and the count of interrupts taken; it reads and sets the INT_STATUS and
// INT_MASK registers of each NPU's register block (owned with the NPU's state) and reports taken
// interrupts to the listener.
#pragma once
#include <cstdint>
#include <vector>

#include "models/event_queue.h"
#include "models/npu/machine_listener.h"
#include "models/npu/regmap.h"
#include "models/time.h"

namespace models {

class Msi final : public EventHandler {
 public:
  explicit Msi(Scheduler& sch) : sch_(sch) {}
  void set_listener(MachineListener* l) { listener_ = l; }
  /// The next NPU: its register block (stays in place while the NPU exists) and MSI latency.
  void add_npu(RegisterBlock* regs, Tick latency_ps) { lines_.push_back(Line{regs, latency_ps, false}); }
  /// Hardware sets INT_STATUS bits of `npu`; newly set unmasked ones send an MSI after msi_latency.
  void raise(std::uint32_t npu, std::uint64_t bits);
  /// Send an MSI if unmasked status bits are set and none is in flight (also on unmasking).
  void signal(std::uint32_t npu);
  std::uint64_t interrupts() const { return interrupts_; }
  /// The MSI of NPU `a` arrives.
  void on_event(std::uint64_t a, std::uint64_t b) override;

 private:
  struct Line {
    RegisterBlock* regs;
    Tick latency_ps;
    bool pending;  // a message in flight
  };
  Scheduler& sch_;
  MachineListener* listener_ = nullptr;
  std::vector<Line> lines_;  // per NPU
  std::uint64_t interrupts_ = 0;
};

}  // namespace models
