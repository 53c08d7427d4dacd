// The chunk tier's switch marking (docs/models/roce-nic.md, docs/models/ethernet-switch.md): a
// unit stands for a train of back-to-back MTU packets, so its queue is lumpy even when the
// senders' paced rates fit. ChunkMarking owns, per switch egress port, the fluid queue that
// packets paced at those rates would build, and marks a unit on it. (The CNPs a packet-tier
// receiver would send for a unit's marked packets: RcTransport::chunk_cnp.)
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "models/net/net_params.h"
#include "models/net/xorshift.h"
#include "models/packet.h"
#include "models/time.h"

namespace models {

class ChunkMarking {
 public:
  explicit ChunkMarking(const EcnParams& ecn) : ecn_(ecn) {}
  /// Unit k enters the egress queue of (node, port), of line rate out_Bps, from an ingress port of
  /// rate in_Bps, at `now`: its marks (k.marks, k.ecn) and the rate it leaves at (k.rate).
  void mark(std::uint32_t node, std::uint32_t port, std::uint64_t out_Bps, double in_Bps, Pkt& k, Tick now, XorShift64& rng);

 private:
  // The queue a packet-tier port would hold. Units reach it as fluid at their senders' paced
  // rates (each until its Tick), and it drains at the line rate.
  struct FluidQueue {
    double bytes = 0;
    Tick t = 0;
    std::vector<std::pair<Tick, double>> in;
  };
  FluidQueue& queue(std::uint32_t node, std::uint32_t port);
  /// The queue's bytes at `now`, after draining at C bytes/s.
  static double advance(FluidQueue& q, double C, Tick now);

  const EcnParams& ecn_;
  std::vector<std::vector<FluidQueue>> q_;  // per node, per port (made on first use)
};

}  // namespace models
