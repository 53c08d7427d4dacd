// The NPUs' stream task engine (models/npu/stream_engine.h, docs/models/npu.md).
#include "models/npu/stream_engine.h"

#include <algorithm>
#include <cmath>

#include "models/npu/msi.h"
#include "models/npu/notify.h"
#include "models/npu/npu_devices.h"
#include "models/npu/regmap.h"
#include "models/npu/sdma.h"

namespace models {

// The `tasks` row's kind (docs/trace-schema.md): a kind without a name here fails to compile.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
const char* task_kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::Copy: return "copy";
    case TaskKind::ReduceCopy: return "reduce_copy";
    case TaskKind::NotifyRecord: return "notify_record";
    case TaskKind::NotifyWait: return "notify_wait";
    case TaskKind::EventRecord: return "event_record";
    case TaskKind::EventWait: return "event_wait";
    case TaskKind::HostToDevice: return "h2d";
    case TaskKind::DeviceToHost: return "d2h";
    case TaskKind::Marker: return "marker";
    case TaskKind::RdmaWrite: return "rdma_write";
    case TaskKind::RdmaFence: return "rdma_fence";
    case TaskKind::Compute: return "compute";
  }
  return "?";
}
#pragma GCC diagnostic pop

std::uint32_t StreamEngine::create(std::uint32_t npu) {
  npus_.at(npu);
  StreamState st;
  st.npu = npu;
  st.dispatch_ps = devs_.params(npu).task_dispatch_ps;
  streams_.emplace_back() = std::move(st);
  epochs_.push_back(0);
  return static_cast<std::uint32_t>(streams_.size() - 1);
}

void StreamEngine::stall(std::uint32_t npu, Tick until) {
  auto& n = npus_.at(npu);
  n.stalled_until = std::max(n.stalled_until, until);
  any_stall_ = true;
}

void StreamEngine::dispatch(std::uint32_t s) {
  auto& st = streams_[s];
  if (st.q.empty()) { st.busy = false; return; }
  if (any_stall_ && sch_.now() < npus_[st.npu].stalled_until) {  // npu_stall: dispatch once the engine runs again
    sch_.schedule(npus_[st.npu].stalled_until, this, ev(kDispatch, s), 0);
    return;
  }
  const Task t = st.q.front();
  ++tasks_;
  ++st.started;
  st.head_start = sch_.now();
  switch (t.kind) {
    case TaskKind::Copy:
    case TaskKind::ReduceCopy:
    case TaskKind::HostToDevice:
    case TaskKind::DeviceToHost:
      sdma_.start(s, t);
      return;
    case TaskKind::NotifyRecord: notify_.record_task(s, t); return;
    case TaskKind::NotifyWait: notify_.wait_task(s, t); return;
    case TaskKind::EventRecord: notify_.event_record_task(s, t); return;
    case TaskKind::EventWait: notify_.event_wait_task(s, t); return;
    case TaskKind::Marker:
      if (listener_) listener_->on_marker(st.npu, s, t.key, sch_.now());
      complete(s);
      return;
    case TaskKind::RdmaWrite:
      rdma_.start_write(s, t);
      return;
    case TaskKind::RdmaFence:
      rdma_.fence(s);
      return;
    case TaskKind::Compute: {
      const Tick d = compute_ps(devs_.params(st.npu), t);
      npus_[st.npu].compute_ps += d;
      sch_.schedule(sch_.now() + d, this, ev(kComplete, s), 0);
      return;
    }
  }
}

double compute_peak(const NpuParams& p, DType t) {
  switch (t) {
    case DType::Fp16: return p.peak_fp16_flops;
    case DType::Bf16: return p.peak_bf16_flops;
    case DType::Fp32: return p.peak_fp32_flops;
    case DType::Int8: return p.peak_int8_ops;
    default: return 0;
  }
}

// A compute task's duration: `value` ns, or flops / (peak x efficiency) rounded to the ps. Only
// the AI cores are busy: the HBM traffic of the work is not modelled (it does not slow SDMA).
Tick compute_ps(const NpuParams& p, const Task& t) {
  if (t.flops <= 0) return t.value * kPsPerNs;
  const double peak = compute_peak(p, t.dtype);
  if (peak <= 0 || !(t.efficiency > 0)) return 0;  // refused at submission (StreamEngine::compute_valid)
  return static_cast<Tick>(std::llround(t.flops / (peak * t.efficiency) * 1e12));
}

void StreamEngine::complete(std::uint32_t s) {
  auto& st = streams_[s];
  if (report_tasks_ && listener_) listener_->on_task_done(s, st.q.front(), st.head_start, sch_.now());
  st.q.pop_front();
  ++st.completed;
  take_marks(s);
  if (st.space_at != ~0ULL && st.q.size() + st.pending.size() <= st.space_at) {
    st.space_at = ~0ULL;
    if (listener_) listener_->on_sq_space(s);
  }
  if (st.q.empty()) {
    st.busy = false;
    if (listener_) listener_->on_stream_idle(s);
  } else {
    __builtin_prefetch(st.q.front_entry());  // read at the dispatch, task_dispatch_ps from now
    sch_.schedule(sch_.now() + st.dispatch_ps, this, ev(kDispatch, s), 0);
  }
}

void StreamEngine::take_marks(std::uint32_t s) {
  auto& st = streams_[s];
  while (!st.q.empty() && st.q.front().passive && st.q.front().kind == TaskKind::EventRecord) {
    const Task t = st.q.front();
    ++st.started;
    st.head_start = sch_.now();
    if (report_tasks_ && listener_) listener_->on_task_done(s, t, st.head_start, sch_.now());
    st.q.pop_front();
    ++st.completed;
    std::vector<std::uint32_t> wake;
    notify_.mark_event(st.npu, t, wake);
    for (auto ws : wake) complete(ws);
  }
}

void StreamEngine::fail(std::uint32_t s, const std::string& why) {
  auto& st = streams_[s];
  msi_.raise(st.npu, 1);
  st.failed = true;
  st.error = why;
  orphan(s);
  if (listener_) {
    listener_->on_task_error(s, why);
    listener_->on_stream_idle(s);
  }
}

// Stream abort (the driver's stream_abort, docs/failover.md): the queue is discarded and the
// task in flight orphaned as on a failure, but nothing is raised and the stream is usable again.
void StreamEngine::abort(std::uint32_t s) {
  auto& st = streams_[s];
  st.pending.clear();
  st.failed = false;
  st.error.clear();
  orphan(s);
  if (listener_) listener_->on_stream_idle(s);
}

void StreamEngine::orphan(std::uint32_t s) {
  auto& st = streams_[s];
  st.q.clear();
  st.busy = false;
  // Orphan what the failed task had in flight: its transfer stops moving bytes, its pending
  // completions are ignored, and it no longer waits on a notify or event register.
  ++epochs_[s];
  notify_.forget(st.npu, s);
  rdma_.drop_fence(st.npu, s);
  st.space_at = ~0ULL;  // its queue is empty now (the caller's on_stream_idle wakes a blocked submitter)
}

void StreamEngine::crash(std::uint32_t npu, const std::string& why) {
  for (std::uint32_t s = 0; s < streams_.size(); ++s)
    if (streams_[s].npu == npu && streams_[s].alive && !streams_[s].q.empty()) fail(s, why);
}

bool StreamEngine::queue_reg(std::uint32_t npu, std::uint32_t s, std::uint32_t reg, std::uint64_t* v) const {
  if (s >= streams_.size() || streams_[s].npu != npu) return false;
  const auto& st = streams_[s];
  switch (reg) {
    case npu_regs::kSqTail: *v = st.rung; return true;
    case npu_regs::kSqHead: *v = st.started; return true;
    case npu_regs::kCqTail: *v = st.completed; return true;
    default: return false;
  }
}

bool StreamEngine::ring(std::uint32_t npu, std::uint32_t s, std::uint64_t v) {
  if (s >= streams_.size() || streams_[s].npu != npu) return false;
  auto& st = streams_[s];
  // The new tail may not pass what was enqueued, nor move back.
  if (v < st.rung || v > st.rung + st.pending.size()) return false;
  for (; st.rung < v; ++st.rung) {
    if (st.failed) st.pending.pop_front();  // a failed stream drops work until the error is cleared
    else st.pending.move_front_to(st.q);
  }
  if (!st.busy) take_marks(s);  // an idle engine writes progress marks at once
  if (!st.busy && !st.q.empty()) {
    st.busy = true;
    sch_.schedule(sch_.now() + st.dispatch_ps, this, ev(kDispatch, s), 0);
  }
  return true;
}

void StreamEngine::on_event(std::uint64_t a, std::uint64_t) {
  const std::uint32_t s = stream_event::stream(a);
  if (!stream_event::current(a, epochs_[s])) return;  // the stream failed since: stale
  switch (stream_event::type(a)) {
    case kDispatch: dispatch(s); break;
    case kComplete: complete(s); break;
    default: break;
  }
}

// The event queue names the next event while this one runs: start loading the stream it will
// touch (at 8192 NPUs these miss cache; the loads overlap the current event).
void StreamEngine::prefetch(std::uint64_t a, std::uint64_t) {
  const std::uint32_t s = stream_event::stream(a);
  if (s < streams_.size()) {
    const char* x = reinterpret_cast<const char*>(&streams_[s]);
    __builtin_prefetch(x);
    __builtin_prefetch(x + 64);
  }
}

}  // namespace models
