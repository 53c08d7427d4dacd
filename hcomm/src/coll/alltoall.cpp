// hcomm_alltoall and hcomm_alltoallv (docs/architecture.md#hcomm, docs/algorithms/README.md):
// validate, then the collective runner (coll/run.h).
#include "coll/check.h"
#include "coll/run.h"

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_alltoall(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype, hcomm_comm_t comm,
                                         hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count, live(comm, kComm) ? comm->nranks : 1); rc != HCOMM_SUCCESS)
    return rc;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  if (in == out && count) return HCOMM_E_PARA;  // not in place (HCCL neither)
  CollReq r;
  r.op = CollOp::AllToAll;
  r.kind = "alltoall";
  r.dtype = dtype;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}

extern "C" hcomm_result_t hcomm_alltoallv(const void* in, const uint64_t* send_counts, const uint64_t* send_displs, void* out,
                                          const uint64_t* recv_counts, const uint64_t* recv_displs, hcomm_data_type_t dtype,
                                          hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, 0); rc != HCOMM_SUCCESS) return rc;
  if (hcomm_result_t rc = check_v(comm, send_counts, send_displs, dtype); rc != HCOMM_SUCCESS) return rc;
  if (hcomm_result_t rc = check_v(comm, recv_counts, recv_displs, dtype); rc != HCOMM_SUCCESS) return rc;
  if (!in || !out) return HCOMM_E_PTR;
  if (in == out) return HCOMM_E_PARA;
  CollReq r;
  r.op = CollOp::AllToAll;
  r.kind = "alltoallv";
  r.dtype = dtype;
  r.in = dev(in);
  r.out = dev(out);
  r.counts = recv_counts;
  r.displs = recv_displs;
  r.scounts = send_counts;
  r.sdispls = send_displs;
  return run_collective(comm, stream, r);
}
