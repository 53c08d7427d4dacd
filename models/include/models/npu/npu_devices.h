// The NPUs as devices (docs/models/npu.md): each one's name, parameters and HBM (its byte store
// and the port that stands for its bandwidth). Owned by the Machine; the engines (stream engine,
// SDMA, host DMA, RDMA) read it through these accessors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/mem/hbm.h"
#include "models/npu/npu_params.h"

namespace models {

class NpuDevices {
 public:
  /// The next NPU; `hbm_port` is filled in by set_hbm_port once its HBM port exists.
  std::uint32_t add(const NpuParams& p, std::string name);
  std::uint32_t count() const { return static_cast<std::uint32_t>(devs_.size()); }
  const std::string& name(std::uint32_t n) const { return devs_[n].name; }
  const NpuParams& params(std::uint32_t n) const { return devs_[n].params; }
  SparseMemory& hbm(std::uint32_t n) { return devs_[n].hbm; }
  const SparseMemory& hbm(std::uint32_t n) const { return devs_[n].hbm; }
  std::uint32_t hbm_port(std::uint32_t n) const { return devs_[n].hbm_port; }
  void set_hbm_port(std::uint32_t n, std::uint32_t port) { devs_[n].hbm_port = port; }
  /// [addr, addr+len) is device memory inside its NPU's HBM; else false with the reason in `why`.
  bool check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const;
  /// NPU n's HBM keeps the bytes written to it (else a timing payload).
  bool stores(std::uint32_t n) const { return shape_[n].stores; }
  /// Every NPU's HBM keeps the bytes written from now on (on) or only as configured (off).
  void keep_bytes(bool on);

 private:
  struct Device {
    std::string name;  ///< the one name of the device in logs, errors and link names (the topology's)
    NpuParams params;
    SparseMemory hbm;
    std::uint32_t hbm_port = 0;  ///< the HBM's bandwidth, shared by every SDMA read and write of it
    Device(const NpuParams& p, std::string n) : name(std::move(n)), params(p), hbm(p.hbm.capacity_bytes, p.hbm.store_bytes) {}
  };
  std::vector<Device> devs_;
  // Per NPU, what every RDMA write checks of its target's HBM (check_range, stores), in 16 bytes
  // instead of a line of a remote NPU's record: at 8192 NPUs the array stays in cache.
  struct Shape {
    std::uint64_t capacity;
    bool stores;
  };
  std::vector<Shape> shape_;
  std::vector<bool> configured_;  // keep_bytes: the configured Shape::stores
};

}  // namespace models
