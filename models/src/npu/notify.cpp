// Notify and event registers of the NPUs (models/npu/notify.h, docs/models/npu.md).
#include "models/npu/notify.h"

#include <algorithm>

#include "models/link/links.h"
#include "models/npu/msi.h"
#include "models/npu/npu_devices.h"

namespace models {

void NotifyRegisters::record_task(std::uint32_t s, const Task& t) {
  const std::uint32_t npu = streams_.stream_npu(s);
  ++records_;
  if (t.target == npu) {
    sch_.schedule(sch_.now() + devs_.params(npu).notify_local_ps, this, stream_event::make(kLocal, s, streams_.stream_epoch(s)), t.key);
    return;
  }
  if (t.target >= devs_.count()) { streams_.task_failed(s, "notify record to unknown npu " + std::to_string(t.target)); return; }
  const LinkPath rt = links_.path(npu, t.target);
  if (!rt.ok() || !links_.port(rt.p1).up || (rt.p2 >= 0 && !links_.port(rt.p2).up)) {
    streams_.task_failed(s, "no HCCS or PCIe path from " + devs_.name(npu) + " to " + devs_.name(t.target));
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
  sch_.schedule(start + ser + lat, this, kArrive | (static_cast<std::uint64_t>(t.target) << 8), t.key);
  streams_.task_done_at(s, start + ser);
}

void NotifyRegisters::wait_task(std::uint32_t s, const Task& t) {
  const std::uint32_t npu = streams_.stream_npu(s);
  const int r = bind(npu, t.key);
  if (r < 0) {
    streams_.task_failed(s, "notify wait: all " + std::to_string(devs_.params(npu).notify_regs) + " notify registers of " +
                                devs_.name(npu) + " are in use");
    return;
  }
  NotifyReg& n = banks_[npu].nregs[static_cast<std::uint32_t>(r)];
  if (n.count > 0) {
    --n.count;
    release(npu, static_cast<std::uint32_t>(r));
    streams_.task_done(s);
  } else {
    n.waiters.push_back(s);
  }
}

void NotifyRegisters::set_event(std::uint32_t npu, const Task& t, std::vector<std::uint32_t>& wake) {
  EventReg& e = banks_[npu].events[t.key];
  e.completed = std::max(e.completed, t.value);
  e.t = sch_.now();
  auto& w = e.waiters;
  for (auto it = w.begin(); it != w.end();) {
    if (it->second <= e.completed) { wake.push_back(it->first); it = w.erase(it); }
    else ++it;
  }
}

void NotifyRegisters::event_record_task(std::uint32_t s, const Task& t) {
  std::vector<std::uint32_t> wake;
  set_event(streams_.stream_npu(s), t, wake);
  streams_.task_done(s);
  for (auto ws : wake) streams_.task_done(ws);
}

void NotifyRegisters::mark_event(std::uint32_t npu, const Task& t, std::vector<std::uint32_t>& wake) { set_event(npu, t, wake); }

void NotifyRegisters::event_wait_task(std::uint32_t s, const Task& t) {
  EventReg& e = banks_[streams_.stream_npu(s)].events[t.key];
  if (e.completed >= t.value) streams_.task_done(s);
  else e.waiters.emplace_back(s, t.value);
}

int NotifyRegisters::bind(std::uint32_t npu, std::uint64_t key) {
  Bank& n = banks_[npu];
  if (const std::int64_t b = n.nkey.find(key); b >= 0) return static_cast<int>(b);
  std::uint32_t r;
  if (!n.nfree.empty()) { r = n.nfree.back(); n.nfree.pop_back(); }
  else if (n.nregs.size() < devs_.params(npu).notify_regs) { r = static_cast<std::uint32_t>(n.nregs.size()); n.nregs.emplace_back(); }
  else return -1;
  n.nregs[r].key = key;
  n.nregs[r].bound = true;
  n.nkey.emplace(key, r);  // NOTIFY_IN_USE reads nkey.size() (in_use)
  return static_cast<int>(r);
}

void NotifyRegisters::release(std::uint32_t npu, std::uint32_t r) {
  Bank& n = banks_[npu];
  NotifyReg& g = n.nregs[r];
  if (!g.bound || g.count != 0 || !g.waiters.empty()) return;
  g.bound = false;
  n.nkey.erase(g.key);
  n.nfree.push_back(r);
}

int NotifyRegisters::index(std::uint32_t npu, std::uint64_t key) const {
  if (npu >= banks_.size()) return -1;
  return static_cast<int>(banks_[npu].nkey.find(key));
}

bool NotifyRegisters::exists(std::uint32_t npu, std::uint32_t r) const { return r < devs_.params(npu).notify_regs; }

bool NotifyRegisters::bound(std::uint32_t npu, std::uint32_t r, std::int64_t* count, std::uint64_t* key) const {
  if (r >= banks_[npu].nregs.size() || !banks_[npu].nregs[r].bound) return false;
  if (count) *count = banks_[npu].nregs[r].count;
  if (key) *key = banks_[npu].nregs[r].key;
  return true;
}

void NotifyRegisters::deliver(std::uint32_t npu, std::uint32_t r) {
  NotifyReg& n = banks_[npu].nregs[r];
  if (!n.waiters.empty()) {
    std::uint32_t s = n.waiters.front();
    n.waiters.erase(n.waiters.begin());
    release(npu, r);
    streams_.task_done(s);
  } else {
    ++n.count;
  }
}

void NotifyRegisters::record(std::uint32_t npu, std::uint64_t key) {
  const int r = bind(npu, key);
  if (r < 0) {  // a posted write with nowhere to land: lost, flagged in INT_STATUS bit 2
    ++overflows_;
    msi_.raise(npu, 4);
    return;
  }
  deliver(npu, static_cast<std::uint32_t>(r));
}

void NotifyRegisters::reset(std::uint32_t npu) {
  Bank& me = banks_.at(npu);
  for (std::uint32_t r = 0; r < me.nregs.size(); ++r)
    if (me.nregs[r].bound && me.nregs[r].waiters.empty() && me.nregs[r].count) {
      me.nregs[r].count = 0;
      release(npu, r);
    }
}

void NotifyRegisters::forget(std::uint32_t npu, std::uint32_t s) {
  Bank& me = banks_[npu];
  for (std::uint32_t r = 0; r < me.nregs.size(); ++r) {
    auto& w = me.nregs[r].waiters;
    const auto before = w.size();
    w.erase(std::remove(w.begin(), w.end(), s), w.end());
    if (w.size() != before) release(npu, r);
  }
  for (auto& e : me.events) {
    auto& w = e.second.waiters;
    w.erase(std::remove_if(w.begin(), w.end(), [s](const auto& x) { return x.first == s; }), w.end());
  }
}

void NotifyRegisters::on_event(std::uint64_t a, std::uint64_t b) {
  switch (stream_event::type(a)) {
    case kArrive: record(static_cast<std::uint32_t>(a >> 8), b); break;
    case kLocal: {  // a stream's record on its own NPU: dropped when the stream failed since
      const std::uint32_t s = stream_event::stream(a);
      if (!stream_event::current(a, streams_.stream_epoch(s))) return;
      record(streams_.stream_npu(s), b);
      streams_.task_done(s);
      break;
    }
    default: break;
  }
}

void NotifyRegisters::prefetch(std::uint64_t a, std::uint64_t) {
  if (stream_event::type(a) != kArrive) return;
  const std::uint64_t npu = a >> 8;
  if (npu < banks_.size()) {
    __builtin_prefetch(&banks_[npu].nkey);
    __builtin_prefetch(&banks_[npu].nregs);
  }
}

}  // namespace models
