// The NPU's stream task engine (docs/models/npu.md): streams run their tasks strictly in order;
// a task starts task_dispatch after the previous one completed; a failing task fails its stream.
#include "models/machine.h"

#include <algorithm>
#include <cmath>

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

std::uint32_t Machine::create_stream(std::uint32_t npu) {
  StreamState st;
  st.npu = npu;
  st.dispatch_ps = npus_.at(npu).params.task_dispatch_ps;
  streams_.emplace_back() = std::move(st);
  return static_cast<std::uint32_t>(streams_.size() - 1);
}

void Machine::submit(std::uint32_t s, const Task& t) {
  enqueue(s, t);
  const auto& st = streams_.at(s);
  mmio_write(st.npu, npu_regs::stream_reg(s, npu_regs::kSqTail), st.rung + st.pending.size());
}

void Machine::enqueue(std::uint32_t s, const Task& t) { streams_.at(s).pending.push_back(t); }

void Machine::stall_npu(std::uint32_t npu, Tick until) {
  auto& n = npus_.at(npu);
  n.stalled_until = std::max(n.stalled_until, until);
  any_stall_ = true;
}

void Machine::dispatch(std::uint32_t s) {
  auto& st = streams_[s];
  if (st.q.empty()) { st.busy = false; return; }
  if (any_stall_ && sch_.now() < npus_[st.npu].stalled_until) {  // npu_stall: dispatch once the engine runs again
    sch_.schedule(npus_[st.npu].stalled_until, this, stream_ev(kDispatch, s), 0);
    return;
  }
  const Task t = st.q.front();
  ++stats_.tasks;
  ++st.started;
  st.head_start = sch_.now();
  switch (t.kind) {
    case TaskKind::Copy:
    case TaskKind::ReduceCopy:
    case TaskKind::HostToDevice:
    case TaskKind::DeviceToHost:
      start_transfer(s, t);
      return;
    case TaskKind::NotifyRecord: notify_record_task(s, t); return;
    case TaskKind::NotifyWait: notify_wait_task(s, t); return;
    case TaskKind::EventRecord: event_record_task(s, t); return;
    case TaskKind::EventWait: event_wait_task(s, t); return;
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
      const Tick d = compute_ps(npus_[st.npu].params, t);
      npus_[st.npu].compute_ps += d;
      sch_.schedule(sch_.now() + d, this, stream_ev(kComplete, s), 0);
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
  if (peak <= 0 || !(t.efficiency > 0)) return 0;  // refused at submission (Machine::compute_valid)
  return static_cast<Tick>(std::llround(t.flops / (peak * t.efficiency) * 1e12));
}

void Machine::complete(std::uint32_t s) {
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
    sch_.schedule(sch_.now() + st.dispatch_ps, this, stream_ev(kDispatch, s), 0);
  }
}

void Machine::take_marks(std::uint32_t s) {
  auto& st = streams_[s];
  while (!st.q.empty() && st.q.front().passive && st.q.front().kind == TaskKind::EventRecord) {
    const Task t = st.q.front();
    ++st.started;
    st.head_start = sch_.now();
    if (report_tasks_ && listener_) listener_->on_task_done(s, t, st.head_start, sch_.now());
    st.q.pop_front();
    ++st.completed;
    EventReg& e = npus_[st.npu].events[t.key];
    e.completed = std::max(e.completed, t.value);
    e.t = sch_.now();
    auto& w = e.waiters;
    std::vector<std::uint32_t> wake;
    for (auto it = w.begin(); it != w.end();) {
      if (streams_[*it].q.front().value <= e.completed) { wake.push_back(*it); it = w.erase(it); }
      else ++it;
    }
    for (auto ws : wake) complete(ws);
  }
}

void Machine::fail(std::uint32_t s, const std::string& why) {
  auto& st = streams_[s];
  raise(st.npu, 1);
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
void Machine::abort_stream(std::uint32_t s) {
  auto& st = streams_[s];
  st.pending.clear();
  st.failed = false;
  st.error.clear();
  orphan(s);
  if (listener_) listener_->on_stream_idle(s);
}

void Machine::reset_notifies(std::uint32_t npu) {
  NpuState& me = npus_.at(npu);
  for (std::uint32_t r = 0; r < me.nregs.size(); ++r)
    if (me.nregs[r].bound && me.nregs[r].waiters.empty() && me.nregs[r].count) {
      me.nregs[r].count = 0;
      notify_release(npu, r);
    }
}

void Machine::orphan(std::uint32_t s) {
  auto& st = streams_[s];
  st.q.clear();
  st.busy = false;
  // Orphan what the failed task had in flight: its transfer stops moving bytes, its pending
  // completions are ignored, and it no longer waits on a notify or event register.
  ++st.epoch;
  NpuState& me = npus_[st.npu];
  for (std::uint32_t r = 0; r < me.nregs.size(); ++r) {
    auto& w = me.nregs[r].waiters;
    const auto before = w.size();
    w.erase(std::remove(w.begin(), w.end(), s), w.end());
    if (w.size() != before) notify_release(st.npu, r);
  }
  for (auto& e : me.events) e.second.waiters.erase(std::remove(e.second.waiters.begin(), e.second.waiters.end(), s), e.second.waiters.end());
  rdma_.drop_fence(st.npu, s);
  st.space_at = ~0ULL;  // its queue is empty now (the caller's on_stream_idle wakes a blocked submitter)
}

}  // namespace models
