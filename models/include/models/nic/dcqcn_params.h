// Configuration of DCQCN, the NIC's congestion control (docs/models/roce-nic.md).
#pragma once
#include <cstdint>

#include "models/time.h"

namespace models {

/// DCQCN (Zhu et al., SIGCOMM 2015; parameters as in the authors' ns-3 code).
struct DcqcnParams {
  bool enabled = true;
  double g = 1.0 / 256;                        ///< alpha gain
  Tick alpha_timer_ps = 55 * kPsPerUs;         ///< alpha decays once per period without CNPs
  Tick rate_increase_timer_ps = 55 * kPsPerUs; ///< rate-increase timer period
  std::uint64_t byte_counter = 10ULL << 20;    ///< bytes between byte-counter increase events
  std::uint32_t fast_recovery_stages = 5;      ///< F
  std::uint64_t rai_Bps = 5ULL * 1000 * 1000;  ///< additive increase: 40 Mb/s
  std::uint64_t rhai_Bps = 50ULL * 1000 * 1000;  ///< hyper increase step: 400 Mb/s
  std::uint64_t min_rate_Bps = 12500000;       ///< floor: 100 Mb/s
  Tick cnp_interval_ps = 50 * kPsPerUs;        ///< receiver: at most one CNP per QP per interval
};

}  // namespace models
