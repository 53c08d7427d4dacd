// Streams and events (docs/architecture.md#hcomm): thin handles over driver streams; an event is
// an id plus a host-side record count, recorded and waited on by stream tasks.
#include "core/stream.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/recovery.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail {

std::uint64_t new_event_id(hcomm_context_t ctx) { return ctx->next_event++; }

hcomm_result_t make_stream(hcomm_context_t ctx, hcomm_stream_t* out) {
  std::uint32_t id = 0;
  if (port::stream_create(ctx, &id) != HCOMM_SUCCESS) return HCOMM_E_DRV;
  auto* s = new hcomm_stream_s{ctx, id, {}};
  track(s, kStream);
  *out = s;
  return HCOMM_SUCCESS;
}

hcomm_result_t sync_timeout(hcomm_stream_t s, std::uint64_t timeout_ms) {
  const std::uint64_t deadline = port::now_ns(s->ctx) + timeout_ms * 1000000ULL;
  // HCOMM_HEARTBEAT_TIMEOUT_MS (docs/failover.md#heartbeat): wait in periods of it and check
  // that the device made progress in each; 0 (the default) waits in one piece.
  const std::uint64_t hb_ns = recovery::heartbeat_ns(s);
  // A NIC port event owed to work across servers (docs/failover.md#nic-port-event).
  if (hcomm_result_t o = recovery::owed_port_event(s); o != HCOMM_E_AGAIN) return o;
  // A port-down event taken while reading the host's other events (recovery::check) interrupts
  // this synchronize at once, as the undelivered event would have.
  if (!s->ctx->rec.port_stash.empty()) {
    if (hcomm_result_t o = recovery::on_sync_failure(s, HCOMM_E_REMOTE, ""); o != HCOMM_E_AGAIN) return o;
  }
  std::uint64_t last_done = 0;
  bool have_last = false;
  for (;;) {
    std::string err;
    const std::uint64_t now = port::now_ns(s->ctx);
    const std::uint64_t left = deadline > now ? deadline - now : 0;
    hcomm_result_t rc = port::stream_synchronize(s, hb_ns && hb_ns < left ? hb_ns : left, &err);
    if (rc == HCOMM_E_TIMEOUT && hb_ns && hb_ns < left) {
      std::uint64_t done = 0;
      bool head_not_started = false;
      if (port::device_progress(s->ctx, &done, &head_not_started) != HCOMM_SUCCESS) continue;
      if (!have_last || done != last_done || !head_not_started) {  // progress, or waiting on a peer
        last_done = done;
        have_last = true;
        continue;
      }
      char why[160];
      std::snprintf(why, sizeof why, "heartbeat: device %u STUCK (no task completed for %llu ms and its engine starts none)",
                    s->ctx->device_id, static_cast<unsigned long long>(hb_ns / 1000000));
      logf(s->ctx, 0, "Device%u stream %u %s", s->ctx->device_id, s->id, why);
      rc = recovery::on_sync_failure(s, HCOMM_E_RUNTIME, why);
      if (rc == HCOMM_E_AGAIN) { have_last = false; continue; }
      return rc;
    }
    switch (rc) {
      case HCOMM_SUCCESS: recovery::synced(s); return HCOMM_SUCCESS;
      case HCOMM_E_TIMEOUT:
        logf(s->ctx, 0, "Device%u stream %u synchronize timed out after %llu ms%s%s", s->ctx->device_id, s->id,
             (unsigned long long)timeout_ms, err.empty() ? "" : ": ", err.c_str());
        return HCOMM_E_TIMEOUT;
      case HCOMM_E_REMOTE:  // an urgent control message or a device event interrupted the wait (docs/failover.md)
        rc = recovery::on_sync_failure(s, rc, err);
        if (rc == HCOMM_E_AGAIN) continue;
        if (rc == HCOMM_E_REMOTE) logf(s->ctx, 0, "Device%u stream %u synchronize: aborted by a peer's report", s->ctx->device_id, s->id);
        return rc;
      default:
        logf(s->ctx, 0, "Device%u stream %u task failed: %s", s->ctx->device_id, s->id, err.c_str());
        rc = recovery::on_sync_failure(s, HCOMM_E_RUNTIME, err);
        if (rc == HCOMM_E_AGAIN) continue;  // re-executed (op retry): wait for what is left on the stream
        return rc;
    }
  }
}

}  // namespace hcomm::detail

extern "C" {

hcomm_result_t hcomm_create_stream(hcomm_context_t ctx, hcomm_stream_t* s) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!s) return HCOMM_E_PTR;
  return make_stream(ctx, s);
}
hcomm_result_t hcomm_destroy_stream(hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  port::stream_destroy(s);
  untrack(s);
  delete s;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_stream_synchronize(hcomm_stream_t s) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  return sync_timeout(s, s->ctx->timeout_ns / 1000000);
}

hcomm_result_t hcomm_launch_compute(hcomm_stream_t s, std::uint64_t duration_ns) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (duration_ns == 0) return HCOMM_E_PARA;
  DrvTask t;
  t.kind = DrvTaskKind::Compute;
  t.value = duration_ns;
  return port::submit(s, t);
}
hcomm_result_t hcomm_launch_compute_flops(hcomm_stream_t s, double flops, hcomm_data_type_t dtype, double efficiency) {
  if (!live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (!(flops > 0) || !std::isfinite(flops) || !(efficiency > 0) || efficiency > 1) return HCOMM_E_PARA;
  if (dtype != HCOMM_DATA_TYPE_FP16 && dtype != HCOMM_DATA_TYPE_BFP16 && dtype != HCOMM_DATA_TYPE_FP32 && dtype != HCOMM_DATA_TYPE_INT8)
    return HCOMM_E_NOT_SUPPORT;  // the AI cores' matrix units: no peak for other types
  DrvTask t;
  t.kind = DrvTaskKind::Compute;
  t.flops = flops;
  t.efficiency = efficiency;
  t.dtype = dtype;
  return port::submit(s, t);
}

hcomm_result_t hcomm_create_event(hcomm_context_t ctx, hcomm_event_t* ev) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!ev) return HCOMM_E_PTR;
  auto* e = new hcomm_event_s{ctx, new_event_id(ctx), 0};
  track(e, kEvent);
  *ev = e;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_destroy_event(hcomm_event_t ev) {
  if (!live(ev, kEvent)) return HCOMM_E_UNAVAIL;
  untrack(ev);
  delete ev;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_record_event(hcomm_event_t ev, hcomm_stream_t s) {
  if (!live(ev, kEvent) || !live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (ev->ctx != s->ctx) return HCOMM_E_PARA;
  DrvTask t;
  t.kind = DrvTaskKind::EventRecord;
  t.key = ev->id;
  t.value = ++ev->recorded;
  return port::submit(s, t);
}
hcomm_result_t hcomm_wait_event(hcomm_event_t ev, hcomm_stream_t s) {
  if (!live(ev, kEvent) || !live(s, kStream)) return HCOMM_E_UNAVAIL;
  if (ev->ctx != s->ctx) return HCOMM_E_PARA;
  if (ev->recorded == 0) return HCOMM_SUCCESS;  // never recorded: nothing to wait for
  DrvTask t;
  t.kind = DrvTaskKind::EventWait;
  t.key = ev->id;
  t.value = ev->recorded;
  return port::submit(s, t);
}
hcomm_result_t hcomm_query_event(hcomm_event_t ev) {
  if (!live(ev, kEvent)) return HCOMM_E_UNAVAIL;
  return port::event_completed(ev) >= ev->recorded ? HCOMM_SUCCESS : HCOMM_E_AGAIN;
}
hcomm_result_t hcomm_event_elapsed_time(hcomm_event_t a, hcomm_event_t b, float* ms) {
  if (!live(a, kEvent) || !live(b, kEvent)) return HCOMM_E_UNAVAIL;
  if (!ms) return HCOMM_E_PTR;
  if (hcomm_query_event(a) != HCOMM_SUCCESS || hcomm_query_event(b) != HCOMM_SUCCESS || !a->recorded || !b->recorded)
    return HCOMM_E_AGAIN;
  double ta = static_cast<double>(port::event_time_ns(a));
  double tb = static_cast<double>(port::event_time_ns(b));
  *ms = static_cast<float>((tb - ta) / 1e6);
  return HCOMM_SUCCESS;
}

}  // extern "C"
