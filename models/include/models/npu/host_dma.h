// Host DMA of the NPUs (docs/models/npu.md#host-dma, docs/models/links.md): HostToDevice and
// DeviceToHost copies over the NPU's PCIe link, or through its PCIe switch and upstream link, and
// the host root complex. HostDma owns each NPU's host paths and the host memory it reaches; the
// SDMA engines move the pieces, HostDma checks a copy when it starts and lands each piece.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/mem/host_memory.h"
#include "models/npu/sdma.h"
#include "models/npu/task.h"
#include "models/time.h"

namespace models {

class Links;
class NpuDevices;

class HostDma {
 public:
  HostDma(Links& links, NpuDevices& devs) : links_(links), devs_(devs) {}
  /// The next NPU, with its own PCIe link to the host (`link`, ports host->device and back).
  void add_npu(std::uint32_t link, std::uint32_t port_h2d, std::uint32_t port_d2h);
  /// Host DMA of `npu` goes through root complex `rc`: over the NPU's own host link, or, when the
  /// NPU sits behind a PCIe switch with an upstream link, through the switch and its upstream.
  void attach(std::uint32_t npu, std::uint32_t rc);
  /// The host memory NPU `npu`'s host DMA reaches (null: host pointers are this process's).
  void set_memory(std::uint32_t npu, HostMemory* m) { npus_.at(npu).mem = m; }
  HostMemory* memory(std::uint32_t npu) const { return npus_.at(npu).mem; }
  /// A host DMA task t starting on a stream of `npu`: check it and set the transfer's path (ports
  /// in travel order) and add the switch latency to `lat`. False with the reason in `why`.
  bool prepare(std::uint32_t npu, const Task& t, Transfer& x, Tick& lat, std::string& why) const;
  /// A piece of a host DMA lands: [off, off + len) of the task's buffer. False when the host's
  /// memory refused it (a bad host pointer).
  bool land(const Task& t, std::uint64_t off, std::uint64_t len);

 private:
  struct Npu {
    std::uint32_t link = 0;                            // the NPU's own PCIe link to the host
    int h2d[3] = {-1, -1, -1}, d2h[3] = {-1, -1, -1};  // paths (ports in travel order)
    HostMemory* mem = nullptr;
  };
  Links& links_;
  NpuDevices& devs_;
  std::vector<Npu> npus_;
  std::vector<std::uint8_t> bounce_;  // land: one piece of a host in another process
};

}  // namespace models
