// A training-loop-like rank program for exec's speed figures (docs/exec.md#speed): `iters`
// all-reduces of `bytes` (fp32 sum), one synchronize each, the last result checked on the host.
// Built into exec_loop_program (a user's process under hcsim exec) and into bench_exec_inproc
// (the same code in the simulator's rank threads), so the two wall times compare like for like.
#pragma once
#include <cstdint>
#include <string>

namespace exec_test {

struct LoopResult {
  std::uint64_t end_ns = 0;  ///< hcomm_wtime() after the last iteration
  std::uint64_t wrong = 0;   ///< elements of the last result that differ from the host's sum
  std::string error;
};

LoopResult run_loop(std::uint32_t rank, std::uint32_t size, std::uint32_t device_id, std::uint64_t bytes, std::uint32_t iters);

}  // namespace exec_test
