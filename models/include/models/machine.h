// The hardware of one simulated server group as plain C++ driven by a Scheduler (the "fabric";
// docs/architecture.md#models): Ascend NPUs (models/npu: stream task engine, SDMA engines,
// notify and event registers, MSI, register map), their HBM (models/mem), HCCS and PCIe links,
// PCIe switches and root complexes (models/link), and the NPU side of the RoCE NIC (models/nic).
// Link and engine timing is analytic ("busy until T"): a transfer is cut into pieces; each piece
// reserves every resource on its path for bytes / min(bandwidth) starting when all are free, and
// arrives one path latency later. No component owns a kernel event.
//
// Machine is wiring only: each concern is a class of its room that owns its state (the NPUs as
// devices, the stream engine, SDMA, host DMA, notify registers, MMIO, MSI, the links, the RDMA
// engine); Machine builds them, connects them through their narrow interfaces and forwards the
// driver's calls (docs/models/README.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/link/link_params.h"
#include "models/link/links.h"
#include "models/mem/hbm.h"
#include "models/mem/reduce.h"
#include "models/network.h"
#include "models/nic/rdma_engine.h"
#include "models/npu/address_map.h"
#include "models/npu/host_dma.h"
#include "models/npu/machine_listener.h"
#include "models/npu/mmio.h"
#include "models/npu/msi.h"
#include "models/npu/notify.h"
#include "models/npu/npu_devices.h"
#include "models/npu/npu_params.h"
#include "models/npu/regmap.h"
#include "models/npu/sdma.h"
#include "models/npu/stream_engine.h"
#include "models/npu/task.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

class Machine final : private RdmaHost {
 public:
  struct Stats {
    std::uint64_t tasks = 0, pieces = 0, notifies = 0;
  };

  Machine(Scheduler& sch, std::uint64_t piece_bytes = 256 * 1024)
      : sch_(sch),
        msi_(sch),
        host_dma_(links_, devs_),
        notify_(sch, streams_, devs_, links_, msi_),
        sdma_(sch, streams_, devs_, links_, host_dma_, piece_bytes),
        rdma_(sch, *this),
        streams_(sch, devs_, notify_, sdma_, rdma_, msi_),
        mmio_(streams_, notify_, links_, msi_) {}
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;
  void set_listener(MachineListener* l) {
    listener_ = l;
    msi_.set_listener(l);
    streams_.set_listener(l);
  }

  // ---- composition (machine.cpp) ----
  /// `name`: how logs, errors and link names call the device (the topology's name, e.g.
  /// "node1/npu2"); empty: "npu<index>". Its host PCIe link is "<name>/host", its HBM port "<name>/hbm".
  std::uint32_t add_npu(const NpuParams& p, std::string name = {});
  const std::string& npu_name(std::uint32_t n) const override { return devs_.name(n); }
  std::uint32_t npu_count() const { return devs_.count(); }
  const NpuParams& npu_params(std::uint32_t n) const { return devs_.params(n); }
  SparseMemory& hbm(std::uint32_t n) override { return devs_.hbm(n); }
  Stats stats() const { return Stats{streams_.tasks(), sdma_.pieces(), notify_.records()}; }
  std::uint64_t piece_bytes() const { return sdma_.piece_bytes(); }
  /// The NPU dies: its streams fail, its HCCS and PCIe links go down (its NIC is the network's).
  void crash_npu(std::uint32_t npu);
  /// The NPU's stream engine stops dispatching tasks until `until` (tasks already running go on).
  void stall_npu(std::uint32_t npu, Tick until) { streams_.stall(npu, until); }
  /// Backdoor (no time): used by the driver for rank descriptors and by fault injection.
  void backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len);
  void backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const;
  /// Counters over time of every port (link direction), indexed like ports() (models/sampler.h);
  /// call once the links are added, before the run. 0: off.
  void enable_sampling(Tick interval_ps) { links_.enable_sampling(interval_ps); }
  Sampler& link_samples() { return links_.samples(); }
  /// Report every completed stream task to the listener (on_task_done).
  void report_tasks(bool on) { streams_.report_tasks(on); }
  /// The host memory NPU `npu`'s host DMA reaches (null: host pointers are this process's).
  void set_host_memory(std::uint32_t npu, HostMemory* m) { host_dma_.set_memory(npu, m); }
  HostMemory* host_memory(std::uint32_t npu) const { return host_dma_.memory(npu); }
  /// The host records notify `key` on `npu` (a register write from the host, as the driver does
  /// when host work a stream waits for is done): as a NotifyRecord landing there.
  void host_notify(std::uint32_t npu, std::uint64_t key) { notify_.record(npu, key); }

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
  LinkPath path(std::uint32_t a, std::uint32_t b) const { return links_.path(a, b); }
  /// The PCIe switch `npu` is cabled to, or -1 (directly under its root complex).
  std::int64_t pcie_switch_of(std::uint32_t npu) const { return links_.pcie_switch_of(npu); }
  /// A host root complex (one per server): its ports carry the host-memory side of every host DMA
  /// of the NPUs attached to it (port a->b: towards the devices, b->a: towards host memory).
  std::uint32_t add_root_complex(std::string name, const LinkParams& p) { return links_.add_root_complex(std::move(name), p); }
  /// The upstream link of PCIe switch `sw` to root complex `rc` (shared by its NPUs' host DMA).
  std::uint32_t add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name) {
    return links_.add_pcie_switch_upstream(sw, rc, p, std::move(name));
  }

  // ---- host DMA (models/npu/host_dma.h) ----
  /// Host DMA of `npu` goes through root complex `rc`: over the NPU's own host link, or, when the
  /// NPU sits behind a PCIe switch with an upstream link, through the switch and its upstream.
  void attach_host(std::uint32_t npu, std::uint32_t rc) { host_dma_.attach(npu, rc); }

  // ---- streams and tasks (models/npu/stream_engine.h) ----
  std::uint32_t create_stream(std::uint32_t npu) { return streams_.create(npu); }
  bool stream_valid(std::uint32_t s) const { return streams_.valid(s); }
  std::uint32_t stream_count() const { return streams_.count(); }
  void destroy_stream(std::uint32_t s) { streams_.destroy(s); }
  std::uint32_t stream_npu(std::uint32_t s) const override { return streams_.stream_npu(s); }
  /// Every NPU's HBM keeps the bytes written from now on (on) or only as configured (off): a
  /// timing-payload run's short exchange whose bytes matter (a train step's communicator splits).
  void keep_bytes(bool on) { devs_.keep_bytes(on); }
  /// AI-core time of the compute tasks NPU npu's streams dispatched so far (their whole durations).
  Tick npu_compute_ps(std::uint32_t npu) const { return streams_.compute_time(npu); }

  bool stream_idle(std::uint32_t s) const { return streams_.idle(s); }
  /// Tasks in the stream's submission queue (doorbell rung or not) that the engine has not finished.
  std::uint64_t stream_queued(std::uint32_t s) const { return streams_.queued(s); }
  /// SQ entries per stream of the stream's NPU (NpuParams::sq_depth).
  std::uint32_t sq_depth(std::uint32_t s) const { return devs_.params(streams_.stream_npu(s)).sq_depth; }
  /// Call the listener's on_sq_space once at most `room_at` tasks remain queued (or the stream fails).
  void want_sq_space(std::uint32_t s, std::uint64_t room_at) { streams_.want_sq_space(s, room_at); }
  bool stream_failed(std::uint32_t s) const { return streams_.failed(s); }
  const std::string& stream_error(std::uint32_t s) const { return streams_.error(s); }
  void clear_stream_error(std::uint32_t s) { streams_.clear_error(s); }
  /// Stop a stream (docs/failover.md): its queued tasks are discarded and the one in flight is
  /// orphaned (no more bytes, no completion), without an error; the stream can take new tasks.
  void abort_stream(std::uint32_t s) { streams_.abort(s); }
  /// Zero the count of every notify register of `npu` that no stream waits on (records left over
  /// from an aborted operation).
  void reset_notifies(std::uint32_t npu) { notify_.reset(npu); }
  /// Reset every QP `npu` sends on (Network::reset_qp): after its streams were aborted, the writes
  /// they had posted are flushed instead of going out ahead of the retry's.
  void reset_qps(std::uint32_t npu) { rdma_.reset_qps(npu); }
  /// Append a task; it starts when all earlier tasks of the stream have completed.
  /// (enqueue + ring the stream's doorbell by MMIO; the driver does the two steps itself.)
  void submit(std::uint32_t stream, const Task& t) {
    streams_.enqueue(stream, t);
    mmio_.write(streams_.stream_npu(stream), npu_regs::stream_reg(stream, npu_regs::kSqTail), streams_.submitted(stream));
  }
  /// Write a task into the stream's submission queue; it becomes visible at the next doorbell.
  void enqueue(std::uint32_t stream, const Task& t) { streams_.enqueue(stream, t); }
  /// The task at the head of a stream (being executed or waiting) into *out; false when idle.
  bool stream_head(std::uint32_t s, Task* out) const { return streams_.head(s, out); }

  // ---- MMIO: the register map (models/npu/mmio.h; models/npu/regmap.h npu_regs) ----
  // False for unmapped offsets, read-only registers, or a doorbell value beyond what was enqueued.
  bool mmio_read(std::uint32_t npu, std::uint32_t offset, std::uint64_t* value) const { return mmio_.read(npu, offset, value); }
  bool mmio_write(std::uint32_t npu, std::uint32_t offset, std::uint64_t value) { return mmio_.write(npu, offset, value); }
  /// The driver registers the rank descriptor in the configuration space at load (privileged).
  void load_config(std::uint32_t npu, std::uint32_t offset, std::uint64_t value) { mmio_.load_config(npu, offset, value); }
  /// HCCS port `number` of `npu` (its HCCS_PORT_* registers, npu_regs::hccs_port_reg) is the
  /// directional port `port` (from `npu`) of an HCCS link: how the NPU's cage is cabled.
  /// `port` = kHccsUntrained: the port is cabled but never trained (a link down from the start: no
  /// link exists, so transfers between the two NPUs take another path).
  void set_hccs_port(std::uint32_t npu, std::uint32_t number, std::uint32_t port) { mmio_.set_hccs_port(npu, number, port); }
  static constexpr std::uint32_t kHccsUntrained = Mmio::kHccsUntrained;

  // ---- notify and event registers (models/npu/notify.h), MSI (models/npu/msi.h) ----
  /// Notify register bound to notify `key` on `npu` (read it at npu_regs::notify_reg), or -1.
  int notify_index(std::uint32_t npu, std::uint64_t key) const { return notify_.index(npu, key); }
  std::uint64_t notify_overflows() const { return notify_.overflows(); }
  std::uint64_t interrupts() const { return msi_.interrupts(); }
  std::uint64_t event_completed(std::uint32_t npu, std::uint64_t ev) const { return notify_.event_completed(npu, ev); }
  Tick event_time(std::uint32_t npu, std::uint64_t ev) const { return notify_.event_time(npu, ev); }

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
  void attach_network(Network* net, std::vector<std::uint32_t> nic_node) {
    net_ = net;
    rdma_.attach_network(net, std::move(nic_node));
  }
  Network* network() const { return net_; }
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
  /// Hardware sets INT_STATUS bits; newly set unmasked ones send an MSI (models/npu/msi.h).
  void raise(std::uint32_t npu, std::uint64_t bits) { msi_.raise(npu, bits); }
  // RdmaHost: what the RDMA engine asks of the NPU side, forwarded to the owner (machine.cpp)
  bool check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const override { return devs_.check_range(addr, len, why); }
  std::uint64_t stream_epoch(std::uint32_t s) const override { return streams_.stream_epoch(s); }
  void rdma_task_done(std::uint32_t s, Tick at) override;
  void rdma_task_failed(std::uint32_t s, const std::string& why) override { streams_.task_failed(s, why); }
  bool hbm_stores(std::uint32_t npu) const override { return devs_.stores(npu); }
  void notify_record(std::uint32_t npu, std::uint64_t key) override { notify_.record(npu, key); }
  void prefetch_npu(std::uint32_t npu) const override { notify_.prefetch_npu(npu); }
  Tick forward_leg(std::uint32_t lender, std::uint32_t target, std::uint64_t len) override;

  // In construction order: each component is built after those it holds a reference to (the
  // stream engine is referenced before it is built, as the TaskHost of notify and SDMA).
  Scheduler& sch_;
  MachineListener* listener_ = nullptr;
  Network* net_ = nullptr;  // the RoCE network the NICs are on (attach_network), or none
  NpuDevices devs_;
  Msi msi_;
  Links links_;
  HostDma host_dma_;
  NotifyRegisters notify_;
  SdmaEngines sdma_;
  RdmaEngine rdma_;
  StreamEngine streams_;
  Mmio mmio_;
};

}  // namespace models
