// Configuration of the RoCE network (docs/models/ethernet-switch.md, docs/models/roce-nic.md):
// tier, packet framing, transport timers, and the ECN / PFC / ECMP policies. The network's sole
// configuration input.
#pragma once
#include <cstdint>

#include "models/nic/dcqcn_params.h"
#include "models/time.h"

namespace models {

/// ECN marking policy on an egress queue. RED: mark if q > Kmax, else with probability
/// Pmax (q-Kmin)/(Kmax-Kmin) above Kmin. Step (DCTCP's K): mark every packet while q > Kmin.
/// Defaults: NVIDIA's RoCE switch configuration (nvidia(): 150 KB .. 1.5 MB, marking every packet
/// at Kmax); sigcomm2015(): the DCQCN paper's 5 KB .. 200 KB at 1 %.
struct EcnParams {
  enum class Mode : std::uint8_t { Red, Step };
  bool enabled = true;
  Mode mode = Mode::Red;
  std::uint64_t kmin_bytes = 150 * 1000;
  std::uint64_t kmax_bytes = 1500 * 1000;
  double pmax = 1.0;

  static EcnParams nvidia() { return EcnParams{}; }
  static EcnParams sigcomm2015() {
    EcnParams e;
    e.kmin_bytes = 5 * 1000;
    e.kmax_bytes = 200 * 1000;
    e.pmax = 0.01;
    return e;
  }
};

/// PFC, one priority: an ingress queue above xoff pauses the upstream sender, below xon resumes it.
/// Thresholds are derived: headroom = 3 x rate x link delay + 2 MTU per ingress port (HPCC's ns-3
/// setup); xoff = (buffer - ports x headroom) / ports; xon = xoff - 2 MTU.
/// On by default: RoCE runs lossless (PFC on the RoCE priority); false is the lossy fabric.
///
/// PFC watchdog (docs/models/ethernet-switch.md#pfc-watchdog), per switch egress port: paused by its
/// peer continuously for `detect_ps` while it has packets queued, the port enters the storm state:
/// it ignores pause frames and, with action Drop, drops what is queued for it and every packet that
/// comes for it; Forward only ignores the pauses. It leaves the state once no pause has been
/// asserted for `restore_ps`. Defaults are SONiC's (sonic-utilities pfcwd/main.py:
/// DEFAULT_DETECTION_TIME = 200 ms, DEFAULT_RESTORATION_TIME = 200 ms, DEFAULT_ACTION = 'drop').
struct PfcParams {
  enum class WdAction : std::uint8_t { Drop, Forward };
  bool enabled = true;
  bool watchdog = true;
  Tick detect_ps = 200 * 1000 * kPsPerUs;
  Tick restore_ps = 200 * 1000 * kPsPerUs;
  WdAction action = WdAction::Drop;
};

/// ECMP policy: which header fields choose among equal-cost next hops. FiveTuple: source,
/// destination, UDP source port (one per QP), 4791, UDP — QPs of one pair spread. SrcDst: source
/// and destination only — every QP of a pair takes one path (hash polarisation).
enum class EcmpHash : std::uint8_t { FiveTuple, SrcDst };

struct NetParams {
  bool flow = false;                     ///< flow tier: messages as fluid flows at max-min fair rates
  /// Flow tier: DCQCN over fluid queues where flows meet (net/flow_cc.cpp; scenario
  /// /network/flow_cc "dcqcn"); false (the default, "ideal"): the max-min rates alone.
  bool flow_cc = false;
  Tick flow_cc_step_ps = 1 * kPsPerUs;   ///< flow tier: the fluid queues' integration step
  EcmpHash ecmp_hash = EcmpHash::FiveTuple;
  /// The switches' ECMP hash seed (scenario /network/ecmp_salt): 0 is the unseeded hash; another
  /// value moves flows to other equal-cost next hops, the same in every tier (policy::ecmp_flow_key).
  std::uint32_t ecmp_salt = 0;
  std::uint32_t mtu = 4096;              ///< payload bytes per packet
  /// Chunk tier: payload bytes per simulated unit (a train of back-to-back MTU packets that moves
  /// as one; wire bytes, ECN, drops and ACKs still count its packets). 0: one packet (packet tier).
  std::uint32_t unit_bytes = 0;
  std::uint32_t unit() const { return unit_bytes > mtu ? unit_bytes : mtu; }
  /// MTU packets that carry `payload` bytes (at least one), and their bytes on the wire.
  std::uint64_t packets(std::uint64_t payload) const { return payload <= mtu ? 1 : (payload + mtu - 1) / mtu; }
  std::uint64_t wire_bytes(std::uint64_t payload) const { return payload + packets(payload) * header_bytes; }
  std::uint64_t packets_per_unit() const { return packets(unit()); }
  std::uint32_t header_bytes = 58;       ///< Eth + IP + UDP + BTH + ICRC on the wire
  std::uint32_t ctrl_bytes = 64;         ///< ACK / NAK / CNP / PFC frame size
  std::uint32_t ack_every = 4;           ///< receiver coalesces ACKs over this many packets
  Tick nic_latency_ps = 500 * kPsPerNs;  ///< WQE processing before a message's first packet
  std::uint32_t timeout_exp = 20;        ///< retransmit timeout = 4.096 us x 2^timeout_exp (HCCL_RDMA_TIMEOUT)
  std::uint32_t retry_count = 7;         ///< timeouts before the QP errors out (HCCL_RDMA_RETRY_CNT)
  /// The NIC's port-error async event (IBV_EVENT_PORT_ERR, docs/failover.md#nic-port-event): the
  /// driver delivers it to the owning rank port_event_ps after the port's link went down, when
  /// the link stayed down for at least port_debounce_ps (a shorter flap raises none). Assumptions
  /// (docs/failover.md): 100 us, 50 us. port_events false: no events (network/port_event "off").
  bool port_events = true;
  /// A crashed rank's host connections close and every other rank's host sees it (PeerLost,
  /// docs/failover.md#rank-loss); false (network/close_notice "off"): no notice (a host that hangs).
  bool close_notice = true;
  Tick port_event_ps = 100 * kPsPerUs;
  Tick port_debounce_ps = 50 * kPsPerUs;
  std::uint64_t seed = 1;                ///< ECN marking and drop PRNG
  double drop_rate = 0;                  ///< random loss per data packet on every link (fault injection)
  DcqcnParams dcqcn;
  EcnParams ecn;
  PfcParams pfc;
};

}  // namespace models
