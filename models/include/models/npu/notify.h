// Notify and event registers of the NPUs (docs/models/npu.md): notify keys bound to registers,
// records (local, or remote as a posted 4-byte write over HCCS or a PCIe switch), FIFO waits,
// and CUDA-style events. NotifyRegisters owns every NPU's registers and carries out the notify
// and event tasks the stream engine dispatches to it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/event_queue.h"
#include "models/npu/task.h"
#include "models/npu/task_host.h"
#include "models/time.h"

namespace models {

class Links;
class Msi;
class NpuDevices;

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
    auto it = lower(key);
    return it != v_.end() && it->first == key ? static_cast<std::int64_t>(it->second) : -1;
  }
  void emplace(std::uint64_t key, std::uint32_t reg) { v_.insert(lower(key), {key, reg}); }
  void erase(std::uint64_t key) {
    auto it = lower(key);
    if (it != v_.end() && it->first == key) v_.erase(it);
  }
  std::size_t size() const { return v_.size(); }

 private:
  using Entry = std::pair<std::uint64_t, std::uint32_t>;
  std::vector<Entry>::const_iterator lower(std::uint64_t key) const {
    return std::lower_bound(v_.begin(), v_.end(), key, [](const Entry& e, std::uint64_t k) { return e.first < k; });
  }
  std::vector<Entry> v_;
};

struct EventReg {
  std::uint64_t completed = 0;
  Tick t = 0;
  /// Streams parked in EventWait and the count each waits for, in arrival order.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> waiters;
};

class NotifyRegisters final : public EventHandler {
 public:
  NotifyRegisters(Scheduler& sch, TaskHost& streams, const NpuDevices& devs, Links& links, Msi& msi)
      : sch_(sch), streams_(streams), devs_(devs), links_(links), msi_(msi) {}
  void add_npu() { banks_.emplace_back(); }

  // ---- the tasks (dispatched by the stream engine at the head of stream s) ----
  void record_task(std::uint32_t s, const Task& t);
  void wait_task(std::uint32_t s, const Task& t);
  void event_record_task(std::uint32_t s, const Task& t);
  void event_wait_task(std::uint32_t s, const Task& t);
  /// A passive event record (Task::passive) of a stream on `npu`: sets the event now; the streams
  /// it releases are appended to `wake` (the caller ends their waits).
  void mark_event(std::uint32_t npu, const Task& t, std::vector<std::uint32_t>& wake);

  // ---- records from elsewhere, and the registers' state ----
  /// Notify `key` is recorded on `npu` (a write landing there: from a peer, the NIC or the host).
  void record(std::uint32_t npu, std::uint64_t key);
  /// Notify register bound to notify `key` on `npu`, or -1.
  int index(std::uint32_t npu, std::uint64_t key) const;
  /// `npu` has a notify register r (r < notify_regs), bound or not.
  bool exists(std::uint32_t npu, std::uint32_t r) const;
  /// Register r of `npu` bound: its count into *count, its key into *key; false when not bound.
  bool bound(std::uint32_t npu, std::uint32_t r, std::int64_t* count, std::uint64_t* key) const;
  /// Registers of `npu` bound now (NOTIFY_IN_USE).
  std::uint64_t in_use(std::uint32_t npu) const { return banks_[npu].nkey.size(); }
  std::uint64_t overflows() const { return overflows_; }
  std::uint64_t records() const { return records_; }
  std::uint64_t event_completed(std::uint32_t npu, std::uint64_t ev) const {
    auto it = banks_[npu].events.find(ev);
    return it == banks_[npu].events.end() ? 0 : it->second.completed;
  }
  Tick event_time(std::uint32_t npu, std::uint64_t ev) const {
    auto it = banks_[npu].events.find(ev);
    return it == banks_[npu].events.end() ? 0 : it->second.t;
  }
  /// Zero the count of every register of `npu` that no stream waits on.
  void reset(std::uint32_t npu);
  /// Stream s of `npu` no longer waits on any notify or event register (it failed or was aborted).
  void forget(std::uint32_t npu, std::uint32_t s);
  /// Start loading NPU npu's registers (a cache hint only).
  void prefetch_npu(std::uint32_t npu) const {
    if (npu < banks_.size()) __builtin_prefetch(&banks_[npu]);
  }

  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kArrive = 1, kLocal };
  struct Bank {
    // What every record and wait touches first, in the struct's first lines.
    std::vector<NotifyReg> nregs;
    KeyIndex nkey;                     // bound key -> register
    std::vector<std::uint32_t> nfree;  // released registers (reused first)
    std::map<std::uint64_t, EventReg> events;
  };
  int bind(std::uint32_t npu, std::uint64_t key);
  void deliver(std::uint32_t npu, std::uint32_t reg);
  void release(std::uint32_t npu, std::uint32_t reg);
  /// Event t.key of `npu` reaches t.value now: its satisfied waiters into `wake`.
  void set_event(std::uint32_t npu, const Task& t, std::vector<std::uint32_t>& wake);

  Scheduler& sch_;
  TaskHost& streams_;
  const NpuDevices& devs_;
  Links& links_;
  Msi& msi_;
  std::vector<Bank> banks_;  // per NPU
  std::uint64_t overflows_ = 0, records_ = 0;
};

}  // namespace models
