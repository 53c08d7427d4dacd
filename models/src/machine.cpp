#include "models/machine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace models {

const char* link_kind_name(LinkKind k) { return k == LinkKind::Hccs ? "hccs" : k == LinkKind::Pcie ? "pcie" : "hbm"; }

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
  }
  return "?";
}

namespace {
constexpr std::uint64_t ev(std::uint64_t type, std::uint64_t id) { return type | (id << 8); }
constexpr std::uint64_t kEpochMask = 0xffffff;  // stream events carry the low 24 bits of the epoch
}  // namespace

std::uint64_t Machine::stream_ev(std::uint64_t type, std::uint32_t s) const {
  return type | (static_cast<std::uint64_t>(s) << 8) | ((streams_[s].epoch & kEpochMask) << 40);
}

std::uint32_t Machine::add_npu(const NpuParams& p) {
  if (p.sdma_engines == 0) throw std::invalid_argument("NPU needs at least one SDMA engine");
  auto n = static_cast<std::uint32_t>(npus_.size());
  npus_.emplace_back(p);
  // Unmasking a bit that is already set signals it (the MSI pending-bit rule).
  npus_.back().regs = std::make_unique<RegisterBlock>(npu_regs::table(), [this, n](std::uint32_t off, std::uint64_t) {
    if (off == npu_regs::kIntMask) signal(n);
  });
  npus_.back().regs->hw_write(npu_regs::kNpuId, n);
  // Host PCIe link of this NPU.
  std::uint32_t l = add_link(LinkKind::Pcie, kHost, n, p.host_link, "host-npu" + std::to_string(n));
  npus_[n].host_link = l;
  npus_[n].h2d[0] = static_cast<int>(links_[l].port_ab);
  npus_[n].d2h[0] = static_cast<int>(links_[l].port_ba);
  // HBM bandwidth as a port (reads and writes share it; no lanes, credits or latency here).
  const std::uint32_t h = add_link(LinkKind::Hbm, n, n, LinkParams{p.hbm.bandwidth_Bps, 0, 1, 0, 0, 0}, "npu" + std::to_string(n) + "/hbm");
  npus_[n].hbm_port = links_[h].port_ab;
  return n;
}

std::uint32_t Machine::add_root_complex(std::string name, const LinkParams& p) {
  const std::uint32_t l = add_link(LinkKind::Pcie, kHost, kHost, p, std::move(name));
  rcs_.push_back(RootComplex{links_[l].port_ab, links_[l].port_ba});
  return static_cast<std::uint32_t>(rcs_.size() - 1);
}

std::uint32_t Machine::add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name) {
  const std::uint32_t l = add_link(LinkKind::Pcie, kHost, kHost - 1 - sw, p, std::move(name));
  pcie_switches_.at(sw).down = static_cast<int>(links_[l].port_ab);
  pcie_switches_.at(sw).up = static_cast<int>(links_[l].port_ba);
  (void)rcs_.at(rc);
  return l;
}

void Machine::attach_host(std::uint32_t npu, std::uint32_t rc) {
  Npu& n = npus_.at(npu);
  const RootComplex& r = rcs_.at(rc);
  const SwitchPorts* sp = npu < npu_switch_.size() && npu_switch_[npu].sw >= 0 ? &npu_switch_[npu] : nullptr;
  const PcieSwitch* sw = sp ? &pcie_switches_[static_cast<std::size_t>(sp->sw)] : nullptr;
  if (sw && sw->up >= 0) {  // device -> switch -> upstream -> root complex
    n.d2h[0] = static_cast<int>(sp->up); n.d2h[1] = sw->up; n.d2h[2] = static_cast<int>(r.up);
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = sw->down; n.h2d[2] = static_cast<int>(sp->down);
  } else {
    n.d2h[0] = static_cast<int>(links_[n.host_link].port_ba); n.d2h[1] = static_cast<int>(r.up); n.d2h[2] = -1;
    n.h2d[0] = static_cast<int>(r.down); n.h2d[1] = static_cast<int>(links_[n.host_link].port_ab); n.h2d[2] = -1;
  }
}

std::uint64_t Port::rate() const {
  const std::uint32_t lanes = p.lanes ? p.lanes : 1;
  std::uint64_t r = p.bandwidth_Bps / lanes * active_lanes;
  // Credit-based flow control: at most rx_buffer_bytes in flight per round trip.
  if (p.rx_buffer_bytes && p.latency_ps) {
    unsigned __int128 credit = static_cast<unsigned __int128>(p.rx_buffer_bytes) * kPsPerSec / (2 * p.latency_ps);
    if (credit < r) r = static_cast<std::uint64_t>(credit);
  }
  return r;
}

std::uint32_t Machine::add_link(LinkKind kind, std::uint32_t a, std::uint32_t b, const LinkParams& p,
                                std::string name) {
  auto id = static_cast<std::uint32_t>(links_.size());
  auto pa = static_cast<std::uint32_t>(ports_.size());
  Port pt{kind, id, a, b, p};
  pt.active_lanes = p.lanes ? p.lanes : 1;
  pt.rng ^= (static_cast<std::uint64_t>(id) + 1) * 0x9e3779b97f4a7c15ULL;  // seeded per link: deterministic
  ports_.push_back(pt);
  std::swap(pt.from, pt.to);
  pt.rng ^= 0x2545f4914f6cdd1dULL;
  ports_.push_back(pt);
  links_.push_back(LinkInfo{kind, a, b, pa, pa + 1, std::move(name)});
  if (kind == LinkKind::Hccs) {
    auto ins = [&](std::uint32_t x, std::uint32_t y, std::uint32_t port) {
      auto& adj = npus_.at(x).adj;
      adj.insert(std::lower_bound(adj.begin(), adj.end(), std::make_pair(y, 0u)), {y, port});
    };
    ins(a, b, pa);
    ins(b, a, pa + 1);
  }
  return id;
}

std::uint32_t Machine::add_pcie_switch(std::string name, Tick latency_ps) {
  pcie_switches_.push_back(PcieSwitch{std::move(name), latency_ps});
  return static_cast<std::uint32_t>(pcie_switches_.size() - 1);
}

std::uint32_t Machine::add_pcie_switch_link(std::uint32_t npu, std::uint32_t sw, const LinkParams& p, std::string name) {
  auto id = static_cast<std::uint32_t>(links_.size());
  auto pa = static_cast<std::uint32_t>(ports_.size());
  Port pt{LinkKind::Pcie, id, npu, kHost - 1 - sw, p};
  pt.active_lanes = p.lanes ? p.lanes : 1;
  pt.rng ^= (static_cast<std::uint64_t>(id) + 1) * 0x9e3779b97f4a7c15ULL;
  ports_.push_back(pt);
  std::swap(pt.from, pt.to);
  ports_.push_back(pt);
  links_.push_back(LinkInfo{LinkKind::Pcie, npu, kHost - 1 - sw, pa, pa + 1, std::move(name)});
  if (npu_switch_.size() < npus_.size()) npu_switch_.resize(npus_.size());
  npu_switch_.at(npu) = SwitchPorts{sw, pa, pa + 1};
  return id;
}

Machine::Route Machine::route(std::uint32_t a, std::uint32_t b) const {
  Route r;
  r.p1 = port_between(a, b);
  if (r.p1 >= 0) return r;
  if (a < npu_switch_.size() && b < npu_switch_.size() && npu_switch_[a].sw >= 0 && npu_switch_[a].sw == npu_switch_[b].sw) {
    r.p1 = static_cast<int>(npu_switch_[a].up);
    r.p2 = static_cast<int>(npu_switch_[b].down);
    r.extra_ps = pcie_switches_[static_cast<std::size_t>(npu_switch_[a].sw)].latency;
  }
  return r;
}

int Machine::port_between(std::uint32_t a, std::uint32_t b) const {
  const auto& adj = npus_[a].adj;
  auto it = std::lower_bound(adj.begin(), adj.end(), std::make_pair(b, 0u));
  if (it == adj.end() || it->first != b) return -1;
  return static_cast<int>(it->second);
}

std::uint32_t Machine::create_stream(std::uint32_t npu) {
  StreamState st;
  st.npu = npu;
  streams_.push_back(std::move(st));
  return static_cast<std::uint32_t>(streams_.size() - 1);
}

void Machine::submit(std::uint32_t s, const Task& t) {
  enqueue(s, t);
  const auto& st = streams_.at(s);
  mmio_write(st.npu, npu_regs::stream_reg(s, npu_regs::kSqTail), st.rung + st.pending.size());
}

void Machine::enqueue(std::uint32_t s, const Task& t) { streams_.at(s).pending.push_back(t); }

bool Machine::mmio_read(std::uint32_t npu, std::uint32_t off, std::uint64_t* v) const {
  if (npu >= npus_.size() || !v) return false;
  if (off >= npu_regs::kNotifyBase) {
    if ((off - npu_regs::kNotifyBase) % 8) return false;
    const std::uint32_t r = (off - npu_regs::kNotifyBase) / 8;
    if (r >= npus_[npu].params.notify_regs) return false;
    *v = r < npus_[npu].nregs.size() && npus_[npu].nregs[r].bound ? static_cast<std::uint64_t>(npus_[npu].nregs[r].count) : 0;
    return true;
  }
  if (off < npu_regs::kStreamBase) return npus_[npu].regs->read(off, v);
  const std::uint32_t s = (off - npu_regs::kStreamBase) / 0x20, reg = (off - npu_regs::kStreamBase) % 0x20;
  if (s >= streams_.size() || streams_[s].npu != npu) return false;
  const auto& st = streams_[s];
  switch (reg) {
    case npu_regs::kSqTail: *v = st.rung; return true;
    case npu_regs::kSqHead: *v = st.started; return true;
    case npu_regs::kCqTail: *v = st.completed; return true;
    default: return false;
  }
}

bool Machine::mmio_write(std::uint32_t npu, std::uint32_t off, std::uint64_t v) {
  if (npu >= npus_.size()) return false;
  if (off >= npu_regs::kNotifyBase) {  // a notify record by MMIO: v records
    if ((off - npu_regs::kNotifyBase) % 8) return false;
    const std::uint32_t r = (off - npu_regs::kNotifyBase) / 8;
    if (r >= npus_[npu].nregs.size() || !npus_[npu].nregs[r].bound || v == 0 || v > (1u << 20)) return false;
    const std::uint64_t key = npus_[npu].nregs[r].key;
    for (std::uint64_t i = 0; i < v; ++i) notify_record(npu, key);  // a wake-up may release the register
    return true;
  }
  if (off < npu_regs::kStreamBase) return npus_[npu].regs->write(off, v);
  const std::uint32_t s = (off - npu_regs::kStreamBase) / 0x20, reg = (off - npu_regs::kStreamBase) % 0x20;
  if (s >= streams_.size() || streams_[s].npu != npu || reg != npu_regs::kSqTail) return false;  // SQ_HEAD, CQ_TAIL: RO
  auto& st = streams_[s];
  // Doorbell: the new tail may not pass what was enqueued, nor move back.
  if (v < st.rung || v > st.rung + st.pending.size()) return false;
  for (; st.rung < v; ++st.rung) {
    Task t = std::move(st.pending.front());
    st.pending.pop_front();
    if (!st.failed) st.q.push_back(std::move(t));  // a failed stream drops work until the error is cleared
  }
  if (!st.busy && !st.q.empty()) {
    st.busy = true;
    sch_.schedule(sch_.now() + npus_[st.npu].params.task_dispatch_ps, this, stream_ev(kDispatch, s), 0);
  }
  return true;
}

void Machine::load_config(std::uint32_t npu, std::uint32_t off, std::uint64_t v) { npus_.at(npu).regs->hw_write(off, v); }

bool Machine::check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const {
  if (!addr_is_device(addr) || addr_npu(addr) >= npus_.size()) {
    why = "address 0x" + [](std::uint64_t v) { char b[32]; snprintf(b, sizeof b, "%llx", (unsigned long long)v); return std::string(b); }(addr) +
          " is not device memory";
    return false;
  }
  if (!npus_[addr_npu(addr)].hbm.in_range(addr_offset(addr), len)) {
    why = "access of " + std::to_string(len) + " bytes at offset " + std::to_string(addr_offset(addr)) +
          " exceeds HBM of npu" + std::to_string(addr_npu(addr));
    return false;
  }
  return true;
}

void Machine::dispatch(std::uint32_t s) {
  auto& st = streams_[s];
  if (st.q.empty()) { st.busy = false; return; }
  const Task& t = st.q.front();
  Npu& me = npus_[st.npu];
  ++stats_.tasks;
  ++st.started;
  switch (t.kind) {
    case TaskKind::Copy:
    case TaskKind::ReduceCopy:
    case TaskKind::HostToDevice:
    case TaskKind::DeviceToHost:
      start_transfer(s, t);
      return;
    case TaskKind::NotifyRecord: {
      ++stats_.notifies;
      if (t.target == st.npu) {
        sch_.schedule(sch_.now() + me.params.notify_local_ps, this, stream_ev(kNotifyLocal, s), t.key);
        return;
      }
      if (t.target >= npus_.size()) { fail(s, "notify record to unknown npu " + std::to_string(t.target)); return; }
      const Route rt = route(st.npu, t.target);
      if (!rt.ok() || !ports_[rt.p1].up || (rt.p2 >= 0 && !ports_[rt.p2].up)) {
        fail(s, "no HCCS or PCIe path from npu" + std::to_string(st.npu) + " to npu" + std::to_string(t.target));
        return;
      }
      // A 4-byte register write, posted: the task completes when it has left.
      Tick start = sch_.now(), lat = rt.extra_ps;
      for (int pi : {rt.p1, rt.p2})
        if (pi >= 0) start = std::max(start, ports_[pi].busy_until);
      Tick ser = 0;
      for (int pi : {rt.p1, rt.p2})
        if (pi >= 0) {
          Port& p = ports_[pi];
          ser = std::max(ser, serialization_ps(4, p.p.bandwidth_Bps));
          lat += p.p.latency_ps;
        }
      for (int pi : {rt.p1, rt.p2})
        if (pi >= 0) { ports_[pi].busy_until = start + ser; ports_[pi].busy_ps += ser; }
      sch_.schedule(start + ser + lat, this, ev(kNotifyArrive, t.target), t.key);
      sch_.schedule(start + ser, this, stream_ev(kComplete, s), 0);
      return;
    }
    case TaskKind::NotifyWait: {
      const int r = bind_notify(st.npu, t.key);
      if (r < 0) { fail(s, "notify wait: all " + std::to_string(me.params.notify_regs) + " notify registers of npu" + std::to_string(st.npu) + " are in use"); return; }
      NotifyReg& n = me.nregs[static_cast<std::uint32_t>(r)];
      if (n.count > 0) {
        --n.count;
        notify_release(st.npu, static_cast<std::uint32_t>(r));
        complete(s);
      } else {
        n.waiters.push_back(s);
      }
      return;
    }
    case TaskKind::EventRecord: {
      EventReg& e = me.events[t.key];
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
      return;
    }
    case TaskKind::EventWait: {
      EventReg& e = me.events[t.key];
      if (e.completed >= t.value) complete(s);
      else e.waiters.push_back(s);
      return;
    }
    case TaskKind::Marker:
      if (listener_) listener_->on_marker(st.npu, s, t.key, sch_.now());
      complete(s);
      return;
    case TaskKind::RdmaWrite:
      start_rdma(s, t);
      return;
  }
}

void Machine::complete(std::uint32_t s) {
  auto& st = streams_[s];
  st.q.pop_front();
  ++st.completed;
  if (st.space_at != ~0ULL && st.q.size() + st.pending.size() <= st.space_at) {
    st.space_at = ~0ULL;
    if (listener_) listener_->on_sq_space(s);
  }
  if (st.q.empty()) {
    st.busy = false;
    if (listener_) listener_->on_stream_idle(s);
  } else {
    sch_.schedule(sch_.now() + npus_[st.npu].params.task_dispatch_ps, this, stream_ev(kDispatch, s), 0);
  }
}

void Machine::fail(std::uint32_t s, const std::string& why) {
  auto& st = streams_[s];
  raise(st.npu, 1);
  st.failed = true;
  st.error = why;
  st.q.clear();
  st.busy = false;
  // Orphan what the failed task had in flight: its transfer stops moving bytes, its pending
  // completions are ignored, and it no longer waits on a notify or event register.
  ++st.epoch;
  Npu& me = npus_[st.npu];
  for (std::uint32_t r = 0; r < me.nregs.size(); ++r) {
    auto& w = me.nregs[r].waiters;
    const auto before = w.size();
    w.erase(std::remove(w.begin(), w.end(), s), w.end());
    if (w.size() != before) notify_release(st.npu, r);
  }
  for (auto& e : me.events) e.second.waiters.erase(std::remove(e.second.waiters.begin(), e.second.waiters.end(), s), e.second.waiters.end());
  st.space_at = ~0ULL;  // its queue is empty now (on_stream_idle below wakes a blocked submitter)
  if (listener_) {
    listener_->on_task_error(s, why);
    listener_->on_stream_idle(s);
  }
}

std::uint32_t Machine::alloc_xfer() {
  if (!free_xfers_.empty()) {
    auto id = free_xfers_.back();
    free_xfers_.pop_back();
    return id;
  }
  xfers_.emplace_back();
  return static_cast<std::uint32_t>(xfers_.size() - 1);
}

void Machine::start_transfer(std::uint32_t s, const Task& t) {
  const std::uint32_t e_npu = streams_[s].npu;
  Npu& me = npus_[e_npu];
  std::string why;
  Transfer x;
  x.stream = s;
  x.epoch = streams_[s].epoch;
  x.task = t;
  x.npu = e_npu;
  std::uint64_t bw = me.params.sdma_bandwidth_Bps;
  Tick lat = 0;
  x.earliest = sch_.now() + me.params.sdma_setup_ps;  // descriptor fetch delays the first byte
  if (t.kind == TaskKind::HostToDevice || t.kind == TaskKind::DeviceToHost) {
    std::uint64_t dev = t.kind == TaskKind::HostToDevice ? t.dst : t.src;
    if (!check_range(dev, t.bytes, why)) { fail(s, why); return; }
    if (addr_npu(dev) != e_npu) { fail(s, "host DMA must target the stream's own NPU"); return; }
    if (t.bytes && !t.host) { fail(s, "null host pointer"); return; }
    const int* path = t.kind == TaskKind::HostToDevice ? me.h2d : me.d2h;
    x.port = path[0];
    x.port2 = path[1];
    x.port3 = path[2];
    if (x.port3 >= 0) lat += pcie_switches_[static_cast<std::size_t>(npu_switch_[e_npu].sw)].latency;
  } else {
    if (!check_range(t.src, t.bytes, why) || !check_range(t.dst, t.bytes, why)) { fail(s, why); return; }
    if (t.kind == TaskKind::ReduceCopy && (t.bytes % dtype_size(t.dtype) != 0 ||
                                          addr_offset(t.dst) % dtype_size(t.dtype) != 0)) {
      fail(s, "reduce copy not aligned to the element size");
      return;
    }
    std::uint32_t sn = addr_npu(t.src), dn = addr_npu(t.dst);
    if (sn != e_npu && dn != e_npu) { fail(s, "SDMA copy must read or write the stream's own NPU"); return; }
    if (sn != dn) {
      const Route rt = route(sn, dn);
      if (!rt.ok()) {
        fail(s, "no HCCS link or PCIe switch between npu" + std::to_string(sn) + " and npu" + std::to_string(dn));
        return;
      }
      x.port = rt.p1;
      x.port2 = rt.p2;
      lat += rt.extra_ps;
    }
  }
  if (addr_is_device(t.src) && t.kind != TaskKind::HostToDevice) x.hbm_src = static_cast<int>(npus_[addr_npu(t.src)].hbm_port);
  if (addr_is_device(t.dst) && t.kind != TaskKind::DeviceToHost) x.hbm_dst = static_cast<int>(npus_[addr_npu(t.dst)].hbm_port);
  for (int pi : {x.hbm_src, x.hbm_dst})
    if (pi >= 0) bw = std::min(bw, ports_[pi].rate());
  for (int pi : {x.port, x.port2, x.port3}) {
    if (pi < 0) continue;
    const Port& p = ports_[pi];
    if (!p.up) { fail(s, "link " + links_[p.link].name + " is down"); return; }
    bw = std::min(bw, p.rate());
    lat += p.p.latency_ps;
  }
  // HBM access latency: the engine's first read of the source, and the last write landing in the
  // destination (host memory's side is part of the PCIe link latency).
  if (addr_is_device(t.src) && t.kind != TaskKind::HostToDevice) x.earliest += npus_[addr_npu(t.src)].params.hbm.access_latency_ps;
  if (addr_is_device(t.dst) && t.kind != TaskKind::DeviceToHost) lat += npus_[addr_npu(t.dst)].params.hbm.access_latency_ps;
  x.bw = bw;
  x.latency = lat;
  // SDMA channel: the one free earliest (lowest index on ties) — deterministic.
  auto it = std::min_element(me.sdma_busy.begin(), me.sdma_busy.end());
  x.engine = static_cast<std::uint32_t>(it - me.sdma_busy.begin());
  std::uint32_t id = alloc_xfer();
  xfers_[id] = std::move(x);
  if (t.bytes == 0) {
    ++xfers_[id].inflight;
    sch_.schedule(xfers_[id].earliest + lat, this, ev(kPieceArrive, id), 0);
    return;
  }
  send_piece(id);
}

// Reserve the next piece on the SDMA engine and the ports of its path, starting when all are free:
// the engine for bytes / min(bw), each port for bytes at its own rate (a faster shared port, such
// as a root complex, is held only for its share); the piece lands one path latency after its last
// byte leaves.
void Machine::abort_transfer(std::uint32_t id) {
  Transfer& x = xfers_[id];
  x.aborted = true;
  if (x.inflight == 0 && !x.sending) free_xfers_.push_back(id);
}

void Machine::send_piece(std::uint32_t id) {
  Transfer& x = xfers_[id];
  x.sending = false;
  if (x.aborted || streams_[x.stream].epoch != x.epoch) { abort_transfer(id); return; }
  Npu& me = npus_[x.npu];
  std::uint64_t off = x.done;
  std::uint64_t len = std::min(piece_bytes_, x.task.bytes - off);
  const Tick start = std::max({sch_.now(), x.earliest, me.sdma_busy[x.engine]});
  Tick ser = serialization_ps(len, x.bw), lost = 0;
  for (int pi : {x.port2, x.port3})
    if (pi >= 0 && !ports_[pi].up) {
      std::uint32_t s = x.stream;
      const std::string name = links_[ports_[pi].link].name;
      abort_transfer(id);
      fail(s, "link " + name + " went down during a transfer");
      return;
    }
  if (x.port >= 0) {
    Port& p = ports_[x.port];
    if (!p.up) {  // the link went down while the transfer was in progress
      std::uint32_t s = x.stream;
      abort_transfer(id);
      fail(s, "link " + links_[p.link].name + " went down during a transfer");
      return;
    }
    // Frames failing their CRC are replayed: each costs a round trip plus the frame again.
    const std::uint64_t fb = p.p.frame_bytes ? p.p.frame_bytes : len;
    const std::uint64_t frames = (len + fb - 1) / fb;
    p.frames += frames;
    if (p.p.crc_error_rate > 0) {
      const double lq = std::log1p(-std::min(p.p.crc_error_rate, 0.999999));
      std::uint64_t pos = 0, errors = 0;
      for (;;) {  // geometric gaps between errors
        p.rng ^= p.rng << 13; p.rng ^= p.rng >> 7; p.rng ^= p.rng << 17;
        double u = (static_cast<double>(p.rng >> 11) + 0.5) / 9007199254740992.0;
        pos += static_cast<std::uint64_t>(std::floor(std::log(u) / lq)) + 1;
        if (pos > frames) break;
        ++errors;
      }
      if (errors) {
        lost = errors * (2 * p.p.latency_ps + serialization_ps(fb, x.bw));
        p.rx_retry += errors;
        p.retry_ps += lost;
        ser += lost;
      }
    }
    // Credit stalls: the time the credit limit adds over the lanes' rate.
    const std::uint64_t lane_rate = p.p.bandwidth_Bps / (p.p.lanes ? p.p.lanes : 1) * p.active_lanes;
    if (x.bw < lane_rate && x.bw == p.rate()) p.credit_stall_ps += serialization_ps(len, x.bw) - serialization_ps(len, lane_rate);
  }
  // Each port serves its pieces in order at its own rate: it finishes this one at
  // max(its busy_until, start) + bytes / rate, and the piece ends no earlier than any of them. A
  // port that is this piece's bottleneck is thus held exclusively (busy until); a faster shared
  // port (a root complex) only accrues the work, so flows below its capacity do not queue.
  Tick end = start + ser;
  for (int pi : {x.port, x.port2, x.port3, x.hbm_src, x.hbm_dst}) {
    if (pi < 0) continue;
    Port& p = ports_[pi];
    const Tick own = serialization_ps(len, p.rate()) + (pi == x.port ? lost : 0);
    p.busy_until = std::max(p.busy_until, start) + own;
    end = std::max(end, p.busy_until);
    p.busy_ps += own;
    p.bytes += len;
    ++p.pieces;
  }
  me.sdma_busy[x.engine] = end;
  ++stats_.pieces;
  x.done += len;
  ++x.inflight;
  sch_.schedule(end + x.latency, this, ev(kPieceArrive, id), off);
  if (x.done < x.task.bytes) {
    x.sending = true;
    sch_.schedule(end, this, ev(kPieceSent, id), 0);
  }
}

void Machine::arrive_piece(std::uint32_t id, std::uint64_t off, std::uint64_t) {
  Transfer& x = xfers_[id];
  --x.inflight;
  // An orphaned transfer moves no more bytes: a crashed rank's host buffers are gone, and a
  // failed stream's next task must not be completed by its predecessor's last piece.
  if (x.aborted || streams_[x.stream].epoch != x.epoch) { abort_transfer(id); return; }
  const Task& t = x.task;
  std::uint64_t len = std::min(piece_bytes_, t.bytes - off);
  if (len > 0) {
    switch (t.kind) {
      case TaskKind::HostToDevice:
        npus_[addr_npu(t.dst)].hbm.write(addr_offset(t.dst) + off, static_cast<const std::uint8_t*>(t.host) + off, len);
        break;
      case TaskKind::DeviceToHost:  // timing-only HBM has no bytes to give: the host buffer is left alone
        if (npus_[addr_npu(t.src)].hbm.stores_bytes())
          npus_[addr_npu(t.src)].hbm.read(addr_offset(t.src) + off, static_cast<std::uint8_t*>(t.host) + off, len);
        break;
      case TaskKind::Copy:
      case TaskKind::ReduceCopy: {
        SparseMemory& src = npus_[addr_npu(t.src)].hbm;
        SparseMemory& dst = npus_[addr_npu(t.dst)].hbm;
        if (!dst.stores_bytes()) break;
        scratch_.resize(len);
        src.read(addr_offset(t.src) + off, scratch_.data(), len);
        if (t.kind == TaskKind::Copy) dst.write(addr_offset(t.dst) + off, scratch_.data(), len);
        else dst.reduce(addr_offset(t.dst) + off, scratch_.data(), len, static_cast<int>(t.dtype), static_cast<int>(t.op));
        break;
      }
      default: break;
    }
  }
  if (off + len >= t.bytes) {  // last piece: arrivals are in order on one path
    std::uint32_t s = x.stream;
    free_xfers_.push_back(id);
    complete(s);
  }
}

int Machine::bind_notify(std::uint32_t npu, std::uint64_t key) {
  Npu& n = npus_[npu];
  auto it = n.nkey.find(key);
  if (it != n.nkey.end()) return static_cast<int>(it->second);
  std::uint32_t r;
  if (!n.nfree.empty()) { r = n.nfree.back(); n.nfree.pop_back(); }
  else if (n.nregs.size() < n.params.notify_regs) { r = static_cast<std::uint32_t>(n.nregs.size()); n.nregs.emplace_back(); }
  else return -1;
  n.nregs[r].key = key;
  n.nregs[r].bound = true;
  n.nkey.emplace(key, r);
  n.regs->hw_write(npu_regs::kNotifyInUse, n.nkey.size());
  return static_cast<int>(r);
}

void Machine::notify_release(std::uint32_t npu, std::uint32_t r) {
  Npu& n = npus_[npu];
  NotifyReg& g = n.nregs[r];
  if (!g.bound || g.count != 0 || !g.waiters.empty()) return;
  g.bound = false;
  n.nkey.erase(g.key);
  n.nfree.push_back(r);
  n.regs->hw_write(npu_regs::kNotifyInUse, n.nkey.size());
}

int Machine::notify_index(std::uint32_t npu, std::uint64_t key) const {
  if (npu >= npus_.size()) return -1;
  auto it = npus_[npu].nkey.find(key);
  return it == npus_[npu].nkey.end() ? -1 : static_cast<int>(it->second);
}

void Machine::notify_deliver(std::uint32_t npu, std::uint32_t r) {
  NotifyReg& n = npus_[npu].nregs[r];
  if (!n.waiters.empty()) {
    std::uint32_t s = n.waiters.front();
    n.waiters.pop_front();
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

void Machine::raise(std::uint32_t npu, std::uint64_t bits) {
  // Edge-triggered (MSI): bits that become set and are not masked send one message; bits that
  // stay set send nothing more. Messages coalesce while one is in flight.
  Npu& n = npus_[npu];
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  n.regs->hw_set_bits(npu_regs::kIntStatus, bits);
  if ((bits & ~status & ~mask) != 0) signal(npu);
}

void Machine::signal(std::uint32_t npu) {
  Npu& n = npus_[npu];
  std::uint64_t status = 0, mask = 0;
  n.regs->read(npu_regs::kIntStatus, &status);
  n.regs->read(npu_regs::kIntMask, &mask);
  if ((status & ~mask) == 0 || n.msi_pending) return;
  n.msi_pending = true;
  sch_.schedule(sch_.now() + n.params.msi_latency_ps, this, ev(kInterrupt, npu), 0);
}

void Machine::on_event(std::uint64_t a, std::uint64_t b) {
  std::uint64_t type = a & 0xff, id = a >> 8;
  if (type == kDispatch || type == kNotifyLocal || type == kComplete) {  // stream events: drop stale ones
    const auto s = static_cast<std::uint32_t>(id);
    if (((id >> 32) & kEpochMask) != (streams_[s].epoch & kEpochMask)) return;
    id = s;
  }
  switch (type) {
    case kInterrupt: {
      Npu& n = npus_[id];
      n.msi_pending = false;
      std::uint64_t status = 0, mask = 0;
      n.regs->read(npu_regs::kIntStatus, &status);
      n.regs->read(npu_regs::kIntMask, &mask);
      if ((status & ~mask) == 0) break;  // cleared (or masked) before it was taken
      ++interrupts_;
      if (listener_) listener_->on_interrupt(static_cast<std::uint32_t>(id), status & ~mask);
      break;
    }
    case kDispatch: dispatch(static_cast<std::uint32_t>(id)); break;
    case kPieceSent: send_piece(static_cast<std::uint32_t>(id)); break;
    case kPieceArrive: arrive_piece(static_cast<std::uint32_t>(id), b, 0); break;
    case kNotifyArrive: notify_record(static_cast<std::uint32_t>(id), b); break;
    case kNotifyLocal: {
      auto s = static_cast<std::uint32_t>(id);
      notify_record(streams_[s].npu, b);
      complete(s);
      break;
    }
    case kComplete: complete(static_cast<std::uint32_t>(id)); break;
    default: break;
  }
}

void Machine::attach_network(Network* net, std::vector<std::uint32_t> nic_node) {
  net_ = net;
  nic_node_ = std::move(nic_node);
  net_->set_listener(this);
}

std::uint32_t Machine::qp_for(std::uint32_t src, std::uint32_t dst, std::uint32_t index) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 40) | (static_cast<std::uint64_t>(dst) << 16) | (index & 0xffff);
  auto it = qp_of_.find(key);
  if (it != qp_of_.end()) return it->second;
  // Each QP gets its own UDP source port, so ECMP spreads QPs over paths (RoCE v2).
  auto sport = static_cast<std::uint16_t>(49152 + ((src * 2654435761u) ^ (dst * 40503u) ^ (index * 2246822519u)) % 16384);
  std::uint32_t qp = net_->create_qp(nic_node_[src], nic_node_[dst], sport);
  qp_of_.emplace(key, qp);
  return qp;
}

// An RDMA write: the NIC of the stream's NPU moves src (local HBM) to dst (the target NPU's HBM)
// through the RoCE network; bytes land in the destination as packets arrive in order; an optional
// notify write follows on the same QP, so it lands after the data. The task completes when every
// write of it is acknowledged.
void Machine::start_rdma(std::uint32_t s, const Task& t) {
  const std::uint32_t me = streams_[s].npu;
  std::string why;
  if (t.target >= npus_.size()) { fail(s, "RDMA write to unknown npu " + std::to_string(t.target)); return; }
  if (!has_nic(me) || !has_nic(t.target)) {
    fail(s, "no RoCE path from npu" + std::to_string(me) + " to npu" + std::to_string(t.target) + " (no NIC or no network)");
    return;
  }
  if (t.bytes) {
    if (!check_range(t.src, t.bytes, why) || !check_range(t.dst, t.bytes, why)) { fail(s, why); return; }
    if (addr_npu(t.src) != me || addr_npu(t.dst) != t.target) { fail(s, "RDMA write must read local HBM and write the target's"); return; }
    // The responder's access check (checked when posted; the model does not charge the NAK's trip).
    const auto& mrs = npus_[t.target].mrs;
    auto it = mrs.find(t.rkey);
    const char* bad = nullptr;
    if (it == mrs.end()) bad = "unknown rkey";
    else if (!(it->second.access & kRemoteWrite)) bad = "region not registered for REMOTE_WRITE";
    else if (t.dst < it->second.addr || t.dst + t.bytes > it->second.addr + it->second.bytes) bad = "write outside the registered region";
    if (bad) {
      ++rdma_access_errors_;
      char b[160];
      std::snprintf(b, sizeof b, "remote access error on npu%u: %s (rkey 0x%x, %llu bytes at offset 0x%llx)", t.target, bad, t.rkey,
                    static_cast<unsigned long long>(t.bytes), static_cast<unsigned long long>(addr_offset(t.dst)));
      fail(s, b);
      return;
    }
  }
  std::uint32_t id;
  if (!free_rdmas_.empty()) { id = free_rdmas_.back(); free_rdmas_.pop_back(); }
  else { id = static_cast<std::uint32_t>(rdmas_.size()); rdmas_.emplace_back(); }
  // One QP: the data write and the notify write go back to back (RC keeps them in order).
  // Several QPs (striping): the data parts go in parallel; the notify follows once all are acked.
  const std::uint32_t k = std::max<std::uint32_t>(1, std::min<std::uint64_t>(t.qp_count, std::max<std::uint64_t>(1, t.bytes / 4096)));
  rdmas_[id] = Rdma{s, t, 0, true, k > 1 && t.value != 0, streams_[s].epoch};
  const std::uint64_t part = (t.bytes + k - 1) / k;
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint64_t off = std::min<std::uint64_t>(t.bytes, i * part), len = std::min<std::uint64_t>(part, t.bytes - off);
    if (len == 0 && (i > 0 || t.value)) continue;
    std::uint32_t qp = qp_for(me, t.target, i);
    net_->set_qp_rate_cap(qp, t.rate_cap_Bps ? std::max<std::uint64_t>(1, t.rate_cap_Bps / k) : 0);  // the cap is for all parts together
    net_->set_qp_retry_count(qp, t.retry_count);
    ++rdmas_[id].pending;
    // tag: rdma id, part index, notify bit; the part's offset is recovered from the index
    net_->post_write(qp, len, (static_cast<std::uint64_t>(id) << 8) | (static_cast<std::uint64_t>(i) << 1));
  }
  if (t.value && k == 1) {
    ++rdmas_[id].pending;
    net_->post_write(qp_for(me, t.target, 0), 4, (static_cast<std::uint64_t>(id) << 8) | 1);
  }
  if (rdmas_[id].pending == 0) {  // nothing to send at all
    free_rdmas_.push_back(id);
    complete(s);
  }
}

void Machine::on_data(std::uint32_t, std::uint64_t tag, std::uint64_t off, std::uint64_t len) {
  const Rdma& r = rdmas_[tag >> 8];
  const Task& t = r.task;
  if (tag & 1) {  // the notify write: one packet
    notify_record(t.target, t.key);
    return;
  }
  const std::uint32_t k = std::max<std::uint32_t>(1, std::min<std::uint64_t>(t.qp_count, std::max<std::uint64_t>(1, t.bytes / 4096)));
  off += ((tag >> 1) & 0x7f) * ((t.bytes + k - 1) / k);  // the part's offset in the write
  SparseMemory& dst = npus_[addr_npu(t.dst)].hbm;
  if (!dst.stores_bytes() || len == 0) return;
  scratch_.resize(len);
  npus_[addr_npu(t.src)].hbm.read(addr_offset(t.src) + off, scratch_.data(), len);
  dst.write(addr_offset(t.dst) + off, scratch_.data(), len);
}

void Machine::on_write_done(std::uint32_t, std::uint64_t tag, bool ok) {
  const auto id = static_cast<std::uint32_t>(tag >> 8);
  Rdma& r = rdmas_[id];
  r.ok = r.ok && ok;
  if (--r.pending) return;
  if (r.ok && r.notify_after) {  // striped data all acknowledged: now the ordered notify
    r.notify_after = false;
    r.pending = 1;
    net_->post_write(qp_for(streams_[r.stream].npu, r.task.target, 0), 4, (static_cast<std::uint64_t>(id) << 8) | 1);
    return;
  }
  std::uint32_t s = r.stream;
  bool good = r.ok;
  const bool orphaned = streams_[s].epoch != r.epoch;  // the stream failed meanwhile
  free_rdmas_.push_back(id);
  if (orphaned) return;
  if (good) complete(s);
  else fail(s, "RDMA write failed: retry count exceeded (link down or persistent loss)");
}

std::uint32_t Machine::register_mr(std::uint32_t npu, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access) {
  Npu& n = npus_.at(npu);
  std::uint32_t key = n.next_key++;
  n.mrs[key] = Npu::Mr{addr, bytes, access};
  return key;
}

bool Machine::deregister_mr(std::uint32_t npu, std::uint32_t key) { return npus_.at(npu).mrs.erase(key) == 1; }

void Machine::crash_npu(std::uint32_t npu) {
  for (std::uint32_t l = 0; l < links_.size(); ++l)
    if ((links_[l].a == npu || links_[l].b == npu) && links_[l].kind != LinkKind::Hbm) set_link_up(l, false);
  for (std::uint32_t s = 0; s < streams_.size(); ++s)
    if (streams_[s].npu == npu && streams_[s].alive && !streams_[s].q.empty()) fail(s, "npu" + std::to_string(npu) + " crashed");
}

void Machine::set_link_up(std::uint32_t link, bool up) {
  const LinkInfo& l = links_.at(link);
  ports_[l.port_ab].up = ports_[l.port_ba].up = up;
  for (std::uint32_t end : {l.a, l.b})
    if (end < npus_.size()) raise(end, 2);
  if (listener_) listener_->on_link_event(link, up ? "up" : "down");
}

void Machine::set_link_lanes(std::uint32_t link, std::uint32_t lanes) {
  const LinkInfo& l = links_.at(link);
  for (auto p : {l.port_ab, l.port_ba}) ports_[p].active_lanes = std::max<std::uint32_t>(1, std::min(lanes, ports_[p].p.lanes));
  if (listener_) listener_->on_link_event(link, "lanes " + std::to_string(ports_[l.port_ab].active_lanes) + "/" + std::to_string(ports_[l.port_ab].p.lanes));
}

void Machine::set_link_crc_rate(std::uint32_t link, double rate) {
  const LinkInfo& l = links_.at(link);
  ports_[l.port_ab].p.crc_error_rate = ports_[l.port_ba].p.crc_error_rate = rate;
  if (listener_) listener_->on_link_event(link, "crc error rate " + std::to_string(rate));
}

void Machine::backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len) {
  npus_.at(addr_npu(addr)).hbm.write(addr_offset(addr), src, len);
}

void Machine::backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const {
  npus_.at(addr_npu(addr)).hbm.read(addr_offset(addr), dst, len);
}

}  // namespace models
