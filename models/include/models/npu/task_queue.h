// A stream's submission queue as the NPU holds it (docs/models/npu.md#submission-queue): 64-byte
// entries, the size of the hardware's SQEs, instead of the 128-byte Task the driver builds. The
// fields every task uses sit in the entry; a task with one of the rare ones (a host buffer, a 2-D
// shape, a rate cap, a borrowed NIC, a QP range past 16 bits, an RDMA write that waits for its acks, a passive event record) keeps its whole Task in a side pool
// and the entry points to it. At 8192 ranks, each with a few full 1024-entry queues, the queues
// were most of a run's memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/npu/task.h"

namespace models {

struct PackedTask {
  std::uint64_t src = 0, dst = 0, bytes = 0, key = 0, value = 0;
  std::int64_t tag = -1;
  std::uint32_t target = 0;
  std::uint32_t rkey = 0;  ///< with kExt: the index of the whole task in the side pool
  std::uint16_t qp_count = 1, qp_base = 0;
  std::uint8_t kind = 0;  ///< TaskKind, | kExt when the task lives in the side pool
  std::uint8_t dtype = 0, op = 0;
  std::uint8_t retry = 0xff;  ///< retry_count; 0xff: ~0u (the network's default)
  static constexpr std::uint8_t kExt = 0x80;
};
static_assert(sizeof(PackedTask) == 64, "one SQ entry is 64 bytes");

/// A FIFO of SQ entries in one ring buffer: nothing allocated while empty (a stream that never
/// queues costs no heap), grown by a quarter when full and cut back when half empty, so that its
/// memory follows the tasks queued within 25 % (a std::deque kept a 512-byte node and its map per
/// idle queue; doubling would leave up to half of a full queue's buffer unused at 8192 ranks).
class SqRing {
 public:
  bool empty() const { return n_ == 0; }
  std::size_t size() const { return n_; }
  const PackedTask& front() const { return buf_[head_]; }
  void push_back(const PackedTask& p) {
    if (n_ == cap_) resize(cap_ + std::max(kMin, cap_ / 4));
    std::uint32_t i = head_ + n_;
    if (i >= cap_) i -= cap_;
    buf_[i] = p;
    ++n_;
  }
  void pop_front() {
    if (++head_ == cap_) head_ = 0;
    --n_;
    if (n_ == 0) head_ = 0;
    if (cap_ > kKeep && n_ < cap_ / 2) resize(n_ ? std::max(kKeep, n_ + n_ / 4) : 0);
  }
  void clear() { n_ = 0; resize(0); }

 private:
  static constexpr std::uint32_t kMin = 4, kKeep = 16;  ///< least growth; kept when drained up to this
  void resize(std::uint32_t cap) {
    std::unique_ptr<PackedTask[]> b(cap ? new PackedTask[cap] : nullptr);
    for (std::uint32_t i = 0, j = head_; i < n_; ++i) {
      b[i] = buf_[j];
      if (++j == cap_) j = 0;
    }
    buf_ = std::move(b);
    cap_ = cap;
    head_ = 0;
  }
  std::unique_ptr<PackedTask[]> buf_;
  std::uint32_t cap_ = 0, head_ = 0, n_ = 0;
};

class TaskQueue {
 public:
  void push_back(const Task& t) {
    PackedTask p;
    if (rare(t)) {
      if (!side_) side_ = std::make_unique<Side>();
      auto& ext = side_->ext;
      auto& fr = side_->free;
      std::uint32_t i;
      if (!fr.empty()) { i = fr.back(); fr.pop_back(); ext[i] = t; }
      else { i = static_cast<std::uint32_t>(ext.size()); ext.push_back(t); }
      p.kind = static_cast<std::uint8_t>(static_cast<std::uint8_t>(t.kind) | PackedTask::kExt);
      p.rkey = i;
      q_.push_back(p);
      return;
    }
    p.src = t.src;
    p.dst = t.dst;
    p.bytes = t.bytes;
    p.key = t.key;
    p.value = t.value;
    p.tag = t.tag;
    p.target = t.target;
    p.rkey = t.rkey;
    p.qp_count = static_cast<std::uint16_t>(t.qp_count);
    p.qp_base = static_cast<std::uint16_t>(t.qp_base);
    p.kind = static_cast<std::uint8_t>(t.kind);
    p.dtype = static_cast<std::uint8_t>(t.dtype);
    p.op = static_cast<std::uint8_t>(t.op);
    p.retry = t.retry_count == ~0u ? 0xff : static_cast<std::uint8_t>(t.retry_count);
    q_.push_back(p);
  }
  /// The head task, whole (a copy: it stays valid after pop_front).
  Task front() const { return unpack(q_.front()); }
  /// The head entry's address, to prefetch ahead of its dispatch (the queue must not be empty).
  const void* front_entry() const { return &q_.front(); }
  void pop_front() {
    // A queue that never held a rare task need not read the entry (a cache miss at 8192 NPUs:
    // the entry was last read at its dispatch, many events ago).
    if (side_) {
      const PackedTask& p = q_.front();
      if (p.kind & PackedTask::kExt) side_->free.push_back(p.rkey);
    }
    q_.pop_front();
  }
  /// Move the head entry to the back of `to` (the doorbell moving an enqueued task into the SQ).
  void move_front_to(TaskQueue& to) {
    const PackedTask& p = q_.front();
    if (p.kind & PackedTask::kExt) to.push_back(side_->ext[p.rkey]);
    else to.q_.push_back(p);
    pop_front();
  }
  bool empty() const { return q_.empty(); }
  std::size_t size() const { return q_.size(); }
  void clear() {
    q_.clear();
    side_.reset();
  }

 private:
  static bool rare(const Task& t) {
    return t.kind == TaskKind::Compute || t.host != nullptr || t.wait_ack || t.passive || t.width != 0 || t.spitch != 0 || t.dpitch != 0 || t.rate_cap_Bps != 0 || t.via != ~0u ||
           t.qp_count > 0xffff || t.qp_base > 0xffff || (t.retry_count != ~0u && t.retry_count >= 0xff);
  }
  Task unpack(const PackedTask& p) const {
    if (p.kind & PackedTask::kExt) return side_->ext[p.rkey];
    Task t;
    t.kind = static_cast<TaskKind>(p.kind);
    t.src = p.src;
    t.dst = p.dst;
    t.bytes = p.bytes;
    t.dtype = static_cast<DType>(p.dtype);
    t.op = static_cast<ReduceOp>(p.op);
    t.target = p.target;
    t.key = p.key;
    t.value = p.value;
    t.rkey = p.rkey;
    t.qp_count = p.qp_count;
    t.qp_base = p.qp_base;
    t.retry_count = p.retry == 0xff ? ~0u : p.retry;
    t.tag = p.tag;
    return t;
  }
  struct Side {
    std::vector<Task> ext;            ///< whole tasks of the entries marked kExt
    std::vector<std::uint32_t> free;  ///< free slots of ext
  };
  SqRing q_;
  std::unique_ptr<Side> side_;  ///< made by the first rare task (most queues never have one)
};

}  // namespace models
