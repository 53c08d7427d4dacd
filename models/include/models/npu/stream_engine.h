// The NPUs' stream task engine (docs/models/npu.md): streams run their tasks strictly in order; a
// task starts task_dispatch after the previous one completed; a failing task fails its stream.
// StreamEngine owns the streams (their queues, doorbells, counters and errors) and each NPU's
// stall and compute time; it dispatches each task to the engine that carries it out (SDMA, the
// notify and event registers, the RDMA engine, the AI cores) and is their TaskHost.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/block_store.h"
#include "models/event_queue.h"
#include "models/npu/machine_listener.h"
#include "models/npu/npu_params.h"
#include "models/npu/task.h"
#include "models/npu/task_host.h"
#include "models/npu/task_queue.h"
#include "models/time.h"

namespace models {

class Msi;
class NotifyRegisters;
class NpuDevices;
class SdmaEngines;

/// The AI-core peak of an NPU for dtype t, operations per second (0: none documented).
double compute_peak(const NpuParams& p, DType t);
/// A compute task's duration on an NPU of parameters p.
Tick compute_ps(const NpuParams& p, const Task& t);

// Ordered by use: what the engine reads on every dispatch and completion (the queue's ring, the
// flags, the counters, the dispatch overhead) in the first two cache lines, one pair of lines at
// 8192 NPUs' worth of streams; what the host side and errors use after.
struct alignas(64) StreamState {
  std::uint32_t npu = 0;
  bool alive = true, busy = false, failed = false;
  TaskQueue q;                     // visible to the engine (doorbell rung)
  Tick dispatch_ps = 0;            // the NPU's task_dispatch_ps (a copy: complete() need not read the NPU)
  std::uint64_t started = 0, completed = 0;
  Tick head_start = 0;             // when the head task was dispatched
  std::uint64_t space_at = ~0ULL;  // on_sq_space once the queue is down to this many tasks
  TaskQueue pending;               // enqueued, doorbell not yet rung
  std::uint64_t rung = 0;
  std::string error;
};

class StreamEngine final : public EventHandler, public TaskHost {
 public:
  StreamEngine(Scheduler& sch, const NpuDevices& devs, NotifyRegisters& notify, SdmaEngines& sdma, RdmaTasks& rdma, Msi& msi)
      : sch_(sch), devs_(devs), notify_(notify), sdma_(sdma), rdma_(rdma), msi_(msi) {}
  void set_listener(MachineListener* l) { listener_ = l; }
  /// Report every completed task to the listener (on_task_done).
  void report_tasks(bool on) { report_tasks_ = on; }
  void add_npu() { npus_.emplace_back(); }
  std::uint64_t tasks() const { return tasks_; }

  // ---- streams ----
  std::uint32_t create(std::uint32_t npu);
  bool valid(std::uint32_t s) const { return s < streams_.size() && streams_[s].alive; }
  std::uint32_t count() const { return static_cast<std::uint32_t>(streams_.size()); }
  void destroy(std::uint32_t s) { streams_[s].alive = false; }
  bool idle(std::uint32_t s) const { return streams_[s].q.empty(); }
  /// Tasks in the submission queue (doorbell rung or not) that the engine has not finished.
  std::uint64_t queued(std::uint32_t s) const { return streams_[s].q.size() + streams_[s].pending.size(); }
  /// Call the listener's on_sq_space once at most `room_at` tasks remain queued (or the stream fails).
  void want_sq_space(std::uint32_t s, std::uint64_t room_at) { streams_[s].space_at = room_at; }
  bool failed(std::uint32_t s) const { return streams_[s].failed; }
  const std::string& error(std::uint32_t s) const { return streams_[s].error; }
  void clear_error(std::uint32_t s) { streams_[s].failed = false; streams_[s].error.clear(); }
  /// Write a task into the stream's submission queue; it becomes visible at the next doorbell.
  void enqueue(std::uint32_t s, const Task& t) { streams_.at(s).pending.push_back(t); }
  /// Tasks submitted so far (what the doorbell must be rung to for all of them to run).
  std::uint64_t submitted(std::uint32_t s) const { return streams_.at(s).rung + streams_.at(s).pending.size(); }
  /// The task at the head of a stream (being executed or waiting) into *out; false when idle.
  bool head(std::uint32_t s, Task* out) const {
    if (streams_[s].q.empty()) return false;
    *out = streams_[s].q.front();
    return true;
  }
  /// Stop a stream (docs/failover.md): its queued tasks are discarded and the one in flight is
  /// orphaned (no more bytes, no completion), without an error; the stream can take new tasks.
  void abort(std::uint32_t s);
  /// Every stream of `npu` with work fails with `why` (the NPU died).
  void crash(std::uint32_t npu, const std::string& why);
  /// The NPU's engine dispatches no task until `until` (tasks already running go on).
  void stall(std::uint32_t npu, Tick until);
  /// AI-core time of the compute tasks NPU npu's streams dispatched so far (their whole durations).
  Tick compute_time(std::uint32_t npu) const { return npus_.at(npu).compute_ps; }

  // ---- the stream's queue registers (MMIO) ----
  /// SQ_TAIL, SQ_HEAD or CQ_TAIL of stream s on `npu` into *v; false when s is not `npu`'s.
  bool queue_reg(std::uint32_t npu, std::uint32_t s, std::uint32_t reg, std::uint64_t* v) const;
  /// The doorbell: SQ_TAIL of stream s on `npu` is written v. False when s is not `npu`'s, or v
  /// moves the tail back or past what was enqueued.
  bool ring(std::uint32_t npu, std::uint32_t s, std::uint64_t v);

  // ---- TaskHost: what SDMA, the notify registers and the RDMA engine ask ----
  std::uint32_t stream_npu(std::uint32_t s) const override { return streams_[s].npu; }
  std::uint64_t stream_epoch(std::uint32_t s) const override { return epochs_[s]; }
  void task_done(std::uint32_t s) override { complete(s); }
  void task_done_at(std::uint32_t s, Tick at) override { sch_.schedule(at, this, ev(kComplete, s), 0); }
  void task_failed(std::uint32_t s, const std::string& why) override { fail(s, why); }

  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kDispatch = 1, kComplete };
  std::uint64_t ev(std::uint64_t type, std::uint32_t s) const { return stream_event::make(type, s, epochs_[s]); }
  void dispatch(std::uint32_t s);
  void complete(std::uint32_t s);
  /// Apply the passive event records (Task::passive) now at the head of stream s: each sets its
  /// event as the task before it completed, without a dispatch of its own.
  void take_marks(std::uint32_t s);
  void fail(std::uint32_t s, const std::string& why);
  void orphan(std::uint32_t s);  ///< fail / abort: empty the queue, orphan the task in flight

  struct Npu {
    Tick stalled_until = 0;  ///< the engine dispatches no task before this
    Tick compute_ps = 0;     ///< AI-core busy time of the compute tasks dispatched so far
  };
  Scheduler& sch_;
  const NpuDevices& devs_;
  NotifyRegisters& notify_;
  SdmaEngines& sdma_;
  RdmaTasks& rdma_;
  Msi& msi_;
  MachineListener* listener_ = nullptr;
  BlockStore<StreamState> streams_;  // growing never moves a stream (references stay valid)
  // Each stream's epoch, bumped when it fails or is aborted: work started before is orphaned.
  // Dense, apart from the streams' records: SDMA pieces and RDMA completions check it on every
  // event, and at 8192 NPUs a read of the stream's record there would miss cache.
  std::vector<std::uint64_t> epochs_;
  std::vector<Npu> npus_;
  std::uint64_t tasks_ = 0;
  bool report_tasks_ = false;
  bool any_stall_ = false;  // some NPU was stalled: only then does a dispatch read its NPU
};

}  // namespace models
