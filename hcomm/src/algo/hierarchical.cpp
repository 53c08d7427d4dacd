// Hierarchical all-reduce (docs/architecture.md#hcomm): the mesh reduce-scatter leaves each rank
// with its server's reduction of slice l; the ranks with the same local index l on every server
// (one NIC rail) all-reduce that slice with a ring over RoCE; the mesh all-gather finishes.
// Chunks are half the collective buffer: the other half stages the ring's blocks.
#include "algo/hierarchical.h"

#include "algo/mesh.h"
#include "algo/ring.h"

namespace hcomm::detail {

hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                                      std::uint64_t count, int dtype, int op, hcomm_stream_t main) {
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t area = comm->ctx->ccl_bytes / 2;
  const std::uint32_t pos = g.first / g.size;  // my server's place on the rail
  auto ring = [&](std::uint64_t slice_addr, std::uint64_t slice_bytes) {
    ring_allreduce(comm, main, g.rail, pos, slice_addr, slice_bytes, esz, dtype, op, area);
  };
  return mesh_chunks(comm, g, in, out, count, dtype, op, main, area, ring);
}

}  // namespace hcomm::detail
