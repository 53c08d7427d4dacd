// Hierarchical all-reduce (docs/architecture.md#hcomm, docs/algorithms/README.md): the mesh
// reduce-scatter leaves each rank with its server's reduction of slice l; the ranks with the same
// local index l on every server (one NIC rail) all-reduce that slice with the level-1 family's
// plan; the mesh all-gather finishes. With L ranks per server a chunk's slice is 1/L of it, and no
// level-1 family stages more than half a slice per slot, so a chunk takes L / (L + slots / 2) of
// the collective buffer and the slots the rest (8 ranks, 2 slots: 8/9 of it, a 1 GiB all-reduce in
// 5 chunks of a 256 MiB buffer instead of 8 halves). One rank per server: half and half.
#include "algo/hierarchical.h"

#include "algo/chunk_loop.h"
#include "algo/exec.h"
#include "algo/mesh.h"
#include "algo/passes.h"
#include "core/recovery.h"
#include "transport/tasks.h"

#include <algorithm>

namespace hcomm::detail {

hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, std::uint64_t in,
                                      std::uint64_t out, std::uint64_t count, int dtype, int op, hcomm_stream_t main) {
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t ccl = comm->ctx->ccl_bytes, slots = level1.slots ? level1.slots : 2;
  const std::uint64_t area = passes::hier_allreduce_area(ccl, g.size, slots, esz);
  const Members rail{g.index, g.size, g.servers};
  hcomm_result_t rc = HCOMM_SUCCESS;
  auto middle = [&](std::uint64_t slice_addr, std::uint64_t slice_bytes) {
    if (rc != HCOMM_SUCCESS) return;
    PlanIn pi;
    pi.op = CollOp::AllReduce;
    pi.n = g.servers;
    pi.me = g.first / g.size;  // my server's place on the rail
    pi.esz = esz;
    pi.w = slice_addr;
    pi.bytes = slice_bytes;
    rc = run_family(comm, main, level1, rail, pi, area, dtype, op);
  };
  if (g.size == 1) {  // one rank per server: the level-1 plan over the whole buffer, in chunks
    return chunk_loop(comm, main, 0, count, area / esz, [&](std::uint64_t c0, std::uint64_t m) {
      copy(main, comm->ctx->ccl_addr, in + c0 * esz, m * esz);
      middle(comm->ctx->ccl_addr, m * esz);
      if (rc == HCOMM_SUCCESS) copy(main, out + c0 * esz, comm->ctx->ccl_addr, m * esz);
      return rc;
    });
  }
  hcomm_result_t mrc = mesh_chunks(comm, g, in, out, count, dtype, op, main, area, middle);
  return mrc != HCOMM_SUCCESS ? mrc : rc;
}

}  // namespace hcomm::detail
