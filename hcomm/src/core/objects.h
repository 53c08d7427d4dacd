// The library's handle objects (docs/architecture.md#hcomm). Per-rank state lives in these
// objects, never in statics or thread_locals: every simulated rank shares one OS thread.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/driver.h"
#include "hcomm/hcomm.h"

namespace hcomm::detail {
/// Per-communicator RoCE connection policy, resolved once at communicator init from its
/// configuration (num_qp, bandwidth_limit, retry_count; docs/config.md).
struct RdmaPolicy {
  std::uint32_t qp_count = 1;       ///< num_qp: the most QPs a write is striped over
  std::uint64_t qp_min_bytes = 0;   ///< multi_qp_threshold in bytes: a write uses at most bytes / this of them (0: all)
  std::uint32_t qp_base = 0;        ///< first QP index (a bandwidth reservation's own QPs, route/reserve.cpp)
  std::uint64_t rate_cap_Bps = 0;   ///< 0 = no cap
  std::uint32_t retry_count = ~0u;  ///< ~0u: the driver's default
};
/// Part of a peer's QPs for one RDMA write: QPs first .. first + count - 1 of the policy's
/// (count 0: the policy's rule). Writes that travel to one peer together (a schedule step's block
/// runs) share the QPs the threshold rule gives their total, in proportion to their bytes
/// (algo/exec.cpp): each on the first k QPs, a short run's one QP carried as much as four of a
/// long run's and set the step's end (NB on 128 servers).
struct QpSlice {
  std::uint32_t first = 0, count = 0;
};
/// A user's algorithm override per operation (index: CollOp, algo/schedule.h); empty = automatic.
/// Parsed at communicator init (algo/select.h).
struct AlgoOverride {
  std::string level0[8], level1[8], by[8];
};
/// The route to one peer (route/route.h): transport and, over RoCE, the UDP source port of each
/// stripe (empty: the NIC's own hash).
struct PeerRoute {
  PairLink link = PairLink::None;
  std::vector<std::uint16_t> sports;
  std::vector<std::uint32_t> uplinks;  ///< per stripe: the leaf uplink port its path takes (~0u: none chosen)
  std::uint32_t epoch = 0;  ///< how many times it was re-routed
  /// HCCS through a relay NPU (transport/relay.h): the relay's global rank and device, ~0u when direct.
  std::uint32_t relay_rank = ~0u, relay_device = ~0u;
  std::uint64_t relay_Bps = 0;  ///< the relay path's bottleneck rate (min of its two HCCS hops)
  /// RoCE through a borrowed NIC (docs/failover.md#nic-borrowing): my NIC is down, so my writes go
  /// over HCCS into the lender's staging area (relay_rank / relay_device) and leave by its NIC.
  bool borrow = false;
  /// The peer's NIC is down: my writes go to the NIC of its lender (global rank, device), which
  /// writes them on into the peer's HBM. ~0u: the peer's own NIC.
  std::uint32_t via_rank = ~0u, via_device = ~0u;
  /// A cross-leaf RoCE peer that only notifies went to so far: stripe 0 on a port whose probe came
  /// back, the others on the NIC's hash (route/route.h to_control); routed in full when data first
  /// goes to it.
  bool control_only = false;
};
/// The level-1 group (one rank per server, in server order) as the fabric sees it
/// (algo/contention.h).
struct FabricView {
  std::uint32_t servers = 0, local = 0;  ///< the shape read_fabric read it for (0: not yet)
  std::vector<std::uint32_t> leaf;  ///< per member: the index of the switch its NIC is cabled to
  std::vector<double> rho;          ///< per leaf: bandwidth down (to NICs) / up (to switches), 0: no uplink
  bool known = false;               ///< every member's leaf is known and some leaf has rho > 1
  /// contention_factor's results, per (family, operation): they depend on nothing else, and at
  /// 1024 servers each costs tens of thousands of steps' partners (1.7 s per collective over 8192 ranks).
  mutable std::vector<std::pair<std::pair<const void*, int>, double>> factors;
};
/// Per-communicator routing state: sparse (only peers actually used), plus what the NIC showed.
struct RouteState {
  int policy = -1;  ///< -1 not read yet; route::kProbe / route::kHash
  bool nic_read = false;
  NicInfo nic;
  std::map<std::uint32_t, PeerRoute> peers;
  std::uint32_t roce_peers = 0;  ///< RoCE peers routed so far
  std::uint32_t probed_peers = 0;  ///< cross-leaf peers routed by probes (route.cpp kProbePeers)
  std::vector<std::uint32_t> uplinks;  ///< the leaf's uplink ports the probes have seen, sorted
  std::vector<std::uint32_t> load;  ///< own stripes per leaf uplink port
  NicCounters last;              ///< at the last congestion check
  std::uint64_t last_ns = 0;
  double cnp_per_us = 0;         ///< the congestion term: CNPs the NIC received per µs since the last check
  std::uint64_t reroutes = 0;
};
struct Topo;  // discovery/topo.h
class Recovery;  // core/recovery.h
/// HCCS relay staging (transport/relay.h, docs/routing.md#relay): slices of 512 KiB, two slots per
/// staging area, kRelayStages areas per origin NPU on every relay NPU.
constexpr std::uint64_t kRelaySliceBytes = 512ULL << 10;
constexpr std::uint32_t kRelayStages = 4;
/// One relay channel (transport/relay.h): traffic of one origin stream to one peer through a relay
/// NPU, driven by two streams this rank created on the relay's device.
struct RelayChan {
  std::uint32_t index = 0;           ///< channel number of this rank (notify keys)
  std::uint32_t relay_device = 0, relay_device_id = 0;
  hcomm_stream_t hop1 = nullptr, hop2 = nullptr;  ///< streams on the relay device (hop1 also forwards notifies)
  int stage = -1;                    ///< staging area index on the relay (-1: none bound yet)
  std::uint32_t go = 0, back = 0, slice = 0;  ///< sequence numbers of its notify keys
};
/// A collective submitted since its stream's last successful synchronize, kept so that
/// HCOMM_OP_RETRY can re-execute it from its inputs (recovery/failover.h, docs/failover.md).
struct PendingOp {
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t stream = nullptr;
  std::uint64_t seq = 0;
  int op = 0;                 ///< CollOp
  const char* kind = "";
  int dtype = 0, redop = 0;
  std::uint32_t root = 0;
  std::uint64_t in = 0, out = 0, count = 0, in_bytes = 0, out_bytes = 0;
  bool retryable = false;     ///< re-reading its inputs gives the same result (not in place, no -v arrays)
  std::uint64_t from = 0;     ///< this attempt starts at element (per block) `from` (a resumption; 0: the whole operation)
  std::uint64_t mark_base = 0;  ///< this attempt's slice markers record mark_base + elements done (0: none)
};
/// A communicator's failure state (recovery/failover.h): the first error it learned, sticky.
struct CommError {
  hcomm_result_t code = HCOMM_SUCCESS;
  std::string text;           ///< what failed and on which rank
  std::int64_t origin = -1;   ///< comm rank that detected it (-1: none)
  std::uint64_t at_ns = 0;
};
// The recovery's state (recovery/, docs/failover.md): each a struct of its own that only
// recovery/ writes (tests/layering_test.sh); the other rooms read it.
/// A communicator's.
struct CommRecovery {
  hcomm::detail::CommError error;                  // sticky: every later call returns error.code
  void (*error_cb)(hcomm_comm_t, hcomm_result_t, const char*, void*) = nullptr;
  void* error_cb_data = nullptr;
  bool cb_owed = false;                            // op retry on: the callback waits for the recovery's outcome
  hcomm_result_t notice = HCOMM_SUCCESS;           // HCOMM_I_FAILOVER: a survived fault not yet read by hcomm_get_async_error
  std::string notice_text;                         // the last survived fault's text
  std::vector<std::uint32_t> lost;                 // comm ranks found lost (agreement / heartbeat), sorted
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_pairs;  // comm-rank pairs whose HCCS link is down (a < b)
  bool avoid = false;                              // re-executing: run on paths that avoid dead_pairs
  std::vector<std::uint32_t> ring_order;           // op retry's ring: comm ranks in ring order (recovery/ring_order.h; empty: comm-rank order)
  std::vector<std::uint32_t> dead_nics;            // comm ranks whose NIC the last recovery agreement found down
  std::map<std::uint32_t, std::uint32_t> nic_lender;  // op retry's NIC borrowing: dead-NIC comm rank -> lender comm rank
  std::string ring_desc;                           // the coordinator's description of ring_order (path_after)
  std::uint32_t busy_streams = 0;                  // streams whose used_by holds it (work not yet synchronized)
  bool retry_wanted = false;                       // the error came with a request to re-execute (op_retry)
  bool roce_failed = false;                        // the last agreement: some rank's error was an RDMA write failure (re-probe RoCE paths)
  std::uint64_t recovered_round = 0;              // the error (at_ns + 1) a recovery already ran for
  std::uint64_t stale_below = 0;                   // abort reports of operations up to this seq are stale (recovered) ...
  std::uint32_t stale_attempt = 0;                 // ... those of seq stale_below only if sent before its stale_attempt-th re-execution
  std::uint64_t retries = 0;                       // agreement rounds so far (all members count alike)
  std::uint64_t shrinks = 0;                       // hcomm_comm_shrink calls (all survivors count alike)
  std::uint64_t restores = 0;                      // maybe_restore rounds (all members count alike)
  std::uint64_t prog_event = 0;                    // the slice markers' event id (0: none yet)
  std::uint64_t resume_from = 0;                   // the last GO's: elements (per block) delivered to every rank
};
/// The context's.
struct ContextRecovery {
  std::int64_t grank = -1;                          // this process's global rank (first communicator's init)
  std::vector<hcomm_comm_t> comms;                  // live communicators of this context, creation order
  std::vector<hcomm::detail::PendingOp> pending;    // collectives not yet synchronized (HCOMM_OP_RETRY)
  bool recovering = false;                          // inside a recovery: no nested abort broadcasts
  std::uint64_t nic_down_known_ns = 0;              // when a recovery agreement last read this NIC's port as down (0: never):
                                                    // a port-down event of a port that went down before is stale
  std::string port_owed;                            // a port event no communicator work was crossing the NIC for (recovery/failover.h)
  std::uint64_t port_owed_since_ns = 0;
  std::vector<hcomm::DeviceEvent> port_stash;       // port-down events taken while reading the others (recovery/failover_events.cpp take_events)
  std::vector<std::uint32_t> hb_neighbours;         // registered with the host's agent (global ranks)
  bool hb_unavailable = false;                      // recovery: the driver has no heartbeat agent (hb_period_ns ignored)
  std::vector<std::uint32_t> lost_global;           // ranks the heartbeat reported LOST (global, sorted)
  std::uint64_t link_storms = 0;                    // CRC storm events taken (non-fatal)
  bool lost_news = false;                          // a PeerLost event put a communicator in error since the last drain
  std::uint64_t nic_ups = 0;                        // port-active events taken
};
}  // namespace hcomm::detail

struct hcomm_context_s {
  hcomm::DriverSet drv;            // used only by driver_port.cpp
  std::uint32_t device_id = 0;     // id inside the server
  std::uint32_t device = 0;        // global device handle
  std::uint64_t base = 0;          // HBM base address of this device
  std::uint64_t ccl_addr = 0, ccl_bytes = 0;     // collective buffer (symmetric)
  std::uint64_t p2p_addr = 0, p2p_bytes = 0;     // point-to-point receive window (symmetric)
  std::uint64_t timeout_ns = 30000ULL * 1000 * 1000;
  int debug = 0;
  int route_policy = 0;                   // HCOMM_ROUTE_SPORT (route/route.h Policy)
  std::uint64_t route_cnp_threshold = 0;  // HCOMM_ROUTE_CNP_THRESHOLD, 0 = off
  bool retry_reroute = true;              // HCOMM_RETRY_REROUTE: op retry re-probes RoCE paths after an RDMA failure
  bool nic_borrow = true;                 // HCOMM_NIC_BORROW: op retry borrows a server peer's NIC for a dead one
  bool retry_resume = true;               // HCOMM_RETRY_RESUME: op retry re-sends only the slices not delivered everywhere
  std::uint64_t next_event = 1, next_marker = 1;
  std::uint32_t next_comm_id = 1;
  std::uint16_t comm_id_use[256] = {};            // live communicators per notify-key comm id (id & 0xff)
  std::vector<hcomm_comm_t> mesh_owed;            // communicators whose last mesh phase still owes PULLED (settle_mesh)
  std::map<std::uint64_t, std::uint64_t> allocs;  // addr -> bytes
  std::uint32_t ccl_rkey = 0, p2p_rkey = 0;       // pre-registered communication buffers (same on all ranks)
  std::uint64_t sym_addr = 0, slot_bytes = 0;     // symmetric region of fixed-size slots
  std::vector<std::uint32_t> slot_used;           // per slot: 0 free, else number of slots of the buffer starting here
  std::map<std::uint32_t, std::uint64_t> mrs;     // key -> addr
  std::shared_ptr<const hcomm::detail::Topo> topo;  // discovered at the first communicator's init (discovery/)
  std::string discovery_error;                      // why discovery failed, naming the rank
  // HCCS relay (transport/relay.h): the work area other ranks stage through when this NPU relays
  // (symmetric, reserved at context creation), and the channels this rank drives on relays.
  std::uint64_t relay_addr = 0, relay_bytes = 0;
  std::vector<hcomm::detail::RelayChan> relay_chan_list;                    // channel number -> channel
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> relay_chans;  // (origin stream, peer device) -> channel number
  std::map<std::uint32_t, std::uint32_t> relay_stages;  // relay device -> data channels asked for there
  // Bandwidth reservations on this NPU's NIC (route/reserve.cpp, hcomm_reserve_bandwidth):
  // communicator -> its guaranteed share and its own ceiling (0: line rate), in B/s.
  struct Reservation { std::uint64_t min_Bps = 0, max_Bps = 0; std::uint32_t qp_base = 0; };
  std::map<hcomm_comm_t, Reservation> reservations;
  std::uint64_t nic_line_Bps = 0;  // the NIC's line rate, read at the first reservation
  // Failover (recovery/failover.h, docs/failover.md).
  const hcomm::detail::Recovery* recovery = nullptr;  // recovery/'s hooks, given at creation (core/recovery.h)
  hcomm::detail::ContextRecovery rec;               // recovery/'s state of the context
  std::uint64_t hb_period_ns = 0;                   // HCOMM_HEARTBEAT_PERIOD_US (docs/failover.md#heartbeat-with-neighbours), 0: off
  std::uint32_t hb_misses = 3;                      // HCOMM_HEARTBEAT_MISSES
  std::uint64_t pool_buffers = 8;                   // HCOMM_BUFFER_POOL_SIZE, or the last communicator config's buffer_pool_size
};

struct hcomm_stream_s {
  hcomm_context_t ctx = nullptr;
  std::uint32_t id = 0;
  std::vector<hcomm_comm_t> used_by;  // communicators with work on it since its last good synchronize (recovery/failover.h)
};

struct hcomm_event_s {
  hcomm_context_t ctx = nullptr;
  std::uint64_t id = 0;
  std::uint64_t recorded = 0;  // host-side count of records
};

struct hcomm_comm_s {
  hcomm_context_t ctx = nullptr;
  hcomm_config_t cfg{};                  // resolved configuration
  hcomm::detail::RdmaPolicy rdma;        // from cfg, set once at init
  hcomm::detail::AlgoOverride algo;      // from cfg.algo or the environment, set once at init
  std::string algo_spec;                 // cfg.algo's text (cfg.algo points here)
  std::uint32_t id = 0, rank = 0, nranks = 0;
  // Sub-communicators (coll/split.cpp): members[comm rank] = global rank, in comm rank order;
  // empty = the world (identity). O(members), never a table over pairs.
  std::vector<std::uint32_t> members;
  std::uint32_t server_size = 0;  // children: ranks per server when servers are contiguous and equal, else 0
  std::uint32_t splits = 0;       // splits / group creations made over this communicator (all members agree)
  std::uint64_t op_seq = 0;
  bool rdma_unfenced = false;  // transport/ only: a data write of the current operation ended at its doorbell (take_unfenced_writes)
  hcomm_stream_t internal = nullptr;     // blocking p2p and the serialized receive path
  hcomm_stream_t recv_stream = nullptr;  // all receives of this communicator, in posting order
  std::vector<hcomm_stream_t> slaves;    // mesh collectives: one per peer
  std::vector<hcomm_stream_t> schedule_slaves;  // schedule executor: parallel sends of one step
  hcomm_stream_t grant_stream = nullptr;    // schedule executor: the grants due at a schedule's start
  std::vector<std::uint32_t> pulled_from;   // local peers that still owe PULLED from the last mesh phase
  std::vector<hcomm_request_t> batch_reqs;  // hcomm_batch_send_recv's requests not yet released
  hcomm_stream_t batch_send = nullptr, batch_recv = nullptr;  // hcomm_batch_send_recv's helper streams
  // Protocol TCP (p2p/sendrecv.cpp, docs/models/host-network.md): the sends to peers on the host
  // network, in posting order, and the host staging buffers of its chunks (send_buffer_size and
  // recv_buffer_size bytes; made at first use; the receives use recv_stream).
  hcomm_stream_t tcp_send = nullptr;
  std::unique_ptr<std::uint8_t[]> tcp_tx, tcp_rx;
  std::map<std::uint32_t, hcomm::RankDesc> peers;  // descriptors of peers actually used
  hcomm::detail::RouteState route;                 // transport and path to peers actually used (route/)
  hcomm::detail::FabricView fabric;                // leaf switches under the first rail (algo/contention.h)
  // Failover (recovery/failover.h, docs/failover.md): recovery/'s state of the communicator.
  hcomm::detail::CommRecovery rec;
  // Slice markers of HCOMM_OP_RETRY's resumption (docs/failover.md#resumption): an event this rank's
  // streams record after each slice of a collective (rec.prog_event), valued mark_base + elements
  // (per block) done.
  std::uint64_t mark_base = 0;                     // the running collective's base (0: no markers)
  std::uint64_t mark_shift = 0;                    // a resumed vector operation runs from element mark_shift
  std::uint64_t mark_top = 0;                      // the largest value handed out so far
};

struct hcomm_buffer_pool_s {
  hcomm_context_t ctx = nullptr;
  hcomm_memory_type_t type = HCOMM_MEMORY_TYPE_DEVICE;
  std::uint64_t size = 0;
  std::vector<void*> addr;
  enum State : std::uint8_t { kFree, kOut, kPending };
  std::vector<State> state;
  std::vector<hcomm_event_t> ev;      // pending: completes when the transfer using it is done
  std::vector<hcomm_stream_t> stream; // pending: the stream to wait on
  std::vector<std::uint64_t> order;   // pending: release sequence (oldest first)
  std::uint64_t seq = 0;
};

struct hcomm_request_s {
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t stream = nullptr;
  hcomm_event_t done = nullptr;
  std::int64_t peer = -1;  // p2p: for error messages
  std::uint32_t tag = 0;
  std::uint64_t bytes = 0;
  bool is_send = false;
};
