// hcomm_broadcast, hcomm_reduce and hcomm_scatter (docs/architecture.md#hcomm,
// docs/algorithms/README.md): validate (root in range), then the collective runner (coll/run.h).
#include "coll/check.h"
#include "coll/run.h"

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_broadcast(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t root, hcomm_comm_t comm,
                                          hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count); rc != HCOMM_SUCCESS) return rc;
  if (root >= comm->nranks) return HCOMM_E_PARA;
  if (!buf && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::Broadcast;
  r.kind = "broadcast";
  r.dtype = dtype;
  r.root = root;
  r.in = r.out = dev(buf);
  r.count = count;
  return run_collective(comm, stream, r);
}

extern "C" hcomm_result_t hcomm_reduce(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype, hcomm_reduce_op_t op,
                                       uint32_t root, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count); rc != HCOMM_SUCCESS) return rc;
  if (!valid_op(op) || root >= comm->nranks) return HCOMM_E_PARA;
  if ((!in || (!out && comm->rank == root)) && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::Reduce;
  r.kind = "reduce";
  r.dtype = dtype;
  r.redop = op;
  r.root = root;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}

extern "C" hcomm_result_t hcomm_scatter(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype, uint32_t root,
                                        hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count, live(comm, kComm) ? comm->nranks : 1); rc != HCOMM_SUCCESS)
    return rc;
  if (root >= comm->nranks) return HCOMM_E_PARA;
  if (((!in && comm->rank == root) || !out) && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::Scatter;
  r.kind = "scatter";
  r.dtype = dtype;
  r.root = root;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}
