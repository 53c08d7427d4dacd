// Requests: test, wait, waitall (docs/architecture.md#hcomm).
#include "p2p/request.h"

#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/stream.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail {

hcomm_result_t make_request(hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req, std::int64_t peer,
                            std::uint32_t tag, std::uint64_t bytes, bool is_send) {
  auto* r = new hcomm_request_s{comm, stream, nullptr, peer, tag, bytes, is_send};
  hcomm_result_t rc = hcomm_create_event(comm->ctx, &r->done);
  if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(r->done, stream);
  if (rc != HCOMM_SUCCESS) { delete r; return rc; }
  track(r, kReq);
  *req = r;
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail

extern "C" {

hcomm_result_t hcomm_test(hcomm_request_t r) {
  if (!live(r, kReq)) return HCOMM_E_UNAVAIL;
  hcomm_result_t q = hcomm_query_event(r->done);
  if (q != HCOMM_SUCCESS) {
    if (port::stream_idle(r->stream)) return hcomm_wait(r);  // failed stream: report it
    return q;
  }
  hcomm_destroy_event(r->done);
  untrack(r);
  delete r;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_wait(hcomm_request_t r) {
  if (!live(r, kReq)) return HCOMM_E_UNAVAIL;
  hcomm_result_t rc = HCOMM_SUCCESS;
  if (hcomm_query_event(r->done) != HCOMM_SUCCESS) rc = sync_timeout(r->stream, r->comm->cfg.timeout_ms);
  if (rc == HCOMM_E_TIMEOUT && r->peer >= 0)
    logf(r->comm->ctx, 0, "Rank%u %s rank %lld (tag %u, %llu bytes) timed out: no matching %s; sizes and tags must match on both sides",
         r->comm->rank, r->is_send ? "send to" : "recv from", (long long)r->peer, r->tag, (unsigned long long)r->bytes,
         r->is_send ? "receive was posted" : "message arrived");
  hcomm_destroy_event(r->done);
  untrack(r);
  delete r;
  return rc;
}

hcomm_result_t hcomm_waitall(uint32_t n, hcomm_request_t* reqs) {
  if (!reqs && n) return HCOMM_E_PTR;
  hcomm_result_t first = HCOMM_SUCCESS;
  for (uint32_t i = 0; i < n; ++i) {
    hcomm_result_t rc = hcomm_wait(reqs[i]);
    if (rc != HCOMM_SUCCESS && first == HCOMM_SUCCESS) first = rc;
  }
  return first;
}

}  // extern "C"
