// One SDMA transfer in flight (docs/models/npu.md): a copy, reduce-copy or host DMA cut into
// pieces, each reserving its SDMA channel and every port of its path.
#pragma once
#include <cstdint>

#include "models/npu/task.h"
#include "models/time.h"

namespace models {

struct Transfer {
  std::uint32_t stream = 0;
  Task task;
  std::uint64_t done = 0;           // bytes reserved so far
  std::uint64_t bw = 0;
  Tick latency = 0;                 // path latency after the last byte leaves
  Tick earliest = 0;                // first byte may not leave before (SDMA setup)
  std::uint32_t engine = 0, npu = 0;
  int port = -1;                    // link port used, -1 for local
  int port2 = -1;                   // second hop (PCIe peer-to-peer through a switch; root complex)
  int port3 = -1;                   // third hop (host DMA through a PCIe switch and the root complex)
  int hbm_src = -1, hbm_dst = -1;   // HBM ports read and written (the same port twice for a local copy)
  std::uint64_t epoch = 0;          // the stream's epoch when the transfer started
  std::uint32_t inflight = 0;       // piece arrivals scheduled and not yet processed
  bool sending = false;             // a kPieceSent event is scheduled
  bool aborted = false;             // the stream failed or a link died: no more bytes move
};

}  // namespace models
