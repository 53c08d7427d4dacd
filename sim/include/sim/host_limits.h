// What the machine running the simulator allows, checked before a run starts, so a run that
// cannot fit is refused with exit 2 and the numbers instead of failing deep inside SystemC or
// growing until the kernel kills it (docs/architecture.md#sim).
#pragma once
#include <cstdint>
#include <string>

#include "sim/config/scenario.h"

namespace sim {

struct HostLimits {
  std::uint64_t max_map_count = 65530;   ///< /proc/sys/vm/max_map_count (memory mappings per process)
  std::uint64_t mem_available = 0;       ///< bytes, /proc/meminfo MemAvailable (0: unknown)
};
HostLimits read_host_limits();

/// Memory mappings a run with `ranks` rank threads needs: each SystemC thread stack is one
/// mapping plus its guard page (two), on top of what the process maps anyway.
std::uint64_t mappings_needed(std::uint64_t ranks);

/// Host memory (bytes) a real-payload run of the scenario needs at its peak: every rank's input
/// and output in HBM (sparse, only written pages), its host staging buffer and the expected
/// result, plus the shared reference: an estimate (within a few per cent of the measured peak
/// RSS of all-reduce runs, sim/src/host_limits.cpp); 0 for a timing payload.
std::uint64_t payload_memory_estimate(const Scenario& sc);

/// Empty when a run of `ranks` threads needing `bytes` of host memory fits within `limit_bytes`
/// (0: MemAvailable) and the mapping limit; otherwise why not, with the numbers and what to do.
std::string check_host_fit(std::uint64_t ranks, std::uint64_t bytes, std::uint64_t limit_bytes, const HostLimits& h);

/// "64 MiB", "1.5 GiB": a byte count for messages.
std::string human_bytes(std::uint64_t b);

}  // namespace sim
