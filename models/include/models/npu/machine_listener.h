// What the NPUs of a Machine report to the simulator (docs/models/npu.md).
#pragma once
#include <cstdint>
#include <string>

#include "models/npu/task.h"
#include "models/time.h"

namespace models {

class MachineListener {
 public:
  virtual ~MachineListener() = default;
  virtual void on_stream_idle(std::uint32_t stream) = 0;
  virtual void on_marker(std::uint32_t npu, std::uint32_t stream, std::uint64_t key, Tick t) = 0;
  virtual void on_task_error(std::uint32_t stream, const std::string& why) = 0;
  /// Stream `stream`'s submission queue has room again (after Machine::want_sq_space).
  virtual void on_sq_space(std::uint32_t stream) {}
  /// A link changed state (down/up, lanes, error rate): reported to both ends.
  virtual void on_link_event(std::uint32_t link, const std::string& what) {}
  /// An MSI from `npu`: INT_STATUS has unmasked bits set (`pending`); the handler reads and clears
  /// them by MMIO (write 1 to clear). A bit raises an interrupt when it becomes set while
  /// unmasked, or when it is unmasked while set.
  virtual void on_interrupt(std::uint32_t npu, std::uint64_t pending) {}
  /// A task of `stream` completed: dispatched at `start`, done at `end` (Machine::report_tasks).
  virtual void on_task_done(std::uint32_t stream, const Task& t, Tick start, Tick end) {}
};

}  // namespace models
