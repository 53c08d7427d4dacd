// hcomm_batch_send_recv (docs/architecture.md#hcomm): HCCL's HcclBatchSendRecv over the
// point-to-point path. Sends go in increasing (peer - rank) mod n, receives in increasing
// (rank - peer) mod n (a stable sort keeps items between one pair in order), so two ranks'
// batches never wait on each other in a cycle. The requests are kept on the communicator and
// released once complete (at later batches, at destroy or at hcomm_finalize).
#include <algorithm>
#include <limits>
#include <vector>

#include "core/handles.h"
#include "core/objects.h"
#include "core/types.h"

using namespace hcomm::detail;

namespace {
constexpr std::uint32_t kBatchTag = (1u << 26) - 2;  // reserved: below the p2p maximum tag
}

extern "C" hcomm_result_t hcomm_batch_send_recv(const hcomm_send_recv_item_t* items, uint32_t n_items, hcomm_comm_t comm,
                                                hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!items && n_items) return HCOMM_E_PTR;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  const std::uint32_t n = comm->nranks, me = comm->rank;
  for (std::uint32_t i = 0; i < n_items; ++i) {
    const auto& it = items[i];
    if ((it.type != HCOMM_SEND && it.type != HCOMM_RECV) || !valid_dtype(it.dtype) || it.remote_rank >= n ||
        it.remote_rank == me)
      return HCOMM_E_PARA;
    if (!it.buf && it.count) return HCOMM_E_PTR;
    if (it.count > std::numeric_limits<std::uint64_t>::max() / hcomm_data_type_size(it.dtype)) return HCOMM_E_PARA;
  }
  // Release the requests of earlier batches that are done.
  auto& held = comm->batch_reqs;
  held.erase(std::remove_if(held.begin(), held.end(), [](hcomm_request_t r) { return hcomm_test(r) != HCOMM_E_AGAIN; }),
             held.end());
  std::vector<const hcomm_send_recv_item_t*> order;
  for (std::uint32_t i = 0; i < n_items; ++i) order.push_back(&items[i]);
  auto dist = [&](const hcomm_send_recv_item_t* it) {
    return it->type == HCOMM_SEND ? (it->remote_rank + n - me) % n : (me + n - it->remote_rank) % n;
  };
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) {
    if (a->type != b->type) return a->type == HCOMM_RECV;  // receives posted first: their READYs go out early
    return dist(a) < dist(b);
  });
  for (const auto* it : order) {
    hcomm_request_t rq = nullptr;
    const hcomm_result_t rc = it->type == HCOMM_SEND
                                  ? hcomm_isend(it->buf, it->count, it->dtype, it->remote_rank, kBatchTag, comm, stream, &rq)
                                  : hcomm_irecv(it->buf, it->count, it->dtype, it->remote_rank, kBatchTag, comm, stream, &rq);
    if (rc != HCOMM_SUCCESS) return rc;
    held.push_back(rq);
  }
  return HCOMM_SUCCESS;
}
