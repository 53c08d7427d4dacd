// An in-memory Driver for testing libhcomm's task schedules without SystemC
// (docs/architecture.md#hcomm). Ranks are run cooperatively on the test's thread: the test says
// which rank is calling (set_rank), every submitted task is recorded and queued, and queued tasks
// execute when the library synchronizes or queries — streams in id order, each as far as it can
// go, until nothing can progress. No time passes; the schedule is fully deterministic.
//
// Device handle = rank; ranks_per_server consecutive ranks share a server (HCCS between them,
// RoCE across servers). Device memory is sparse host memory, so results can be checked.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hcomm/driver.h"

namespace hcomm_fake {

using hcomm::DrvStatus;
using hcomm::DrvTask;
using hcomm::DrvTaskKind;

struct Submitted {
  std::uint32_t device = 0;  ///< the submitting stream's device (= rank)
  std::uint32_t stream = 0;
  DrvTask task;
};

class FakeDriver : public hcomm::Driver {
 public:
  FakeDriver(std::uint32_t ranks, std::uint32_t ranks_per_server) : n_(ranks), rps_(ranks_per_server), heap_top_(ranks, 0) {}

  /// The rank whose host thread makes the next library calls.
  void set_rank(std::uint32_t r) { current_ = r; }
  static std::uint64_t base_of(std::uint32_t device) { return (static_cast<std::uint64_t>(device) + 1) << 40; }

  std::vector<Submitted> tasks;          ///< every submitted task, in submission order
  std::vector<hcomm::OpInfo> ops;        ///< every profile_op announcement
  std::vector<std::string> logs;
  /// Notify counters left after the run: (device, key) -> records not yet consumed by a wait.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> notifies;
  /// Compute tasks executed, and the sum of the durations of those given in ns (no clock here).
  std::uint64_t computes = 0, compute_ns = 0;

  // ---- device / topology ----
  std::uint32_t rank_count() override { return n_; }
  DrvStatus rank_desc(std::uint32_t rank, hcomm::RankDesc* out) override {
    if (rank >= n_ || !out) return DrvStatus::Invalid;
    hcomm::RankDesc d;
    d.rank = rank;
    d.device = rank;
    d.device_id = rank % rps_;
    d.server = rank / rps_;
    d.host_ip = 0x0a000001u + d.server;
    d.device_base_addr = base_of(rank);
    *out = d;
    return DrvStatus::Ok;
  }
  DrvStatus device_of(std::uint32_t device_id, std::uint32_t* device) override {
    if (device_id >= rps_ || !device) return DrvStatus::Invalid;
    *device = current_ / rps_ * rps_ + device_id;
    return DrvStatus::Ok;
  }
  /// The simulator's oracle; the library must not ask it (discovery decides, docs/discovery.md).
  std::uint64_t pair_link_calls = 0;
  hcomm::PairLink pair_link(std::uint32_t a, std::uint32_t b) override {
    ++pair_link_calls;
    if (a >= n_ || b >= n_) return hcomm::PairLink::None;
    if (a == b) return hcomm::PairLink::Local;
    return a / rps_ == b / rps_ ? hcomm::PairLink::Hccs : hcomm::PairLink::Roce;
  }
  std::uint64_t device_memory_size(std::uint32_t) override { return 1ULL << 36; }

  // ---- RoCE routing: a two-tier Clos in miniature. Server s's NICs sit on leaf s/2 (ports
  // 0..2*rps-1, device d of server s on port (s%2)*rps + d); each leaf has kUplinks uplinks
  // (ports 100..), one per spine; a flow's uplink is a hash of (src, dst, sport). ----
  static constexpr std::uint32_t kUplinks = 4;
  std::vector<hcomm::RouteInfo> routes;                     ///< every route_decided report
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint16_t> qp_sports;  ///< (src, dst, qp) -> sport
  std::uint64_t probes = 0, probe_calls = 0;
  std::uint32_t fake_uplink(std::uint32_t a, std::uint32_t b, std::uint16_t sport) const {
    std::uint64_t h = (static_cast<std::uint64_t>(a) * 0x9e3779b97f4a7c15ULL) ^ (static_cast<std::uint64_t>(b) << 32) ^ sport;
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 32;
    return static_cast<std::uint32_t>(h % kUplinks);
  }
  DrvStatus nic_info(std::uint32_t dev, hcomm::NicInfo* out) override {
    if (dev >= n_ || !out) return DrvStatus::Invalid;
    *out = hcomm::NicInfo{};
    out->present = out->link_up = true;
    out->speed_bps = 200000000000ULL;
    out->neighbor = "leaf" + std::to_string(dev / rps_ / 2);
    out->neighbor_port = (dev / rps_ % 2) * rps_ + dev % rps_;
    return DrvStatus::Ok;
  }
  DrvStatus nic_counters(std::uint32_t dev, hcomm::NicCounters* out) override {
    if (dev >= n_ || !out) return DrvStatus::Invalid;
    *out = hcomm::NicCounters{};
    return DrvStatus::Ok;
  }
  DrvStatus probe_paths(std::uint32_t dev, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                        std::vector<hcomm::PathHop>* out, std::vector<std::uint32_t>* start) override {
    if (dev >= n_ || !out || !start) return DrvStatus::Invalid;
    out->clear();
    start->assign(1, 0);
    probes += n;
    ++probe_calls;
    const std::uint32_t la = dev / rps_ / 2, in = (dev / rps_ % 2) * rps_ + dev % rps_;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t target = targets[i];
      if (target >= n_) return DrvStatus::Invalid;
      const std::uint32_t lb = target / rps_ / 2, down = (target / rps_ % 2) * rps_ + target % rps_;
      if (la == lb) {
        out->push_back({1000 + la, in, down});
      } else {
        const std::uint32_t u = fake_uplink(dev, target, sports[i]);
        out->push_back({1000 + la, in, 100 + u});
        out->push_back({2000 + u, la, lb});
        out->push_back({1000 + lb, 100 + u, down});
      }
      start->push_back(static_cast<std::uint32_t>(out->size()));
    }
    return DrvStatus::Ok;
  }
  DrvStatus qp_connect(std::uint32_t dev, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) override {
    if (dev >= n_ || target >= n_) return DrvStatus::Invalid;
    qp_sports[{dev, target, qp}] = sport;
    return DrvStatus::Ok;
  }
  void route_decided(std::uint32_t, const hcomm::RouteInfo& r) override { routes.push_back(r); }

  // ---- memory ----
  DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) override {
    if (device >= n_ || !addr || bytes == 0) return DrvStatus::Invalid;
    *addr = base_of(device) + heap_top_[device];
    heap_top_[device] += (bytes + 511) & ~511ULL;
    return DrvStatus::Ok;
  }
  DrvStatus mem_free(std::uint32_t device, std::uint64_t) override { return device < n_ ? DrvStatus::Ok : DrvStatus::Invalid; }
  DrvStatus mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                        std::uint32_t* key) override {
    if (device >= n_ || !key || bytes == 0) return DrvStatus::Invalid;
    auto& regs = mrs_[device];
    *key = static_cast<std::uint32_t>(regs.size() + 1);
    regs[*key] = Region{addr, bytes, access};
    return DrvStatus::Ok;
  }
  DrvStatus mr_deregister(std::uint32_t device, std::uint32_t key) override {
    return mrs_[device].erase(key) ? DrvStatus::Ok : DrvStatus::Invalid;
  }

  // ---- streams ----
  DrvStatus stream_create(std::uint32_t device, std::uint32_t* stream) override {
    if (device >= n_ || !stream) return DrvStatus::Invalid;
    *stream = static_cast<std::uint32_t>(streams_.size());
    streams_.push_back(Stream{device, {}, ""});
    return DrvStatus::Ok;
  }
  DrvStatus stream_destroy(std::uint32_t s) override { return s < streams_.size() ? DrvStatus::Ok : DrvStatus::Invalid; }
  DrvStatus submit(std::uint32_t s, const DrvTask& t) override {
    if (s >= streams_.size()) return DrvStatus::Invalid;
    tasks.push_back(Submitted{streams_[s].device, s, t});
    streams_[s].q.push_back(t);
    return DrvStatus::Ok;
  }
  DrvStatus stream_synchronize(std::uint32_t s, std::uint64_t, std::string* error) override {
    if (s >= streams_.size()) return DrvStatus::Invalid;
    run();
    Stream& st = streams_[s];
    if (!st.error.empty()) {
      if (error) *error = st.error;
      st.error.clear();
      st.q.clear();
      return DrvStatus::Failed;
    }
    if (!st.q.empty()) {
      if (error) *error = "blocked (fake driver: no stream can progress)";
      return DrvStatus::Timeout;
    }
    return DrvStatus::Ok;
  }
  bool stream_idle(std::uint32_t s) override {
    run();
    return s >= streams_.size() || streams_[s].q.empty() || !streams_[s].error.empty();
  }
  std::uint64_t event_completed(std::uint32_t device, std::uint64_t event) override {
    run();
    auto it = events_.find({device, event});
    return it == events_.end() ? 0 : it->second;
  }
  std::uint64_t event_time_ns(std::uint32_t, std::uint64_t) override { return 0; }

  // ---- time, profiling, logs ----
  std::uint64_t now_ns() override { return 0; }
  void host_delay(std::uint64_t) override {}
  void profile_op(std::uint32_t, std::uint64_t, std::uint64_t, const hcomm::OpInfo& info) override { ops.push_back(info); }
  void log(std::uint32_t, int, const std::string& line) override { logs.push_back(line); }

  // ---- discovery (docs/discovery.md) ----
  // HCCS full mesh inside a server: port j of device id i is cabled to device id j; no PCIe
  // peer-to-peer; no host control channel (ranks run cooperatively: a blocking exchange cannot).
  /// HCCS links (device pairs, either order) that are cabled but down.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> hccs_down;
  DrvStatus hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) override {
    if (device >= n_ || port >= hcomm::kHccsPortCount || !out) return DrvStatus::Invalid;
    hcomm::HccsPortInfo p;
    const std::uint32_t base = device / rps_ * rps_;
    const bool down = std::find(hccs_down.begin(), hccs_down.end(), std::make_pair(device, base + port)) != hccs_down.end() ||
                      std::find(hccs_down.begin(), hccs_down.end(), std::make_pair(base + port, device)) != hccs_down.end();
    if (port < rps_ && port != device % rps_ && base + port < n_ && down) {
      p.cabled = true;
    } else if (port < rps_ && port != device % rps_ && base + port < n_) {
      p.cabled = p.up = true;
      p.lanes = 8;
      p.bandwidth_Bps = 28ULL * 1000 * 1000 * 1000;
      p.partner_device_id = port;
      p.partner_server = device / rps_;
    }
    *out = p;
    return DrvStatus::Ok;
  }
  DrvStatus pcie_peer(std::uint32_t device, std::uint32_t peer, bool* reachable) override {
    if (device >= n_ || peer >= n_ || !reachable) return DrvStatus::Invalid;
    *reachable = false;
    return DrvStatus::Ok;
  }
  DrvStatus device_rank(std::uint32_t device, std::uint32_t* rank) override {
    if (device >= n_ || !rank) return DrvStatus::Invalid;
    *rank = device;
    return DrvStatus::Ok;
  }
  DrvStatus ctrl_send(std::uint32_t, std::uint32_t, hcomm::CtrlMsg) override { return DrvStatus::NotSupported; }
  DrvStatus ctrl_recv(std::uint32_t, std::uint32_t, std::uint64_t, hcomm::CtrlMsg*) override { return DrvStatus::NotSupported; }
  // ---- end discovery ----

  // ---- host access to device memory ----
  void read(std::uint64_t addr, void* dst, std::uint64_t n) {
    auto* d = static_cast<std::uint8_t*>(dst);
    for (std::uint64_t i = 0; i < n;) {
      const std::uint64_t a = addr + i, off = a % kPage, k = std::min(n - i, kPage - off);
      std::memcpy(d + i, page(a) + off, k);
      i += k;
    }
  }
  void write(std::uint64_t addr, const void* src, std::uint64_t n) {
    const auto* s = static_cast<const std::uint8_t*>(src);
    for (std::uint64_t i = 0; i < n;) {
      const std::uint64_t a = addr + i, off = a % kPage, k = std::min(n - i, kPage - off);
      std::memcpy(page(a) + off, s + i, k);
      i += k;
    }
  }

  /// Execute queued tasks until no stream can progress.
  void run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (Stream& st : streams_)
        while (!st.q.empty() && st.error.empty() && step(st)) {
          st.q.pop_front();
          progress = true;
        }
    }
  }

 private:
  static constexpr std::uint64_t kPage = 1 << 16;
  struct Stream {
    std::uint32_t device;
    std::deque<DrvTask> q;
    std::string error;
  };
  struct Region {
    std::uint64_t addr, bytes;
    std::uint32_t access;
  };

  std::uint8_t* page(std::uint64_t a) {
    auto& p = pages_[a / kPage];
    if (!p) p.reset(new std::uint8_t[kPage]());
    return p.get();
  }
  void move(std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
    std::vector<std::uint8_t> tmp(n);
    read(src, tmp.data(), n);
    write(dst, tmp.data(), n);
  }
  template <typename T>
  static T apply(int op, T a, T b) {
    switch (op) {
      case 1: return a * b;
      case 2: return std::max(a, b);
      case 3: return std::min(a, b);
      default: return a + b;
    }
  }
  template <typename T>
  void reduce_as(std::uint64_t dst, std::uint64_t src, std::uint64_t n, int op) {
    std::vector<T> a(n / sizeof(T)), b(n / sizeof(T));
    read(dst, a.data(), n);
    read(src, b.data(), n);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = apply<T>(op, a[i], b[i]);
    write(dst, a.data(), n);
  }
  bool reduce(std::uint64_t dst, std::uint64_t src, std::uint64_t n, int dtype, int op) {
    switch (dtype) {
      case 0: reduce_as<std::int8_t>(dst, src, n, op); return true;
      case 1: reduce_as<std::int16_t>(dst, src, n, op); return true;
      case 2: reduce_as<std::int32_t>(dst, src, n, op); return true;
      case 4: reduce_as<float>(dst, src, n, op); return true;
      case 5: reduce_as<std::int64_t>(dst, src, n, op); return true;
      case 10: reduce_as<double>(dst, src, n, op); return true;
      default: return false;  // fp16/bf16: not modelled here
    }
  }
  bool writable(std::uint32_t device, std::uint32_t rkey, std::uint64_t dst, std::uint64_t n) {
    auto it = mrs_[device].find(rkey);
    return it != mrs_[device].end() && (it->second.access & 4) && dst >= it->second.addr &&
           dst + n <= it->second.addr + it->second.bytes;
  }
  /// Execute the head task of `st`; false when it must wait (or failed: st.error is set).
  bool step(Stream& st) {
    const DrvTask& t = st.q.front();
    switch (t.kind) {
      case DrvTaskKind::Copy:
        if (t.width == 0) move(t.dst, t.src, t.bytes);
        else for (std::uint64_t r = 0; r < t.bytes / t.width; ++r) move(t.dst + r * t.dpitch, t.src + r * t.spitch, t.width);
        return true;
      case DrvTaskKind::ReduceCopy:
        if (!reduce(t.dst, t.src, t.bytes, t.dtype, t.op)) { st.error = "reduce: dtype not modelled"; return false; }
        return true;
      case DrvTaskKind::HostToDevice: write(t.dst, t.host, t.bytes); return true;
      case DrvTaskKind::DeviceToHost: read(t.src, t.host, t.bytes); return true;
      case DrvTaskKind::NotifyRecord: ++notifies[{t.target, t.key}]; return true;
      case DrvTaskKind::NotifyWait: {
        auto it = notifies.find({st.device, t.key});
        if (it == notifies.end() || it->second == 0) return false;
        if (--it->second == 0) notifies.erase(it);
        return true;
      }
      case DrvTaskKind::EventRecord: {
        auto& e = events_[{st.device, t.key}];
        e = std::max(e, t.value);
        return true;
      }
      case DrvTaskKind::EventWait: {
        auto it = events_.find({st.device, t.key});
        return it != events_.end() && it->second >= t.value;
      }
      case DrvTaskKind::Marker: return true;
      case DrvTaskKind::RdmaWrite:
        if (t.bytes) {
          if (!writable(t.target, t.rkey, t.dst, t.bytes)) { st.error = "rdma write: no REMOTE_WRITE region"; return false; }
          move(t.dst, t.src, t.bytes);
        }
        if (t.value) ++notifies[{t.target, t.key}];
        return true;
      case DrvTaskKind::RdmaFence: return true;  // writes land when they run here
      case DrvTaskKind::Compute: compute_ns += t.flops > 0 ? 0 : t.value; ++computes; return true;  // no clock here: counted
    }
    return false;
  }

  std::uint32_t n_, rps_, current_ = 0;
  std::vector<std::uint64_t> heap_top_;
  std::vector<Stream> streams_;
  std::map<std::uint32_t, std::map<std::uint32_t, Region>> mrs_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> events_;
  std::unordered_map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> pages_;
};

}  // namespace hcomm_fake
