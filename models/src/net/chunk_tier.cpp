// The chunk tier (docs/models/roce-nic.md, docs/models/ethernet-switch.md): a unit stands for a
// train of back-to-back MTU packets. What differs from the packet tier in the switches is here:
// ECN marking on the fluid queue that packets paced at their senders' rates would build. (The
// CNPs a packet-tier receiver would have sent for a unit's marked packets: RcTransport::chunk_cnp.)
#include "models/net/fabric.h"

#include <algorithm>

#include "models/net/policies.h"

namespace models {

// Chunk tier: units move as line-rate bursts, so their queue is lumpy even when the senders'
// paced rates fit. Mark on the queue that packets paced at those rates would build (a fluid
// queue fed by each unit at its sender's rate, drained at line rate), evaluated at each of
// the unit's packets; the unit is marked if any of them would be.
void Fabric::chunk_ecn_mark(double in_Bps, Port& op, Pkt& k) {
  auto red = [this](double q) { return policy::ecn_mark_probability(p_.ecn, q); };
  const Tick now = sch_.now();
  double vq = virtual_queue(op, now);
  const double r = std::min(k.rate > 0 ? k.rate : in_Bps, in_Bps);
  op.vin.emplace_back(now + static_cast<Tick>(static_cast<double>(k.bytes) / r * kPsPerSec), r);
  double in = 0;
  for (auto& v : op.vin) in += v.second;
  const double step = (in - static_cast<double>(op.Bps)) * static_cast<double>(k.bytes) / k.npk / r;  // queue change per packet
  std::uint32_t m = 0;
  for (std::uint32_t i = 0; i < k.npk; ++i) {
    const double pk = red(vq);
    if (pk >= 1 || (pk > 0 && uniform() < pk)) ++m;
    vq = std::max(0.0, vq + step);
  }
  k.marks = std::min(k.npk, k.marks + m);
  k.ecn = k.marks > 0;
  // Fluid FIFO: a port receiving more than its line rate passes each flow on at its share of
  // it, and that is the rate the flow's packets reach the next queue at.
  const double C = static_cast<double>(op.Bps);
  if (in > C) k.rate = r * C / in;
}

double Fabric::virtual_queue(Port& p, Tick now) {
  const double C = static_cast<double>(p.Bps);
  while (p.vq_t < now) {
    double in = 0;
    Tick seg = now;
    for (auto& [end, r] : p.vin) { in += r; seg = std::min(seg, end); }
    p.vq = std::max(0.0, p.vq + (in - C) * static_cast<double>(seg - p.vq_t) / kPsPerSec);
    p.vq_t = seg;
    p.vin.erase(std::remove_if(p.vin.begin(), p.vin.end(), [seg](const std::pair<Tick, double>& v) { return v.first <= seg; }), p.vin.end());
  }
  return p.vq;
}

}  // namespace models
