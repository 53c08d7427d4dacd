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
  // rates (each until its Tick), and it drains at the line rate. The units feeding it (a few,
  // unless the port is an incast's) are kept in the record itself up to kInline of them, in
  // arrival order; more spill to the heap, which then holds them all. At 8192 NPUs a separate
  // allocation per port would be one more cache miss on every unit's hop.
  using Feed = std::pair<Tick, double>;  // (until, bytes/s)
  struct FluidQueue {
    static constexpr std::uint32_t kInline = 3;
    double bytes = 0;
    Tick t = 0;
    std::uint32_t n = 0;     // feeds
    bool spilled = false;    // the feeds live in `heap`
    Feed inline_feeds[kInline];
    std::vector<Feed> heap;
    Feed* begin() { return spilled ? heap.data() : inline_feeds; }
    Feed* end() { return begin() + n; }
    void push(Feed f);
    void drop_until(Tick seg);  // remove the feeds ending at or before seg, keeping the order
  };
  FluidQueue& queue(std::uint32_t node, std::uint32_t port);
  /// The queue's bytes at `now`, after draining at C bytes/s.
  static double advance(FluidQueue& q, double C, Tick now);

  const EcnParams& ecn_;
  std::vector<std::vector<FluidQueue>> q_;  // per node, per port (made on first use)
};

}  // namespace models
