// Machine: composes NPUs, links and the NPU side of the NIC (docs/models/README.md). This file
// holds only what spans the rooms: adding an NPU, the event switch, crashes and link faults,
// backdoor access, and the NPU side of the RDMA engine's RdmaHost.
#include "models/machine.h"

#include <cstdio>
#include <stdexcept>

namespace models {

std::uint32_t Machine::add_npu(const NpuParams& p, std::string name) {
  if (p.sdma_engines == 0) throw std::invalid_argument("NPU needs at least one SDMA engine");
  auto n = static_cast<std::uint32_t>(npus_.size());
  npus_.emplace_back(p);
  npus_.back().name = name.empty() ? "npu" + std::to_string(n) : std::move(name);
  links_.add_npu();
  rdma_.add_npu();
  hbm_shape_.push_back({p.hbm.capacity_bytes, p.hbm.store_bytes});
  // Unmasking a bit that is already set signals it (the MSI pending-bit rule).
  npus_.back().regs = std::make_unique<RegisterBlock>(npu_regs::layout(), [this, n](std::uint32_t off, std::uint64_t) {
    if (off == npu_regs::kIntMask) msi_.signal(n);
  });
  npus_.back().regs->hw_write(npu_regs::kNpuId, n);
  msi_.add_npu(npus_.back().regs.get(), p.msi_latency_ps);
  // Host PCIe link of this NPU.
  std::uint32_t l = add_link(LinkKind::Pcie, kHost, n, p.host_link, npus_[n].name + "/host");
  npus_[n].host_link = l;
  npus_[n].h2d[0] = static_cast<int>(links_.link(l).port_ab);
  npus_[n].d2h[0] = static_cast<int>(links_.link(l).port_ba);
  // HBM bandwidth as a port (reads and writes share it; no lanes, credits or latency here).
  const std::uint32_t h = add_link(LinkKind::Hbm, n, n, LinkParams{p.hbm.bandwidth_Bps, 0, 1, 0, 0, 0}, npus_[n].name + "/hbm");
  npus_[n].hbm_port = links_.link(h).port_ab;
  return n;
}

bool Machine::check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const {
  if (!addr_is_device(addr) || addr_npu(addr) >= npus_.size()) {
    why = "address 0x" + [](std::uint64_t v) { char b[32]; snprintf(b, sizeof b, "%llx", (unsigned long long)v); return std::string(b); }(addr) +
          " is not device memory";
    return false;
  }
  if (!SparseMemory::fits(hbm_shape_[addr_npu(addr)].capacity, addr_offset(addr), len)) {  // the dense copy
    why = "access of " + std::to_string(len) + " bytes at offset " + std::to_string(addr_offset(addr)) +
          " exceeds HBM of " + npus_[addr_npu(addr)].name;
    return false;
  }
  return true;
}

void Machine::rdma_task_done(std::uint32_t s, Tick at) {
  if (at <= sch_.now()) complete(s);
  else sch_.schedule(at, this, stream_ev(kComplete, s), 0);
}

Tick Machine::forward_leg(std::uint32_t lender, std::uint32_t target, std::uint64_t len) {
  return links_.cut_through(lender, target, npus_[target].hbm_port, npus_[target].params.hbm.access_latency_ps, len, sch_.now());
}

// A link fault: the Links change state; both ends' NPUs raise their link interrupt; the listener records it.
void Machine::set_link_up(std::uint32_t link, bool up) {
  links_.set_up(link, up);
  const LinkInfo& l = links_.link(link);
  for (std::uint32_t end : {l.a, l.b})
    if (end < npus_.size()) raise(end, 2);
  if (listener_) listener_->on_link_event(link, up ? "up" : "down");
}

void Machine::set_link_lanes(std::uint32_t link, std::uint32_t lanes) {
  const std::uint32_t active = links_.set_lanes(link, lanes);
  if (listener_) listener_->on_link_event(link, "lanes " + std::to_string(active) + "/" + std::to_string(links_.port(links_.link(link).port_ab).p.lanes));
}

void Machine::set_link_crc_rate(std::uint32_t link, double rate) {
  links_.set_crc_rate(link, rate);
  if (listener_) listener_->on_link_event(link, "crc error rate " + std::to_string(rate));
}

void Machine::on_event(std::uint64_t a, std::uint64_t b) {
  std::uint64_t type = a & 0xff, id = a >> 8;
  if (type == kDispatch || type == kNotifyLocal || type == kComplete) {  // stream events: drop stale ones
    const auto s = static_cast<std::uint32_t>(id);
    if (((id >> 32) & kEpochMask) != (streams_[s].epoch & kEpochMask)) return;
    id = s;
  }
  switch (type) {
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

// The event queue names the next event while this one runs: start loading the stream, transfer
// or NPU it will touch (at 8192 NPUs these miss cache; the loads overlap the current event).
void Machine::prefetch(std::uint64_t a, std::uint64_t) {
  const std::uint64_t type = a & 0xff, id = a >> 8;
  switch (type) {
    case kDispatch:
    case kNotifyLocal:
    case kComplete: {
      const auto s = static_cast<std::uint32_t>(id);
      if (s < streams_.size()) {
        const char* x = reinterpret_cast<const char*>(&streams_[s]);
        __builtin_prefetch(x);
        __builtin_prefetch(x + 64);
      }
      break;
    }
    case kPieceSent:
    case kPieceArrive:
      if (id < xfers_.size()) {
        const char* x = reinterpret_cast<const char*>(&xfers_[id]);
        __builtin_prefetch(x);
        __builtin_prefetch(x + 64);
        __builtin_prefetch(x + 128);
      }
      break;
    case kNotifyArrive:
      if (id < npus_.size()) {
        __builtin_prefetch(&npus_[id].nkey);
        __builtin_prefetch(&npus_[id].nregs);
      }
      break;
    default: break;
  }
}

void Machine::crash_npu(std::uint32_t npu) {
  const std::vector<LinkInfo>& ls = links_.links();
  for (std::uint32_t l = 0; l < ls.size(); ++l)
    if ((ls[l].a == npu || ls[l].b == npu) && ls[l].kind != LinkKind::Hbm) set_link_up(l, false);
  for (std::uint32_t s = 0; s < streams_.size(); ++s)
    if (streams_[s].npu == npu && streams_[s].alive && !streams_[s].q.empty()) fail(s, npus_[npu].name + " crashed");
}

void Machine::backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len) {
  npus_.at(addr_npu(addr)).hbm.write(addr_offset(addr), src, len);
}

void Machine::backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const {
  npus_.at(addr_npu(addr)).hbm.read(addr_offset(addr), dst, len);
}

}  // namespace models
