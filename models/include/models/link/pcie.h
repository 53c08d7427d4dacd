// PCIe topology pieces of a server (docs/models/links.md): PCIe switches (peer-to-peer DMA
// between the NPUs below them, an optional upstream link) and host root complexes (the host
// memory side of every host DMA). The ports themselves are models/link/port.h ports.
#pragma once
#include <cstdint>
#include <string>

#include "models/time.h"

namespace models {

struct PcieSwitch {
  std::string name;
  Tick latency;
  int up = -1, down = -1;  ///< ports of the upstream link (towards the root complex / back down)
};

struct RootComplex {
  std::uint32_t down, up;  ///< ports: towards devices, towards host memory
};

/// An NPU's cable to its PCIe switch (sw = -1: none).
struct SwitchPorts {
  std::int64_t sw = -1;
  std::uint32_t up = 0, down = 0;
};

}  // namespace models
