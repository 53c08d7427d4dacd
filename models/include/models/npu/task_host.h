// Between the stream engine and the engines that carry out its tasks (docs/models/npu.md):
// TaskHost, what SDMA and the notify registers ask of the stream engine (the stream's NPU and
// epoch, ending or failing the task at its head); RdmaTasks, what the stream engine asks of the
// NIC's RDMA engine.
#pragma once
#include <cstdint>
#include <string>

#include "models/npu/task.h"
#include "models/time.h"

namespace models {

class TaskHost {
 public:
  virtual std::uint32_t stream_npu(std::uint32_t s) const = 0;
  /// Bumped when the stream fails or is aborted: work started before it is orphaned.
  virtual std::uint64_t stream_epoch(std::uint32_t s) const = 0;
  /// The stream's head task is done now.
  virtual void task_done(std::uint32_t s) = 0;
  /// The stream's head task is done at `at` (> now), unless the stream fails before.
  virtual void task_done_at(std::uint32_t s, Tick at) = 0;
  virtual void task_failed(std::uint32_t s, const std::string& why) = 0;

 protected:
  ~TaskHost() = default;
};

/// The RDMA tasks a stream dispatches, as the NIC's RDMA engine carries them out (implemented by
/// models::RdmaEngine; the npu room does not include the nic room).
class RdmaTasks {
 public:
  /// An RdmaWrite task at the head of stream s starts.
  virtual void start_write(std::uint32_t s, const Task& t) = 0;
  /// An RdmaFence task at the head of stream s: it ends when the stream's writes are acknowledged.
  virtual void fence(std::uint32_t s) = 0;
  /// Stream s of `npu` failed or was aborted: it no longer waits on a fence.
  virtual void drop_fence(std::uint32_t npu, std::uint32_t s) = 0;

 protected:
  ~RdmaTasks() = default;
};

/// Stream-scoped events carry the low 24 bits of the stream's epoch: stale ones (the stream
/// failed since they were scheduled) are dropped by their handler. Layout of the event word:
/// bits 0-7 the type, 8-39 the stream, 40-63 the epoch.
namespace stream_event {
constexpr std::uint64_t kEpochMask = 0xffffff;
constexpr std::uint64_t make(std::uint64_t type, std::uint32_t s, std::uint64_t epoch) {
  return type | (static_cast<std::uint64_t>(s) << 8) | ((epoch & kEpochMask) << 40);
}
constexpr std::uint64_t type(std::uint64_t a) { return a & 0xff; }
constexpr std::uint32_t stream(std::uint64_t a) { return static_cast<std::uint32_t>(a >> 8); }
/// The event was scheduled in the stream's current epoch.
constexpr bool current(std::uint64_t a, std::uint64_t epoch) { return ((a >> 40) & kEpochMask) == (epoch & kEpochMask); }
}  // namespace stream_event

}  // namespace models
