#include "coll/common.h"

#include "algo/mesh.h"
#include "core/log.h"
#include "transport/tasks.h"

namespace hcomm::detail {

void run_local_copy(hcomm_comm_t comm, const OpInfo& info, std::uint64_t in, std::uint64_t out, std::uint64_t bytes,
                    hcomm_stream_t main) {
  std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  if (bytes && in != out) copy(main, out, in, bytes);
  op_end(main, mk);
}

hcomm_result_t one_server_mesh(hcomm_comm_t comm, const char* what, ServerGroups* g) {
  hcomm_result_t rc = find_server_groups(comm, g);
  if (rc == HCOMM_SUCCESS && g->servers > 1) {
    logf(comm->ctx, 0, "Rank%u %s across %u servers is not supported yet (one server only)", comm->rank, what, g->servers);
    return HCOMM_E_NOT_SUPPORT;
  }
  if (rc == HCOMM_SUCCESS) rc = mesh_check(comm, g);
  if (rc == HCOMM_SUCCESS) rc = mesh_slaves(comm, *g);
  return rc;
}

}  // namespace hcomm::detail
