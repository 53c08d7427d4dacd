// Configuration (docs/architecture.md#hcomm, docs/config.md): the context's environment
// variables and the communicator knob table (user value, else HCOMM_<env>, else default).
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail {

/// Context-level environment (hcomm/README.md#environment).
struct ContextEnv {
  int debug = 0;
  std::uint64_t timeout_ns = 0, ccl_bytes = 0, p2p_bytes = 0, slot_bytes = 0, slots = 0;
  int route_policy = 0;                  ///< HCOMM_ROUTE_SPORT: 0 probe, 1 hash (docs/routing.md)
  std::uint64_t route_cnp_threshold = 0; ///< HCOMM_ROUTE_CNP_THRESHOLD: 0 = no re-routing
  bool retry_reroute = true;             ///< HCOMM_RETRY_REROUTE: op retry re-probes RoCE paths after an RDMA failure
  bool nic_borrow = true;                ///< HCOMM_NIC_BORROW: op retry borrows a server peer's NIC for a dead one
  bool retry_resume = true;              ///< HCOMM_RETRY_RESUME: op retry re-sends only the slices not delivered everywhere
  std::uint64_t hb_period_ns = 0;        ///< HCOMM_HEARTBEAT_PERIOD_US: the neighbour heartbeat's period (0: off)
  std::uint32_t hb_misses = 3;           ///< HCOMM_HEARTBEAT_MISSES: LOST after this many periods of silence
  std::uint64_t pool_buffers = 8;        ///< HCOMM_BUFFER_POOL_SIZE: buffers of a pool made with num_buffers 0
};
/// Read every context variable; false when any is out of range (each one is reported on stderr).
bool read_context_env(ContextEnv* env);

/// Resolve a communicator's knobs (`user` may be null). HCOMM_E_PARA on a bad value (or
/// HCOMM_RETRY_COUNT and HCOMM_MAX_RETRIES both set and different); logs why.
hcomm_result_t resolve_comm_config(hcomm_context_t ctx, const hcomm_config_t* user, hcomm_config_t* cfg);

/// The RoCE connection policy of a resolved configuration.
RdmaPolicy rdma_policy(const hcomm_config_t& cfg);

}  // namespace hcomm::detail
