// Operation brackets (docs/architecture.md#hcomm).
#include "core/profile.h"

#include "core/objects.h"
#include "driver_port.h"

namespace hcomm::detail {

std::uint64_t op_begin(hcomm_stream_t s, const OpInfo& info) {
  DrvTask t;
  t.kind = DrvTaskKind::Marker;
  t.key = s->ctx->next_marker;
  s->ctx->next_marker += 2;
  port::profile_op(s->ctx, t.key, t.key + 1, info);
  port::submit(s, t);
  return t.key;
}

void op_end(hcomm_stream_t s, std::uint64_t begin_key) {
  DrvTask t;
  t.kind = DrvTaskKind::Marker;
  t.key = begin_key + 1;
  port::submit(s, t);
}

}  // namespace hcomm::detail
