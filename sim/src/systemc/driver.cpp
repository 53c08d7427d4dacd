#include "sim/driver.h"
#include "sim/live.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>

#include "systemc/task_kinds.h"

namespace sim {

using hcomm::DrvStatus;

SimDriver::SimDriver(models::Machine& m, const Topology& t, Trace* trace, bool echo)
    : m_(m), topo_(t), trace_(trace), echo_(echo), heaps_(m.npu_count()), phase_(t.rank_to_npu.size(), {0, 0}) {
  for (std::uint32_t i = 0; i < m.npu_count(); ++i) heaps_[i] = DeviceHeap(m.npu_params(i).hbm.capacity_bytes);
  npu_rank_.assign(t.npus.size(), ~0u);  // NPUs without a rank (a subset run) map to ~0
  for (std::uint32_t r = 0; r < t.rank_to_npu.size(); ++r) npu_rank_[t.rank_to_npu[r]] = r;
  // Driver load: register each rank's descriptor in its NPU's configuration space.
  namespace R = models::npu_regs;
  for (std::uint32_t r = 0; r < t.rank_to_npu.size(); ++r) {
    const std::uint32_t npu = t.rank_to_npu[r];
    const NpuSpec& n = t.npus[npu];
    const auto& srv = t.servers[n.server];
    std::uint64_t map = 0;
    for (std::uint32_t j = 0; j < srv.npus.size() && j < 32; ++j)
      if (m_.port_between(npu, srv.npus[j]) >= 0) map |= 1ULL << j;
    m_.load_config(npu, R::kCfgHostIp, srv.host_ip);
    m_.load_config(npu, R::kCfgBaseAddr, models::npu_base_addr(npu));
    m_.load_config(npu, R::kCfgHccsPortMap, map);
    m_.load_config(npu, R::kCfgDeviceId, n.device_id);
    m_.load_config(npu, R::kCfgServer, n.server);
    m_.load_config(npu, R::kCfgRank, r);
  }
  // Every NPU's identity (device id, server) and the PCIe switch it sits under, rank or not: what
  // an HCCS partner learns in link training and pcie_peer compares (discovery).
  for (std::uint32_t npu = 0; npu < m.npu_count() && npu < t.npus.size(); ++npu) {
    m_.load_config(npu, R::kCfgDeviceId, t.npus[npu].device_id);
    m_.load_config(npu, R::kCfgServer, t.npus[npu].server);
    m_.load_config(npu, R::kCfgPcieSwitch, static_cast<std::uint64_t>(m_.pcie_switch_of(npu) + 1));
  }
  open_op_.assign(m.npu_count(), {-1, 0});
  m_.set_listener(this);
}

void SimDriver::trace_tasks(bool on) {
  task_rows_ = on && trace_;
  m_.report_tasks(task_rows_ || activity_);
}

void SimDriver::watch_activity() {
  activity_ = true;
  act_ev_.resize(m_.npu_count());
  for (auto& e : act_ev_) e = std::make_unique<sc_core::sc_event>();
  m_.report_tasks(true);
}

bool SimDriver::wait_activity(std::uint32_t rank, std::uint64_t max_ns) {
  if (!activity_ || rank >= topo_.rank_to_npu.size()) return false;
  const std::uint32_t npu = topo_.rank_to_npu[rank];
  ctrl_size();
  port_size();
  for (auto* e : {&ctrl_ev_[rank], &sig_ev_[rank], &port_ev_[npu]})
    if (!*e) *e = std::make_unique<sc_core::sc_event>();
  const models::Tick deadline = now_ps() + max_ns * models::kPsPerNs;
  sc_core::wait(sc_core::sc_time::from_value(max_ns * models::kPsPerNs),
                *act_ev_[npu] | *ctrl_ev_[rank] | *sig_ev_[rank] | *port_ev_[npu]);
  return now_ps() < deadline;
}

void SimDriver::on_task_done(std::uint32_t s, const models::Task& t, models::Tick start, models::Tick end) {
  if (activity_) wake_at_now(*act_ev_[m_.stream_npu(s)], true);
  if (!task_rows_) return;
  const std::uint32_t npu = m_.stream_npu(s);
  auto rank_of = [&](std::uint32_t n) -> std::int64_t { return n < npu_rank_.size() && npu_rank_[n] != ~0u ? npu_rank_[n] : -1; };
  std::int64_t peer = -1;
  switch (t.kind) {
    case models::TaskKind::Copy:
    case models::TaskKind::ReduceCopy:
      for (std::uint64_t a : {t.src, t.dst})
        if (models::addr_is_device(a) && models::addr_npu(a) != npu) peer = rank_of(models::addr_npu(a));
      break;
    case models::TaskKind::NotifyRecord:
    case models::TaskKind::RdmaWrite:
      if (t.target != npu) peer = rank_of(t.target);
      break;
    default: break;
  }
  trace_->task(static_cast<std::uint32_t>(rank_of(npu)), s, t.tag, models::task_kind_name(t.kind), static_cast<double>(start) / 1e3,
               static_cast<double>(end) / 1e3, t.bytes, peer);
}

void SimDriver::bind_process(const std::string& name, std::uint32_t rank) { proc_rank_[name] = rank; }
void SimDriver::set_phase(std::uint32_t rank, std::uint32_t step, std::uint32_t rep) { phase_.at(rank) = {step, rep}; }

std::int64_t SimDriver::current_rank() {
  sc_core::sc_process_handle h = sc_core::sc_get_current_process_handle();
  if (!h.valid()) return -1;
  auto it = proc_rank_.find(h.name());
  return it == proc_rank_.end() ? -1 : it->second;
}

std::uint32_t SimDriver::rank_count() { return static_cast<std::uint32_t>(topo_.rank_to_npu.size()); }

DrvStatus SimDriver::rank_desc(std::uint32_t rank, hcomm::RankDesc* out) {
  if (rank >= topo_.rank_to_npu.size() || !out) return DrvStatus::Invalid;
  const std::uint32_t npu = topo_.rank_to_npu[rank];
  // Read the descriptor back from the NPU's configuration space (MMIO).
  namespace R = models::npu_regs;
  std::uint64_t host_ip = 0, base = 0, map = 0, dev_id = 0, server = 0, cfg_rank = 0;
  if (!m_.mmio_read(npu, R::kCfgHostIp, &host_ip) || !m_.mmio_read(npu, R::kCfgBaseAddr, &base) ||
      !m_.mmio_read(npu, R::kCfgHccsPortMap, &map) || !m_.mmio_read(npu, R::kCfgDeviceId, &dev_id) ||
      !m_.mmio_read(npu, R::kCfgServer, &server) || !m_.mmio_read(npu, R::kCfgRank, &cfg_rank) || cfg_rank != rank)
    return DrvStatus::Failed;
  hcomm::RankDesc d;
  d.rank = rank;
  d.device = npu;
  d.device_id = static_cast<std::uint32_t>(dev_id);
  d.server = static_cast<std::uint32_t>(server);
  d.host_ip = static_cast<std::uint32_t>(host_ip);
  d.device_base_addr = base;
  for (int b = 0; b < 4; ++b) d.hccs_port_map[b] = static_cast<std::uint8_t>(map >> (8 * b));
  *out = d;
  return DrvStatus::Ok;
}

DrvStatus SimDriver::device_of(std::uint32_t device_id, std::uint32_t* device) {
  std::int64_t r = current_rank();
  if (r < 0 || !device) return DrvStatus::Invalid;
  const auto& srv = topo_.servers[topo_.npus[topo_.rank_to_npu[r]].server];
  if (device_id >= srv.npus.size()) return DrvStatus::Invalid;
  *device = srv.npus[device_id];
  return DrvStatus::Ok;
}

hcomm::PairLink SimDriver::pair_link(std::uint32_t a, std::uint32_t b) {
  if (a >= m_.npu_count() || b >= m_.npu_count()) return hcomm::PairLink::None;
  if (a == b) return hcomm::PairLink::Local;
  const models::Machine::Route r = m_.route(a, b);
  if (r.ok() && m_.ports()[r.p1].up && (r.p2 < 0 || m_.ports()[r.p2].up))
    return r.p2 < 0 ? hcomm::PairLink::Hccs : hcomm::PairLink::Pcie;
  return m_.has_nic(a) && m_.has_nic(b) ? hcomm::PairLink::Roce : hcomm::PairLink::None;
}

std::uint64_t SimDriver::device_memory_size(std::uint32_t device) {
  return device < heaps_.size() ? heaps_[device].capacity() : 0;
}

DrvStatus SimDriver::mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) {
  if (device >= heaps_.size() || !addr || bytes == 0) return DrvStatus::Invalid;
  std::uint64_t off = 0;
  switch (heaps_[device].alloc(bytes, &off)) {
    case DeviceHeap::Status::Ok: *addr = models::npu_base_addr(device) + off; return DrvStatus::Ok;
    case DeviceHeap::Status::NoMemory: return DrvStatus::NoMemory;
    case DeviceHeap::Status::Invalid: break;
  }
  return DrvStatus::Invalid;
}

DrvStatus SimDriver::mem_free(std::uint32_t device, std::uint64_t addr) {
  if (device >= heaps_.size() || models::addr_npu(addr) != device) return DrvStatus::Invalid;
  return heaps_[device].free(models::addr_offset(addr)) == DeviceHeap::Status::Ok ? DrvStatus::Ok : DrvStatus::Invalid;
}

DrvStatus SimDriver::mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                                 std::uint32_t* key) {
  if (device >= m_.npu_count() || !key || bytes == 0 || models::addr_npu(addr) != device ||
      !m_.hbm(device).in_range(models::addr_offset(addr), bytes))
    return DrvStatus::Invalid;
  *key = m_.register_mr(device, addr, bytes, access);
  return DrvStatus::Ok;
}

DrvStatus SimDriver::mr_deregister(std::uint32_t device, std::uint32_t key) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  return m_.deregister_mr(device, key) ? DrvStatus::Ok : DrvStatus::Invalid;
}

DrvStatus SimDriver::stream_create(std::uint32_t device, std::uint32_t* stream) {
  if (device >= m_.npu_count() || !stream) return DrvStatus::Invalid;
  *stream = m_.create_stream(device);
  if (dev_streams_.size() <= device) dev_streams_.resize(m_.npu_count());
  dev_streams_[device].push_back(*stream);
  return DrvStatus::Ok;
}

DrvStatus SimDriver::stream_destroy(std::uint32_t s) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  if (const std::uint32_t npu = m_.stream_npu(s); npu < dev_streams_.size()) {
    auto& v = dev_streams_[npu];
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  m_.destroy_stream(s);
  return DrvStatus::Ok;
}

// Operations that carry a reduction operator.
static bool reduces(const std::string& kind) {
  return kind == "allreduce" || kind == "reduce" || kind == "reduce_scatter" || kind == "reduce_scatterv";
}

static models::DType to_dtype(int t) {
  switch (t) {
    case 0: return models::DType::Int8;
    case 1: return models::DType::Int16;
    case 2: return models::DType::Int32;
    case 3: return models::DType::Fp16;
    case 4: return models::DType::Fp32;
    case 5: return models::DType::Int64;
    case 10: return models::DType::Fp64;
    case 11: return models::DType::Bf16;
    default: return models::DType::Fp32;
  }
}

DrvStatus SimDriver::submit(std::uint32_t s, const hcomm::DrvTask& t) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  models::Task k;
  k.kind = static_cast<models::TaskKind>(t.kind);  // same kinds at the same values (systemc/task_kinds.h)
  k.src = t.src;
  k.dst = t.dst;
  k.bytes = t.bytes;
  k.dtype = to_dtype(t.dtype);
  k.op = static_cast<models::ReduceOp>(t.op);  // hcomm_reduce_op_t's values (systemc/task_kinds.h)
  k.target = t.target;
  k.key = t.key;
  k.value = t.value;
  k.host = t.host;
  k.rkey = t.rkey;
  k.qp_count = t.qp_count;
  k.rate_cap_Bps = t.rate_cap_Bps;
  k.retry_count = t.retry_count;
  k.qp_base = t.qp_base;
  if (t.width != 0) {  // 2-D: copies only, whole rows, rows that do not overlap their pitch
    if ((k.kind != models::TaskKind::Copy && k.kind != models::TaskKind::ReduceCopy) || t.bytes % t.width != 0 ||
        t.width > t.spitch || t.width > t.dpitch)
      return DrvStatus::Invalid;
    k.width = t.width;
    k.spitch = t.spitch;
    k.dpitch = t.dpitch;
  }
  k.via = t.via;
  k.wait_ack = t.wait_cqe;
  if (t.passive && k.kind != models::TaskKind::EventRecord) return DrvStatus::Invalid;
  k.passive = t.passive;
  if (k.kind == models::TaskKind::Compute) {  // the library checked the arguments; the device knows its peaks
    if (t.flops > 0 && models::compute_peak(m_.npu_params(m_.stream_npu(s)), k.dtype) <= 0) return DrvStatus::NotSupported;
    if (t.flops > 0 && !(t.efficiency > 0 && t.efficiency <= 1)) return DrvStatus::Invalid;
    k.flops = t.flops;
    k.efficiency = t.efficiency;
  }
  if (const std::uint32_t npu = m_.stream_npu(s); npu < open_op_.size()) {
    k.tag = open_op_[npu].first;
    if (k.kind == models::TaskKind::Marker && k.key == open_op_[npu].second) open_op_[npu] = {-1, 0};  // the op's end marker
  }
  // A full submission queue blocks the host thread (as the runtime does) until the engine has
  // drained it to half: memory follows the work in flight, not the work submitted, and the
  // engine never starves (half a queue is still ahead of it when the host resumes).
  const std::uint32_t depth = m_.sq_depth(s);
  if (m_.stream_queued(s) >= depth && sc_core::sc_get_current_process_handle().proc_kind() == sc_core::SC_THREAD_PROC_) {
    if (stream_ev_.size() <= s) stream_ev_.resize(s + 1);
    if (!stream_ev_[s]) stream_ev_[s] = std::make_unique<sc_core::sc_event>();
    const models::Tick deadline = now_ps() + kSubmitTimeoutNs * models::kPsPerNs;
    while (m_.stream_queued(s) >= depth) {
      const models::Tick now = now_ps();
      if (now >= deadline || !m_.stream_valid(s)) return DrvStatus::Timeout;
      if (device_failed(m_.stream_npu(s))) return DrvStatus::Failed;  // the queue will not drain
      m_.want_sq_space(s, depth / 2);
      wait_until(deadline, s, *stream_ev_[s]);
    }
  }
  // Write the task into the stream's submission queue, then ring its doorbell by MMIO (SQ tail).
  m_.enqueue(s, k);
  if (sq_tail_.size() <= s) sq_tail_.resize(s + 1, 0);
  if (!m_.mmio_write(m_.stream_npu(s), models::npu_regs::stream_reg(s, models::npu_regs::kSqTail), ++sq_tail_[s]))
    return DrvStatus::Failed;
  return DrvStatus::Ok;
}

DrvStatus SimDriver::stream_synchronize(std::uint32_t s, std::uint64_t timeout_ns, std::string* error) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  if (!m_.stream_idle(s)) {
    if (stream_ev_.size() <= s) stream_ev_.resize(s + 1);
    if (!stream_ev_[s]) stream_ev_[s] = std::make_unique<sc_core::sc_event>();
    const models::Tick deadline = now_ps() + timeout_ns * models::kPsPerNs;
    while (!m_.stream_idle(s)) {
      models::Tick now = now_ps();
      if (now >= deadline) {
        if (error) *error = stuck_report(s);
        return DrvStatus::Timeout;
      }
      // A task of another stream of this device failed (a device exception): this stream may be
      // waiting for work the failed one would have done, so it is reported now, not at timeout.
      if (const std::uint32_t npu = m_.stream_npu(s); device_failed(npu)) {
        if (error) *error = "device error: " + dev_error_[npu] + " (" + stuck_report(s) + ")";
        return DrvStatus::Failed;
      }
      // An urgent control message (an abort from a peer, a heartbeat) interrupts the wait.
      const std::uint32_t npu = m_.stream_npu(s);
      const std::uint32_t rank = npu < npu_rank_.size() ? npu_rank_[npu] : ~0u;
      if (rank != ~0u && signal_pending(rank)) {
        if (error) *error = "interrupted by a control message (" + stuck_report(s) + ")";
        return DrvStatus::Aborted;
      }
      // So does an async event of the device (its NIC's port error, docs/failover.md#nic-port-event).
      if (port_event_pending(npu)) {
        if (error) *error = "interrupted by a device event (" + stuck_report(s) + ")";
        return DrvStatus::Aborted;
      }
      // Cut at the next interrupt due (an sc_event keeps only its earliest notification).
      const models::Tick until = std::min(deadline, next_interrupt(rank, npu));
      const bool port_ev = port_evp_.on || dev_events_;
      if (port_ev) {
        port_size();
        if (!port_ev_[npu]) port_ev_[npu] = std::make_unique<sc_core::sc_event>();
      }
      if (rank != ~0u) {
        ctrl_size();
        if (!sig_ev_[rank]) sig_ev_[rank] = std::make_unique<sc_core::sc_event>();
        if (port_ev) wait_until(until, s, *stream_ev_[s] | *sig_ev_[rank] | *port_ev_[npu]);
        else wait_until(until, s, *stream_ev_[s] | *sig_ev_[rank]);
      } else {
        wait_until(until, s, *stream_ev_[s]);
      }
    }
  }
  if (m_.stream_failed(s)) {
    if (error) *error = m_.stream_error(s);
    m_.clear_stream_error(s);
    // The failure was taken by the stream it happened on: the device is usable again.
    if (const std::uint32_t npu = m_.stream_npu(s); npu < dev_error_.size() && dev_error_stream_[npu] == s) dev_error_[npu].clear();
    return DrvStatus::Failed;
  }
  return DrvStatus::Ok;
}

// What a stuck stream is doing, read from the NPU's registers by MMIO (as a real driver dumps
// the SQ/CQ pointers and the notify a wait task is blocked on).
std::string SimDriver::stuck_report(std::uint32_t s) const {
  const std::uint32_t npu = m_.stream_npu(s);
  std::uint64_t tail = 0, head = 0, cq = 0;
  m_.mmio_read(npu, models::npu_regs::stream_reg(s, models::npu_regs::kSqTail), &tail);
  m_.mmio_read(npu, models::npu_regs::stream_reg(s, models::npu_regs::kSqHead), &head);
  m_.mmio_read(npu, models::npu_regs::stream_reg(s, models::npu_regs::kCqTail), &cq);
  char b[256];
  std::snprintf(b, sizeof b, ": SQ tail %llu, SQ head %llu, CQ tail %llu", (unsigned long long)tail, (unsigned long long)head,
                (unsigned long long)cq);
  std::string out = "stream " + std::to_string(s) + " of " + m_.npu_name(npu) + b;
  models::Task head_task;
  if (m_.stream_head(s, &head_task)) {
    const models::Task* t = &head_task;
    out += std::string("; blocked in ") + models::task_kind_name(t->kind);
    if (t->kind == models::TaskKind::NotifyWait) {
      const int r = m_.notify_index(npu, t->key);
      std::uint64_t v = 0;
      if (r >= 0) m_.mmio_read(npu, models::npu_regs::notify_reg(static_cast<std::uint32_t>(r)), &v);
      std::snprintf(b, sizeof b, " on notify register %d (MMIO 0x%x) = %llu, key 0x%llx", r,
                    r >= 0 ? models::npu_regs::notify_reg(static_cast<std::uint32_t>(r)) : 0u, (unsigned long long)v,
                    (unsigned long long)t->key);
      out += b;
    } else if (t->kind == models::TaskKind::EventWait) {
      std::snprintf(b, sizeof b, " on event %llu (completed %llu of %llu)", (unsigned long long)t->key,
                    (unsigned long long)m_.event_completed(npu, t->key), (unsigned long long)t->value);
      out += b;
    }
  }
  return out;
}

bool SimDriver::stream_idle(std::uint32_t s) { return m_.stream_valid(s) && m_.stream_idle(s); }

std::uint64_t SimDriver::event_completed(std::uint32_t device, std::uint64_t event) {
  return device < m_.npu_count() ? m_.event_completed(device, event) : 0;
}
std::uint64_t SimDriver::event_time_ns(std::uint32_t device, std::uint64_t event) {
  return device < m_.npu_count() ? m_.event_time(device, event) / models::kPsPerNs : 0;
}

void SimDriver::wait_timer_fired(std::uint64_t who, std::uint64_t n) {
  Waiter& w = waiter(who);
  if (n != w.record) return;  // superseded by a record at an earlier deadline
  w.armed = kNoRecord;
  if (!w.waiting) return;  // the wait ended first; the next wait arms its own record
  const models::Tick now = wait_q_->now();
  if (w.want > now) {  // the current wait's deadline is later: re-arm there
    w.armed = w.want;
    wait_q_->schedule(w.want, &wait_timer_, who, ++w.record);
    return;
  }
  const std::uint64_t i = who & ~kCtrlWait;
  wake_at_now(who & kCtrlWait ? *ctrl_ev_[i] : *stream_ev_[i], false);
}

void SimDriver::host_delay(std::uint64_t ns) {
  if (ns && sc_core::sc_get_current_process_handle().proc_kind() == sc_core::SC_THREAD_PROC_)
    sc_core::wait(sc_core::sc_time::from_value(ns * models::kPsPerNs));
}

std::uint64_t SimDriver::now_ns() { return now_ps() / models::kPsPerNs; }

void SimDriver::profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const hcomm::OpInfo& info) {
  OpRecord r;
  r.info = info;
  auto ph = info.rank < phase_.size() ? phase_[info.rank] : std::make_pair(0u, 0u);
  r.step = ph.first;
  r.rep = ph.second;
  std::size_t idx;
  if (!free_pending_.empty()) { idx = free_pending_.back(); free_pending_.pop_back(); pending_[idx] = r; }
  else { idx = pending_.size(); pending_.push_back(r); }
  begin_key_[{device, begin_key}] = idx;
  if (device < open_op_.size()) open_op_[device] = {static_cast<std::int64_t>(info.seq), end_key};
  end_key_[{device, end_key}] = idx;
}

void SimDriver::on_marker(std::uint32_t npu, std::uint32_t, std::uint64_t key, models::Tick t) {
  if (key >> 63) { hn_marker(npu, key); return; }  // a host-socket operation (driver_hostnet.cpp)
  auto b = begin_key_.find({npu, key});
  if (b != begin_key_.end()) {  // the library announces an op (profile_op) before submitting its markers
    const std::size_t idx = b->second;
    begin_key_.erase(b);
    OpRecord& r = pending_[idx];
    r.start = t;
    r.started = true;
    // The step's span starts with its first attempt: an operation aborted by a fault and
    // re-executed (op retry) counts from the aborted attempt's start (run/summary.cpp).
    auto [sp, fresh] = spans_.try_emplace(SpanKey{r.step, r.rep, r.info.kind}, OpSpan{t, 0});
    if (!fresh) sp->second.start = std::min(sp->second.start, t);
    if (on_op_start) on_op_start(r.step, r.rep, r.info, t);
    return;
  }
  auto e = end_key_.find({npu, key});
  if (e == end_key_.end()) return;  // a marker of no announced op
  const std::size_t idx = e->second;
  OpRecord& r = pending_[idx];
  r.end = t;
  r.ended = true;
  end_key_.erase(e);
  free_pending_.push_back(idx);
  if (npu < op_iv_.size()) op_iv_[npu].emplace_back(r.start, r.end);
  finish_op(r);
  if (trace_)
    trace_->operation(r.info.rank, r.info.seq, r.info.kind, r.info.algorithm, r.info.bytes,
                      models::dtype_name(to_dtype(r.info.dtype)),
                      reduces(r.info.kind) ? models::reduce_op_name(static_cast<models::ReduceOp>(r.info.op)) : "",
                      r.info.peer, r.step, r.rep, static_cast<double>(r.start) / 1e3, static_cast<double>(r.end) / 1e3,
                      OpChoice{r.info.chosen_by, r.info.runner_up, r.info.est_ns / 1e3, r.info.runner_up_ns / 1e3});
}

std::vector<OpRecord> SimDriver::unfinished_ops() const {
  std::vector<bool> free(pending_.size(), false);
  for (std::size_t i : free_pending_) free[i] = true;
  std::vector<OpRecord> out;
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (!free[i]) out.push_back(pending_[i]);
  return out;
}

void SimDriver::finish_op(const OpRecord& r) {
  auto [it, fresh] = spans_.try_emplace(SpanKey{r.step, r.rep, r.info.kind}, OpSpan{r.start, r.end});
  if (!fresh) {
    it->second.start = std::min(it->second.start, r.start);
    it->second.end = std::max(it->second.end, r.end);
  }
}

void SimDriver::record_host_op(std::uint32_t rank, const std::string& kind, std::uint64_t bytes, models::Tick start, models::Tick end) {
  OpRecord r;
  r.info.rank = rank;
  r.info.nranks = static_cast<std::uint32_t>(phase_.size());
  r.info.kind = kind;
  r.info.algorithm = "dma";
  r.info.bytes = bytes;
  r.info.dtype = 0;
  r.step = phase_.at(rank).first;
  r.rep = phase_.at(rank).second;
  r.start = start;
  r.end = end;
  r.started = r.ended = true;
  finish_op(r);
  if (trace_)
    trace_->operation(rank, 0, kind, "dma", bytes, "", "", -1, r.step, r.rep, static_cast<double>(start) / 1e3, static_cast<double>(end) / 1e3);
}

void SimDriver::on_interrupt(std::uint32_t npu, std::uint64_t) {
  std::uint64_t status = 0;
  m_.mmio_read(npu, models::npu_regs::kIntStatus, &status);
  std::string what;
  if (status & 1) what += " task error";
  if (status & 2) what += " link event";
  if (status & 4) what += " notify overflow";
  char b[96];
  std::snprintf(b, sizeof b, " interrupt: INT_STATUS 0x%llx (", static_cast<unsigned long long>(status));
  note(npu < npu_rank_.size() ? npu_rank_[npu] : 0, 3,
       "[HCSIM_DEBUG] " + m_.npu_name(npu) + b + (what.empty() ? std::string() : what.substr(1)) + ")");
  m_.mmio_write(npu, models::npu_regs::kIntStatus, status);  // acknowledge: write 1 to clear
}

void SimDriver::on_stream_idle(std::uint32_t s) {
  if (s < stream_ev_.size() && stream_ev_[s]) wake_at_now(*stream_ev_[s], true);
}

void SimDriver::on_sq_space(std::uint32_t s) {
  if (s < stream_ev_.size() && stream_ev_[s]) wake_at_now(*stream_ev_[s], true);
}

void SimDriver::on_task_error(std::uint32_t s, const std::string& why) {
  std::uint32_t npu = m_.stream_npu(s);
  log(npu, 0, "[HCSIM_ERR] " + m_.npu_name(npu) + " (rank " + std::to_string(npu_rank_[npu]) + ") stream " + std::to_string(s) +
                  " task failed: " + why);
  // The device is in error (as an SDMA or RDMA exception puts an Ascend device): the host threads
  // synchronizing any of its streams are woken and told, instead of waiting for their timeout.
  if (dev_error_.size() <= npu) { dev_error_.resize(npu + 1); dev_error_stream_.resize(npu + 1, 0); }
  if (dev_error_[npu].empty()) {
    dev_error_[npu] = "stream " + std::to_string(s) + ": " + why;
    dev_error_stream_[npu] = s;
  }
  for (std::uint32_t t = 0; t < stream_ev_.size(); ++t)
    if (stream_ev_[t] && m_.stream_valid(t) && m_.stream_npu(t) == npu) wake_at_now(*stream_ev_[t], true);
}

void SimDriver::note(std::uint32_t rank, int level, const std::string& line) {
  if (trace_) trace_->log(static_cast<double>(now_ps()) / 1e3, rank, level, line);
}

void SimDriver::log(std::uint32_t device, int level, const std::string& line) {
  double t = static_cast<double>(now_ps()) / 1e3;
  if (level >= 0 && level < 4) ++log_count_[level];
  if (trace_) trace_->log(t, device < npu_rank_.size() ? npu_rank_[device] : -1, level, line);
  if (echo_) std::fprintf(stderr, "%s[%12.3f us] %s\n", g_status_line ? "\r\033[K" : "", t / 1e3, line.c_str());
}

// ---- discovery (docs/discovery.md) ----

DrvStatus SimDriver::hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) {
  if (device >= m_.npu_count() || port >= hcomm::kHccsPortCount || !out) return DrvStatus::Invalid;
  namespace R = models::npu_regs;
  std::uint64_t st = 0, partner = 0;
  if (!m_.mmio_read(device, R::hccs_port_reg(port, R::kHccsPortStatus), &st) ||
      !m_.mmio_read(device, R::hccs_port_reg(port, R::kHccsPortPartner), &partner))
    return DrvStatus::Failed;
  hcomm::HccsPortInfo p;
  p.cabled = st & 1;
  p.up = st & 2;
  p.lanes = static_cast<std::uint32_t>((st >> 8) & 0xff);
  p.bandwidth_Bps = (st >> 32) * 1000000;
  p.partner_device_id = static_cast<std::uint32_t>(partner & 0xffffffffu);
  p.partner_server = static_cast<std::uint32_t>(partner >> 32);
  *out = p;
  return DrvStatus::Ok;
}

DrvStatus SimDriver::pcie_peer(std::uint32_t device, std::uint32_t peer, bool* reachable) {
  if (device >= m_.npu_count() || peer >= m_.npu_count() || !reachable) return DrvStatus::Invalid;
  namespace R = models::npu_regs;
  std::uint64_t sa = 0, sb = 0, va = 0, vb = 0;
  if (!m_.mmio_read(device, R::kCfgPcieSwitch, &sa) || !m_.mmio_read(peer, R::kCfgPcieSwitch, &sb) ||
      !m_.mmio_read(device, R::kCfgServer, &va) || !m_.mmio_read(peer, R::kCfgServer, &vb))
    return DrvStatus::Failed;
  *reachable = device != peer && sa != 0 && sa == sb && va == vb;
  return DrvStatus::Ok;
}

DrvStatus SimDriver::device_rank(std::uint32_t device, std::uint32_t* rank) {
  if (device >= m_.npu_count() || !rank || device >= npu_rank_.size() || npu_rank_[device] == ~0u) return DrvStatus::Invalid;
  std::uint64_t r = 0;
  if (!m_.mmio_read(device, models::npu_regs::kCfgRank, &r)) return DrvStatus::Failed;
  *rank = static_cast<std::uint32_t>(r);
  return DrvStatus::Ok;
}

}  // namespace sim
