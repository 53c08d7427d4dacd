// A collective's chunk loop (docs/algorithms/README.md#chunking): the elements
// [from, total) go in chunks of `step`. Every chunk begins once the peers of the last mesh phase
// have read the collective buffer (settle_mesh: any user of the buffer waits for that before
// writing it) and ends, when its body succeeded, with the op retry's resumption point
// (recovery::slice_done). One loop for every chunked shape, so neither step can be forgotten.
#pragma once
#include <algorithm>
#include <cstdint>

#include "algo/mesh.h"
#include "core/recovery.h"

namespace hcomm::detail {

/// Runs body(c0, m) for the chunks [c0, c0 + m) of [from, total), m = min(step, total - c0), in
/// stream order on `main`; the first result other than HCOMM_SUCCESS ends the loop and is returned.
/// A step of 0 (a collective buffer smaller than one element per chunk; the callers' sizing rules
/// out) is HCOMM_E_INTERNAL, not an endless loop.
template <class Body>
hcomm_result_t chunk_loop(hcomm_comm_t comm, hcomm_stream_t main, std::uint64_t from, std::uint64_t total, std::uint64_t step,
                          Body&& body) {
  if (step == 0 && from < total) return HCOMM_E_INTERNAL;
  for (std::uint64_t c0 = from; c0 < total; c0 += step) {
    const std::uint64_t m = std::min(step, total - c0);
    settle_mesh(comm, main);
    if (hcomm_result_t rc = body(c0, m); rc != HCOMM_SUCCESS) return rc;
    recovery::slice_done(comm, main, c0 + m, total);
  }
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
