// hcomm_allreduce (docs/architecture.md#hcomm, docs/algorithms/README.md): validate, then the
// collective runner (coll/run.h) selects and runs the algorithm.
#include "coll/check.h"
#include "coll/run.h"

using namespace hcomm::detail;

extern "C" hcomm_result_t hcomm_allreduce(const void* in, void* out, uint64_t count, hcomm_data_type_t dtype,
                                          hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream) {
  if (hcomm_result_t rc = check_coll(comm, stream, dtype, count); rc != HCOMM_SUCCESS) return rc;
  if (!valid_op(op)) return HCOMM_E_PARA;
  if ((!in || !out) && count) return HCOMM_E_PTR;
  CollReq r;
  r.op = CollOp::AllReduce;
  r.kind = "allreduce";
  r.dtype = dtype;
  r.redop = op;
  r.in = dev(in);
  r.out = dev(out);
  r.count = count;
  return run_collective(comm, stream, r);
}
