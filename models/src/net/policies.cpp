// Network policies (docs/models/ethernet-switch.md): ECN marking, ECMP flow key, PFC thresholds.
#include "models/net/policies.h"

#include "models/splitmix64.h"

namespace models {
namespace policy {

double ecn_mark_probability(const EcnParams& e, double q) {
  if (!e.enabled) return 0;
  if (e.mode == EcnParams::Mode::Step) return q > static_cast<double>(e.kmin_bytes) ? 1.0 : 0.0;
  if (q > static_cast<double>(e.kmax_bytes)) return 1.0;
  if (q <= static_cast<double>(e.kmin_bytes)) return 0.0;
  return e.pmax * (q - static_cast<double>(e.kmin_bytes)) / static_cast<double>(e.kmax_bytes - e.kmin_bytes);
}

std::uint64_t ecmp_flow_key(EcmpHash h, std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint32_t salt) {
  const std::uint64_t port = h == EcmpHash::FiveTuple ? sport : 0;
  const std::uint64_t key = splitmix64((static_cast<std::uint64_t>(src) << 40) ^ (static_cast<std::uint64_t>(dst) << 16) ^ port) ^ 4791;
  // The hash seed every switch of the fabric is configured with: the key mixed once more with
  // it, so that each flow's choice at every switch is redrawn (salt 0: the unseeded hash).
  return salt == 0 ? key : splitmix64(key ^ (static_cast<std::uint64_t>(salt) * 0xc2b2ae3d27d4eb4fULL));
}

void pfc_thresholds(std::uint64_t buffer, std::uint64_t ports, std::uint64_t headroom, std::uint64_t unit_wire,
                    std::uint64_t* xoff, std::uint64_t* xon) {
  // Every ingress port may hold xoff before it pauses its sender; headroom absorbs what is in
  // flight when the pause lands (HPCC's ns-3 setup); resume 2 units below.
  *xoff = buffer > ports * headroom ? (buffer - ports * headroom) / ports : unit_wire;
  *xon = *xoff > 2 * unit_wire ? *xoff - 2 * unit_wire : 0;
}

}  // namespace policy

}  // namespace models
