// hcomm_barrier (docs/architecture.md#hcomm): validate, run the dissemination barrier, and
// synchronize when the caller gave no stream.
#include "algo/dissemination.h"
#include "core/comm.h"
#include "core/handles.h"
#include "core/objects.h"
#include "core/profile.h"
#include "core/recovery.h"
#include "core/stream.h"

using namespace hcomm;
using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_barrier(hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (hcomm_result_t e = recovery::check(comm); e != HCOMM_SUCCESS) return e;  // docs/failover.md
  hcomm_stream_t s = stream ? stream : comm->internal;
  recovery::uses(comm, s);
  OpInfo info{global_rank(comm, comm->rank), comm->nranks, "barrier", "dissemination", 0, HCOMM_DATA_TYPE_INT8, 0, -1, comm->op_seq++, {}, 0, {}, 0};
  std::uint64_t mk = op_begin(s, info);
  if (hcomm_result_t rc = barrier_dissemination(comm, s); rc != HCOMM_SUCCESS) return rc;
  op_end(s, mk);
  return stream ? HCOMM_SUCCESS : sync_timeout(s, comm->cfg.timeout_ms);
}
