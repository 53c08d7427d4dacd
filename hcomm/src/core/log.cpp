// Library log lines (docs/architecture.md#hcomm).
#include "core/log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/objects.h"
#include "driver_port.h"

namespace hcomm::detail {

void logf(hcomm_context_t ctx, int level, const char* fmt, ...) {
  // level: 0 error, 1 warning, 2 info, 3 debug. HCOMM_DEBUG selects how much is emitted.
  if (level > ctx->debug && level > 0) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  static const char* tags[] = {"[HCOMM_ERR]", "[HCOMM_WARN]", "[HCOMM_INFO]", "[HCOMM_DBG]"};
  char line[600];
  std::snprintf(line, sizeof line, "%s %s", tags[std::min(std::max(level, 0), 3)], msg);
  port::log(ctx, level, line);
}

}  // namespace hcomm::detail
