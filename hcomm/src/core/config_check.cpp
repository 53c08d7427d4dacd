// hcomm_config_check: the HCOMM_* environment knobs, their ranges and how the library parses them
// (docs/config.md), so that tools can reject a bad value before a context or communicator is made.
// The table mirrors the reads in hcomm.cpp (hcomm_create_context's environment-only knobs and
// hcomm_comm_init_config's resolve calls) and parses as they do (strtoull, base 10, nothing after
// the digits; enumeration names); tests/unit_loaders_test.cpp checks docs/config.md's ranges at
// their edges.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hcomm/hcomm.h"

namespace {

struct Knob {
  const char* env;
  unsigned long long lo, hi;
  const char* names[3];  // enumeration names accepted instead of numbers (index = value)
};

constexpr unsigned long long MB = 1ULL << 20;
const Knob kKnobs[] = {
    {"HCOMM_DEBUG", 0, 3, {}},
    {"HCOMM_TIMEOUT_MS", 1000, 300000, {}},
    {"HCOMM_BUFFSIZE_MB", 1, 4096, {}},
    {"HCOMM_BUFFER_SIZE_MB", 1, 64, {}},
    {"HCOMM_SLOT_SIZE_MB", 1, 4096, {}},
    {"HCOMM_SYM_SLOTS", 0, 64, {}},
    {"HCOMM_MODE", 0, 2, {"AUTO", "SMALL_MSG", "LARGE_MSG"}},
    {"HCOMM_SEND_BUFFER_SIZE", MB, 1024 * MB, {}},
    {"HCOMM_RECV_BUFFER_SIZE", MB, 1024 * MB, {}},
    {"HCOMM_BUFFER_POOL_SIZE", 1, 1024, {}},
    {"HCOMM_RETRY_COUNT", 0, 10, {}},
    {"HCOMM_PROTOCOL", 0, 2, {"TCP", "RDMA", "SHM"}},
    {"HCOMM_BANDWIDTH_LIMIT", 0, 1000, {}},
    {"HCOMM_NUM_QP", 1, 32, {}},
    {"HCOMM_BUFFER_SIZE", MB, 64 * MB, {}},
};

}  // namespace

extern "C" hcomm_result_t hcomm_config_check(const char* name, const char* value, char* errbuf, size_t len) {
  if (!name || !value) return HCOMM_E_PTR;
  char scratch[1];
  if (!errbuf || len == 0) { errbuf = scratch; len = sizeof scratch; }
  errbuf[0] = '\0';
  for (const Knob& k : kKnobs) {
    if (std::strcmp(k.env, name) != 0) continue;
    if (!*value) return HCOMM_SUCCESS;  // empty: the library takes the default
    for (const char* n : k.names)
      if (n && std::strcmp(n, value) == 0) return HCOMM_SUCCESS;
    // As the library reads numbers: strtoull, base 10, nothing after the digits.
    char* end = nullptr;
    unsigned long long x = std::strtoull(value, &end, 10);
    if (end == value || *end) {
      if (k.names[0])
        std::snprintf(errbuf, len, "%s=\"%s\" is not a number or one of %s, %s, %s", name, value, k.names[0], k.names[1], k.names[2]);
      else
        std::snprintf(errbuf, len, "%s=\"%s\" is not a decimal number", name, value);
      return HCOMM_E_PARA;
    }
    if (x < k.lo || x > k.hi) {
      std::snprintf(errbuf, len, "%s=\"%s\" is out of range [%llu, %llu]", name, value, k.lo, k.hi);
      return HCOMM_E_PARA;
    }
    return HCOMM_SUCCESS;
  }
  std::snprintf(errbuf, len, "%s is not a knob hcomm reads (docs/config.md)", name);
  return HCOMM_E_NOT_FOUND;
}
