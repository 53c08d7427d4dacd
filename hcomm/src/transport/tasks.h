// Stream task builders (docs/architecture.md#hcomm): one function per device task the library
// submits. Each returns the driver port's status.
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail {
hcomm_result_t notify_record(hcomm_stream_t s, std::uint32_t target_device, std::uint64_t key);
hcomm_result_t notify_wait(hcomm_stream_t s, std::uint64_t key);
hcomm_result_t copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes);
/// `rows` rows of `width` bytes: row i from src + i * spitch to dst + i * dpitch, one SDMA task.
hcomm_result_t copy_2d(hcomm_stream_t s, std::uint64_t dst, std::uint64_t dpitch, std::uint64_t src, std::uint64_t spitch,
                       std::uint64_t width, std::uint64_t rows);
hcomm_result_t reduce_copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, int dtype, int op);
/// RoCE write src -> dst on `device` under the communicator's connection policy, then (notify)
/// notify `key` there. bytes may be 0. `via`: the device whose NIC receives for the target (its
/// NIC being down, docs/failover.md#nic-borrowing); ~0u: the target's own. The task ends at its
/// doorbell (the stream goes on while the bytes travel; the peer learns of them by the notify),
/// or, with wait_cqe, once the writes are acknowledged (the source may be reused after it).
/// QPs a write of `bytes` is striped over under the policy's multi-QP threshold (num_qp, fewer
/// so that each carries at least the threshold, at least one).
std::uint32_t threshold_qps(const RdmaPolicy& p, std::uint64_t bytes);
/// `qs`: which of the peer's QPs the write is striped over (count 0: the policy's rule, from its
/// first QP; QpSlice).
hcomm_result_t rdma_write(hcomm_stream_t s, std::uint32_t device, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                          bool notify, std::uint64_t key, std::uint32_t rkey, const RdmaPolicy& policy, std::uint32_t via = ~0u,
                          bool wait_cqe = false, QpSlice qs = {});
/// The stream waits until every RDMA write its device posted so far is acknowledged.
hcomm_result_t rdma_fence(hcomm_stream_t s);
}  // namespace hcomm::detail
