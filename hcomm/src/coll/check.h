// Argument checks every collective entry shares (docs/architecture.md#hcomm).
#pragma once
#include <cstdint>
#include <limits>

#include "core/handles.h"
#include "core/objects.h"
#include "core/types.h"

namespace hcomm::detail {

/// Handles alive (HCOMM_E_UNAVAIL), dtype valid and stream on the communicator's context
/// (HCOMM_E_PARA), and `elems` elements addressable (HCOMM_E_PARA on overflow).
inline hcomm_result_t check_coll(hcomm_comm_t comm, hcomm_stream_t stream, int dtype, std::uint64_t elems,
                                 std::uint64_t times = 1) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype)) return HCOMM_E_PARA;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  if (times && elems > std::numeric_limits<std::uint64_t>::max() / times / esz) return HCOMM_E_PARA;
  return HCOMM_SUCCESS;
}
inline bool valid_op(int op) { return op >= HCOMM_REDUCE_SUM && op <= HCOMM_REDUCE_MIN; }

/// The -v arrays: non-null (HCOMM_E_PTR) with a total that does not overflow (HCOMM_E_PARA).
inline hcomm_result_t check_v(hcomm_comm_t comm, const std::uint64_t* counts, const std::uint64_t* displs, int dtype) {
  if (!counts || !displs) return HCOMM_E_PTR;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t lim = std::numeric_limits<std::uint64_t>::max() / esz / 2;
  for (std::uint32_t j = 0; j < comm->nranks; ++j)
    if (counts[j] > lim || displs[j] > lim) return HCOMM_E_PARA;
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
