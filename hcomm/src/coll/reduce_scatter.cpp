// hcomm_reduce_scatter and hcomm_reduce_scatterv (docs/architecture.md#hcomm,
// docs/algorithms/README.md): validate, then the collective runner (coll/run.h).
#include "coll/check.h"
#include "coll/run.h"

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_reduce_scatter(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                                               hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count, live(comm, kComm) ? comm->nranks : 1); rc != HCOMM_SUCCESS)
    return rc;
  if (!valid_op(op)) return HCOMM_E_PARA;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::ReduceScatter;
  r.kind = "reduce_scatter";
  r.dtype = dtype;
  r.redop = op;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}

extern "C" hcomm_result_t hcomm_reduce_scatterv(const void* in, const uint64_t* send_counts, const uint64_t* send_displs,
                                                void* out, uint64_t recv_count, hcomm_data_type_t dtype, hcomm_reduce_op_t op,
                                                hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, recv_count); rc != HCOMM_SUCCESS) return rc;
  if (!valid_op(op)) return HCOMM_E_PARA;
  if (hcomm_result_t rc = check_v(comm, send_counts, send_displs, dtype); rc != HCOMM_SUCCESS) return rc;
  if (send_counts[comm->rank] != recv_count) return HCOMM_E_PARA;
  if (!in || (!out && recv_count)) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::ReduceScatter;
  r.kind = "reduce_scatterv";
  r.dtype = dtype;
  r.redop = op;
  r.in = dev(in);
  r.out = dev(out);
  r.count = recv_count;
  r.counts = send_counts;
  r.displs = send_displs;
  return run_collective(comm, stream, r);
}
