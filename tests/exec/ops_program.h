// One rank's program for the exec identity test (tests/exec/exec_test.cpp): the same code runs in
// the simulator's own rank threads and, built into exec_ops_program, as an OS process per rank
// under `hcsim exec`. It records hcomm_wtime() after each operation and checks every result
// against host-computed values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace exec_test {

struct OpsResult {
  std::vector<std::uint64_t> times_ns;  ///< hcomm_wtime() in ns after each operation
  std::uint64_t wrong = 0;              ///< elements that differ from the host reference
  std::string error;                    ///< the first failed call ("" none)
};

OpsResult run_ops(std::uint32_t rank, std::uint32_t size, std::uint32_t device_id);

}  // namespace exec_test
