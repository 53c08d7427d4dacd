// Buffer pools (docs/architecture.md#hcomm): a buffer released while a transfer from it is in
// flight comes back only when that transfer is done (acquire semantics in hcomm.h).
#include <cstdlib>

#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/stream.h"

using namespace hcomm::detail;

namespace {

void pool_reclaim(hcomm_buffer_pool_t p, std::size_t i) {
  hcomm_destroy_event(p->ev[i]);
  p->ev[i] = nullptr;
  p->stream[i] = nullptr;
  p->state[i] = hcomm_buffer_pool_s::kFree;
}

}  // namespace

extern "C" {

hcomm_result_t hcomm_create_buffer_pool(hcomm_context_t ctx, uint32_t num, uint64_t size, hcomm_memory_type_t type,
                                        hcomm_buffer_pool_t* out) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  if (num == 0) num = static_cast<uint32_t>(ctx->pool_buffers);  // buffer_pool_size (docs/config.md)
  if (num > 65536 || size == 0 || (type != HCOMM_MEMORY_TYPE_DEVICE && type != HCOMM_MEMORY_TYPE_HOST)) return HCOMM_E_PARA;
  auto* p = new hcomm_buffer_pool_s;
  p->ctx = ctx;
  p->type = type;
  p->size = size;
  for (uint32_t i = 0; i < num; ++i) {
    void* a = nullptr;
    if (type == HCOMM_MEMORY_TYPE_DEVICE) {
      if (hcomm_malloc(ctx, size, &a) != HCOMM_SUCCESS) a = nullptr;
    } else {
      a = std::malloc(size);
    }
    if (!a) {
      for (void* b : p->addr) type == HCOMM_MEMORY_TYPE_DEVICE ? (void)hcomm_free(ctx, b) : std::free(b);
      delete p;
      return HCOMM_E_MEMORY;
    }
    p->addr.push_back(a);
  }
  p->state.assign(num, hcomm_buffer_pool_s::kFree);
  p->ev.assign(num, nullptr);
  p->stream.assign(num, nullptr);
  p->order.assign(num, 0);
  track(p, kPool);
  *out = p;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_pool_acquire(hcomm_buffer_pool_t p, uint32_t timeout_ms, hcomm_buffer_t* buf) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!buf) return HCOMM_E_PTR;
  const std::size_t n = p->addr.size();
  std::size_t pick = n, oldest = n;
  for (std::size_t i = 0; i < n && pick == n; ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending && hcomm_query_event(p->ev[i]) == HCOMM_SUCCESS) pool_reclaim(p, i);
    if (p->state[i] == hcomm_buffer_pool_s::kFree) pick = i;
    else if (p->state[i] == hcomm_buffer_pool_s::kPending && (oldest == n || p->order[i] < p->order[oldest])) oldest = i;
  }
  if (pick == n) {
    if (oldest == n) {
      logf(p->ctx, 1, "buffer pool empty: all %zu buffers are acquired", n);
      return HCOMM_E_UNAVAIL;
    }
    // Wait for the oldest released buffer's transfer (the stream's work up to its release).
    hcomm_result_t rc = hcomm_query_event(p->ev[oldest]) == HCOMM_SUCCESS ? HCOMM_SUCCESS : sync_timeout(p->stream[oldest], timeout_ms);
    if (rc != HCOMM_SUCCESS) return rc;
    pool_reclaim(p, oldest);
    pick = oldest;
  }
  p->state[pick] = hcomm_buffer_pool_s::kOut;
  *buf = hcomm_buffer_t{p->addr[pick], p->size, static_cast<uint32_t>(pick)};
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_pool_release(hcomm_buffer_pool_t p, const hcomm_buffer_t* buf, hcomm_stream_t stream) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!buf) return HCOMM_E_PTR;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (buf->index >= p->addr.size() || p->addr[buf->index] != buf->addr || p->state[buf->index] != hcomm_buffer_pool_s::kOut)
    return HCOMM_E_PARA;
  if (!stream) { p->state[buf->index] = hcomm_buffer_pool_s::kFree; return HCOMM_SUCCESS; }
  hcomm_event_t e = nullptr;
  hcomm_result_t rc = hcomm_create_event(p->ctx, &e);
  if (rc == HCOMM_SUCCESS) rc = hcomm_record_event(e, stream);
  if (rc != HCOMM_SUCCESS) { if (e) hcomm_destroy_event(e); return rc; }
  p->state[buf->index] = hcomm_buffer_pool_s::kPending;
  p->ev[buf->index] = e;
  p->stream[buf->index] = stream;
  p->order[buf->index] = ++p->seq;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_buffer_pool_available(hcomm_buffer_pool_t p, uint32_t* n) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  if (!n) return HCOMM_E_PTR;
  *n = 0;
  for (std::size_t i = 0; i < p->addr.size(); ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending && hcomm_query_event(p->ev[i]) == HCOMM_SUCCESS) pool_reclaim(p, i);
    if (p->state[i] == hcomm_buffer_pool_s::kFree) ++*n;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_destroy_buffer_pool(hcomm_buffer_pool_t p) {
  if (!live(p, kPool)) return HCOMM_E_UNAVAIL;
  std::size_t out = 0;
  for (auto s : p->state) out += s == hcomm_buffer_pool_s::kOut;
  if (out) {
    logf(p->ctx, 0, "buffer pool destroy: %zu buffers are still acquired", out);
    return HCOMM_E_AGAIN;
  }
  for (std::size_t i = 0; i < p->addr.size(); ++i) {
    if (p->state[i] == hcomm_buffer_pool_s::kPending) {
      if (hcomm_query_event(p->ev[i]) != HCOMM_SUCCESS) sync_timeout(p->stream[i], p->ctx->timeout_ns / 1000000);
      pool_reclaim(p, i);
    }
    if (p->type == HCOMM_MEMORY_TYPE_DEVICE) hcomm_free(p->ctx, p->addr[i]);
    else std::free(p->addr[i]);
  }
  untrack(p);
  delete p;
  return HCOMM_SUCCESS;
}

}  // extern "C"
