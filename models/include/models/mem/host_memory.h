// The host memory an NPU's host DMA reads and writes (docs/models/npu.md#host-dma). By default a
// task's host pointer is an address of the simulator's own process; under hcsim exec the host is
// the rank's own OS process, and an accessor reaches its address space (sim/src/exec/).
#pragma once
#include <cstdint>

namespace models {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  /// Copy len bytes at host address `addr` into dst; false when the host cannot read them there.
  virtual bool read(std::uint64_t addr, void* dst, std::uint64_t len) = 0;
  /// Copy len bytes from src to host address `addr`; false when the host cannot write them there.
  virtual bool write(std::uint64_t addr, const void* src, std::uint64_t len) = 0;
};

}  // namespace models
