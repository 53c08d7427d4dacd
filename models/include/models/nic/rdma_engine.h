// The RDMA engine: the NPU side of the RoCE NIC (docs/models/roce-nic.md). It owns the memory
// regions and their access checks, one QP per (source, target, stripe), the RdmaWrite tasks in
// flight (striped over QPs, the ordered notify write after the data), the RDMA fences, and rail
// borrowing's inbound leg; it is the Network's listener and lands the bytes as the transport
// delivers them. What it needs of the NPUs — their streams, HBM, notify registers and the ports of
// the HCCS path a lender forwards over — it reaches through RdmaHost, which the composer
// (models/machine.h) implements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/nic/qp_table.h"
#include "models/nic/rc_transport.h"
#include "models/nic/rdma.h"
#include "models/nic/rdma_network.h"
#include "models/npu/task.h"
#include "models/npu/task_host.h"
#include "models/time.h"

namespace models {

class SparseMemory;

/// What the RDMA engine asks of the NPU side: the stream a write belongs to (its NPU, its epoch,
/// which changes when it fails or is aborted), ending or failing that stream's task, the HBM the
/// bytes are read from and land in, the notify registers a notify write records, and timing a
/// lender's forwarding leg over the ports of the HCCS (or PCIe) path.
class RdmaHost {
 public:
  virtual const std::string& npu_name(std::uint32_t npu) const = 0;
  virtual std::uint32_t stream_npu(std::uint32_t s) const = 0;
  virtual std::uint64_t stream_epoch(std::uint32_t s) const = 0;
  /// The stream's task ends at `at` (now when at <= now).
  virtual void rdma_task_done(std::uint32_t s, Tick at) = 0;
  virtual void rdma_task_failed(std::uint32_t s, const std::string& why) = 0;
  /// [addr, addr+len) is device memory inside its NPU's HBM; else false with the reason in `why`.
  virtual bool check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const = 0;
  virtual SparseMemory& hbm(std::uint32_t npu) = 0;
  /// NPU npu's HBM keeps the bytes written to it (else a timing payload).
  virtual bool hbm_stores(std::uint32_t npu) const = 0;
  /// Notify `key` is recorded on `npu` (a register write landing there).
  virtual void notify_record(std::uint32_t npu, std::uint64_t key) = 0;
  /// Start loading NPU npu's notify registers (a cache hint only).
  virtual void prefetch_npu(std::uint32_t npu) const = 0;
  /// Time `len` bytes from `lender` to `target` on the ports of their HCCS (or PCIe) path into
  /// target's HBM; returns when they land, or 0 when the path is down.
  virtual Tick forward_leg(std::uint32_t lender, std::uint32_t target, std::uint64_t len) = 0;

 protected:
  ~RdmaHost() = default;
};

class RdmaEngine final : public NetworkListener, public EventHandler, public RdmaTasks {
 public:
  // Memory regions of the RoCE NIC: a write is accepted only inside a region registered with
  // REMOTE_WRITE on the target, under its key; otherwise it fails and is counted.
  static constexpr std::uint32_t kLocalWrite = 1, kRemoteRead = 2, kRemoteWrite = 4;

  RdmaEngine(Scheduler& sch, RdmaHost& host) : sch_(sch), host_(host) {}
  /// One more NPU (the composer adds them in order).
  void add_npu();
  std::uint32_t npu_count() const { return static_cast<std::uint32_t>(mrs_.size()); }

  std::uint32_t register_mr(std::uint32_t npu, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access);
  bool deregister_mr(std::uint32_t npu, std::uint32_t key);
  std::uint64_t access_errors() const { return access_errors_; }
  /// Writes a lender's NIC received for another NPU and could not pass on (their HCCS path down).
  std::uint64_t forward_drops() const { return forward_drops_; }

  /// Attach the RoCE network: NPU i's NIC is network node nic_node[i] (~0u: no NIC).
  void attach_network(RdmaNetwork* net, std::vector<std::uint32_t> nic_node);
  bool has_nic(std::uint32_t npu) const { return net_ && npu < nic_node_.size() && nic_node_[npu] != ~0u; }
  std::uint32_t nic_node(std::uint32_t npu) const { return npu < nic_node_.size() ? nic_node_[npu] : ~0u; }
  /// The UDP source port a QP gets when nobody set one: a hash of (src, dst, stripe).
  static std::uint16_t default_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index);
  /// Connect (or re-connect) npu src's QP for stripe `index` to dst with UDP source port `sport`
  /// (RoCE v2: the flow's ECMP entropy). A different port than the current QP's makes a new QP:
  /// writes already posted finish on the old one, later writes take the new path.
  void set_qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index, std::uint16_t sport);
  std::uint16_t qp_sport(std::uint32_t src, std::uint32_t dst, std::uint32_t index) const;
  /// QPs of NPU npu's NIC (for its counters).
  const std::vector<std::uint32_t>* nic_qps(std::uint32_t npu) const;
  /// Reset every QP `npu` sends on (Network::reset_qp).
  void reset_qps(std::uint32_t npu);

  // ---- the stream engine's tasks ----
  /// An RdmaWrite task at the head of stream s.
  void start_write(std::uint32_t s, const Task& t) override;
  /// An RdmaFence task at the head of stream s.
  void fence(std::uint32_t s) override;
  /// Stream s (of NPU npu) failed or was aborted: its fence, if any, waits no more.
  void drop_fence(std::uint32_t npu, std::uint32_t s) override;

  // ---- NetworkListener ----
  void on_write_done(std::uint32_t, std::uint64_t tag, bool ok) override { write_done(tag, ok, sch_.now()); }
  void on_write_done_ahead(std::uint32_t, std::uint64_t tag, Tick acked_at) override { write_done(tag, true, acked_at); }
  void on_data(std::uint32_t qp, std::uint64_t tag, std::uint64_t offset, std::uint64_t len) override;
  bool data_is_silent(std::uint64_t tag, std::uint64_t len) const override;
  bool ack_is_silent(std::uint64_t tag) const override { return rdmas_[tag >> 8 & 0xffffffffu].detached; }
  void prefetch_tag(std::uint64_t tag) const override;

  // ---- EventHandler: a forwarded write lands (a = its slot) ----
  void on_event(std::uint64_t a, std::uint64_t b) override;

 private:
  void fence_end(std::uint32_t s, Tick at) { host_.rdma_task_done(s, at); }
  /// A detached write of `npu` posted after `epoch` fences is acknowledged (or failed).
  void fence_release(std::uint32_t npu, std::uint32_t epoch, Tick acked_at);
  /// Write `tag` acknowledged (or failed) at `acked_at` (now, or a little ahead: on_write_done_ahead).
  void write_done(std::uint64_t tag, bool ok, Tick acked_at);
  std::uint32_t qp_for(std::uint32_t src, std::uint32_t dst, std::uint32_t index);
  QpTable& qp_table(std::uint32_t src);
  void forward_inbound(const RdmaOp& r, std::uint64_t tag, std::uint64_t off, std::uint64_t len);
  void forward_land(std::uint32_t id);

  Scheduler& sch_;
  RdmaHost& host_;
  RdmaNetwork* net_ = nullptr;
  std::vector<std::uint32_t> nic_node_;
  std::vector<MrTable> mrs_;  // per NPU
  std::vector<QpTable> qp_of_;  // per source NPU: (dst, stripe) -> QP (or kQpPending | its source port)
  std::vector<RdmaOp> rdmas_;
  std::vector<std::uint32_t> free_rdmas_;
  std::vector<FenceTrack> fences_;  // per NPU, dense: a write's completion reads one small entry
  std::uint64_t access_errors_ = 0;
  // Rail borrowing's inbound leg (forward_inbound): bytes a lender's NIC received for another
  // NPU, on their way over the HCCS link into its HBM.
  struct Forward {
    std::uint32_t stream = 0;        ///< the writer's stream and epoch: an aborted writer lands nothing
    std::uint64_t epoch = 0;
    std::uint64_t dst = 0;           ///< destination address
    std::vector<std::uint8_t> bytes; ///< captured at the lender's NIC (empty: timing payload)
    bool notify = false;             ///< the notify write: record notify `key` on `target`
    std::uint32_t target = 0;
    std::uint64_t key = 0;
  };
  std::vector<Forward> forwards_;
  std::vector<std::uint32_t> free_forwards_;
  std::uint64_t forward_drops_ = 0;  ///< inbound legs whose HCCS path was down (the bytes are lost)
};

}  // namespace models
