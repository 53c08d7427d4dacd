// hcomm_batch_send_recv (docs/architecture.md#hcomm): HCCL's HcclBatchSendRecv over the
// point-to-point path. Sends go in increasing (peer - rank) mod n, receives in increasing
// (rank - peer) mod n (a stable sort keeps items between one pair in order), on two helper
// streams forked from the user's stream and joined back into it, so two ranks' batches never
// wait on each other in a cycle. The requests are kept on the communicator and
// released once complete (at later batches, at destroy or at hcomm_finalize).
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/handles.h"
#include "core/objects.h"
#include "core/recovery.h"
#include "core/stream.h"
#include "core/types.h"

using namespace hcomm::detail;

namespace {
static_assert(sizeof(hcomm_send_recv_type_t) == sizeof(int) && sizeof(hcomm_data_type_t) == sizeof(int),
              "the item's enum fields are read as ints");
constexpr std::uint32_t kBatchTag = (1u << 26) - 2;  // reserved: below the p2p maximum tag
}

extern "C" hcomm_result_t hcomm_batch_send_recv(const hcomm_send_recv_item_t* items, uint32_t n_items, hcomm_comm_t comm,
                                                hcomm_stream_t stream) {
  if (!live(comm, kComm) || !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (hcomm_result_t e = recovery::check(comm); e != HCOMM_SUCCESS) return e;  // docs/failover.md
  recovery::uses(comm, stream);
  if (!items && n_items) return HCOMM_E_PTR;
  if (stream->ctx != comm->ctx) return HCOMM_E_PARA;
  const std::uint32_t n = comm->nranks, me = comm->rank;
  for (std::uint32_t i = 0; i < n_items; ++i) {
    const auto& it = items[i];
    // A C caller may store any int in the enum fields: read them as ints (loading an
    // out-of-range enum value is undefined in C++).
    int type = 0, dtype = 0;
    std::memcpy(&type, &it.type, sizeof type);
    std::memcpy(&dtype, &it.dtype, sizeof dtype);
    if ((type != HCOMM_SEND && type != HCOMM_RECV) || !valid_dtype(dtype) || it.remote_rank >= n || it.remote_rank == me)
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
    if (a->type != b->type) return a->type == HCOMM_RECV;
    return dist(a) < dist(b);
  });
  // Sends and receives each on their own helper stream, forked from and joined back into the
  // user's stream: a send waits on the device for its receiver's READY, so on one stream the
  // batch's sends and receives would wait for each other across ranks.
  hcomm_context_t ctx = comm->ctx;
  for (hcomm_stream_t* h : {&comm->batch_send, &comm->batch_recv})
    if (!*h && make_stream(ctx, h) != HCOMM_SUCCESS) return HCOMM_E_DRV;
  hcomm_event_t fork = nullptr, js = nullptr, jr = nullptr;
  hcomm_create_event(ctx, &fork);
  hcomm_create_event(ctx, &js);
  hcomm_create_event(ctx, &jr);
  hcomm_record_event(fork, stream);
  hcomm_wait_event(fork, comm->batch_send);
  hcomm_wait_event(fork, comm->batch_recv);
  hcomm_result_t rc = HCOMM_SUCCESS;
  for (const auto* it : order) {
    hcomm_request_t rq = nullptr;
    rc = it->type == HCOMM_SEND
             ? hcomm_isend(it->buf, it->count, it->dtype, it->remote_rank, kBatchTag, comm, comm->batch_send, &rq)
             : hcomm_irecv(it->buf, it->count, it->dtype, it->remote_rank, kBatchTag, comm, comm->batch_recv, &rq);
    if (rc != HCOMM_SUCCESS) break;
    held.push_back(rq);
  }
  hcomm_record_event(js, comm->batch_send);
  hcomm_record_event(jr, comm->batch_recv);
  hcomm_wait_event(js, stream);
  hcomm_wait_event(jr, stream);
  hcomm_destroy_event(fork);
  hcomm_destroy_event(js);
  hcomm_destroy_event(jr);
  if (rc != HCOMM_SUCCESS) return rc;
  return HCOMM_SUCCESS;
}
