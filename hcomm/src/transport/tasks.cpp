// Stream task builders (docs/architecture.md#hcomm).
#include "transport/tasks.h"

#include <algorithm>

#include "driver_port.h"

namespace hcomm::detail {

namespace {
hcomm_result_t sdma(hcomm_stream_t s, DrvTaskKind kind, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, int dtype,
                    int op) {
  DrvTask t;
  t.kind = kind;
  t.dst = dst;
  t.src = src;
  t.bytes = bytes;
  t.dtype = dtype;
  t.op = op;
  return port::submit(s, t);
}
}  // namespace

hcomm_result_t notify_record(hcomm_stream_t s, std::uint32_t target, std::uint64_t key) {
  DrvTask t;
  t.kind = DrvTaskKind::NotifyRecord;
  t.target = target;
  t.key = key;
  return port::submit(s, t);
}
hcomm_result_t notify_wait(hcomm_stream_t s, std::uint64_t key) {
  DrvTask t;
  t.kind = DrvTaskKind::NotifyWait;
  t.key = key;
  return port::submit(s, t);
}
hcomm_result_t copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes) {
  return sdma(s, DrvTaskKind::Copy, dst, src, bytes, 0, 0);
}
hcomm_result_t copy_2d(hcomm_stream_t s, std::uint64_t dst, std::uint64_t dpitch, std::uint64_t src, std::uint64_t spitch,
                       std::uint64_t width, std::uint64_t rows) {
  if (rows <= 1 || (width == spitch && width == dpitch)) return copy(s, dst, src, width * rows);  // contiguous
  DrvTask t;
  t.kind = DrvTaskKind::Copy;
  t.dst = dst;
  t.src = src;
  t.bytes = width * rows;
  t.width = width;
  t.spitch = spitch;
  t.dpitch = dpitch;
  return port::submit(s, t);
}
hcomm_result_t reduce_copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, int dtype, int op) {
  return sdma(s, DrvTaskKind::ReduceCopy, dst, src, bytes, dtype, op);
}
// As HCCL_MULTI_QP_THRESHOLD: a write striped over num_qp QPs would leave a QP less than the
// threshold, so it takes fewer, each carrying at least the threshold; below it, one
// (docs/config.md).
std::uint32_t threshold_qps(const RdmaPolicy& p, std::uint64_t bytes) {
  if (!p.qp_min_bytes) return p.qp_count;
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(p.qp_count, bytes / p.qp_min_bytes)));
}
hcomm_result_t rdma_write(hcomm_stream_t s, std::uint32_t device, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                          bool notify, std::uint64_t key, std::uint32_t rkey, const RdmaPolicy& policy, std::uint32_t via,
                          bool wait_cqe, QpSlice qs) {
  DrvTask t;
  t.kind = DrvTaskKind::RdmaWrite;
  t.target = device;
  t.dst = dst;
  t.src = src;
  t.bytes = bytes;
  t.key = key;
  t.value = notify ? 1 : 0;
  t.rkey = rkey;
  // The Driver interface takes the policy per task; the library sets it once per communicator.
  t.qp_count = threshold_qps(policy, bytes);
  t.qp_base = policy.qp_base;
  if (qs.count && policy.qp_count > 0) {
    t.qp_count = std::min(qs.count, policy.qp_count);
    const std::uint32_t first = qs.first % policy.qp_count;
    if (first + t.qp_count <= policy.qp_count) t.qp_base += first;
  }
  t.rate_cap_Bps = policy.rate_cap_Bps;
  t.retry_count = policy.retry_count;
  t.via = via;
  t.wait_cqe = wait_cqe;
  return port::submit(s, t);
}

hcomm_result_t rdma_fence(hcomm_stream_t s) {
  DrvTask t;
  t.kind = DrvTaskKind::RdmaFence;
  return port::submit(s, t);
}

}  // namespace hcomm::detail
