// hcomm_allgather and hcomm_allgatherv (docs/architecture.md#hcomm, docs/algorithms/README.md):
// validate, then the collective runner (coll/run.h).
#include "coll/check.h"
#include "coll/run.h"

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_allgather(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                                          hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count, live(comm, kComm) ? comm->nranks : 1); rc != HCOMM_SUCCESS)
    return rc;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::AllGather;
  r.kind = "allgather";
  r.dtype = dtype;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}

extern "C" hcomm_result_t hcomm_allgatherv(const void* in, uint64_t send_count, void* out, const uint64_t* recv_counts,
                                           const uint64_t* recv_displs, hcomm_data_type_t dtype, hcomm_comm_t comm,
                                           hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, send_count); rc != HCOMM_SUCCESS) return rc;
  if (hcomm_result_t rc = check_v(comm, recv_counts, recv_displs, dtype); rc != HCOMM_SUCCESS) return rc;
  if (recv_counts[comm->rank] != send_count) return HCOMM_E_PARA;
  if ((!in && send_count) || !out) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::AllGather;
  r.kind = "allgatherv";
  r.dtype = dtype;
  r.in = dev(in);
  r.out = dev(out);
  r.count = send_count;
  r.counts = recv_counts;
  r.displs = recv_displs;
  return run_collective(comm, stream, r);
}
