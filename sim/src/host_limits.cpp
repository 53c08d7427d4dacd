#include "sim/host_limits.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace sim {

namespace {
constexpr std::uint64_t kBaseMappings = 4096;  // libraries, heap and HBM arenas: measured 2,500 at 8192 ranks
}

HostLimits read_host_limits() {
  HostLimits h;
  std::ifstream m("/proc/sys/vm/max_map_count");
  std::uint64_t v = 0;
  if (m >> v && v > 0) h.max_map_count = v;
  std::ifstream mi("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kb = 0;
  while (mi >> key >> kb) {
    std::getline(mi, unit);
    if (key == "MemAvailable:") { h.mem_available = kb * 1024; break; }
  }
  return h;
}

std::uint64_t mappings_needed(std::uint64_t ranks) { return kBaseMappings + 2 * ranks; }

static std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

std::uint64_t payload_memory_estimate(const Scenario& sc) {
  if (!sc.store_bytes) return 0;
  const std::uint64_t n = sc.topology.rank_to_npu.size();
  std::uint64_t peak = 0;
  for (const auto& w : sc.workload) {
    std::uint64_t need = 0;
    if (w.kind == WorkloadOp::AllGather) {
      // per rank: input, the gathered output in HBM and its host copy, the expected blocks
      need = sat_mul(n, sat_add(sat_mul(3, sat_mul(n, w.bytes)), w.bytes));
    } else if (is_collective(w.kind) || w.kind == WorkloadOp::SendRecv) {
      // per rank: input + output in HBM, host staging and part of the expected bytes (3.5 x),
      // one shared reference. Measured peak RSS, 8 ranks: 64 MiB 1.76 GiB (estimate 1.81),
      // 256 MiB 7.0 GiB (estimate 7.25).
      need = sat_add(sat_mul(n, sat_mul(7, w.bytes)) / 2, w.bytes);
    } else if (w.kind == WorkloadOp::H2D || w.kind == WorkloadOp::D2H) {
      need = sat_mul(n, sat_mul(3, w.bytes));  // host buffer, HBM, read-back
    } else if (w.kind == WorkloadOp::Incast) {
      need = sat_mul(n, sat_mul(4, w.bytes));  // senders' sources and host copies, the root's region and check
    }
    peak = std::max(peak, need);
  }
  return peak;
}

std::string human_bytes(std::uint64_t b) {
  static const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(b);
  int i = 0;
  while (v >= 1024 && i < 6) { v /= 1024; ++i; }
  char s[32];
  std::snprintf(s, sizeof s, i ? "%.1f %s" : "%.0f %s", v, u[i]);
  return s;
}

std::string check_host_fit(std::uint64_t ranks, std::uint64_t bytes, std::uint64_t limit_bytes, const HostLimits& h) {
  const std::uint64_t maps = mappings_needed(ranks);
  if (maps > h.max_map_count)
    return std::to_string(ranks) + " ranks need about " + std::to_string(maps) +
           " memory mappings (two per rank thread stack) but vm.max_map_count is " + std::to_string(h.max_map_count) +
           ": raise it (sysctl -w vm.max_map_count=" + std::to_string(std::max<std::uint64_t>(262144, maps * 2)) +
           ") or simulate fewer ranks";
  const std::uint64_t limit = limit_bytes ? limit_bytes : h.mem_available;
  if (limit && bytes > limit)
    return "the real payload needs about " + human_bytes(bytes) + " of host memory but " +
           (limit_bytes ? "--max-memory allows " : "only ") + human_bytes(limit) + (limit_bytes ? "" : " is available") +
           ": use \"payload\": \"timing\" (hcomm_test: -c 0), smaller sizes, or raise --max-memory";
  return {};
}

}  // namespace sim
