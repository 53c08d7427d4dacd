// A request to end the running simulation early, set from a signal handler (SIGINT/SIGTERM) or
// when the trace can no longer be written. Setting it is async-signal-safe (one store to a
// sig_atomic_t); the fabric's scheduler reads it at every simulated time step and calls sc_stop(),
// after which the runner finalises the trace as usual.
#pragma once
#include <csignal>

namespace sim {

constexpr int kStopTraceError = -1;  ///< stop_reason() when the trace failed (no signal)

inline volatile std::sig_atomic_t g_stop_reason = 0;

/// The first request wins. `reason` is a signal number or kStopTraceError.
inline void request_stop(int reason) {
  if (g_stop_reason == 0) g_stop_reason = reason;
}
/// 0: run on; otherwise why the simulation should stop.
inline int stop_reason() { return g_stop_reason; }

}  // namespace sim
