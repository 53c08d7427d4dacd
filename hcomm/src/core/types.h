// Small helpers over the public types (docs/architecture.md#hcomm).
#pragma once
#include <cstdint>

#include "hcomm/hcomm.h"

namespace hcomm::detail {

/// A device pointer of the API as a device address.
inline std::uint64_t dev(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

inline bool valid_dtype(int t) {
  switch (t) {
    case HCOMM_DATA_TYPE_INT8: case HCOMM_DATA_TYPE_INT16: case HCOMM_DATA_TYPE_INT32: case HCOMM_DATA_TYPE_INT64:
    case HCOMM_DATA_TYPE_FP16: case HCOMM_DATA_TYPE_BFP16: case HCOMM_DATA_TYPE_FP32: case HCOMM_DATA_TYPE_FP64:
      return true;
    default: return false;
  }
}

}  // namespace hcomm::detail
