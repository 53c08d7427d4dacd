// Configuration: context environment and the communicator knob table (docs/architecture.md#hcomm,
// docs/config.md).
#include "core/config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/algo_knob.h"
#include "core/log.h"

namespace hcomm::detail {

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t def, std::uint64_t lo, std::uint64_t hi, bool* bad) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (*end || x < lo || x > hi) {
    *bad = true;
    std::fprintf(stderr, "[HCOMM_ERR] %s=%s is out of range [%llu, %llu]\n", name, v, (unsigned long long)lo,
                 (unsigned long long)hi);
    return def;
  }
  return x;
}

constexpr std::uint64_t MB = 1ULL << 20;

/// A context knob: read from the environment only, when the context is created.
struct EnvKnob {
  const char* env;
  std::uint64_t def, lo, hi;
};
enum { kDebug, kTimeoutMs, kBuffsizeMb, kP2pMb, kSlotMb, kSlots, kCnpThreshold, kRetryReroute, kNicBorrow, kHbPeriodUs, kHbMisses, kRetryResume };
const EnvKnob kContextKnobs[] = {
    {"HCOMM_DEBUG", 0, 0, 3},          {"HCOMM_TIMEOUT_MS", 30000, 1000, 300000}, {"HCOMM_BUFFSIZE_MB", 256, 1, 4096},
    {"HCOMM_BUFFER_SIZE_MB", 8, 1, 64}, {"HCOMM_SLOT_SIZE_MB", 256, 1, 4096},      {"HCOMM_SYM_SLOTS", 4, 0, 64},
    {"HCOMM_ROUTE_CNP_THRESHOLD", 0, 0, 1000000000}, {"HCOMM_RETRY_REROUTE", 1, 0, 1},
    {"HCOMM_NIC_BORROW", 1, 0, 1},
    {"HCOMM_HEARTBEAT_PERIOD_US", 0, 0, 60000000},    {"HCOMM_HEARTBEAT_MISSES", 3, 1, 1000},
    {"HCOMM_RETRY_RESUME", 1, 0, 1},
};
// HCOMM_ROUTE_SPORT (docs/routing.md): how RoCE source ports are chosen.
const char* const kRouteSportNames[3] = {"probe", "hash", nullptr};
std::uint64_t env_knob(int i, bool* bad) {
  const EnvKnob& k = kContextKnobs[i];
  return env_u64(k.env, k.def, k.lo, k.hi, bad);
}

/// One communicator knob: its field, name, environment variable, default, range and (for enums)
/// the names the environment may use instead of numbers.
struct Knob {
  std::uint64_t hcomm_config_t::*field;
  const char* name;
  const char* env;
  std::uint64_t def, lo, hi;
  const char* names[3];  ///< unused entries are null
};

// Resolution order is table order; the first bad knob stops it (docs/config.md).
const Knob kKnobs[] = {
    {&hcomm_config_t::mode, "mode", "HCOMM_MODE", HCOMM_COMM_MODE_AUTO, 0, 2, {"AUTO", "SMALL_MSG", "LARGE_MSG"}},
    {&hcomm_config_t::send_buffer_size, "send_buffer_size", "HCOMM_SEND_BUFFER_SIZE", 16 * MB, MB, 1024 * MB, {}},
    {&hcomm_config_t::recv_buffer_size, "recv_buffer_size", "HCOMM_RECV_BUFFER_SIZE", 16 * MB, MB, 1024 * MB, {}},
    {&hcomm_config_t::buffer_pool_size, "buffer_pool_size", "HCOMM_BUFFER_POOL_SIZE", 8, 1, 1024, {}},
    {&hcomm_config_t::timeout_ms, "timeout_ms", "HCOMM_TIMEOUT_MS", 30000, 1000, 300000, {}},
    {&hcomm_config_t::retry_count, "retry_count", "HCOMM_RETRY_COUNT", 3, 0, 10, {}},
    {&hcomm_config_t::protocol, "protocol", "HCOMM_PROTOCOL", HCOMM_PROTOCOL_RDMA, 0, 2, {"TCP", "RDMA", "SHM"}},
    {&hcomm_config_t::bandwidth_limit, "bandwidth_limit", "HCOMM_BANDWIDTH_LIMIT", 0, 0, 1000, {}},
    {&hcomm_config_t::num_qp, "num_qp", "HCOMM_NUM_QP", 8, 1, 32, {}},
    {&hcomm_config_t::multi_qp_threshold, "multi_qp_threshold", "HCOMM_MULTI_QP_THRESHOLD", 512, 1, 8192, {}},  // KiB
    {&hcomm_config_t::buffer_size, "buffer_size", "HCOMM_BUFFER_SIZE", 8 * MB, MB, 64 * MB, {}},
    // Failover (docs/failover.md).
    {&hcomm_config_t::op_retry, "op_retry", "HCOMM_OP_RETRY", 1, 0, 1, {}},  // on: faults it can route around are survived (HCCL: 0)
    {&hcomm_config_t::heartbeat_timeout_ms, "heartbeat_timeout_ms", "HCOMM_HEARTBEAT_TIMEOUT_MS", 0, 0, 300000, {}},
};

// Resolve one knob: communicator value, else HCOMM_<env> (number, or one of `names`), else default.
bool resolve(hcomm_context_t ctx, std::uint64_t* field, const Knob& k) {
  if (*field == HCOMM_CONFIG_UNSET) {
    *field = k.def;
    if (const char* v = std::getenv(k.env); v && *v) {
      std::uint64_t i = 0;
      bool named = false;
      for (const char* n : k.names) { if (n && std::strcmp(v, n) == 0) { *field = i; named = true; } ++i; }
      if (!named) {
        char* end = nullptr;
        unsigned long long x = std::strtoull(v, &end, 10);
        if (*end || end == v) {
          logf(ctx, 0, "%s=%s is not a valid value for %s", k.env, v, k.name);
          return false;
        }
        *field = x;
      }
    }
  }
  if (*field < k.lo || *field > k.hi) {
    logf(ctx, 0, "config %s = %llu is out of range [%llu, %llu]", k.name, (unsigned long long)*field, (unsigned long long)k.lo,
         (unsigned long long)k.hi);
    return false;
  }
  return true;
}

}  // namespace

bool read_context_env(ContextEnv* e) {
  bool bad = false;
  e->debug = static_cast<int>(env_knob(kDebug, &bad));
  e->timeout_ns = env_knob(kTimeoutMs, &bad) * 1000000ULL;
  e->ccl_bytes = env_knob(kBuffsizeMb, &bad) << 20;
  if (const char* h = std::getenv("HCCL_BUFFSIZE"); h && *h && !std::getenv("HCOMM_BUFFSIZE_MB")) {
    const EnvKnob& k = kContextKnobs[kBuffsizeMb];  // HCCL's name for the same knob (MB)
    e->ccl_bytes = env_u64("HCCL_BUFFSIZE", k.def, k.lo, k.hi, &bad) << 20;
  }
  e->p2p_bytes = env_knob(kP2pMb, &bad) << 20;
  e->slot_bytes = env_knob(kSlotMb, &bad) << 20;
  e->slots = env_knob(kSlots, &bad);
  e->route_cnp_threshold = env_knob(kCnpThreshold, &bad);
  e->retry_reroute = env_knob(kRetryReroute, &bad) != 0;
  e->nic_borrow = env_knob(kNicBorrow, &bad) != 0;
  e->retry_resume = env_knob(kRetryResume, &bad) != 0;
  e->hb_period_ns = env_knob(kHbPeriodUs, &bad) * 1000ULL;
  e->hb_misses = static_cast<std::uint32_t>(env_knob(kHbMisses, &bad));
  // HCOMM_BUFFER_POOL_SIZE (the communicator knob buffer_pool_size's variable, same range): the
  // context's default number of buffers of a pool (hcomm_create_buffer_pool with 0 buffers).
  e->pool_buffers = env_u64("HCOMM_BUFFER_POOL_SIZE", 8, 1, 1024, &bad);
  e->route_policy = 0;
  if (const char* v = std::getenv("HCOMM_ROUTE_SPORT"); v && *v) {
    if (std::strcmp(v, kRouteSportNames[0]) == 0) e->route_policy = 0;
    else if (std::strcmp(v, kRouteSportNames[1]) == 0) e->route_policy = 1;
    else {
      std::fprintf(stderr, "[HCOMM_ERR] HCOMM_ROUTE_SPORT=%s: allowed values are probe, hash\n", v);
      bad = true;
    }
  }
  return !bad;
}

hcomm_result_t resolve_comm_config(hcomm_context_t ctx, const hcomm_config_t* user, hcomm_config_t* out) {
  hcomm_config_t cfg;
  hcomm_config_init(&cfg);
  if (user) cfg = *user;
  // HCOMM_MAX_RETRIES: the product documentation's name (CommConfig.max_retries) for
  // HCOMM_RETRY_COUNT; read when the config leaves retry_count unset. Both set and different: an error.
  if (cfg.retry_count == HCOMM_CONFIG_UNSET) {
    const char* alias = std::getenv("HCOMM_MAX_RETRIES");
    if (alias && *alias) {
      const char* own = std::getenv("HCOMM_RETRY_COUNT");
      if (own && *own && std::strcmp(own, alias) != 0) {
        logf(ctx, 0, "HCOMM_RETRY_COUNT=%s and HCOMM_MAX_RETRIES=%s disagree (HCOMM_MAX_RETRIES is another name for HCOMM_RETRY_COUNT)",
             own, alias);
        return HCOMM_E_PARA;
      }
      char* end = nullptr;
      unsigned long long x = std::strtoull(alias, &end, 10);
      if (*end || end == alias) {
        logf(ctx, 0, "HCOMM_MAX_RETRIES=%s is not a valid value for retry_count", alias);
        return HCOMM_E_PARA;
      }
      cfg.retry_count = x;  // the range is checked with the knob below
    }
  }
  for (const Knob& k : kKnobs)
    if (!resolve(ctx, &(cfg.*k.field), k)) return HCOMM_E_PARA;
  *out = cfg;
  return HCOMM_SUCCESS;
}

RdmaPolicy rdma_policy(const hcomm_config_t& cfg) {
  RdmaPolicy p;
  p.qp_count = static_cast<std::uint32_t>(cfg.num_qp);            // num_qp
  p.qp_min_bytes = cfg.multi_qp_threshold * 1024;                  // multi_qp_threshold (KiB)
  p.rate_cap_Bps = cfg.bandwidth_limit * 1000000ULL;              // bandwidth_limit (MB/s)
  p.retry_count = static_cast<std::uint32_t>(cfg.retry_count);    // retry_count
  return p;
}

}  // namespace hcomm::detail

// hcomm_config_check: the same two tables the library resolves from, parsed as it parses them
// (strtoull, base 10, nothing after the digits; enumeration names), so a tool can reject a bad
// value before a context or communicator is made.
extern "C" hcomm_result_t hcomm_config_check(const char* name, const char* value, char* errbuf, size_t len) {
  using namespace hcomm::detail;
  if (!name || !value) return HCOMM_E_PTR;
  char scratch[1];
  if (!errbuf || len == 0) { errbuf = scratch; len = sizeof scratch; }
  errbuf[0] = '\0';
  const char* const none[3] = {nullptr, nullptr, nullptr};
  auto check = [&](std::uint64_t lo, std::uint64_t hi, const char* const* names) {
    if (!*value) return HCOMM_SUCCESS;  // empty: the library takes the default
    for (int i = 0; i < 3; ++i)
      if (names[i] && std::strcmp(names[i], value) == 0) return HCOMM_SUCCESS;
    char* end = nullptr;
    unsigned long long x = std::strtoull(value, &end, 10);
    if (end == value || *end) {
      if (names[0])
        std::snprintf(errbuf, len, "%s=\"%s\" is not a number or one of %s, %s, %s", name, value, names[0], names[1], names[2]);
      else
        std::snprintf(errbuf, len, "%s=\"%s\" is not a decimal number", name, value);
      return HCOMM_E_PARA;
    }
    if (x < lo || x > hi) {
      std::snprintf(errbuf, len, "%s=\"%s\" is out of range [%llu, %llu]", name, value, (unsigned long long)lo, (unsigned long long)hi);
      return HCOMM_E_PARA;
    }
    return HCOMM_SUCCESS;
  };
  for (const EnvKnob& k : kContextKnobs)
    if (std::strcmp(k.env, name) == 0) return check(k.lo, k.hi, none);
  if (std::strcmp(name, "HCCL_BUFFSIZE") == 0) return check(kContextKnobs[kBuffsizeMb].lo, kContextKnobs[kBuffsizeMb].hi, none);
  if (std::strcmp(name, "HCOMM_ROUTE_SPORT") == 0) {
    if (!*value || std::strcmp(value, kRouteSportNames[0]) == 0 || std::strcmp(value, kRouteSportNames[1]) == 0) return HCOMM_SUCCESS;
    std::snprintf(errbuf, len, "%s=\"%s\": allowed values are probe, hash", name, value);
    return HCOMM_E_PARA;
  }
  const bool ar = std::strcmp(name, "HCOMM_ALLREDUCE_ALGO") == 0;
  if (ar || std::strcmp(name, "HCOMM_ALGO") == 0 || std::strcmp(name, "HCCL_ALGO") == 0) {
    const std::string why = check_algo_value(value, ar);
    if (why.empty()) return HCOMM_SUCCESS;
    std::snprintf(errbuf, len, "%s=\"%s\": %s", name, value, why.c_str());
    return HCOMM_E_PARA;
  }
  for (const Knob& k : kKnobs)
    if (std::strcmp(k.env, name) == 0) return check(k.lo, k.hi, k.names);
  if (std::strcmp(name, "HCOMM_MAX_RETRIES") == 0)  // retry_count's other name
    for (const Knob& k : kKnobs)
      if (k.field == &hcomm_config_t::retry_count) return check(k.lo, k.hi, k.names);
  std::snprintf(errbuf, len, "%s is not a knob hcomm reads (docs/config.md)", name);
  return HCOMM_E_NOT_FOUND;
}

extern "C" void hcomm_config_init(hcomm_config_t* c) {
  if (!c) return;
  c->mode = c->send_buffer_size = c->recv_buffer_size = c->buffer_pool_size = c->timeout_ms = c->retry_count = c->protocol =
      c->bandwidth_limit = c->num_qp = c->buffer_size = c->op_retry = c->heartbeat_timeout_ms = c->multi_qp_threshold =
          HCOMM_CONFIG_UNSET;
  c->algo = nullptr;
}
