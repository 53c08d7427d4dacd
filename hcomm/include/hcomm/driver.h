// The driver boundary (docs/architecture.md#hcomm): the only way libhcomm reaches hardware. Modelled on the real
// CANN split — runtime (devices, streams, events, notifies, memory, memcpy), device/topology
// queries (rank descriptors, pair link type) — with stream tasks as the unit of device work.
// A real port implements this over the Ascend runtime; sim/ implements it over timed models.
// Nothing here may name SystemC or the simulator.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hcomm {

/// Aborted: a blocking call was interrupted by an urgent control message (ctrl_signal).
enum class DrvStatus : int { Ok = 0, Invalid, NoMemory, Timeout, Failed, NotSupported, Aborted };

/// Rank descriptor as the driver registers it in the NPU configuration space.
struct RankDesc {
  std::uint32_t rank = 0;
  std::uint32_t device = 0;           ///< global device handle used in task targets
  std::uint32_t device_id = 0;        ///< device id inside its server (0..7)
  std::uint32_t server = 0;           ///< server index
  std::uint32_t host_ip = 0;          ///< IPv4, host byte order
  std::uint64_t device_base_addr = 0; ///< base of the NPU's HBM in the device address space
  std::uint8_t hccs_port_map[4] = {0, 0, 0, 0};  ///< bit i of byte i/8: HCCS link to device_id i
};

enum class PairLink : int { None = 0, Local, Hccs, Pcie, Roce };

enum class DrvTaskKind : std::uint8_t {
  Copy, ReduceCopy, NotifyRecord, NotifyWait, EventRecord, EventWait, HostToDevice, DeviceToHost, Marker,
  RdmaWrite,  ///< RoCE write src -> dst on device `target`, then (value != 0) notify `key` there
  RdmaFence,  ///< ends when every RDMA write the device posted before it is acknowledged (the
              ///< completions polled before the buffers those writes read are used again)
  Compute     ///< AI-core work: the stream is busy for `value` ns, or (flops > 0) for flops of
              ///< `dtype` at the device's peak rate for that dtype times `efficiency`
};

/// One stream task. dtype/op use the hcomm_data_type_t / hcomm_reduce_op_t numbering.
struct DrvTask {
  DrvTaskKind kind = DrvTaskKind::Marker;
  std::uint64_t src = 0, dst = 0, bytes = 0;
  int dtype = 0, op = 0;
  std::uint32_t target = 0;   ///< NotifyRecord: device owning the notify
  std::uint64_t key = 0;      ///< notify key / event id / marker id
  std::uint64_t value = 0;    ///< event sequence
  void* host = nullptr;
  std::uint32_t rkey = 0;     ///< RdmaWrite: the target region's remote key
  std::uint32_t qp_count = 1; ///< RdmaWrite: stripe the data over this many QPs (num_qp, fewer below the multi-QP threshold)
  std::uint32_t qp_base = 0;  ///< RdmaWrite: QP indices qp_base.. to the target (a communicator's own QPs; 0 = the shared ones)
  std::uint64_t rate_cap_Bps = 0;  ///< RdmaWrite: cap on the QP's rate (bandwidth_limit), 0 = none
  std::uint32_t retry_count = ~0u; ///< RdmaWrite: retransmit retries before the write fails (~0u: driver default)
  /// Copy / ReduceCopy: a strided (2-D) copy when width != 0 — bytes / width rows of `width` bytes,
  /// row i read at src + i * spitch and written at dst + i * dpitch (aclrtMemcpy2dAsync's shape).
  std::uint64_t width = 0, spitch = 0, dpitch = 0;
  /// RdmaWrite: the NPU of the target's server whose NIC receives the write and writes it on into
  /// the target's HBM over HCCS (rail borrowing at the receiver, docs/failover.md#nic-borrowing);
  /// ~0u: the target's own NIC.
  std::uint32_t via = ~0u;
  /// RdmaWrite: the task ends when every write of it is acknowledged (the WQE's completion polled,
  /// as a one-sided write's caller needs), not when its doorbell is rung (rtRDMADBSend, the
  /// default: the stream goes on and peers learn of the data from the notify behind it).
  bool wait_cqe = false;
  /// EventRecord: a progress mark, written with the previous task's completion instead of being
  /// dispatched as a task (costs the stream no time; op retry's slice markers, docs/failover.md#resumption).
  bool passive = false;
  /// Compute: the work's floating-point (or, int8, integer) operations, and the share in (0, 1] of
  /// the device's peak it runs at; flops 0: `value` is the duration in ns.
  double flops = 0, efficiency = 1;
};

// ---- RoCE routing (docs/routing.md) ----
/// The device's RoCE NIC as its port and its LLDP agent report it.
struct NicInfo {
  bool present = false, link_up = false;
  std::uint64_t speed_bps = 0;
  std::uint32_t ip = 0;              ///< the NIC's IPv4, host byte order
  std::string neighbor;              ///< LLDP: the switch the port is cabled to ("" when none)
  std::uint32_t neighbor_port = 0;   ///< LLDP: that switch's port id
  /// That switch's cabled bandwidth toward hosts (NICs) and toward other switches, bytes/s, as
  /// its management interface reports its ports (0, 0: unknown). Down / up is its oversubscription.
  std::uint64_t neighbor_down_Bps = 0, neighbor_up_Bps = 0;
};
/// Counters of the device's NIC, summed over its QPs since the run began (as rdma_cnp_rcv etc.).
struct NicCounters {
  std::uint64_t cnp_rcv = 0, retransmits = 0, timeouts = 0, tx_bytes = 0;
};
/// One switch a probe went through: its id (LLDP chassis id), the port the probe came in on and
/// the one it left by.
struct PathHop {
  std::uint64_t node = 0;
  std::uint32_t in_port = 0, out_port = 0;
};
/// A path probe's reply as routing reads it (Driver::probe_egress): how many switches it went
/// through (0: no reply) and the port it left the first one by.
struct ProbeEgress {
  std::uint32_t first_out_port = 0;
  std::uint32_t switches = 0;
};
/// A route the library chose for traffic from its device to a peer (reported for the trace).
struct RouteInfo {
  std::uint32_t comm = 0, src_rank = 0, dst_rank = 0, dst_device = 0;
  std::string transport;          ///< "hccs", "pcie", "roce", "hccs-relay"
  std::uint32_t qp = 0;           ///< RoCE: stripe (QP) index
  std::uint16_t udp_sport = 0;    ///< RoCE: the UDP source port the library set (0: the NIC's hash)
  std::uint32_t relay_device = ~0u;  ///< hccs-relay: the relay NPU's device (its two HCCS hops); roce-borrow: my lender's (~0u: my own NIC)
  std::uint32_t via_device = ~0u;    ///< roce-borrow: the device whose NIC receives for the peer (~0u: the peer's own NIC)
  double bandwidth_Bps = 0, latency_ns = 0, congestion = 0, cost = 0;  ///< the cost terms (docs/routing.md)
  std::string reason;             ///< why this route ("hccs direct", "uplink 3 of 8", ...)
  std::string trigger;            ///< what made the library decide now ("first use", "congestion: ...")
};

/// What the library reports about an operation (profiling, as the real library feeds msprof).
struct OpInfo {
  std::uint32_t rank = 0, nranks = 0;
  std::string kind;        ///< "allreduce", "send", "recv", ...
  std::string algorithm;   ///< "mesh", "p2p", ...
  std::uint64_t bytes = 0;
  int dtype = 0, op = 0;
  std::int64_t peer = -1;
  std::uint64_t seq = 0;   ///< per-communicator sequence number of this collective
  // Collectives: how the algorithm was chosen (docs/algorithms/README.md#selection).
  std::string chosen_by;   ///< "auto", "HCOMM_ALGO", "HCCL_ALGO", "HCOMM_ALLREDUCE_ALGO", "config"; "" = not a choice
  double est_ns = 0;       ///< the cost model's estimate of the chosen algorithm
  std::string runner_up;   ///< the next-best candidate ("" when none)
  double runner_up_ns = 0;
};

// ---- discovery (docs/discovery.md) ----
/// One HCCS port of a device as its status registers report it after link training.
struct HccsPortInfo {
  bool cabled = false, up = false;
  std::uint32_t lanes = 0;               ///< active lanes (0 when down)
  std::uint64_t bandwidth_Bps = 0;       ///< current rate per direction (0 when down)
  std::uint32_t partner_device_id = 0;   ///< the link partner's device id inside its server (valid when up)
  std::uint32_t partner_server = 0;      ///< the link partner's server (valid when up)
};
constexpr std::uint32_t kHccsPortCount = 16;  ///< HCCS port numbers 0..15 (a port's number = the device id it is cabled to)
/// A message on the host control channel: immutable bytes, shared by reference once delivered.
using CtrlMsg = std::shared_ptr<const std::vector<std::uint8_t>>;
constexpr std::uint32_t kCtrlAnyRank = ~0u;  ///< ctrl_recv: a message from any rank (the earliest to arrive)
// ---- end discovery ----

// ---- host network (docs/models/host-network.md) ----
/// One operation on a host's kernel socket to a peer host over the front-end network (protocol
/// TCP). It is queued on a stream and runs when the stream reaches it (as a host callback task,
/// aclrtLaunchCallback, would), so it keeps the stream's order with the host DMA around it.
/// send: the host of `rank` sends `bytes` at host address `host_addr` (this rank's process) to
///   `peer`'s host on connection `conn` (a send() call: its kernel-stack cost, the bytes copied
///   into the kernel); the stream goes on when send() returned (the buffer may be reused).
/// receive: waits for the next message of connection `conn` from `peer` to `rank`, copies it to
///   `host_addr` (a recv() call: its cost, at most `bytes`), then the stream goes on.
struct HostSocketOp {
  bool send = true;
  std::uint32_t rank = 0, peer = 0;  ///< global ranks: this one and the other end
  std::uint64_t conn = 0;            ///< the connection (the library's key; both ends agree)
  std::uint64_t host_addr = 0;       ///< the buffer in this rank's process
  std::uint64_t bytes = 0;
};
// ---- end host network ----

// ---- failover (docs/failover.md) ----
/// What the library did about a fault (reported for the trace's `failovers` table).
struct FailoverInfo {
  std::uint32_t comm = 0;          ///< communicator id
  std::uint32_t rank = 0;          ///< detected by (global rank)
  std::int64_t origin = -1;        ///< the rank whose report it acted on (global; -1: its own detection)
  std::uint64_t op_seq = 0;        ///< the operation it happened in
  std::string fault;               ///< what failed, as the library learned it
  std::string action;              ///< "abort", "retry", "shrink", "heartbeat"
  std::string path_before, path_after;
  int code = 0;                    ///< hcomm_result_t the rank's call returned (0: recovered)
  std::uint64_t bytes_resent = 0;  ///< bytes the recovery moved again
  std::uint64_t detected_ns = 0, resumed_ns = 0;  ///< resumed 0: traffic did not resume
};
/// An asynchronous event of a device or of the host's heartbeat agent, as the real driver raises
/// them without a task failing (verbs' ibv_get_async_event; HCCL's heartbeat thread).
enum class DeviceEventKind : std::uint8_t {
  NicPortDown = 1,   ///< IBV_EVENT_PORT_ERR: the RoCE NIC's port (or its cable) lost its link
  NicPortUp = 2,     ///< IBV_EVENT_PORT_ACTIVE: the port (or its cable) has its link again
  PeerLost = 3,      ///< the heartbeat agent: rank `peer` sent no heartbeat for the timeout (its own
                     ///< detection, or a notice from the agent that detected it: `reporter`)
  LinkErrorStorm = 4 ///< a link of the device counts CRC errors above the firmware's threshold (non-fatal)
};
struct DeviceEvent {
  DeviceEventKind kind = DeviceEventKind::NicPortDown;
  std::uint64_t since_ns = 0;  ///< when the state changed (port: the NIC's timestamp; PeerLost: the last heartbeat's arrival)
  std::uint64_t at_ns = 0;     ///< when the driver delivered it to the host
  std::uint32_t peer = ~0u;    ///< PeerLost: the lost rank (global)
  std::uint32_t reporter = ~0u;  ///< PeerLost: the rank whose agent detected it (global; this rank for its own)
  std::string text;            ///< what happened, for logs ("NIC of node0/npu3: port down since ...")
};
/// What the library asks of the host's heartbeat agent (docs/failover.md#heartbeat-with-neighbours).
/// The agent runs beside the application (it needs no library call): every period_ns it sends a
/// heartbeat to each neighbour over the control channel; a neighbour from which nothing arrived
/// for miss_limit periods is LOST: the agent raises PeerLost on its own device and sends a notice
/// to every rank in `notify` (global ranks, ranges [first, last)), whose agents raise PeerLost
/// there. No neighbours: the agent stops.
struct HeartbeatSpec {
  std::uint64_t period_ns = 0;
  std::uint32_t miss_limit = 3;
  std::vector<std::uint32_t> neighbours;  ///< global ranks, sorted, without the caller
  std::vector<std::pair<std::uint32_t, std::uint32_t>> notify;  ///< told on LOST, sorted disjoint ranges
};
// ---- end failover ----

// The boundary is four narrow interfaces, each a concern a real port implements over its own part
// of the CANN stack (docs/architecture.md#the-driver-boundary); the library reaches each through
// its own pointer (DriverSet), so a decorator or a test double may replace one and keep the rest.

/// The device runtime (aclrt*, the device's registers and configuration space): devices and
/// rank descriptors, memory, streams and their tasks, events, synchronisation, the device's
/// asynchronous events and its recovery calls, time.
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // Device / topology queries.
  virtual std::uint32_t rank_count() = 0;
  virtual DrvStatus rank_desc(std::uint32_t rank, RankDesc* out) = 0;
  virtual DrvStatus device_of(std::uint32_t device_id, std::uint32_t* device) = 0;  ///< caller's server
  virtual PairLink pair_link(std::uint32_t dev_a, std::uint32_t dev_b) = 0;
  virtual std::uint64_t device_memory_size(std::uint32_t device) = 0;
  // Memory.
  virtual DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) = 0;
  virtual DrvStatus mem_free(std::uint32_t device, std::uint64_t addr) = 0;
  // Streams and tasks.
  virtual DrvStatus stream_create(std::uint32_t device, std::uint32_t* stream) = 0;
  virtual DrvStatus stream_destroy(std::uint32_t stream) = 0;
  virtual DrvStatus submit(std::uint32_t stream, const DrvTask& t) = 0;
  /// Block the calling host thread until the stream has no work, or timeout_ns of device time.
  virtual DrvStatus stream_synchronize(std::uint32_t stream, std::uint64_t timeout_ns, std::string* error) = 0;
  virtual bool stream_idle(std::uint32_t stream) = 0;
  virtual std::uint64_t event_completed(std::uint32_t device, std::uint64_t event) = 0;
  virtual std::uint64_t event_time_ns(std::uint32_t device, std::uint64_t event) = 0;
  // Time.
  virtual std::uint64_t now_ns() = 0;
  /// The calling host thread is busy for `ns` (host-side work such as cache maintenance).
  virtual void host_delay(std::uint64_t ns) = 0;

  // ---- discovery (docs/discovery.md) ----
  /// Status of HCCS port `port` (0..kHccsPortCount-1) of `device`, read from its registers.
  virtual DrvStatus hccs_port(std::uint32_t device, std::uint32_t port, HccsPortInfo* out) = 0;
  /// Whether `device` reaches `peer_device` by PCIe peer-to-peer (same PCIe switch, from config space).
  virtual DrvStatus pcie_peer(std::uint32_t device, std::uint32_t peer_device, bool* reachable) = 0;
  /// The rank registered in `device`'s configuration space (a device of the caller's server, as its
  /// host sees it); Invalid when the device has no rank.
  virtual DrvStatus device_rank(std::uint32_t device, std::uint32_t* rank) = 0;

  // ---- failover (docs/failover.md) ----
  // Defaults: a driver without them has no failover (the library then waits for its timeouts).
  /// Stop every stream of `device` (aclrtStreamAbort on each): queued tasks are discarded, the
  /// ones in flight orphaned, the device's error state cleared.
  virtual DrvStatus device_abort(std::uint32_t /*device*/) { return DrvStatus::NotSupported; }
  /// Zero the device's notify registers that nothing waits on (records of an aborted operation).
  virtual DrvStatus notify_reset(std::uint32_t /*device*/) { return DrvStatus::NotSupported; }
  /// Progress of `device` for the library's STUCK check (docs/failover.md#heartbeat): tasks
  /// completed on all its streams so far, and whether some stream has work whose head task the
  /// engine has not started (false when every busy stream is inside a task, e.g. waiting on a peer).
  virtual DrvStatus device_progress(std::uint32_t /*device*/, std::uint64_t* /*completed*/, bool* /*head_not_started*/) {
    return DrvStatus::NotSupported;
  }
  /// Take the earliest delivered asynchronous event of `device` without blocking (Timeout: none).
  /// A delivered event not yet taken interrupts a blocking stream_synchronize of a stream of
  /// `device` (Aborted), as an urgent message does.
  virtual DrvStatus device_event_poll(std::uint32_t /*device*/, DeviceEvent* /*out*/) { return DrvStatus::NotSupported; }
};

/// The device's RoCE NIC as the RDMA agent sees it (docs/routing.md): its state and LLDP
/// neighbour, its counters, path probes (a UDP traceroute carrying the flow's 5-tuple, so each
/// switch hashes it as it would the data), a QP's source port, memory registration.
class RdmaNic {
 public:
  virtual ~RdmaNic() = default;
  virtual DrvStatus nic_info(std::uint32_t device, NicInfo* out) = 0;
  virtual DrvStatus nic_counters(std::uint32_t device, NicCounters* out) = 0;
  /// Probe `n` paths at once: probe i from `device`'s NIC to targets[i]'s NIC with UDP source port
  /// sports[i]; the calling host thread waits for the slowest probe's round trip. Probe i's
  /// switches are hops[start[i] .. start[i+1]) (none when it did not come back, e.g. a link down
  /// on the way); `start` gets n + 1 entries.
  virtual DrvStatus probe_paths(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports,
                                std::uint32_t n, std::vector<PathHop>* hops, std::vector<std::uint32_t>* start) = 0;
  /// The same probes, each reply reduced to what source-port selection reads (8 bytes, not the
  /// whole hop list): the library sends thousands per rank at first use, and every waiting rank
  /// holds its replies. The default reduces probe_paths' answer.
  virtual DrvStatus probe_egress(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports,
                                 std::uint32_t n, std::vector<ProbeEgress>* out) {
    if (!out) return DrvStatus::Invalid;
    std::vector<PathHop> hops;
    std::vector<std::uint32_t> start;
    const DrvStatus st = probe_paths(device, targets, sports, n, &hops, &start);
    if (st != DrvStatus::Ok) return st;
    out->assign(n, ProbeEgress{});
    for (std::uint32_t i = 0; i < n && i + 1 < start.size(); ++i)
      if (start[i + 1] > start[i]) (*out)[i] = ProbeEgress{hops[start[i]].out_port, start[i + 1] - start[i]};
    return DrvStatus::Ok;
  }
  /// Connect (or re-connect) the RC QP of stripe `qp` from `device` to `target` with UDP source
  /// port `sport` (RoCE v2: the ECMP entropy; ibv_modify_qp's flow label on real NICs). Without
  /// it a QP takes the NIC's own port (a hash). Writes already posted finish on the old path.
  virtual DrvStatus qp_connect(std::uint32_t device, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) = 0;
  // RDMA memory registration on the device's NIC (access: 1 LOCAL_WRITE, 2 REMOTE_READ, 4 REMOTE_WRITE).
  virtual DrvStatus mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                                std::uint32_t* key) = 0;
  virtual DrvStatus mr_deregister(std::uint32_t device, std::uint32_t key) = 0;
};

/// The hosts' side: the control channel between the ranks' host processes (the bootstrap's TCP,
/// docs/discovery.md), its urgent messages and the heartbeat agent (docs/failover.md), and host
/// sockets on the front-end network (protocol TCP, docs/models/host-network.md).
class HostChannel {
 public:
  virtual ~HostChannel() = default;
  /// Send `msg` from `from_rank` to `to_rank` without blocking. NotSupported: no channel.
  virtual DrvStatus ctrl_send(std::uint32_t from_rank, std::uint32_t to_rank, CtrlMsg msg) = 0;
  /// Block until a message from `from_rank` to `to_rank` has arrived (in order per pair), or
  /// Timeout after timeout_ns of simulated time.
  virtual DrvStatus ctrl_recv(std::uint32_t to_rank, std::uint32_t from_rank, std::uint64_t timeout_ns, CtrlMsg* msg) = 0;
  /// Urgent message on the control channel (an abort, a heartbeat): timed like ctrl_send, kept in
  /// a queue of its own, and its arrival interrupts the receiving rank's blocking
  /// stream_synchronize, which returns Aborted while one (or a device event) is unread (as the real library's
  /// background thread stops the host's waits when its socket delivers an abort).
  virtual DrvStatus ctrl_signal(std::uint32_t /*from_rank*/, std::uint32_t /*to_rank*/, CtrlMsg /*msg*/) {
    return DrvStatus::NotSupported;
  }
  /// Take the earliest arrived urgent message of `to_rank` without blocking (Timeout: none).
  virtual DrvStatus ctrl_signal_poll(std::uint32_t /*to_rank*/, std::uint32_t* /*from_rank*/, CtrlMsg* /*msg*/) {
    return DrvStatus::NotSupported;
  }
  /// Start (or change, or with no neighbours stop) the host's heartbeat agent of `rank`.
  virtual DrvStatus heartbeat_register(std::uint32_t /*rank*/, const HeartbeatSpec& /*spec*/) { return DrvStatus::NotSupported; }
  /// Queue `op` on `stream` (HostSocketOp). NotSupported: the driver models no host network.
  virtual DrvStatus host_socket(std::uint32_t /*stream*/, const HostSocketOp& /*op*/) { return DrvStatus::NotSupported; }
};

/// What the library reports for profiling and the trace (as the real library feeds msprof and
/// its logs): no effect on the hardware.
class DriverObserver {
 public:
  virtual ~DriverObserver() = default;
  /// The library chose a route.
  virtual void route_decided(std::uint32_t device, const RouteInfo& r) = 0;
  /// Whether route_decided's reports are kept: when not, the library skips composing them
  /// (thousands of strings per rank at first use on a large fabric).
  virtual bool route_reports() { return true; }
  /// Announce an operation bracketed by Marker tasks begin_key/end_key on `stream`.
  virtual void profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const OpInfo& info) = 0;
  virtual void log(std::uint32_t device, int level, const std::string& line) = 0;
  /// The library recovered from (or gave up on) a fault.
  virtual void failover_reported(std::uint32_t /*device*/, const FailoverInfo& /*f*/) {}
};

/// One object implementing the four (an in-memory test driver, hcsim exec's client end).
class Driver : public DeviceRuntime, public RdmaNic, public HostChannel, public DriverObserver {};

/// The four parts the library calls; every pointer must be set (complete()).
struct DriverSet {
  DeviceRuntime* runtime = nullptr;
  RdmaNic* rdma = nullptr;
  HostChannel* host = nullptr;
  DriverObserver* observer = nullptr;
  bool complete() const { return runtime && rdma && host && observer; }
};

/// The process-wide driver (as the real runtime is process-wide). Set before any context is made.
void set_driver(Driver* d);                 ///< the four parts from one object (nullptr: none)
void set_driver(const DriverSet& parts);    ///< four objects; an incomplete set is no driver
/// The driver set (loaded from HCOMM_DRIVER on first use when none was set); complete() or empty.
const DriverSet& drivers();

}  // namespace hcomm
