// Notify and event registers of the NPU (docs/models/npu.md): notify keys bound to registers,
// records (local, remote as a posted write over HCCS or a PCIe switch), FIFO waits, and
// CUDA-style events.
#include <algorithm>

#include "models/machine.h"

namespace models {

void Machine::notify_record_task(std::uint32_t s, const Task& t) {
  const auto& st = streams_[s];
  NpuState& me = npus_[st.npu];
  ++stats_.notifies;
  if (t.target == st.npu) {
    sch_.schedule(sch_.now() + me.params.notify_local_ps, this, stream_ev(kNotifyLocal, s), t.key);
    return;
  }
  if (t.target >= npus_.size()) { fail(s, "notify record to unknown npu " + std::to_string(t.target)); return; }
  const LinkRoute rt = links_.route(st.npu, t.target);
  if (!rt.ok() || !links_.port(rt.p1).up || (rt.p2 >= 0 && !links_.port(rt.p2).up)) {
    fail(s, "no HCCS or PCIe path from " + npus_[st.npu].name + " to " + npus_[t.target].name);
    return;
  }
  // A 4-byte register write, posted: the task completes when it has left.
  Tick start = sch_.now(), lat = rt.extra_ps;
  for (int pi : {rt.p1, rt.p2})
    if (pi >= 0) start = std::max(start, links_.port(pi).busy_until);
  Tick ser = 0;
  for (int pi : {rt.p1, rt.p2})
    if (pi >= 0) {
      Port& p = links_.port(pi);
      ser = std::max(ser, serialization_ps(4, p.p.bandwidth_Bps));
      lat += p.p.latency_ps;
    }
  for (int pi : {rt.p1, rt.p2})
    if (pi >= 0) {
      links_.port(pi).busy_until = start + ser;
      links_.port(pi).busy_ps += ser;
      if (links_.samples().on()) links_.samples().busy(static_cast<std::uint32_t>(pi), start, start + ser, ser, 0);
    }
  sch_.schedule(start + ser + lat, this, ev(kNotifyArrive, t.target), t.key);
  sch_.schedule(start + ser, this, stream_ev(kComplete, s), 0);
}

void Machine::notify_wait_task(std::uint32_t s, const Task& t) {
  const auto& st = streams_[s];
  NpuState& me = npus_[st.npu];
  const int r = bind_notify(st.npu, t.key);
  if (r < 0) { fail(s, "notify wait: all " + std::to_string(me.params.notify_regs) + " notify registers of " + npus_[st.npu].name + " are in use"); return; }
  NotifyReg& n = me.nregs[static_cast<std::uint32_t>(r)];
  if (n.count > 0) {
    --n.count;
    notify_release(st.npu, static_cast<std::uint32_t>(r));
    complete(s);
  } else {
    n.waiters.push_back(s);
  }
}

void Machine::event_record_task(std::uint32_t s, const Task& t) {
  EventReg& e = npus_[streams_[s].npu].events[t.key];
  e.completed = std::max(e.completed, t.value);
  e.t = sch_.now();
  std::vector<std::uint32_t> wake;
  auto& w = e.waiters;
  for (auto it = w.begin(); it != w.end();) {
    if (streams_[*it].q.front().value <= e.completed) { wake.push_back(*it); it = w.erase(it); }
    else ++it;
  }
  complete(s);
  for (auto ws : wake) complete(ws);
}

void Machine::event_wait_task(std::uint32_t s, const Task& t) {
  EventReg& e = npus_[streams_[s].npu].events[t.key];
  if (e.completed >= t.value) complete(s);
  else e.waiters.push_back(s);
}

int Machine::bind_notify(std::uint32_t npu, std::uint64_t key) {
  NpuState& n = npus_[npu];
  if (const std::int64_t b = n.nkey.find(key); b >= 0) return static_cast<int>(b);
  std::uint32_t r;
  if (!n.nfree.empty()) { r = n.nfree.back(); n.nfree.pop_back(); }
  else if (n.nregs.size() < n.params.notify_regs) { r = static_cast<std::uint32_t>(n.nregs.size()); n.nregs.emplace_back(); }
  else return -1;
  n.nregs[r].key = key;
  n.nregs[r].bound = true;
  n.nkey.emplace(key, r);  // NOTIFY_IN_USE reads nkey.size() (mmio.cpp)
  return static_cast<int>(r);
}

void Machine::notify_release(std::uint32_t npu, std::uint32_t r) {
  NpuState& n = npus_[npu];
  NotifyReg& g = n.nregs[r];
  if (!g.bound || g.count != 0 || !g.waiters.empty()) return;
  g.bound = false;
  n.nkey.erase(g.key);
  n.nfree.push_back(r);
}

int Machine::notify_index(std::uint32_t npu, std::uint64_t key) const {
  if (npu >= npus_.size()) return -1;
  return static_cast<int>(npus_[npu].nkey.find(key));
}

void Machine::notify_deliver(std::uint32_t npu, std::uint32_t r) {
  NotifyReg& n = npus_[npu].nregs[r];
  if (!n.waiters.empty()) {
    std::uint32_t s = n.waiters.front();
    n.waiters.erase(n.waiters.begin());
    notify_release(npu, r);
    complete(s);
  } else {
    ++n.count;
  }
}

void Machine::notify_record(std::uint32_t npu, std::uint64_t key) {
  const int r = bind_notify(npu, key);
  if (r < 0) {  // a posted write with nowhere to land: lost, flagged in INT_STATUS bit 2
    ++notify_overflows_;
    raise(npu, 4);
    return;
  }
  notify_deliver(npu, static_cast<std::uint32_t>(r));
}

}  // namespace models
