// hcomm_allreduce (docs/architecture.md#hcomm): validate, select the algorithm from the
// communicator's shape, run it between the operation's begin/end markers.
//   one rank                  -> a local copy
//   one server (S = 1)        -> algo/mesh
//   several servers (S > 1)   -> algo/hierarchical (mesh inside servers, ring across; a plain ring
//                                 with one rank per server)
#include "algo/groups.h"
#include "coll/common.h"
#include "algo/hierarchical.h"
#include "algo/mesh.h"
#include "algo/ring.h"
#include "core/handles.h"
#include "core/objects.h"
#include "core/profile.h"
#include "core/types.h"
#include "transport/tasks.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace {

hcomm_result_t run_allreduce(hcomm_comm_t comm, std::uint64_t in, std::uint64_t out, std::uint64_t count, int dtype, int op,
                             hcomm_stream_t main) {
  const std::uint32_t p = comm->nranks;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  OpInfo info{comm->rank, p, "allreduce", "mesh", count * esz, dtype, op, -1, comm->op_seq};
  if (p == 1) {
    run_local_copy(comm, info, in, out, count * esz, main);
    return HCOMM_SUCCESS;
  }
  ServerGroups g;
  hcomm_result_t rc = find_server_groups(comm, &g);
  if (rc == HCOMM_SUCCESS) rc = mesh_check(comm, &g);
  if (rc != HCOMM_SUCCESS) return rc;
  if (g.servers > 1) info.algorithm = g.size > 1 ? "mesh+ring" : "ring";
  std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  rc = g.servers > 1 ? allreduce_hierarchical(comm, g, kRing, in, out, count, dtype, op, main)
                     : allreduce_mesh(comm, g, in, out, count, dtype, op, main);
  if (rc != HCOMM_SUCCESS) return rc;
  op_end(main, mk);
  return HCOMM_SUCCESS;
}

}  // namespace

extern "C" hcomm_result_t hcomm_allreduce(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                                          hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype) || op < HCOMM_REDUCE_SUM || op > HCOMM_REDUCE_MIN) return HCOMM_E_PARA;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  return run_allreduce(comm, dev(in), dev(out), count, dtype, op, stream);
}
