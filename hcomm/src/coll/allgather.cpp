// hcomm_allgather (docs/architecture.md#hcomm, docs/algorithms.md): validate, select the algorithm
// from the communicator's shape, run it between the operation's begin/end markers.
//   one rank                  -> a local copy
//   one server (S = 1)        -> algo/mesh's all-gather phase, in chunks of the collective buffer
//   several servers (S > 1)   -> not yet: HCOMM_E_NOT_SUPPORT, logged
#include <algorithm>
#include <limits>

#include "algo/groups.h"
#include "coll/common.h"
#include "algo/mesh.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/profile.h"
#include "core/types.h"
#include "transport/tasks.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace {

hcomm_result_t run_allgather(hcomm_comm_t comm, std::uint64_t in, std::uint64_t out, std::uint64_t count, int dtype,
                             hcomm_stream_t main) {
  const std::uint32_t p = comm->nranks;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  OpInfo info{comm->rank, p, "allgather", "mesh", count * esz, dtype, 0, -1, comm->op_seq};
  if (p == 1) {
    run_local_copy(comm, info, in, out, count * esz, main);
    return HCOMM_SUCCESS;
  }
  ServerGroups g;
  if (hcomm_result_t rc = one_server_mesh(comm, "all-gather", &g); rc != HCOMM_SUCCESS) return rc;
  std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  // Chunks of m elements per rank: each rank stages its block at the start of its CCL, every
  // peer pulls it into out[q * count + c0].
  const std::uint32_t L = g.size;
  const std::uint64_t chunk_elems = std::max<std::uint64_t>(1, comm->ctx->ccl_bytes / esz);
  MeshChunk c(L);
  for (std::uint64_t c0 = 0; c0 < count; c0 += chunk_elems) {
    const std::uint64_t m = std::min(chunk_elems, count - c0);
    for (std::uint32_t q = 0; q < L; ++q) {
      c.len[q] = m * esz;
      c.ccl[q] = 0;
      c.in[q] = in + c0 * esz;
      c.out[q] = out + ((g.first + q) * count + c0) * esz;
    }
    mesh_all_gather(comm, g, c, main, false);
  }
  op_end(main, mk);
  return HCOMM_SUCCESS;
}

}  // namespace

extern "C" hcomm_result_t hcomm_allgather(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                                          hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype)) return HCOMM_E_PARA;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  if (count > std::numeric_limits<std::uint64_t>::max() / comm->nranks / hcomm_data_type_size(dtype)) return HCOMM_E_PARA;
  return run_allgather(comm, dev(in), dev(out), count, dtype, stream);
}
