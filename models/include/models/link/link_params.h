// Configuration of a point-to-point link (HCCS, PCIe, or an NPU's HBM as a shared port):
// rate, lanes, CRC frames and credits (docs/models/links.md).
#pragma once
#include <cstdint>

#include "models/time.h"

namespace models {

struct LinkParams {
  std::uint64_t bandwidth_Bps = 28ULL * 1000 * 1000 * 1000;  ///< bytes/s per direction, all lanes; HCCS on 910B: 28 GB/s
  Tick latency_ps = 500 * kPsPerNs;                          ///< one-way latency; HCCS ~0.5 us
  std::uint32_t lanes = 8;                 ///< lanes of the link; bandwidth scales with active lanes (lane degrade)
  std::uint32_t frame_bytes = 256;         ///< link-layer frame covered by one CRC (assumption)
  double crc_error_rate = 0;               ///< probability that a frame fails its CRC and is replayed
  std::uint64_t rx_buffer_bytes = 64 * 1024;  ///< receive buffer = credits; rate <= buffer / round trip (assumption)
};

enum class LinkKind : std::uint8_t { Hccs, Pcie, Hbm };  ///< Hbm: an NPU's memory as a shared port (a = b = the NPU)
const char* link_kind_name(LinkKind k);

/// Endpoint id of the host side of a PCIe link (PCIe switches count down from kHost - 1).
constexpr std::uint32_t kHost = 0xffffffffu;

}  // namespace models
