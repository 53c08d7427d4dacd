// Configuration of DCQCN, the NIC's congestion control (docs/models/roce-nic.md#dcqcn-profiles).
#pragma once
#include <cstdint>

#include "models/time.h"

namespace models {

/// DCQCN's reaction point (the sender's rate limiter) and notification point (the receiver's CNP
/// generator). The defaults are the NVIDIA ConnectX profile (nvidia()); sigcomm2015() is the
/// paper's parameter set (Zhu et al., SIGCOMM 2015, as in the authors' ns-3 code).
struct DcqcnParams {
  bool enabled = true;
  double g = 5.0 / 1024;                        ///< alpha gain: (1024 - dce_tcp_g) / 1024
  Tick alpha_timer_ps = 1 * kPsPerUs;           ///< alpha is updated once per period (dce_tcp_rtt)
  Tick rate_increase_timer_ps = 300 * kPsPerUs; ///< rate-increase timer period (rpg_time_reset)
  std::uint64_t byte_counter = 32767;           ///< bytes between byte-counter increase events (rpg_byte_reset)
  std::uint32_t fast_recovery_stages = 1;       ///< F (rpg_threshold)
  std::uint64_t rai_Bps = 625ULL * 1000;        ///< additive increase: 5 Mb/s (rpg_ai_rate)
  std::uint64_t rhai_Bps = 6250ULL * 1000;      ///< hyper increase step: 50 Mb/s (rpg_hai_rate)
  std::uint64_t min_rate_Bps = 125ULL * 1000;   ///< floor: 1 Mb/s (rpg_min_rate)
  Tick cnp_interval_ps = 4 * kPsPerUs;          ///< receiver: at most one CNP per QP per interval (min_time_between_cnps)
  /// At most one rate cut per period; CNPs in between update alpha only (rate_reduce_monitor_period).
  Tick rate_reduce_period_ps = 4 * kPsPerUs;
  /// A CNP sets the target rate to the current rate: always (clamp_tgt_rate, the paper), or only
  /// when the timer raised the rate since the previous cut (clamp_tgt_rate_after_time_inc).
  bool clamp_target = false;
  bool clamp_target_after_timer = true;

  /// NVIDIA ConnectX-4 and later firmware defaults (mlxconfig / sysfs names in the comments above).
  static DcqcnParams nvidia() { return DcqcnParams{}; }
  /// The SIGCOMM 2015 paper's values (the authors' ns-3 code).
  static DcqcnParams sigcomm2015() {
    DcqcnParams p;
    p.g = 1.0 / 256;
    p.alpha_timer_ps = p.rate_increase_timer_ps = 55 * kPsPerUs;
    p.byte_counter = 10ULL << 20;
    p.fast_recovery_stages = 5;
    p.rai_Bps = 5ULL * 1000 * 1000;    // 40 Mb/s
    p.rhai_Bps = 50ULL * 1000 * 1000;  // 400 Mb/s
    p.min_rate_Bps = 12500000;         // 100 Mb/s
    p.cnp_interval_ps = 50 * kPsPerUs;
    p.rate_reduce_period_ps = 0;
    p.clamp_target = true;
    p.clamp_target_after_timer = false;
    return p;
  }
};

}  // namespace models
