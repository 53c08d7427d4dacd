// The switch MMU (docs/models/ethernet-switch.md): the shared buffer, ECN marking at enqueue,
// PFC ingress accounting with pause and resume frames, the PFC watchdog and a stuck NIC's pause
// storm (fault injection).
#pragma once
#include <cstdint>
#include <vector>

#include "models/event_queue.h"
#include "models/net/chunk_tier.h"
#include "models/net/net_params.h"
#include "models/net/switch.h"
#include "models/net/xorshift.h"
#include "models/packet.h"
#include "models/sampler.h"
#include "models/time.h"

namespace models {

/// What the MMU asks of the fabric that forwards the packets (models::Fabric).
class MmuFabric {
 public:
  virtual ~MmuFabric() = default;
  /// (node, port) may send again: a switch port transmits what waits, a host's NIC arbitrates.
  virtual void mmu_resume(std::uint32_t node, std::uint32_t port) = 0;
  /// The watchdog's drop action: discard what is queued for switch port (node, port), releasing
  /// each packet's buffer here (release) and counting it in the port's drops.
  virtual void mmu_drop_queue(std::uint32_t node, std::uint32_t port) = 0;
};

/// The MMU of every switch of a fabric (switch_mmu.cpp). The MMU's fields sit in the fabric's
/// node and port records (NetNode: buffer, used, xoff, xon; NetPort: in_bytes, upstream_paused,
/// paused and the watchdog's and storm's fields), read on every packet with the forwarding's;
/// this class is what writes them. It owns the chunk tier's fluid queues (ChunkMarking), its
/// events (a PFC frame reaching a sender, a watchdog check, a storm's next pause frame), and
/// draws from the fabric's generator (one sequence for the whole fabric, in event order).
class SwitchMmu final : public EventHandler {
 public:
  SwitchMmu(Scheduler& s, const NetParams& p, std::vector<NetNode>& nodes, const std::vector<std::uint32_t>& port_base,
            Sampler& samples, XorShift64& rng, MmuFabric& fabric)
      : sch_(s), p_(p), nodes_(nodes), port_base_(port_base), samples_(samples), rng_(rng), fabric_(fabric) {}
  /// Every switch's PFC xoff/xon from its buffer and its ports' headroom (after all connects).
  void set_pfc_thresholds();
  /// A packet for egress `out` of switch `n`: false (counted as a tail drop on `out`) when the
  /// shared buffer is full, the port is down or the watchdog drops for it.
  bool admit(NetNode& n, NetPort& out, const Pkt& k);
  /// ECN at enqueue on `out` (entered on `in_port`), by the marking policy; a mark stays.
  void mark(NetNode& n, std::uint32_t in_port, NetPort& out, Pkt& k);
  /// The packet is buffered at switch `node` (record `n`), entered on `port`; above xoff the
  /// upstream sender is paused.
  void ingress(NetNode& n, std::uint32_t node, std::uint32_t port, Pkt& k);
  /// The packet leaves switch `n`: its buffer is freed; below xon the upstream sender resumes.
  void release(NetNode& n, const Pkt& k);
  /// The paused switch port (node, port) has packets queued: the watchdog's detection starts,
  /// unless it runs.
  void wd_arm(std::uint32_t node, std::uint32_t port);
  /// Fault: host's NIC pauses its switch port continuously for `duration`.
  void pfc_storm(std::uint32_t host, Tick duration);
  /// A maximal pause (65535 quanta of 512 bit times) on a link of `Bps` bytes/s, in ps.
  static Tick pause_quantum_ps(std::uint64_t Bps) { return Bps ? static_cast<Tick>(65535.0 * 512 / 8 / static_cast<double>(Bps) * 1e12) : 0; }
  std::uint64_t events() const { return events_; }
  void on_event(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kPfcFrame = 5, kPfcWd = 12, kPfcStorm };
  void pfc_frame(std::uint32_t node, std::uint32_t port, bool pause);
  void pfc_wd(std::uint32_t node, std::uint32_t port);  // detection / restoration check
  void pfc_storm_tick(std::uint32_t host);               // the stuck NIC's next pause frame
  void sample(std::uint32_t node, std::uint32_t port, SampleCount c, std::uint64_t n) {
    if (samples_.on()) samples_.count(port_base_[node] + port, sch_.now(), c, n);
  }
  void sample(const NetNode& n, const NetPort& p, SampleCount c, std::uint64_t k) {  // indices only when sampling
    if (samples_.on())
      sample(static_cast<std::uint32_t>(&n - nodes_.data()), static_cast<std::uint32_t>(&p - n.ports.data()), c, k);
  }
  void schedule(Tick at, Ev e, std::uint64_t id, std::uint64_t b = 0) { sch_.schedule(at, this, e | (id << 8), b); ++events_; }

  Scheduler& sch_;
  const NetParams& p_;
  std::vector<NetNode>& nodes_;
  const std::vector<std::uint32_t>& port_base_;
  Sampler& samples_;
  XorShift64& rng_;
  MmuFabric& fabric_;
  std::uint64_t events_ = 0;
  ChunkMarking chunk_{p_.ecn};  // the chunk tier's fluid queues (chunk_tier.cpp)
};

}  // namespace models
