// The RDMA engine's bookkeeping on the NPU side of the NIC (docs/models/roce-nic.md): memory
// regions per NPU, RDMA writes in flight (striped over QPs), and the QP table key.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/npu/task.h"
#include "models/time.h"

namespace models {

struct MemoryRegion {
  std::uint64_t addr, bytes;
  std::uint32_t access;
};

/// The memory regions registered on one NPU, by key: a flat array sorted by key (keys are handed
/// out in increasing order, so a registration nearly always appends). Every RDMA write looks up its target's
/// region: a tree's nodes were a cache miss each at 8192 NPUs.
struct MrTable {
  std::vector<std::pair<std::uint32_t, MemoryRegion>> mrs;
  std::uint32_t next_key = 0x100;
  const MemoryRegion* find(std::uint32_t key) const {
    auto it = std::lower_bound(mrs.begin(), mrs.end(), key, [](const auto& e, std::uint32_t k) { return e.first < k; });
    return it != mrs.end() && it->first == key ? &it->second : nullptr;
  }
  void insert(std::uint32_t key, const MemoryRegion& r) {
    auto it = std::lower_bound(mrs.begin(), mrs.end(), key, [](const auto& e, std::uint32_t k) { return e.first < k; });
    if (it != mrs.end() && it->first == key) it->second = r;
    else mrs.insert(it, {key, r});
  }
  bool erase(std::uint32_t key) {
    auto it = std::lower_bound(mrs.begin(), mrs.end(), key, [](const auto& e, std::uint32_t k) { return e.first < k; });
    if (it == mrs.end() || it->first != key) return false;
    mrs.erase(it);
    return true;
  }
};

/// An RdmaWrite task in flight: writes (data parts, then the notify) still unacknowledged.
// The bookkeeping first, then the task: a completion reads the first line, a delivery the first
// two (RdmaOp's 160 bytes in three lines before).
struct RdmaOp {
  std::uint32_t stream;
  std::uint32_t pending;
  bool ok;
  std::uint32_t notifies;  // notify writes (one behind each stripe's data) still to land; the last records the notify
  bool data_unsignaled;    // a notify behind the data on its QP: the data write reports only a failure
  std::uint64_t epoch;   // the stream's epoch when the write was posted
  Task task;
  bool detached = false;  // the task ended at its doorbell: the stream is elsewhere; only a failure reaches it
  std::uint32_t fence_epoch = 0;  // detached: the RDMA fences its NPU had dispatched when it was posted
};

/// An RDMA fence waiting (Machine::rdma_fence): `need` detached writes posted before it are
/// unacknowledged.
struct FenceWait {
  std::uint32_t stream;
  std::uint32_t epoch;  // the fences its NPU had dispatched before it: it waits for the writes posted up to then
  std::uint64_t need;
  Tick until;           // the latest acknowledgement of its writes so far
};

/// Per NPU: the RDMA fences dispatched, the detached writes posted since the last one and not yet
/// acknowledged, and the fences waiting (oldest first; each one's writes include the previous one's).
struct FenceTrack {
  std::uint32_t epoch = 0;
  std::uint64_t open = 0;
  Tick acked = 0;  // the latest acknowledgement of a write so far (a fence ends no earlier)
  std::vector<FenceWait> waits;
};

/// QPs per (src, dst, stripe index): hashed 64-bit key.
struct QpKeyHash {
  std::size_t operator()(std::uint64_t k) const { return static_cast<std::size_t>((k ^ (k >> 29)) * 0xbf58476d1ce4e5b9ULL >> 7); }
};

/// Stripes of an RDMA write of `bytes` over up to `qp_count` QPs (at least 4 KiB each).
inline std::uint32_t rdma_stripes(std::uint32_t qp_count, std::uint64_t bytes) {
  return std::max<std::uint32_t>(1, std::min<std::uint64_t>(qp_count, std::max<std::uint64_t>(1, bytes / 4096)));
}

}  // namespace models
