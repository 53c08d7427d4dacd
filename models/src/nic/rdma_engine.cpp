// The RDMA engine: the NPU side of the RoCE NIC (docs/models/roce-nic.md). Memory regions and
// their access checks, one QP per (source, target, stripe), RdmaWrite tasks striped over QPs with
// the ordered notify write after the data, and the bytes landing as the transport delivers them.
#include "models/nic/rdma_engine.h"

#include <algorithm>
#include <cstdio>

#include "models/mem/hbm.h"
#include "models/npu/address_map.h"

namespace models {

void RdmaEngine::add_npu() {
  mrs_.emplace_back();
  fences_.emplace_back();
}

void RdmaEngine::attach_network(RdmaNetwork* net, std::vector<std::uint32_t> nic_node) {
  net_ = net;
  nic_node_ = std::move(nic_node);
  net_->set_listener(this);
}

std::uint16_t RdmaEngine::default_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index) {
  // Each QP gets its own UDP source port, so ECMP spreads QPs over paths (RoCE v2).
  return static_cast<std::uint16_t>(49152 + ((src * 2654435761u) ^ (dst * 40503u) ^ (index * 2246822519u)) % 16384);
}

const std::vector<std::uint32_t>* RdmaEngine::nic_qps(std::uint32_t npu) const {
  return has_nic(npu) ? &net_->host_qps(nic_node_[npu]) : nullptr;
}

namespace {
// A write's tag (opaque to the network, given back with its delivery and completion): the NPU it
// lands in (bits 40-63, for the prefetch of its notify registers; 0 past 2^24 NPUs), the write's
// index in rdmas_ (bits 8-39), the part (bits 1-7) and whether it is the notify write (bit 0).
std::uint64_t write_tag(std::uint32_t id, std::uint32_t part, bool notify, std::uint32_t lands_in) {
  const std::uint64_t npu = lands_in < (1u << 24) ? lands_in : 0;
  return npu << 40 | static_cast<std::uint64_t>(id) << 8 | static_cast<std::uint64_t>(part) << 1 | (notify ? 1 : 0);
}
std::uint32_t tag_op(std::uint64_t tag) { return static_cast<std::uint32_t>(tag >> 8); }

// A table entry's value: the QP's id, or kQpPending | its UDP source port while no write used it.
constexpr std::uint32_t kQpPending = 0x80000000u;
}  // namespace

QpTable& RdmaEngine::qp_table(std::uint32_t src) {
  if (qp_of_.size() <= src) qp_of_.resize(npu_count() > src ? npu_count() : src + 1);
  return qp_of_[src];
}

std::uint32_t RdmaEngine::qp_for(std::uint32_t src, std::uint32_t dst, std::uint32_t index) {
  QpTable& tab = qp_table(src);
  if (std::uint32_t* v = tab.find(dst, index)) {
    if (!(*v & kQpPending)) return *v;
    // Routed but not used yet: the NIC's QP comes into being with the first write on it.
    *v = net_->create_qp(nic_node_[src], nic_node_[dst], static_cast<std::uint16_t>(*v));
    return *v;
  }
  const std::uint32_t qp = net_->create_qp(nic_node_[src], nic_node_[dst], default_sport(src, dst, index));
  tab.insert(dst, index, qp);
  return qp;
}

void RdmaEngine::reset_qps(std::uint32_t npu) {
  if (npu >= qp_of_.size() || !net_) return;
  qp_of_[npu].for_each([&](std::uint32_t, std::uint32_t, std::uint32_t v) {
    if (!(v & kQpPending)) net_->reset_qp(v);
  });
}

void RdmaEngine::set_qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index, std::uint16_t sport) {
  if (!has_nic(src) || !has_nic(dst)) return;
  QpTable& tab = qp_table(src);
  if (std::uint32_t* v = tab.find(dst, index)) {
    if (*v & kQpPending) { *v = kQpPending | sport; return; }
    if (net_->qp_sport(*v) == sport) return;
    *v = net_->create_qp(nic_node_[src], nic_node_[dst], sport);
    return;
  }
  // Only the port is kept until a write uses the QP (qp_for): a route decided for every stripe of
  // every peer (8 x 1023 per rank in a 1024-server all-to-all) costs a table slot, not a NIC QP,
  // until the stripe carries data.
  tab.insert(dst, index, kQpPending | sport);
}

std::uint16_t RdmaEngine::qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index) const {
  if (src < qp_of_.size())
    if (const std::uint32_t* v = qp_of_[src].find(dst, index))
      return *v & kQpPending ? static_cast<std::uint16_t>(*v) : net_->qp_sport(*v);
  return default_sport(src, dst, index);
}

// An RDMA write: the NIC of the stream's NPU moves src (local HBM) to dst (the target NPU's HBM)
// through the RoCE network; bytes land in the destination as packets arrive in order; an optional
// notify write follows on the same QP, so it lands after the data. The task completes once its
// writes are posted (the doorbell, as the runtime's RDMA_DB_SEND task: the stream does not wait
// for completions), or, with wait_ack, when every write of it is acknowledged. A detached write
// that fails later fails its stream then (a completion with error), whatever task it is at.
void RdmaEngine::start_write(std::uint32_t s, const Task& head) {
  // A copy: a write posted on a QP already in error completes (failed) inside post_write, which
  // fails the stream and clears its queue, the head task with it.
  const Task t = head;
  const std::uint32_t me = host_.stream_npu(s);
  const std::uint64_t epoch = host_.stream_epoch(s);
  std::string why;
  if (t.target >= npu_count()) { host_.rdma_task_failed(s, "RDMA write to unknown npu " + std::to_string(t.target)); return; }
  // Rail borrowing at the receiver (docs/failover.md#nic-borrowing): the write goes to the NIC of
  // `via`, which writes the bytes on into the target's HBM over their HCCS link (forward_inbound).
  if (t.via != ~0u && t.via >= npu_count()) { host_.rdma_task_failed(s, "RDMA write through unknown npu " + std::to_string(t.via)); return; }
  const std::uint32_t rx = t.via != ~0u ? t.via : t.target;
  if (!has_nic(me) || !has_nic(rx)) {
    host_.rdma_task_failed(s, "no RoCE path from " + host_.npu_name(me) + " to " + host_.npu_name(rx) + " (no NIC or no network)");
    return;
  }
  if (t.bytes) {
    if (!host_.check_range(t.src, t.bytes, why) || !host_.check_range(t.dst, t.bytes, why)) { host_.rdma_task_failed(s, why); return; }
    if (addr_npu(t.src) != me || addr_npu(t.dst) != t.target) { host_.rdma_task_failed(s, "RDMA write must read local HBM and write the target's"); return; }
    // The responder's access check (checked when posted; the model does not charge the NAK's trip).
    const MemoryRegion* mr = mrs_[t.target].find(t.rkey);
    const char* bad = nullptr;
    if (!mr) bad = "unknown rkey";
    else if (!(mr->access & kRemoteWrite)) bad = "region not registered for REMOTE_WRITE";
    else if (t.dst < mr->addr || t.dst + t.bytes > mr->addr + mr->bytes) bad = "write outside the registered region";
    if (bad) {
      ++access_errors_;
      char b[160];
      std::snprintf(b, sizeof b, "remote access error on npu%u: %s (rkey 0x%x, %llu bytes at offset 0x%llx)", t.target, bad, t.rkey,
                    static_cast<unsigned long long>(t.bytes), static_cast<unsigned long long>(addr_offset(t.dst)));
      host_.rdma_task_failed(s, b);
      return;
    }
  }
  std::uint32_t id;
  if (!free_rdmas_.empty()) { id = free_rdmas_.back(); free_rdmas_.pop_back(); }
  else { id = static_cast<std::uint32_t>(rdmas_.size()); rdmas_.emplace_back(); }
  // Each QP carries its data part and, behind it (RC keeps them in order), a notify write; the
  // target's notify is recorded when the last of them has landed — as a receiver counts the
  // per-QP completion signals of a multi-QP send (NCCL's multi-QP receives count one per QP), so
  // that a stripe's signal never waits behind later writes posted on its QP.
  const std::uint32_t k = rdma_stripes(t.qp_count, t.bytes);
  rdmas_[id] = RdmaOp{s, 0, true, t.value != 0 ? k : 0, t.value != 0, epoch, t};
  const std::uint64_t part = (t.bytes + k - 1) / k;
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint64_t off = std::min<std::uint64_t>(t.bytes, i * part), len = std::min<std::uint64_t>(part, t.bytes - off);
    const bool data = len > 0 || (i == 0 && !t.value);  // a write of no bytes only when it is all there is
    if (!data && !t.value) continue;
    std::uint32_t qp = qp_for(me, rx, t.qp_base + i);
    net_->set_qp_rate_cap(qp, t.rate_cap_Bps ? std::max<std::uint64_t>(1, t.rate_cap_Bps / k) : 0);  // the cap is for all parts together
    net_->set_qp_retry_count(qp, t.retry_count);
    if (data) {
      // A notify behind the data: the data write is unsignaled (the notify's completion implies
      // it, RC completing in order); it reports only a failure.
      const bool signaled = !rdmas_[id].data_unsignaled;
      if (signaled) ++rdmas_[id].pending;
      // tag: rdma id, part index, notify bit; the part's offset is recovered from the index
      net_->post_write(qp, len, write_tag(id, i, false, t.target), signaled);
      if (host_.stream_epoch(s) != epoch) return;  // it failed at once (a QP in error): the op is gone
    }
    if (t.value) {
      ++rdmas_[id].pending;
      net_->post_write(qp, 4, write_tag(id, i, true, t.target), true);
      if (host_.stream_epoch(s) != epoch) return;
    }
  }
  if (rdmas_[id].pending == 0) {  // nothing to send at all
    free_rdmas_.push_back(id);
    host_.rdma_task_done(s, 0);
  } else if (!t.wait_ack) {  // the doorbell is rung: the stream goes on
    rdmas_[id].detached = true;
    FenceTrack& f = fences_[me];
    rdmas_[id].fence_epoch = f.epoch;
    ++f.open;
    host_.rdma_task_done(s, 0);
  }
}

// An RDMA fence (TaskKind::RdmaFence): the stream waits until every write its NPU's streams
// posted before it (and whose tasks ended at the doorbell) is acknowledged or failed — the
// completions a runtime polls before it reuses the buffers those writes read: a NIC reads the
// source when it sends, and again when it retransmits (docs/models/npu.md).
void RdmaEngine::fence(std::uint32_t s) {
  FenceTrack& f = fences_[host_.stream_npu(s)];
  const std::uint64_t need = (f.waits.empty() ? 0 : f.waits.back().need) + f.open;
  const std::uint32_t epoch = f.epoch++;
  f.open = 0;
  // The writes already done were all posted before it: it ends no earlier than their last
  // acknowledgement (reported ahead in the flow tier).
  if (need == 0) { fence_end(s, f.acked); return; }
  f.waits.push_back(FenceWait{s, epoch, need, f.acked});
}

void RdmaEngine::fence_release(std::uint32_t npu, std::uint32_t epoch, Tick acked_at) {
  FenceTrack& f = fences_[npu];
  f.acked = std::max(f.acked, acked_at);
  if (epoch == f.epoch) { --f.open; return; }
  // Every fence dispatched after the write was posted (epoch >= the write's) needs one write less.
  std::size_t done = 0;
  for (FenceWait& w : f.waits)
    if (w.epoch >= epoch) {
      w.until = std::max(w.until, acked_at);
      if (--w.need == 0) ++done;
    }
  if (done == 0) return;
  // A later fence waits for every write an earlier one does: the finished ones are the oldest.
  std::vector<FenceWait> ended(f.waits.begin(), f.waits.begin() + static_cast<std::ptrdiff_t>(done));
  f.waits.erase(f.waits.begin(), f.waits.begin() + static_cast<std::ptrdiff_t>(done));
  for (const FenceWait& w : ended) fence_end(w.stream, w.until);
}

void RdmaEngine::on_data(std::uint32_t, std::uint64_t tag, std::uint64_t off, std::uint64_t len) {
  RdmaOp& r = rdmas_[tag_op(tag)];
  const Task& t = r.task;
  // A write of a stream that failed or was aborted since (the op retry's device_abort, which
  // resets the QPs as HCCL's retry does): what is still on the wire is flushed, no bytes and no
  // notify land — else a late notify of the failed attempt would count for the re-execution.
  if (host_.stream_epoch(r.stream) != r.epoch) return;
  if (tag & 1) {  // one stripe's notify write: the last to land records the notify
    if (r.notifies > 1) { --r.notifies; return; }
    r.notifies = 0;
  }
  if (t.via != ~0u && t.via != t.target) {  // received by a lender's NIC for another NPU
    forward_inbound(r, tag, off, len);
    return;
  }
  if (tag & 1) {  // the notify write: one packet
    host_.notify_record(t.target, t.key);
    return;
  }
  // (data_is_silent names, ahead, the parts for which this function does nothing: keep the two in step)
  const std::uint32_t k = rdma_stripes(t.qp_count, t.bytes);
  off += ((tag >> 1) & 0x7f) * ((t.bytes + k - 1) / k);  // the part's offset in the write
  SparseMemory& dst = host_.hbm(addr_npu(t.dst));
  if (!dst.stores_bytes() || len == 0) return;
  dst.copy_from(host_.hbm(addr_npu(t.src)), addr_offset(t.src) + off, addr_offset(t.dst) + off, len);
}

void RdmaEngine::prefetch_tag(std::uint64_t tag) const {
  const std::uint32_t id = tag_op(tag);
  if (id >= rdmas_.size()) return;
  const char* r = reinterpret_cast<const char*>(&rdmas_[id]);
  __builtin_prefetch(r);
  __builtin_prefetch(r + 64);
  if (tag & 1) {  // a notify write: the receiving NPU's notify registers
    const std::uint64_t npu = tag >> 40;
    host_.prefetch_npu(static_cast<std::uint32_t>(npu));
  }
}

// What on_data would do with a write part, known when it is sent: nothing when it is a data part
// (not the notify) received by the target's own NIC, and the target keeps no bytes (a timing
// payload) or the part is empty. A stream failing meanwhile only makes on_data return earlier.
bool RdmaEngine::data_is_silent(std::uint64_t tag, std::uint64_t len) const {
  if (tag & 1) return false;
  const Task& t = rdmas_[tag_op(tag)].task;
  if (t.via != ~0u && t.via != t.target) return false;
  return len == 0 || !host_.hbm_stores(addr_npu(t.dst));
}

// The lender's NIC writes what it received for `target` on into target's HBM (RdmaHost::forward_leg
// times the leg); the notify write takes the same path, after the data.
void RdmaEngine::forward_inbound(const RdmaOp& r, std::uint64_t tag, std::uint64_t off, std::uint64_t len) {
  const Task& t = r.task;
  const Tick land = host_.forward_leg(t.via, t.target, (tag & 1) ? 4 : len);
  if (land == 0) {  // the lender cannot reach the target: the bytes (or the notify) are lost
    ++forward_drops_;
    return;
  }
  std::uint32_t id;
  if (!free_forwards_.empty()) { id = free_forwards_.back(); free_forwards_.pop_back(); }
  else { id = static_cast<std::uint32_t>(forwards_.size()); forwards_.emplace_back(); }
  Forward& f = forwards_[id];
  f.stream = r.stream;
  f.epoch = r.epoch;
  f.notify = (tag & 1) != 0;
  f.target = t.target;
  f.key = t.key;
  f.bytes.clear();
  if (f.notify) {
    sch_.schedule(land, this, id, 0);
    return;
  }
  const std::uint32_t k = rdma_stripes(t.qp_count, t.bytes);
  off += ((tag >> 1) & 0x7f) * ((t.bytes + k - 1) / k);
  f.dst = t.dst + off;
  if (host_.hbm(addr_npu(t.dst)).stores_bytes() && len) {  // the bytes as the NIC received them
    f.bytes.resize(len);
    host_.hbm(addr_npu(t.src)).read(addr_offset(t.src) + off, f.bytes.data(), len);
  }
  sch_.schedule(land, this, id, 0);
}

void RdmaEngine::forward_land(std::uint32_t id) {
  Forward& f = forwards_[id];
  // Like on_data: a write of a stream aborted since (op retry's device_abort) lands nothing.
  if (host_.stream_epoch(f.stream) == f.epoch) {
    if (f.notify) host_.notify_record(f.target, f.key);
    else if (!f.bytes.empty()) host_.hbm(addr_npu(f.dst)).write(addr_offset(f.dst), f.bytes.data(), f.bytes.size());
  }
  std::vector<std::uint8_t>().swap(f.bytes);
  free_forwards_.push_back(id);
}

void RdmaEngine::on_event(std::uint64_t a, std::uint64_t) { forward_land(static_cast<std::uint32_t>(a)); }

void RdmaEngine::drop_fence(std::uint32_t npu, std::uint32_t s) {
  if (npu >= fences_.size()) return;
  auto& w = fences_[npu].waits;
  w.erase(std::remove_if(w.begin(), w.end(), [&](const FenceWait& f) { return f.stream == s; }), w.end());
}

void RdmaEngine::write_done(std::uint64_t tag, bool ok, Tick acked_at) {
  const std::uint32_t id = tag_op(tag);
  RdmaOp& r = rdmas_[id];
  r.ok = r.ok && ok;
  if (!(tag & 1) && r.data_unsignaled) return;  // the unsignaled data write failed: the notify's completion ends the op
  if (--r.pending) return;
  std::uint32_t s = r.stream;
  bool good = r.ok;
  const bool detached = r.detached;
  const bool orphaned = host_.stream_epoch(s) != r.epoch;  // the stream failed meanwhile
  free_rdmas_.push_back(id);
  if (detached) fence_release(host_.stream_npu(s), r.fence_epoch, acked_at);
  if (orphaned) return;
  if (!good) host_.rdma_task_failed(s, "RDMA write failed: retry count exceeded (link down or persistent loss)");
  else if (!detached) host_.rdma_task_done(s, 0);  // a detached one: the stream went on at the doorbell
}

std::uint32_t RdmaEngine::register_mr(std::uint32_t npu, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access) {
  MrTable& n = mrs_.at(npu);
  std::uint32_t key = n.next_key++;
  n.insert(key, MemoryRegion{addr, bytes, access});
  return key;
}

bool RdmaEngine::deregister_mr(std::uint32_t npu, std::uint32_t key) { return mrs_.at(npu).erase(key); }

}  // namespace models
