// The hardware of one simulated server group as plain C++ driven by a Scheduler (the "fabric";
// docs/architecture.md#models): Ascend NPUs (models/npu: stream task engine, SDMA engines,
// notify and event registers, MSI, register map), their HBM (models/mem), HCCS and PCIe links,
// PCIe switches and root complexes (models/link), and the NPU side of the RoCE NIC (models/nic).
// Link and engine timing is analytic ("busy until T"): a transfer is cut into pieces; each piece
// reserves every resource on its path for bytes / min(bandwidth) starting when all are free, and
// arrives one path latency later. No component owns a kernel event.
//
// Machine composes the rooms; its methods are defined in the room that owns the concern
// (docs/models/README.md lists which file holds what).
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/event_queue.h"
#include "models/link/link_params.h"
#include "models/link/links.h"
#include "models/mem/hbm.h"
#include "models/mem/reduce.h"
#include "models/network.h"
#include "models/nic/rdma_engine.h"
#include "models/npu/address_map.h"
#include "models/block_store.h"
#include "models/npu/machine_listener.h"
#include "models/npu/msi.h"
#include "models/npu/npu_params.h"
#include "models/npu/npu_state.h"
#include "models/npu/regmap.h"
#include "models/npu/sdma.h"
#include "models/npu/task.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

/// The AI-core peak of an NPU for dtype t, operations per second (0: none documented).
double compute_peak(const NpuParams& p, DType t);
/// A compute task's duration on an NPU of parameters p (npu/stream_engine.cpp).
Tick compute_ps(const NpuParams& p, const Task& t);

class Machine final : public EventHandler, private RdmaHost {
 public:
  struct Stats {
    std::uint64_t tasks = 0, pieces = 0, notifies = 0;
  };

  Machine(Scheduler& sch, std::uint64_t piece_bytes = 256 * 1024) : sch_(sch), piece_bytes_(piece_bytes), msi_(sch), rdma_(sch, *this) {}
  void set_listener(MachineListener* l) {
    listener_ = l;
    msi_.set_listener(l);
  }

  // ---- composition (machine.cpp) ----
  /// `name`: how logs, errors and link names call the device (the topology's name, e.g.
  /// "node1/npu2"); empty: "npu<index>". Its host PCIe link is "<name>/host", its HBM port "<name>/hbm".
  std::uint32_t add_npu(const NpuParams& p, std::string name = {});
  const std::string& npu_name(std::uint32_t n) const override { return npus_[n].name; }
  std::uint32_t npu_count() const { return static_cast<std::uint32_t>(npus_.size()); }
  const NpuParams& npu_params(std::uint32_t n) const { return npus_[n].params; }
  SparseMemory& hbm(std::uint32_t n) override { return npus_[n].hbm; }
  const Stats& stats() const { return stats_; }
  std::uint64_t piece_bytes() const { return piece_bytes_; }
  /// The NPU dies: its streams fail, its HCCS and PCIe links go down (its NIC is the network's).
  void crash_npu(std::uint32_t npu);
  /// The NPU's stream engine stops dispatching tasks until `until` (tasks already running go on).
  void stall_npu(std::uint32_t npu, Tick until);
  /// Backdoor (no time): used by the driver for rank descriptors and by fault injection.
  void backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len);
  void backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const;
  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;
  /// Counters over time of every port (link direction), indexed like ports() (models/sampler.h);
  /// call once the links are added, before the run. 0: off.
  void enable_sampling(Tick interval_ps) { links_.enable_sampling(interval_ps); }
  Sampler& link_samples() { return links_.samples(); }
  /// Report every completed stream task to the listener (on_task_done).
  void report_tasks(bool on) { report_tasks_ = on; }
  /// The host memory NPU `npu`'s host DMA reaches (null: host pointers are this process's).
  void set_host_memory(std::uint32_t npu, HostMemory* m) { npus_.at(npu).host_mem = m; }
  HostMemory* host_memory(std::uint32_t npu) const { return npus_.at(npu).host_mem; }
  /// The host records notify `key` on `npu` (a register write from the host, as the driver does
  /// when host work a stream waits for is done): as a NotifyRecord landing there.
  void host_notify(std::uint32_t npu, std::uint64_t key) { notify_record(npu, key); }

  // ---- links and PCIe (models/link/links.h: Links owns them; faults: machine.cpp) ----
  Links& link_model() { return links_; }
  const Links& link_model() const { return links_; }
  std::uint32_t add_link(LinkKind kind, std::uint32_t a, std::uint32_t b, const LinkParams& p, std::string name) {
    return links_.add_link(kind, a, b, p, std::move(name));
  }
  const std::vector<LinkInfo>& links() const { return links_.links(); }
  const std::vector<Port>& ports() const { return links_.ports(); }
  /// Directional port from NPU a to NPU b over a direct link, or -1.
  int port_between(std::uint32_t a, std::uint32_t b) const { return links_.port_between(a, b); }
  // Link faults (both directions; both ends see the effect: an interrupt, the listener's record).
  void set_link_up(std::uint32_t link, bool up);
  void set_link_lanes(std::uint32_t link, std::uint32_t lanes);
  void set_link_crc_rate(std::uint32_t link, double rate);
  /// A PCIe switch joining NPUs for peer-to-peer DMA (Atlas 800: its two HCCS groups).
  std::uint32_t add_pcie_switch(std::string name, Tick latency_ps) { return links_.add_pcie_switch(std::move(name), latency_ps); }
  /// Cable NPU `npu` to switch `sw` (a PCIe link: one port each way).
  std::uint32_t add_pcie_switch_link(std::uint32_t npu, std::uint32_t sw, const LinkParams& p, std::string name) {
    return links_.add_pcie_switch_link(npu, sw, p, std::move(name));
  }
  /// Path between two NPUs: a direct HCCS port, or two PCIe ports through a shared switch.
  using Route = LinkRoute;
  Route route(std::uint32_t a, std::uint32_t b) const { return links_.route(a, b); }
  /// The PCIe switch `npu` is cabled to, or -1 (directly under its root complex).
  std::int64_t pcie_switch_of(std::uint32_t npu) const { return links_.pcie_switch_of(npu); }
  /// A host root complex (one per server): its ports carry the host-memory side of every host DMA
  /// of the NPUs attached to it (port a->b: towards the devices, b->a: towards host memory).
  std::uint32_t add_root_complex(std::string name, const LinkParams& p) { return links_.add_root_complex(std::move(name), p); }
  /// The upstream link of PCIe switch `sw` to root complex `rc` (shared by its NPUs' host DMA).
  std::uint32_t add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name) {
    return links_.add_pcie_switch_upstream(sw, rc, p, std::move(name));
  }

  // ---- host DMA (npu/host_dma.cpp) ----
  /// Host DMA of `npu` goes through root complex `rc`: over the NPU's own host link, or, when the
  /// NPU sits behind a PCIe switch with an upstream link, through the switch and its upstream.
  void attach_host(std::uint32_t npu, std::uint32_t rc);

  // ---- streams and tasks (npu/stream_engine.cpp) ----
  std::uint32_t create_stream(std::uint32_t npu);
  bool stream_valid(std::uint32_t s) const { return s < streams_.size() && streams_[s].alive; }
  std::uint32_t stream_count() const { return static_cast<std::uint32_t>(streams_.size()); }
  void destroy_stream(std::uint32_t s) { streams_[s].alive = false; }
  std::uint32_t stream_npu(std::uint32_t s) const override { return streams_[s].npu; }
  /// Every NPU's HBM keeps the bytes written from now on (on) or only as configured (off): a
  /// timing-payload run's short exchange whose bytes matter (a train step's communicator splits).
  void keep_bytes(bool on) {
    if (hbm_configured_.empty())
      for (const auto& h : hbm_shape_) hbm_configured_.push_back(h.stores);
    for (std::size_t i = 0; i < npus_.size(); ++i) {
      hbm_shape_[i].stores = on || hbm_configured_[i];
      npus_[i].hbm.set_store(hbm_shape_[i].stores);
    }
  }
  /// AI-core time of the compute tasks NPU npu's streams dispatched so far (their whole durations).
  Tick npu_compute_ps(std::uint32_t npu) const { return npus_.at(npu).compute_ps; }

  bool stream_idle(std::uint32_t s) const { return streams_[s].q.empty(); }
  /// Tasks in the stream's submission queue (doorbell rung or not) that the engine has not finished.
  std::uint64_t stream_queued(std::uint32_t s) const { return streams_[s].q.size() + streams_[s].pending.size(); }
  /// SQ entries per stream of the stream's NPU (NpuParams::sq_depth).
  std::uint32_t sq_depth(std::uint32_t s) const { return npus_[streams_[s].npu].params.sq_depth; }
  /// Call the listener's on_sq_space once at most `room_at` tasks remain queued (or the stream fails).
  void want_sq_space(std::uint32_t s, std::uint64_t room_at) { streams_[s].space_at = room_at; }
  bool stream_failed(std::uint32_t s) const { return streams_[s].failed; }
  const std::string& stream_error(std::uint32_t s) const { return streams_[s].error; }
  void clear_stream_error(std::uint32_t s) { streams_[s].failed = false; streams_[s].error.clear(); }
  /// Stop a stream (docs/failover.md): its queued tasks are discarded and the one in flight is
  /// orphaned (no more bytes, no completion), without an error; the stream can take new tasks.
  void abort_stream(std::uint32_t s);
  /// Zero the count of every notify register of `npu` that no stream waits on (records left over
  /// from an aborted operation).
  void reset_notifies(std::uint32_t npu);
  /// Reset every QP `npu` sends on (Network::reset_qp): after its streams were aborted, the writes
  /// they had posted are flushed instead of going out ahead of the retry's.
  void reset_qps(std::uint32_t npu) { rdma_.reset_qps(npu); }
  /// Append a task; it starts when all earlier tasks of the stream have completed.
  /// (enqueue + ring the stream's doorbell; the driver does the two steps itself.)
  void submit(std::uint32_t stream, const Task& t);
  /// Write a task into the stream's submission queue; it becomes visible at the next doorbell.
  void enqueue(std::uint32_t stream, const Task& t);
  /// The task at the head of a stream (being executed or waiting) into *out; false when idle.
  bool stream_head(std::uint32_t s, Task* out) const {
    if (streams_[s].q.empty()) return false;
    *out = streams_[s].q.front();
    return true;
  }

  // ---- MMIO: the register map (npu/mmio.cpp; models/npu/regmap.h npu_regs) ----
  // False for unmapped offsets, read-only registers, or a doorbell value beyond what was enqueued.
  bool mmio_read(std::uint32_t npu, std::uint32_t offset, std::uint64_t* value) const;
  bool mmio_write(std::uint32_t npu, std::uint32_t offset, std::uint64_t value);
  /// The driver registers the rank descriptor in the configuration space at load (privileged).
  void load_config(std::uint32_t npu, std::uint32_t offset, std::uint64_t value);
  /// HCCS port `number` of `npu` (its HCCS_PORT_* registers, npu_regs::hccs_port_reg) is the
  /// directional port `port` (from `npu`) of an HCCS link: how the NPU's cage is cabled.
  /// `port` = kHccsUntrained: the port is cabled but never trained (a link down from the start: no
  /// link exists, so transfers between the two NPUs take another path).
  void set_hccs_port(std::uint32_t npu, std::uint32_t number, std::uint32_t port);
  static constexpr std::uint32_t kHccsUntrained = ~0u;

  // ---- notify and event registers (npu/notify.cpp), MSI (npu/msi.cpp) ----
  /// Notify register bound to notify `key` on `npu` (read it at npu_regs::notify_reg), or -1.
  int notify_index(std::uint32_t npu, std::uint64_t key) const;
  std::uint64_t notify_overflows() const { return notify_overflows_; }
  std::uint64_t interrupts() const { return msi_.interrupts(); }
  std::uint64_t event_completed(std::uint32_t npu, std::uint64_t ev) const {
    auto it = npus_[npu].events.find(ev);
    return it == npus_[npu].events.end() ? 0 : it->second.completed;
  }
  Tick event_time(std::uint32_t npu, std::uint64_t ev) const {
    auto it = npus_[npu].events.find(ev);
    return it == npus_[npu].events.end() ? 0 : it->second.t;
  }

  // ---- RDMA engine: the NPU side of the RoCE NIC (models/nic/rdma_engine.h, which owns its state) ----
  RdmaEngine& rdma() { return rdma_; }
  const RdmaEngine& rdma() const { return rdma_; }
  static constexpr std::uint32_t kLocalWrite = RdmaEngine::kLocalWrite, kRemoteRead = RdmaEngine::kRemoteRead,
                                 kRemoteWrite = RdmaEngine::kRemoteWrite;
  std::uint32_t register_mr(std::uint32_t npu, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access) {
    return rdma_.register_mr(npu, addr, bytes, access);
  }
  bool deregister_mr(std::uint32_t npu, std::uint32_t key) { return rdma_.deregister_mr(npu, key); }
  std::uint64_t rdma_access_errors() const { return rdma_.access_errors(); }
  std::uint64_t forward_drops() const { return rdma_.forward_drops(); }
  void attach_network(Network* net, std::vector<std::uint32_t> nic_node) { rdma_.attach_network(net, std::move(nic_node)); }
  Network* network() const { return rdma_.network(); }
  bool has_nic(std::uint32_t npu) const { return rdma_.has_nic(npu); }
  std::uint32_t nic_node(std::uint32_t npu) const { return rdma_.nic_node(npu); }
  static std::uint16_t default_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index) {
    return RdmaEngine::default_sport(src, dst, index);
  }
  void set_qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index, std::uint16_t sport) {
    rdma_.set_qp_sport(src, dst, index, sport);
  }
  std::uint16_t qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index) const { return rdma_.qp_sport(src, dst, index); }
  const std::vector<std::uint32_t>* nic_qps(std::uint32_t npu) const { return rdma_.nic_qps(npu); }

 private:
  std::vector<std::uint8_t> bounce_;  // host_dma_land: one piece of a host in another process
  enum Ev : std::uint64_t { kDispatch = 1, kPieceSent, kPieceArrive, kNotifyArrive, kNotifyLocal, kComplete };
  static constexpr std::uint64_t ev(std::uint64_t type, std::uint64_t id) { return type | (id << 8); }
  /// Stream-scoped events carry the low 24 bits of the stream's epoch: stale ones (the stream
  /// failed since they were scheduled) are dropped by on_event.
  static constexpr std::uint64_t kEpochMask = 0xffffff;
  std::uint64_t stream_ev(std::uint64_t type, std::uint32_t s) const {
    return type | (static_cast<std::uint64_t>(s) << 8) | ((streams_[s].epoch & kEpochMask) << 40);
  }

  bool check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const override;  // machine.cpp
  // npu/stream_engine.cpp
  void dispatch(std::uint32_t s);
  void complete(std::uint32_t s);
  /// Apply the passive event records (Task::passive) now at the head of stream s: each sets its
  /// event as the task before it completed, without a dispatch of its own.
  void take_marks(std::uint32_t s);
  void fail(std::uint32_t s, const std::string& why);
  void orphan(std::uint32_t s);  ///< fail / abort_stream: empty the queue, orphan the task in flight
  // npu/notify.cpp
  void notify_record_task(std::uint32_t s, const Task& t);
  void notify_wait_task(std::uint32_t s, const Task& t);
  void event_record_task(std::uint32_t s, const Task& t);
  void event_wait_task(std::uint32_t s, const Task& t);
  void notify_record(std::uint32_t npu, std::uint64_t key) override;
  int bind_notify(std::uint32_t npu, std::uint64_t key);
  void notify_deliver(std::uint32_t npu, std::uint32_t reg);
  void notify_release(std::uint32_t npu, std::uint32_t reg);
  /// Hardware sets INT_STATUS bits; newly set unmasked ones send an MSI (models/npu/msi.h).
  void raise(std::uint32_t npu, std::uint64_t bits) { msi_.raise(npu, bits); }
  // npu/sdma.cpp
  void start_transfer(std::uint32_t s, const Task& t);
  void send_piece(std::uint32_t xfer);
  void arrive_piece(std::uint32_t xfer, std::uint64_t off, std::uint64_t len);
  std::uint32_t alloc_xfer();
  /// An aborted transfer's slot is reused only once none of its events is pending.
  void abort_transfer(std::uint32_t xfer);
  // npu/host_dma.cpp
  bool host_dma_path(std::uint32_t s, const Task& t, Transfer& x, Tick& lat);
  bool host_dma_land(const Task& t, std::uint64_t off, std::uint64_t len);
  // RdmaHost: what the RDMA engine asks of the NPU side (machine.cpp)
  std::uint64_t stream_epoch(std::uint32_t s) const override { return streams_[s].epoch; }
  void rdma_task_done(std::uint32_t s, Tick at) override;
  void rdma_task_failed(std::uint32_t s, const std::string& why) override { fail(s, why); }
  bool hbm_stores(std::uint32_t npu) const override { return hbm_shape_[npu].stores; }
  void prefetch_npu(std::uint32_t npu) const override {
    if (npu < npus_.size()) __builtin_prefetch(&npus_[npu]);
  }
  Tick forward_leg(std::uint32_t lender, std::uint32_t target, std::uint64_t len) override;

  Scheduler& sch_;
  std::uint64_t piece_bytes_;
  MachineListener* listener_ = nullptr;
  Stats stats_;
  Msi msi_;
  // npu
  std::vector<NpuState> npus_;
  BlockStore<StreamState> streams_;  // growing never moves a stream (references stay valid)
  std::vector<Transfer> xfers_;
  std::vector<std::uint32_t> free_xfers_;
  std::uint64_t notify_overflows_ = 0;
  bool report_tasks_ = false;
  bool any_stall_ = false;  // some NPU was stalled (npu_stall): only then does a dispatch read its NPU
  // link
  Links links_;
  std::vector<std::vector<int>> hccs_port_;  // per NPU: HCCS port number -> directional port (-1: not cabled)
  std::uint64_t hccs_port_reg_value(std::uint32_t npu, std::uint32_t number, std::uint32_t reg) const;
  // the HBM side of every NPU
  // Per NPU, what every RDMA write checks of its target's HBM (check_range, data_is_silent), in
  // 16 bytes instead of a line of a remote NPU's state: at 8192 NPUs the array stays in cache.
  struct HbmShape {
    std::uint64_t capacity;
    bool stores;
  };
  std::vector<HbmShape> hbm_shape_;
  std::vector<bool> hbm_configured_;  // keep_bytes: the configured HbmShape::stores
  // nic
  RdmaEngine rdma_;
};

}  // namespace models
