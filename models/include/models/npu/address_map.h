// The device address map (docs/models/npu.md): device addresses are global; bits 40.. hold
// (npu index + 1), bits 0..39 the offset in that NPU's HBM. Host addresses have zero high bits.
#pragma once
#include <cstdint>

namespace models {

constexpr unsigned kAddrShift = 40;
inline std::uint64_t npu_base_addr(std::uint32_t npu) { return (static_cast<std::uint64_t>(npu) + 1) << kAddrShift; }
inline bool addr_is_device(std::uint64_t a) { return (a >> kAddrShift) != 0; }
inline std::uint32_t addr_npu(std::uint64_t a) { return static_cast<std::uint32_t>((a >> kAddrShift) - 1); }
inline std::uint64_t addr_offset(std::uint64_t a) { return a & ((1ULL << kAddrShift) - 1); }

}  // namespace models
