// The fabric the network benchmarks share (bench_fabric, bench_flow): N hosts under one switch
// (N <= 64) or a two-tier Clos (up to 2048 hosts: radix 64; beyond: radix 128), half of each
// leaf's ports down to hosts and half up to the spines, 25 GB/s links, 500 ns link and 600 ns
// switch latency, 32 MiB switch buffers.
#pragma once
#include <cstdint>
#include <vector>

#include "models/network.h"

namespace bench_rig {

inline void build_clos(models::Network& net, std::uint32_t n, std::vector<std::uint32_t>& hosts) {
  using models::kPsPerNs;
  const std::uint64_t bw = 25000000000ULL;
  const models::Tick lat = 500 * kPsPerNs, swl = 600 * kPsPerNs;
  if (n <= 64) {
    std::uint32_t sw = net.add_switch("sw", n, 32 << 20, swl);
    for (std::uint32_t i = 0; i < n; ++i) { hosts.push_back(net.add_host("h")); net.connect(hosts[i], 0, sw, i, bw, lat); }
    return;
  }
  const std::uint32_t radix = n <= 2048 ? 64 : 128, down = radix / 2, leaves = n / down, spines = radix / 2;
  std::vector<std::uint32_t> leaf(leaves), spine(spines);
  for (auto& l : leaf) l = net.add_switch("leaf", radix, 32 << 20, swl);
  for (auto& s : spine) s = net.add_switch("spine", radix, 32 << 20, swl);
  for (std::uint32_t i = 0; i < n; ++i) { hosts.push_back(net.add_host("h")); net.connect(hosts[i], 0, leaf[i / down], i % down, bw, lat); }
  for (std::uint32_t l = 0; l < leaves; ++l)
    for (std::uint32_t s = 0; s < spines; ++s) net.connect(leaf[l], down + s, spine[s], l, bw, lat);
}

}  // namespace bench_rig
