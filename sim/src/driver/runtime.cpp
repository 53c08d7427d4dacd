// The device runtime over the models (sim/driver/runtime.h).
#include "sim/driver/runtime.h"

#include <algorithm>
#include <cstdio>

#include "sim/driver/observer.h"
#include "systemc/task_kinds.h"

namespace sim {

using hcomm::DrvStatus;

SimRuntime::SimRuntime(models::Machine& m, const Topology& t, const RankMap& ranks, HostWaits& waits, SimObserver& obs,
                       CtrlChannel& ctrl, DeviceEvents& events)
    : m_(m), topo_(t), ranks_(ranks), waits_(waits), obs_(obs), ctrl_(ctrl), events_(events), heaps_(m.npu_count()) {
  for (std::uint32_t i = 0; i < m.npu_count(); ++i) heaps_[i] = DeviceHeap(m.npu_params(i).hbm.capacity_bytes);
}

sc_core::sc_event& SimRuntime::stream_event(std::uint32_t s) {
  if (stream_ev_.size() <= s) stream_ev_.resize(s + 1);
  if (!stream_ev_[s]) stream_ev_[s] = std::make_unique<sc_core::sc_event>();
  return *stream_ev_[s];
}

void SimRuntime::watch_activity() {
  activity_ = true;
  act_ev_.resize(m_.npu_count());
  for (auto& e : act_ev_) e = std::make_unique<sc_core::sc_event>();
}

void SimRuntime::task_completed(std::uint32_t npu) {
  if (activity_) wake_at_now(*act_ev_[npu], true);
}

bool SimRuntime::wait_activity(std::uint32_t rank, std::uint64_t max_ns) {
  if (!activity_ || rank >= topo_.rank_to_npu.size()) return false;
  const std::uint32_t npu = topo_.rank_to_npu[rank];
  sc_core::sc_event& msg = ctrl_.messages(rank);
  sc_core::sc_event& sig = ctrl_.signals(rank);
  sc_core::sc_event& dev = events_.arrivals(npu);
  const models::Tick deadline = now_ps() + max_ns * models::kPsPerNs;
  sc_core::wait(sc_core::sc_time::from_value(max_ns * models::kPsPerNs), *act_ev_[npu] | msg | sig | dev);
  return now_ps() < deadline;
}

DrvStatus SimRuntime::rank_desc(std::uint32_t rank, hcomm::RankDesc* out) {
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

DrvStatus SimRuntime::device_of(std::uint32_t device_id, std::uint32_t* device) {
  std::int64_t r = ranks_.current();
  if (r < 0 || !device) return DrvStatus::Invalid;
  const auto& srv = topo_.servers[topo_.npus[topo_.rank_to_npu[r]].server];
  if (device_id >= srv.npus.size()) return DrvStatus::Invalid;
  *device = srv.npus[device_id];
  return DrvStatus::Ok;
}

hcomm::PairLink SimRuntime::pair_link(std::uint32_t a, std::uint32_t b) {
  if (a >= m_.npu_count() || b >= m_.npu_count()) return hcomm::PairLink::None;
  if (a == b) return hcomm::PairLink::Local;
  const models::LinkPath r = m_.path(a, b);
  if (r.ok() && m_.ports()[r.p1].up && (r.p2 < 0 || m_.ports()[r.p2].up))
    return r.p2 < 0 ? hcomm::PairLink::Hccs : hcomm::PairLink::Pcie;
  return m_.has_nic(a) && m_.has_nic(b) ? hcomm::PairLink::Roce : hcomm::PairLink::None;
}

std::uint64_t SimRuntime::device_memory_size(std::uint32_t device) {
  return device < heaps_.size() ? heaps_[device].capacity() : 0;
}

DrvStatus SimRuntime::mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) {
  if (device >= heaps_.size() || !addr || bytes == 0) return DrvStatus::Invalid;
  std::uint64_t off = 0;
  switch (heaps_[device].alloc(bytes, &off)) {
    case DeviceHeap::Status::Ok: *addr = models::npu_base_addr(device) + off; return DrvStatus::Ok;
    case DeviceHeap::Status::NoMemory: return DrvStatus::NoMemory;
    case DeviceHeap::Status::Invalid: break;
  }
  return DrvStatus::Invalid;
}

DrvStatus SimRuntime::mem_free(std::uint32_t device, std::uint64_t addr) {
  if (device >= heaps_.size() || models::addr_npu(addr) != device) return DrvStatus::Invalid;
  return heaps_[device].free(models::addr_offset(addr)) == DeviceHeap::Status::Ok ? DrvStatus::Ok : DrvStatus::Invalid;
}

DrvStatus SimRuntime::stream_create(std::uint32_t device, std::uint32_t* stream) {
  if (device >= m_.npu_count() || !stream) return DrvStatus::Invalid;
  *stream = m_.create_stream(device);
  if (dev_streams_.size() <= device) dev_streams_.resize(m_.npu_count());
  dev_streams_[device].push_back(*stream);
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::stream_destroy(std::uint32_t s) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  if (const std::uint32_t npu = m_.stream_npu(s); npu < dev_streams_.size()) {
    auto& v = dev_streams_[npu];
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
  }
  m_.destroy_stream(s);
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::submit(std::uint32_t s, const hcomm::DrvTask& t) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  models::Task k;
  k.kind = static_cast<models::TaskKind>(t.kind);  // same kinds at the same values (systemc/task_kinds.h)
  k.src = t.src;
  k.dst = t.dst;
  k.bytes = t.bytes;
  k.dtype = task_kinds::models_dtype(t.dtype);
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
  k.tag = obs_.tag_task(m_.stream_npu(s), k.kind == models::TaskKind::Marker, k.key);
  // A full submission queue blocks the host thread (as the runtime does) until the engine has
  // drained it to half: memory follows the work in flight, not the work submitted, and the
  // engine never starves (half a queue is still ahead of it when the host resumes).
  const std::uint32_t depth = m_.sq_depth(s);
  if (m_.stream_queued(s) >= depth && sc_core::sc_get_current_process_handle().proc_kind() == sc_core::SC_THREAD_PROC_) {
    sc_core::sc_event& ev = stream_event(s);
    const models::Tick deadline = now_ps() + kSubmitTimeoutNs * models::kPsPerNs;
    while (m_.stream_queued(s) >= depth) {
      const models::Tick now = now_ps();
      if (now >= deadline || !m_.stream_valid(s)) return DrvStatus::Timeout;
      if (device_failed(m_.stream_npu(s))) return DrvStatus::Failed;  // the queue will not drain
      m_.want_sq_space(s, depth / 2);
      waits_.wait_until(deadline, s, ev, ev);
    }
  }
  // Write the task into the stream's submission queue, then ring its doorbell by MMIO (SQ tail).
  m_.enqueue(s, k);
  if (sq_tail_.size() <= s) sq_tail_.resize(s + 1, 0);
  if (!m_.mmio_write(m_.stream_npu(s), models::npu_regs::stream_reg(s, models::npu_regs::kSqTail), ++sq_tail_[s]))
    return DrvStatus::Failed;
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::stream_synchronize(std::uint32_t s, std::uint64_t timeout_ns, std::string* error) {
  if (!m_.stream_valid(s)) return DrvStatus::Invalid;
  if (!m_.stream_idle(s)) {
    sc_core::sc_event& ev = stream_event(s);
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
      const std::uint32_t rank = ranks_.rank_of(npu);
      if (rank != ~0u && ctrl_.signal_pending(rank)) {
        if (error) *error = "interrupted by a control message (" + stuck_report(s) + ")";
        return DrvStatus::Aborted;
      }
      // So does an async event of the device (its NIC's port error, docs/failover.md#nic-port-event).
      if (events_.pending(npu)) {
        if (error) *error = "interrupted by a device event (" + stuck_report(s) + ")";
        return DrvStatus::Aborted;
      }
      // Cut at the next interrupt due (an sc_event keeps only its earliest notification).
      const models::Tick until = std::min({deadline, ctrl_.next_signal(rank), events_.next_arrival(npu)});
      const bool dev_ev = events_.watched();
      if (rank != ~0u) {
        if (dev_ev) {
          sc_core::sc_event& port = events_.arrivals(npu);
          waits_.wait_until(until, s, ev, ev | ctrl_.signals(rank) | port);
        } else {
          waits_.wait_until(until, s, ev, ev | ctrl_.signals(rank));
        }
      } else {
        if (dev_ev) events_.arrivals(npu);
        waits_.wait_until(until, s, ev, ev);
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
std::string SimRuntime::stuck_report(std::uint32_t s) const {
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

bool SimRuntime::stream_idle(std::uint32_t s) { return m_.stream_valid(s) && m_.stream_idle(s); }

std::uint64_t SimRuntime::event_completed(std::uint32_t device, std::uint64_t event) {
  return device < m_.npu_count() ? m_.event_completed(device, event) : 0;
}
std::uint64_t SimRuntime::event_time_ns(std::uint32_t device, std::uint64_t event) {
  return device < m_.npu_count() ? m_.event_time(device, event) / models::kPsPerNs : 0;
}

void SimRuntime::host_delay(std::uint64_t ns) {
  if (ns && sc_core::sc_get_current_process_handle().proc_kind() == sc_core::SC_THREAD_PROC_)
    sc_core::wait(sc_core::sc_time::from_value(ns * models::kPsPerNs));
}

std::uint64_t SimRuntime::now_ns() { return now_ps() / models::kPsPerNs; }

void SimRuntime::interrupt(std::uint32_t npu) {
  std::uint64_t status = 0;
  m_.mmio_read(npu, models::npu_regs::kIntStatus, &status);
  std::string what;
  if (status & 1) what += " task error";
  if (status & 2) what += " link event";
  if (status & 4) what += " notify overflow";
  char b[96];
  std::snprintf(b, sizeof b, " interrupt: INT_STATUS 0x%llx (", static_cast<unsigned long long>(status));
  obs_.note(npu < topo_.npus.size() ? ranks_.rank_of(npu) : 0, 3,
       "[HCSIM_DEBUG] " + m_.npu_name(npu) + b + (what.empty() ? std::string() : what.substr(1)) + ")");
  m_.mmio_write(npu, models::npu_regs::kIntStatus, status);  // acknowledge: write 1 to clear
}

void SimRuntime::stream_progress(std::uint32_t s) {
  if (s < stream_ev_.size() && stream_ev_[s]) wake_at_now(*stream_ev_[s], true);
}

void SimRuntime::task_error(std::uint32_t s, const std::string& why) {
  std::uint32_t npu = m_.stream_npu(s);
  obs_.log(npu, 0, "[HCSIM_ERR] " + m_.npu_name(npu) + " (rank " + std::to_string(ranks_.rank_of(npu)) + ") stream " + std::to_string(s) +
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

// ---- discovery (docs/discovery.md) ----

DrvStatus SimRuntime::hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) {
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

DrvStatus SimRuntime::pcie_peer(std::uint32_t device, std::uint32_t peer, bool* reachable) {
  if (device >= m_.npu_count() || peer >= m_.npu_count() || !reachable) return DrvStatus::Invalid;
  namespace R = models::npu_regs;
  std::uint64_t sa = 0, sb = 0, va = 0, vb = 0;
  if (!m_.mmio_read(device, R::kCfgPcieSwitch, &sa) || !m_.mmio_read(peer, R::kCfgPcieSwitch, &sb) ||
      !m_.mmio_read(device, R::kCfgServer, &va) || !m_.mmio_read(peer, R::kCfgServer, &vb))
    return DrvStatus::Failed;
  *reachable = device != peer && sa != 0 && sa == sb && va == vb;
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::device_rank(std::uint32_t device, std::uint32_t* rank) {
  if (device >= m_.npu_count() || !rank || ranks_.rank_of(device) == ~0u) return DrvStatus::Invalid;
  std::uint64_t r = 0;
  if (!m_.mmio_read(device, models::npu_regs::kCfgRank, &r)) return DrvStatus::Failed;
  *rank = static_cast<std::uint32_t>(r);
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::device_abort(std::uint32_t device) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  for (const std::uint32_t s : device < dev_streams_.size() ? dev_streams_[device] : std::vector<std::uint32_t>{}) {
    if (!m_.stream_valid(s) || m_.stream_npu(s) != device) continue;
    m_.abort_stream(s);
    if (s < sq_tail_.size()) m_.mmio_read(device, models::npu_regs::stream_reg(s, models::npu_regs::kSqTail), &sq_tail_[s]);
  }
  m_.reset_qps(device);  // as HCCL's retry resets its links' QPs: the aborted writes are flushed
  if (device < dev_error_.size()) dev_error_[device].clear();
  return DrvStatus::Ok;
}

DrvStatus SimRuntime::notify_reset(std::uint32_t device) {
  if (device >= m_.npu_count()) return DrvStatus::Invalid;
  m_.reset_notifies(device);
  return DrvStatus::Ok;
}

// Read from the stream registers by MMIO (SQ head: tasks started, CQ tail: tasks completed).
DrvStatus SimRuntime::device_progress(std::uint32_t device, std::uint64_t* completed, bool* head_not_started) {
  if (device >= m_.npu_count() || !completed || !head_not_started) return DrvStatus::Invalid;
  *completed = 0;
  *head_not_started = false;
  namespace R = models::npu_regs;
  if (device >= dev_streams_.size()) return DrvStatus::Ok;
  for (const std::uint32_t s : dev_streams_[device]) {  // the device's own streams only (O(its streams))
    if (!m_.stream_valid(s) || m_.stream_npu(s) != device) continue;
    std::uint64_t started = 0, done = 0;
    m_.mmio_read(device, R::stream_reg(s, R::kSqHead), &started);
    m_.mmio_read(device, R::stream_reg(s, R::kCqTail), &done);
    *completed += done;
    if (!m_.stream_idle(s) && started == done) *head_not_started = true;
  }
  return DrvStatus::Ok;
}

}  // namespace sim
