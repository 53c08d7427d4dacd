// The NPUs' SDMA engines (models/npu/sdma.h, docs/models/npu.md).
#include "models/npu/sdma.h"

#include <algorithm>
#include <cstdio>

#include "models/link/links.h"
#include "models/npu/address_map.h"
#include "models/npu/host_dma.h"
#include "models/npu/npu_devices.h"

namespace models {

std::uint32_t SdmaEngines::alloc_xfer() {
  if (!free_xfers_.empty()) {
    auto id = free_xfers_.back();
    free_xfers_.pop_back();
    return id;
  }
  xfers_.emplace_back();
  return static_cast<std::uint32_t>(xfers_.size() - 1);
}

void SdmaEngines::start(std::uint32_t s, const Task& t) {
  const std::uint32_t e_npu = streams_.stream_npu(s);
  const NpuParams& me = devs_.params(e_npu);
  std::string why;
  Transfer x;
  x.stream = s;
  x.epoch = streams_.stream_epoch(s);
  x.task = t;
  x.npu = e_npu;
  std::uint64_t bw = me.sdma_bandwidth_Bps;
  Tick lat = 0;
  x.earliest = sch_.now() + me.sdma_setup_ps;  // descriptor fetch delays the first byte
  if (t.kind == TaskKind::HostToDevice || t.kind == TaskKind::DeviceToHost) {
    if (!host_.prepare(e_npu, t, x, lat, why)) { streams_.task_failed(s, why); return; }
  } else {
    if (t.width != 0 && (t.bytes % t.width != 0 || t.width > t.spitch || t.width > t.dpitch)) {
      streams_.task_failed(s, "2-D copy: bytes must be whole rows of width bytes, and width at most either pitch");
      return;
    }
    if (!devs_.check_range(t.src, task_extent(t, t.spitch), why) || !devs_.check_range(t.dst, task_extent(t, t.dpitch), why)) {
      streams_.task_failed(s, why);
      return;
    }
    const std::uint64_t esz = dtype_size(t.dtype);
    if (t.kind == TaskKind::ReduceCopy && (t.bytes % esz != 0 || addr_offset(t.dst) % esz != 0 ||
                                          (t.width != 0 && (t.width % esz != 0 || t.dpitch % esz != 0)))) {
      streams_.task_failed(s, "reduce copy not aligned to the element size");
      return;
    }
    std::uint32_t sn = addr_npu(t.src), dn = addr_npu(t.dst);
    if (sn != e_npu && dn != e_npu) { streams_.task_failed(s, "SDMA copy must read or write the stream's own NPU"); return; }
    if (sn != dn) {
      const LinkPath rt = links_.path(sn, dn);
      if (!rt.ok()) {
        streams_.task_failed(s, "no HCCS link or PCIe switch between " + devs_.name(sn) + " and " + devs_.name(dn));
        return;
      }
      x.port = rt.p1;
      x.port2 = rt.p2;
      lat += rt.extra_ps;
    }
  }
  if (addr_is_device(t.src) && t.kind != TaskKind::HostToDevice) x.hbm_src = static_cast<int>(devs_.hbm_port(addr_npu(t.src)));
  if (addr_is_device(t.dst) && t.kind != TaskKind::DeviceToHost) x.hbm_dst = static_cast<int>(devs_.hbm_port(addr_npu(t.dst)));
  for (int pi : {x.hbm_src, x.hbm_dst})
    if (pi >= 0) bw = std::min(bw, links_.port(pi).rate());
  for (int pi : {x.port, x.port2, x.port3}) {
    if (pi < 0) continue;
    const Port& p = links_.port(pi);
    if (!p.up) { streams_.task_failed(s, "link " + links_.link(p.link).name + " is down"); return; }
    bw = std::min(bw, p.rate());
    lat += p.p.latency_ps;
  }
  // HBM access latency: the engine's first read of the source, and the last write landing in the
  // destination (host memory's side is part of the PCIe link latency).
  if (addr_is_device(t.src) && t.kind != TaskKind::HostToDevice) x.earliest += devs_.params(addr_npu(t.src)).hbm.access_latency_ps;
  if (addr_is_device(t.dst) && t.kind != TaskKind::DeviceToHost) lat += devs_.params(addr_npu(t.dst)).hbm.access_latency_ps;
  x.bw = bw;
  x.latency = lat;
  // SDMA channel: the one free earliest (lowest index on ties) — deterministic.
  const std::vector<Tick>& channels = busy_[e_npu];
  auto it = std::min_element(channels.begin(), channels.end());
  x.engine = static_cast<std::uint32_t>(it - channels.begin());
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
void SdmaEngines::abort_transfer(std::uint32_t id) {
  Transfer& x = xfers_[id];
  x.aborted = true;
  if (x.inflight == 0 && !x.sending) free_xfers_.push_back(id);
}

void SdmaEngines::send_piece(std::uint32_t id) {
  Transfer& x = xfers_[id];
  x.sending = false;
  if (x.aborted || streams_.stream_epoch(x.stream) != x.epoch) { abort_transfer(id); return; }
  Tick& channel = busy_[x.npu][x.engine];
  std::uint64_t off = x.done;
  std::uint64_t len = std::min(piece_bytes_, x.task.bytes - off);
  const Tick start = std::max({sch_.now(), x.earliest, channel});
  Tick ser = serialization_ps(len, x.bw), lost = 0;
  for (int pi : {x.port2, x.port3})
    if (pi >= 0 && !links_.port(pi).up) {
      fail(id, "link " + links_.link(links_.port(pi).link).name + " went down during a transfer");
      return;
    }
  if (x.port >= 0) {
    Port& p = links_.port(x.port);
    if (!p.up) {  // the link went down while the transfer was in progress
      fail(id, "link " + links_.link(p.link).name + " went down during a transfer");
      return;
    }
    const std::uint64_t retries = p.rx_retry;
    lost = replay_frames(p, len, x.bw);  // CRC replays of the first hop (models/link/port.h)
    if (links_.samples().on() && p.rx_retry != retries)
      links_.samples().count(static_cast<std::uint32_t>(x.port), start, SampleCount::Crc, p.rx_retry - retries);
    ser += lost;
    note_credit_stall(p, len, x.bw);
  }
  // Each port serves its pieces in order at its own rate: it finishes this one at
  // max(its busy_until, start) + bytes / rate, and the piece ends no earlier than any of them. A
  // port that is this piece's bottleneck is thus held exclusively (busy until); a faster shared
  // port (a root complex) only accrues the work, so flows below its capacity do not queue.
  Tick end = start + ser;
  for (int pi : {x.port, x.port2, x.port3, x.hbm_src, x.hbm_dst}) {
    if (pi < 0) continue;
    Port& p = links_.port(pi);
    const Tick own = serialization_ps(len, p.rate()) + (pi == x.port ? lost : 0);
    const Tick from = std::max(p.busy_until, start);
    p.busy_until = from + own;
    if (links_.samples().on()) links_.samples().busy(static_cast<std::uint32_t>(pi), from, p.busy_until, own, len);
    end = std::max(end, p.busy_until);
    p.busy_ps += own;
    p.bytes += len;
    ++p.pieces;
  }
  channel = end;
  ++pieces_;
  x.done += len;
  ++x.inflight;
  sch_.schedule(end + x.latency, this, ev(kPieceArrive, id), off);
  if (x.done < x.task.bytes) {
    x.sending = true;
    sch_.schedule(end, this, ev(kPieceSent, id), 0);
  }
}

void SdmaEngines::arrive_piece(std::uint32_t id, std::uint64_t off) {
  Transfer& x = xfers_[id];
  --x.inflight;
  // An orphaned transfer moves no more bytes: a crashed rank's host buffers are gone, and a
  // failed stream's next task must not be completed by its predecessor's last piece.
  if (x.aborted || streams_.stream_epoch(x.stream) != x.epoch) { abort_transfer(id); return; }
  const Task& t = x.task;
  std::uint64_t len = std::min(piece_bytes_, t.bytes - off);
  if (len > 0) {
    switch (t.kind) {
      case TaskKind::HostToDevice:
      case TaskKind::DeviceToHost:
        if (!host_.land(t, off, len)) {  // the host's memory refused the piece: a bad host pointer
          char at[32];
          std::snprintf(at, sizeof at, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(t.host) + off));
          fail(id, std::string("host DMA: the host's memory at ") + at + " cannot be " +
                       (t.kind == TaskKind::HostToDevice ? "read" : "written") + " (bad host pointer)");
          return;
        }
        break;
      case TaskKind::Copy:
      case TaskKind::ReduceCopy: {
        SparseMemory& src = devs_.hbm(addr_npu(t.src));
        SparseMemory& dst = devs_.hbm(addr_npu(t.dst));
        if (!dst.stores_bytes()) break;
        // The piece's bytes [off, off + len) of the task, row by row when the copy is 2-D.
        for (std::uint64_t p = off; p < off + len;) {
          const std::uint64_t row = t.width ? p / t.width : 0, col = t.width ? p % t.width : p;
          const std::uint64_t seg = t.width ? std::min(off + len - p, t.width - col) : len;
          const std::uint64_t so = addr_offset(t.src) + row * t.spitch + col, d = addr_offset(t.dst) + row * t.dpitch + col;
          if (t.kind == TaskKind::Copy) dst.copy_from(src, so, d, seg);
          else dst.reduce_from(src, so, d, seg, static_cast<int>(t.dtype), static_cast<int>(t.op));
          p += seg;
        }
        break;
      }
      default: break;
    }
  }
  if (off + len >= t.bytes) {  // last piece: arrivals are in order on one path
    std::uint32_t s = x.stream;
    free_xfers_.push_back(id);
    streams_.task_done(s);
  }
}

void SdmaEngines::fail(std::uint32_t id, const std::string& why) {
  const std::uint32_t s = xfers_[id].stream;
  abort_transfer(id);
  streams_.task_failed(s, why);
}

void SdmaEngines::on_event(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t type = a & 0xff;
  const auto id = static_cast<std::uint32_t>(a >> 8);
  if (type == kPieceSent) send_piece(id);
  else if (type == kPieceArrive) arrive_piece(id, b);
}

// The event queue names the next event while this one runs: start loading the transfer it will
// touch (at 8192 NPUs these miss cache; the loads overlap the current event).
void SdmaEngines::prefetch(std::uint64_t a, std::uint64_t) {
  const std::uint64_t id = a >> 8;
  if (id < xfers_.size()) {
    const char* x = reinterpret_cast<const char*>(&xfers_[id]);
    __builtin_prefetch(x);
    __builtin_prefetch(x + 64);
    __builtin_prefetch(x + 128);
  }
}

}  // namespace models
