// The chunk tier's switch marking (models/net/chunk_tier.h, docs/models/roce-nic.md).
#include "models/net/chunk_tier.h"

#include <algorithm>

#include "models/net/policies.h"

namespace models {

ChunkMarking::FluidQueue& ChunkMarking::queue(std::uint32_t node, std::uint32_t port) {
  if (node >= q_.size()) q_.resize(node + 1);
  if (port >= q_[node].size()) q_[node].resize(port + 1);
  return q_[node][port];
}

// Mark on the queue that packets paced at the senders' rates would build (a fluid queue fed by
// each unit at its sender's rate, drained at line rate), evaluated at each of the unit's packets;
// the unit is marked if any of them would be.
void ChunkMarking::mark(std::uint32_t node, std::uint32_t port, std::uint64_t out_Bps, double in_Bps, Pkt& k, Tick now, XorShift64& rng) {
  FluidQueue& q = queue(node, port);
  const double C = static_cast<double>(out_Bps);
  double vq = advance(q, C, now);
  const double r = std::min(k.rate > 0 ? k.rate : in_Bps, in_Bps);
  q.push({now + static_cast<Tick>(static_cast<double>(k.bytes) / r * kPsPerSec), r});
  double in = 0;
  for (const Feed* v = q.begin(); v != q.end(); ++v) in += v->second;
  const double step = (in - C) * static_cast<double>(k.bytes) / k.npk / r;  // queue change per packet
  std::uint32_t m = 0;
  for (std::uint32_t i = 0; i < k.npk; ++i) {
    const double pk = policy::ecn_mark_probability(ecn_, vq);
    if (pk >= 1 || (pk > 0 && rng.uniform() < pk)) ++m;
    vq = std::max(0.0, vq + step);
  }
  k.marks = std::min(k.npk, k.marks + m);
  k.ecn = k.marks > 0;
  // Fluid FIFO: a port receiving more than its line rate passes each flow on at its share of
  // it, and that is the rate the flow's packets reach the next queue at.
  if (in > C) k.rate = r * C / in;
}

double ChunkMarking::advance(FluidQueue& q, double C, Tick now) {
  while (q.t < now) {
    double in = 0;
    Tick seg = now;
    for (const Feed* v = q.begin(); v != q.end(); ++v) { in += v->second; seg = std::min(seg, v->first); }
    q.bytes = std::max(0.0, q.bytes + (in - C) * static_cast<double>(seg - q.t) / kPsPerSec);
    q.t = seg;
    q.drop_until(seg);
  }
  return q.bytes;
}

void ChunkMarking::FluidQueue::push(Feed f) {
  if (!spilled && n == kInline) {
    heap.assign(inline_feeds, inline_feeds + n);
    spilled = true;
  }
  if (spilled) {
    heap.push_back(f);
  } else {
    inline_feeds[n] = f;
  }
  ++n;
}

void ChunkMarking::FluidQueue::drop_until(Tick seg) {
  Feed* b = begin();
  const Feed* e = std::remove_if(b, b + n, [seg](const Feed& v) { return v.first <= seg; });
  n = static_cast<std::uint32_t>(e - b);
  if (spilled) heap.resize(n);
}

}  // namespace models
