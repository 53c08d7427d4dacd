// The NPUs as devices (models/npu/npu_devices.h): names, parameters, HBM.
#include "models/npu/npu_devices.h"

#include <cstdio>

#include "models/npu/address_map.h"

namespace models {

std::uint32_t NpuDevices::add(const NpuParams& p, std::string name) {
  const auto n = static_cast<std::uint32_t>(devs_.size());
  devs_.emplace_back(p, name.empty() ? "npu" + std::to_string(n) : std::move(name));
  shape_.push_back({p.hbm.capacity_bytes, p.hbm.store_bytes});
  return n;
}

bool NpuDevices::check_range(std::uint64_t addr, std::uint64_t len, std::string& why) const {
  if (!addr_is_device(addr) || addr_npu(addr) >= devs_.size()) {
    char b[32];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(addr));
    why = std::string("address 0x") + b + " is not device memory";
    return false;
  }
  if (!SparseMemory::fits(shape_[addr_npu(addr)].capacity, addr_offset(addr), len)) {  // the dense copy
    why = "access of " + std::to_string(len) + " bytes at offset " + std::to_string(addr_offset(addr)) +
          " exceeds HBM of " + devs_[addr_npu(addr)].name;
    return false;
  }
  return true;
}

void NpuDevices::keep_bytes(bool on) {
  if (configured_.empty())
    for (const auto& h : shape_) configured_.push_back(h.stores);
  for (std::size_t i = 0; i < devs_.size(); ++i) {
    shape_[i].stores = on || configured_[i];
    devs_[i].hbm.set_store(shape_[i].stores);
  }
}

}  // namespace models
