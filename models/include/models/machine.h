// The hardware of one simulated cluster as plain C++ driven by a Scheduler (the "fabric"):
// Ascend NPUs with stream task engines, SDMA engines, notify and event registers, HBM with real
// bytes, host PCIe links, and point-to-point HCCS links. Link and engine timing is analytic
// ("busy until T", DESIGN.md §3): a transfer is cut into pieces; each piece reserves every
// resource on its path for bytes / min(bandwidth) starting when all are free, and arrives one
// path latency later. No component owns a kernel event.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/hbm.h"
#include "models/network.h"
#include "models/regmap.h"
#include "models/reduce.h"
#include "models/time.h"

namespace models {

/// Device addresses are global: bits 40.. hold (npu index + 1), bits 0..39 the HBM offset.
constexpr unsigned kAddrShift = 40;
inline std::uint64_t npu_base_addr(std::uint32_t npu) { return (static_cast<std::uint64_t>(npu) + 1) << kAddrShift; }
inline bool addr_is_device(std::uint64_t a) { return (a >> kAddrShift) != 0; }
inline std::uint32_t addr_npu(std::uint64_t a) { return static_cast<std::uint32_t>((a >> kAddrShift) - 1); }
inline std::uint64_t addr_offset(std::uint64_t a) { return a & ((1ULL << kAddrShift) - 1); }

struct LinkParams {
  std::uint64_t bandwidth_Bps = 28ULL * 1000 * 1000 * 1000;  ///< bytes/s per direction, all lanes; HCCS on 910B: 28 GB/s
  Tick latency_ps = 500 * kPsPerNs;                          ///< one-way latency; HCCS ~0.5 us
  std::uint32_t lanes = 8;                 ///< lanes of the link; bandwidth scales with active lanes (lane degrade)
  std::uint32_t frame_bytes = 256;         ///< link-layer frame covered by one CRC (assumption)
  double crc_error_rate = 0;               ///< probability that a frame fails its CRC and is replayed
  std::uint64_t rx_buffer_bytes = 64 * 1024;  ///< receive buffer = credits; rate <= buffer / round trip (assumption)
};

enum class LinkKind : std::uint8_t { Hccs, Pcie, Hbm };  ///< Hbm: an NPU's memory as a shared port (a = b = the NPU)
const char* link_kind_name(LinkKind k);

struct NpuParams {
  std::string model = "ascend910b";
  HbmParams hbm;
  std::uint32_t sdma_engines = 16;                          ///< concurrent SDMA channels (assumption)
  std::uint64_t sdma_bandwidth_Bps = 400ULL * 1000 * 1000 * 1000;  ///< per engine (assumption)
  Tick sdma_setup_ps = 200 * kPsPerNs;                      ///< descriptor fetch before the first byte
  Tick task_dispatch_ps = 100 * kPsPerNs;                   ///< stream scheduler: task start overhead
  Tick notify_local_ps = 50 * kPsPerNs;                     ///< local notify/event register write
  std::uint32_t notify_regs = 8192;                         ///< notify registers per NPU (assumption)
  std::uint32_t sq_depth = 1024;                            ///< submission queue entries per stream (assumption)
  Tick msi_latency_ps = 1 * kPsPerUs;                       ///< INT_STATUS bit set -> host interrupt handler runs (assumption)
  LinkParams host_link{63ULL * 1000 * 1000 * 1000, 1000 * kPsPerNs, 16, 256, 0, 256 * 1024};  ///< PCIe Gen5 x16 to the host
};

enum class TaskKind : std::uint8_t {
  Copy,          ///< SDMA copy src -> dst (either may be a peer's HBM reached over HCCS)
  ReduceCopy,    ///< SDMA copy with inline reduction into dst
  NotifyRecord,  ///< increment notify `key` on NPU `target` (remote: a posted write over HCCS)
  NotifyWait,    ///< wait until notify `key` on this NPU is > 0, then decrement
  EventRecord,   ///< mark event `key` complete up to sequence `value`
  EventWait,     ///< wait until event `key` completed sequence >= `value`
  HostToDevice,  ///< DMA host memory -> device over PCIe
  DeviceToHost,  ///< DMA device -> host memory over PCIe
  Marker,        ///< timestamp marker (profiling); reported to the listener
  RdmaWrite,     ///< RoCE write src (local) -> dst (NPU `target`), then, if value != 0, notify `key`
                 ///< on `target` (an ordered second write on the same QP); bytes may be 0
};
const char* task_kind_name(TaskKind k);

struct Task {
  TaskKind kind = TaskKind::Marker;
  std::uint64_t src = 0, dst = 0, bytes = 0;
  DType dtype = DType::Fp32;
  ReduceOp op = ReduceOp::Sum;
  std::uint32_t target = 0;    ///< NotifyRecord: NPU that owns the notify
  std::uint64_t key = 0;       ///< notify key / event id / marker id
  std::uint64_t value = 0;     ///< event sequence
  void* host = nullptr;        ///< host buffer of H2D / D2H (must stay valid until the task ends)
  std::uint32_t rkey = 0;      ///< RdmaWrite: remote key of the target's memory region
  std::uint32_t qp_count = 1;  ///< RdmaWrite: stripe the data over this many QPs to that NPU (num_qp)
  std::uint64_t rate_cap_Bps = 0;  ///< RdmaWrite: cap the QP's rate (bandwidth_limit); 0 = line rate
  std::uint32_t retry_count = ~0u; ///< RdmaWrite: QP retransmit retries (~0u: the network's default)
};

class MachineListener {
 public:
  virtual ~MachineListener() = default;
  virtual void on_stream_idle(std::uint32_t stream) = 0;
  virtual void on_marker(std::uint32_t npu, std::uint32_t stream, std::uint64_t key, Tick t) = 0;
  virtual void on_task_error(std::uint32_t stream, const std::string& why) = 0;
  /// Stream `stream`'s submission queue has room again (after want_sq_space).
  virtual void on_sq_space(std::uint32_t stream) {}
  /// A link changed state (down/up, lanes, error rate): reported to both ends.
  virtual void on_link_event(std::uint32_t link, const std::string& what) {}
  /// An MSI from `npu`: INT_STATUS has unmasked bits set (`pending`); the handler reads and clears
  /// them by MMIO (write 1 to clear). A bit raises an interrupt when it becomes set while
  /// unmasked, or when it is unmasked while set.
  virtual void on_interrupt(std::uint32_t npu, std::uint64_t pending) {}
};

struct Port {
  LinkKind kind = LinkKind::Hccs;
  std::uint32_t link = 0;        ///< index of the (bidirectional) link this port belongs to
  std::uint32_t from = 0, to = 0;  ///< NPU indices; for PCIe the host side is kHost
  LinkParams p;
  bool up = true;
  std::uint32_t active_lanes = 8;
  Tick busy_until = 0;
  std::uint64_t bytes = 0, pieces = 0;
  Tick busy_ps = 0;
  std::uint64_t frames = 0;
  std::uint64_t rx_retry = 0;     ///< frames replayed after a CRC error (hccs_rx_retry_cnt)
  Tick retry_ps = 0;              ///< link time lost to replays
  Tick credit_stall_ps = 0;       ///< time the sender waited for credits (pcie_flow_ctrl on PCIe)
  std::uint64_t rng = 0x853c49e6748fea9bULL;
  /// Current data rate: lanes and credits (buffer / round trip) permitting.
  std::uint64_t rate() const;
};
constexpr std::uint32_t kHost = 0xffffffffu;

struct LinkInfo {
  LinkKind kind;
  std::uint32_t a, b;          ///< endpoints (NPU index, or kHost for a host PCIe link)
  std::uint32_t port_ab, port_ba;
  std::string name;
};

class Machine final : public EventHandler, public NetworkListener {
 public:
  struct Stats {
    std::uint64_t tasks = 0, pieces = 0, notifies = 0;
  };

  Machine(Scheduler& sch, std::uint64_t piece_bytes = 256 * 1024) : sch_(sch), piece_bytes_(piece_bytes) {}
  void set_listener(MachineListener* l) { listener_ = l; }

  std::uint32_t add_npu(const NpuParams& p);
  std::uint32_t add_link(LinkKind kind, std::uint32_t a, std::uint32_t b, const LinkParams& p, std::string name);

  std::uint32_t npu_count() const { return static_cast<std::uint32_t>(npus_.size()); }
  const NpuParams& npu_params(std::uint32_t n) const { return npus_[n].params; }
  SparseMemory& hbm(std::uint32_t n) { return npus_[n].hbm; }
  const std::vector<LinkInfo>& links() const { return links_; }
  const std::vector<Port>& ports() const { return ports_; }
  /// Directional port from NPU a to NPU b over a direct link, or -1.
  int port_between(std::uint32_t a, std::uint32_t b) const;

  /// A PCIe switch joining NPUs for peer-to-peer DMA (Atlas 800: its two HCCS groups).
  std::uint32_t add_pcie_switch(std::string name, Tick latency_ps);
  /// Cable NPU `npu` to switch `sw` (a PCIe link: one port each way).
  std::uint32_t add_pcie_switch_link(std::uint32_t npu, std::uint32_t sw, const LinkParams& p, std::string name);
  /// Path between two NPUs: a direct HCCS port, or two PCIe ports through a shared switch.
  struct Route {
    int p1 = -1, p2 = -1;  ///< ports in order (p2 = -1 for one hop)
    Tick extra_ps = 0;     ///< switch latency
    bool ok() const { return p1 >= 0; }
  };
  Route route(std::uint32_t a, std::uint32_t b) const;

  /// A host root complex (one per server): its ports carry the host-memory side of every host DMA
  /// of the NPUs attached to it (port a->b: towards the devices, b->a: towards host memory).
  std::uint32_t add_root_complex(std::string name, const LinkParams& p);
  /// Host DMA of `npu` goes through root complex `rc`: over the NPU's own host link, or, when the
  /// NPU sits behind a PCIe switch with an upstream link, through the switch and its upstream.
  void attach_host(std::uint32_t npu, std::uint32_t rc);
  /// The upstream link of PCIe switch `sw` to root complex `rc` (shared by its NPUs' host DMA).
  std::uint32_t add_pcie_switch_upstream(std::uint32_t sw, std::uint32_t rc, const LinkParams& p, std::string name);
  const Stats& stats() const { return stats_; }
  std::uint64_t piece_bytes() const { return piece_bytes_; }

  std::uint32_t create_stream(std::uint32_t npu);
  bool stream_valid(std::uint32_t s) const { return s < streams_.size() && streams_[s].alive; }
  void destroy_stream(std::uint32_t s) { streams_[s].alive = false; }
  std::uint32_t stream_npu(std::uint32_t s) const { return streams_[s].npu; }
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

  /// Append a task; it starts when all earlier tasks of the stream have completed.
  /// (enqueue + ring the stream's doorbell; the driver does the two steps itself.)
  void submit(std::uint32_t stream, const Task& t);
  /// Write a task into the stream's submission queue; it becomes visible at the next doorbell.
  void enqueue(std::uint32_t stream, const Task& t);

  // MMIO: the NPU's register map (models/regmap.h npu_regs). False for unmapped offsets,
  // read-only registers, or a doorbell value beyond what was enqueued.
  bool mmio_read(std::uint32_t npu, std::uint32_t offset, std::uint64_t* value) const;
  bool mmio_write(std::uint32_t npu, std::uint32_t offset, std::uint64_t value);
  /// The driver registers the rank descriptor in the configuration space at load (privileged).
  void load_config(std::uint32_t npu, std::uint32_t offset, std::uint64_t value);

  /// Notify register bound to notify `key` on `npu` (read it at npu_regs::notify_reg), or -1.
  int notify_index(std::uint32_t npu, std::uint64_t key) const;
  /// The task at the head of a stream (being executed or waiting), or null when idle.
  const Task* stream_head(std::uint32_t s) const { return streams_[s].q.empty() ? nullptr : &streams_[s].q.front(); }
  std::uint64_t notify_overflows() const { return notify_overflows_; }
  std::uint64_t interrupts() const { return interrupts_; }

  std::uint64_t event_completed(std::uint32_t npu, std::uint64_t ev) const {
    auto it = npus_[npu].events.find(ev);
    return it == npus_[npu].events.end() ? 0 : it->second.completed;
  }
  Tick event_time(std::uint32_t npu, std::uint64_t ev) const {
    auto it = npus_[npu].events.find(ev);
    return it == npus_[npu].events.end() ? 0 : it->second.t;
  }

  // Memory regions of the RoCE NIC: a write is accepted only inside a region registered with
  // REMOTE_WRITE on the target, under its key; otherwise it fails and is counted.
  static constexpr std::uint32_t kLocalWrite = 1, kRemoteRead = 2, kRemoteWrite = 4;
  std::uint32_t register_mr(std::uint32_t npu, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access);
  bool deregister_mr(std::uint32_t npu, std::uint32_t key);
  std::uint64_t rdma_access_errors() const { return rdma_access_errors_; }

  /// The NPU dies: its streams fail, its HCCS and PCIe links go down (its NIC is the network's).
  void crash_npu(std::uint32_t npu);

  // Link faults (both directions; both ends see the effect).
  void set_link_up(std::uint32_t link, bool up);
  void set_link_lanes(std::uint32_t link, std::uint32_t lanes);
  void set_link_crc_rate(std::uint32_t link, double rate);

  /// Backdoor (no time): used by the driver for rank descriptors and by fault injection.
  void backdoor_write(std::uint64_t addr, const void* src, std::uint64_t len);
  void backdoor_read(std::uint64_t addr, void* dst, std::uint64_t len) const;

  void on_event(std::uint64_t a, std::uint64_t b) override;

  /// Attach the RoCE network: NPU i's NIC is network node nic_node[i] (~0u: no NIC).
  void attach_network(Network* net, std::vector<std::uint32_t> nic_node);
  Network* network() const { return net_; }
  bool has_nic(std::uint32_t npu) const { return net_ && npu < nic_node_.size() && nic_node_[npu] != ~0u; }
  void on_write_done(std::uint32_t qp, std::uint64_t tag, bool ok) override;
  void on_data(std::uint32_t qp, std::uint64_t tag, std::uint64_t offset, std::uint64_t len) override;

 private:
  // Notify registers: the library names notifies by 64-bit keys; a key is bound to one of the
  // NPU's notify_regs registers on first use and released when its count is back to zero with
  // no waiter (a real runtime allocates notify ids ahead; the binding stands for that).
  struct NotifyReg {
    std::uint64_t key = 0;
    bool bound = false;
    std::int64_t count = 0;
    std::deque<std::uint32_t> waiters;  // streams parked in NotifyWait, FIFO
  };
  struct EventReg {
    std::uint64_t completed = 0;
    Tick t = 0;
    std::vector<std::uint32_t> waiters;
  };
  struct Npu {
    NpuParams params;
    SparseMemory hbm;
    std::vector<Tick> sdma_busy;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> adj;  // (peer, port) sorted by peer
    std::uint32_t host_link = 0;  // the NPU's own PCIe link to the host
    std::uint32_t hbm_port = 0;  // the HBM's bandwidth, shared by every SDMA read and write of it
    int h2d[3] = {-1, -1, -1}, d2h[3] = {-1, -1, -1};  // host DMA paths (ports in travel order)
    std::vector<NotifyReg> nregs;
    std::map<std::uint64_t, std::uint32_t> nkey;  // bound key -> register
    std::vector<std::uint32_t> nfree;             // released registers (reused first)
    std::map<std::uint64_t, EventReg> events;
    std::unique_ptr<RegisterBlock> regs;
    struct Mr { std::uint64_t addr, bytes; std::uint32_t access; };
    std::map<std::uint32_t, Mr> mrs;
    std::uint32_t next_key = 0x100;
    bool msi_pending = false;
    Npu(const NpuParams& p) : params(p), hbm(p.hbm.capacity_bytes, p.hbm.store_bytes), sdma_busy(p.sdma_engines, 0) {}
  };
  struct StreamState {
    std::uint32_t npu = 0;
    bool alive = true, busy = false, failed = false;
    std::deque<Task> q;        // visible to the engine (doorbell rung)
    std::deque<Task> pending;  // enqueued, doorbell not yet rung
    std::uint64_t rung = 0, started = 0, completed = 0;
    std::uint64_t epoch = 0;   // bumped when the stream fails: work started before is orphaned
    std::uint64_t space_at = ~0ULL;  // on_sq_space once the queue is down to this many tasks
    std::string error;
  };
  struct Transfer {
    std::uint32_t stream = 0;
    Task task;
    std::uint64_t done = 0;           // bytes reserved so far
    std::uint64_t bw = 0;
    Tick latency = 0;                 // path latency after the last byte leaves
    Tick earliest = 0;                // first byte may not leave before (SDMA setup)
    std::uint32_t engine = 0, npu = 0;
    int port = -1;                    // link port used, -1 for local
    int port2 = -1;                   // second hop (PCIe peer-to-peer through a switch; root complex)
    int port3 = -1;                   // third hop (host DMA through a PCIe switch and the root complex)
    int hbm_src = -1, hbm_dst = -1;   // HBM ports read and written (the same port twice for a local copy)
    std::uint64_t epoch = 0;          // the stream's epoch when the transfer started
    std::uint32_t inflight = 0;       // piece arrivals scheduled and not yet processed
    bool sending = false;             // a kPieceSent event is scheduled
    bool aborted = false;             // the stream failed or a link died: no more bytes move
  };
  enum Ev : std::uint64_t { kDispatch = 1, kPieceSent, kPieceArrive, kNotifyArrive, kNotifyLocal, kComplete, kInterrupt };
  /// Hardware sets INT_STATUS bits; newly set unmasked ones send an MSI after msi_latency.
  void raise(std::uint32_t npu, std::uint64_t bits);
  /// Send an MSI if unmasked status bits are set and none is in flight.
  void signal(std::uint32_t npu);

  void dispatch(std::uint32_t s);
  void complete(std::uint32_t s);
  void fail(std::uint32_t s, const std::string& why);
  /// Event id of a stream-scoped event: stale events (the stream failed since) are dropped.
  std::uint64_t stream_ev(std::uint64_t type, std::uint32_t s) const;
  /// An aborted transfer's slot is reused only once none of its events is pending.
  void abort_transfer(std::uint32_t id);
  void start_transfer(std::uint32_t s, const Task& t);
  void start_rdma(std::uint32_t s, const Task& t);
  std::uint32_t qp_for(std::uint32_t src, std::uint32_t dst, std::uint32_t index);
  void send_piece(std::uint32_t xfer);
  void arrive_piece(std::uint32_t xfer, std::uint64_t off, std::uint64_t len);
  void notify_record(std::uint32_t npu, std::uint64_t key);
  int bind_notify(std::uint32_t npu, std::uint64_t key);
  void notify_deliver(std::uint32_t npu, std::uint32_t reg);
  void notify_release(std::uint32_t npu, std::uint32_t reg);
  bool check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const;
  std::uint32_t alloc_xfer();

  Scheduler& sch_;
  std::uint64_t piece_bytes_;
  MachineListener* listener_ = nullptr;
  std::vector<Npu> npus_;
  std::vector<Port> ports_;
  std::vector<LinkInfo> links_;
  std::vector<StreamState> streams_;
  std::vector<Transfer> xfers_;
  std::vector<std::uint32_t> free_xfers_;
  std::vector<std::uint8_t> scratch_;
  Stats stats_;
  Network* net_ = nullptr;
  struct PcieSwitch { std::string name; Tick latency; int up = -1, down = -1; };  // upstream link ports
  struct RootComplex { std::uint32_t down, up; };  // ports: towards devices, towards host memory
  std::vector<RootComplex> rcs_;
  std::vector<PcieSwitch> pcie_switches_;
  struct SwitchPorts { std::int64_t sw = -1; std::uint32_t up = 0, down = 0; };
  std::vector<SwitchPorts> npu_switch_;  // per NPU
  std::vector<std::uint32_t> nic_node_;
  struct KeyHash {
    std::size_t operator()(std::uint64_t k) const { return static_cast<std::size_t>((k ^ (k >> 29)) * 0xbf58476d1ce4e5b9ULL >> 7); }
  };
  std::unordered_map<std::uint64_t, std::uint32_t, KeyHash> qp_of_;  // (src 24 b, dst 24 b, index 16 b) -> QP; lookups only
  struct Rdma { std::uint32_t stream; Task task; std::uint32_t pending; bool ok; bool notify_after; std::uint64_t epoch; };
  std::vector<Rdma> rdmas_;
  std::vector<std::uint32_t> free_rdmas_;
  std::uint64_t rdma_access_errors_ = 0;
  std::uint64_t notify_overflows_ = 0;
  std::uint64_t interrupts_ = 0;
};

}  // namespace models
