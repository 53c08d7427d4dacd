// The state of one NPU and of its streams (docs/models/npu.md): notify and event registers, the
// register file, SDMA channel occupancy, and where its links attach. Owned by the Machine.
#pragma once
#include "models/mem/host_memory.h"
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/mem/hbm.h"
#include "models/npu/npu_params.h"
#include "models/npu/regmap.h"
#include "models/npu/task.h"
#include "models/npu/task_queue.h"
#include "models/time.h"

namespace models {

// Notify registers: the library names notifies by 64-bit keys; a key is bound to one of the
// NPU's notify_regs registers on first use and released when its count is back to zero with
// no waiter (a real runtime allocates notify ids ahead; the binding stands for that).
struct NotifyReg {
  std::uint64_t key = 0;
  bool bound = false;
  std::int64_t count = 0;
  std::vector<std::uint32_t> waiters;  // streams parked in NotifyWait, FIFO (rarely more than one)
};

/// Bound notify keys -> register, a sorted flat array: an NPU binds tens of keys at a time, and
/// the lookup on every notify record and wait stays in one or two cache lines (a tree's nodes
/// were a cache miss each at thousands of NPUs).
class KeyIndex {
 public:
  /// The register bound to `key`, or -1.
  std::int64_t find(std::uint64_t key) const {
    auto it = std::lower_bound(v_.begin(), v_.end(), key, [](const auto& e, std::uint64_t k) { return e.first < k; });
    return it != v_.end() && it->first == key ? static_cast<std::int64_t>(it->second) : -1;
  }
  void emplace(std::uint64_t key, std::uint32_t reg) {
    auto it = std::lower_bound(v_.begin(), v_.end(), key, [](const auto& e, std::uint64_t k) { return e.first < k; });
    v_.insert(it, {key, reg});
  }
  void erase(std::uint64_t key) {
    auto it = std::lower_bound(v_.begin(), v_.end(), key, [](const auto& e, std::uint64_t k) { return e.first < k; });
    if (it != v_.end() && it->first == key) v_.erase(it);
  }
  std::size_t size() const { return v_.size(); }

 private:
  std::vector<std::pair<std::uint64_t, std::uint32_t>> v_;
};

struct EventReg {
  std::uint64_t completed = 0;
  Tick t = 0;
  std::vector<std::uint32_t> waiters;
};

struct NpuState {
  // What every notify record and wait touches first, in the struct's first lines (at 8192 NPUs
  // each of these is a cache miss; spread over the struct they were three).
  std::vector<NotifyReg> nregs;
  KeyIndex nkey;                     // bound key -> register
  std::vector<std::uint32_t> nfree;  // released registers (reused first)
  Tick stalled_until = 0;            ///< npu_stall: the stream engine dispatches no task before this
  std::string name;  ///< the one name of the device in logs, errors and link names (the topology's)
  NpuParams params;
  SparseMemory hbm;
  std::vector<Tick> sdma_busy;
  std::uint32_t host_link = 0;  // the NPU's own PCIe link to the host
  std::uint32_t hbm_port = 0;   // the HBM's bandwidth, shared by every SDMA read and write of it
  int h2d[3] = {-1, -1, -1}, d2h[3] = {-1, -1, -1};  // host DMA paths (ports in travel order)
  std::map<std::uint64_t, EventReg> events;
  std::unique_ptr<RegisterBlock> regs;
  Tick compute_ps = 0;  ///< AI-core busy time of the compute tasks dispatched so far
  HostMemory* host_mem = nullptr;  ///< its host's memory when not this process's (set_host_memory)
  NpuState(const NpuParams& p) : params(p), hbm(p.hbm.capacity_bytes, p.hbm.store_bytes), sdma_busy(p.sdma_engines, 0) {}
};

// Ordered by use: what the engine reads on every dispatch and completion (the queue's ring, the
// flags, the counters, the dispatch overhead) in the first two cache lines, one pair of lines at
// 8192 NPUs' worth of streams; what the host side and errors use after.
struct alignas(64) StreamState {
  std::uint32_t npu = 0;
  bool alive = true, busy = false, failed = false;
  TaskQueue q;                     // visible to the engine (doorbell rung)
  Tick dispatch_ps = 0;            // the NPU's task_dispatch_ps (a copy: complete() need not read the NPU)
  std::uint64_t started = 0, completed = 0;
  Tick head_start = 0;             // when the head task was dispatched
  std::uint64_t epoch = 0;         // bumped when the stream fails: work started before is orphaned
  std::uint64_t space_at = ~0ULL;  // on_sq_space once the queue is down to this many tasks
  TaskQueue pending;               // enqueued, doorbell not yet rung
  std::uint64_t rung = 0;
  std::string error;
};

}  // namespace models
