// The hcomm_top view (docs/tools.md#top): a fixed-width terminal summary of a cluster's state —
// sim time, operations per rank, busiest links and ports, error counters — rendered from plain
// numbers. `hcsim top` fills it from a finished trace; a live view can fill it from a running
// simulation and call render_top() on every refresh. No SQLite, no SystemC here.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hcsim {

struct TopRank {
  std::int64_t rank = 0;
  std::string name;          ///< "server0/npu3" (may be empty)
  std::uint64_t ops = 0;     ///< operations completed
  double op_time_ns = 0;     ///< sum of their durations
};

struct TopLink {  ///< one direction of an HCCS / PCIe link
  std::string name;          ///< "server0/npu0-server0/npu1"
  std::string kind;          ///< "hccs", "pcie", "hbm"
  std::string direction;     ///< "ab" / "ba"
  std::uint64_t bytes = 0;
  double busy_ns = 0;
  std::uint64_t retries = 0; ///< HCCS CRC replays
};

struct TopPort {  ///< a RoCE port (NIC or switch)
  std::string node;          ///< "leaf0", "server1/npu2"
  std::int64_t port = 0;
  std::uint64_t tx_bytes = 0, drops = 0, ecn_marked = 0, pause_sent = 0;
  double paused_ns = 0;
};

struct TopData {
  std::string title;         ///< the scenario
  std::string status;        ///< "ok", "running", "interrupted", ...
  double sim_ns = 0;         ///< simulated time so far (the end for a finished trace)
  std::vector<TopRank> ranks;
  std::vector<TopLink> links;
  std::vector<TopPort> ports;
  /// Cluster-wide error counters in display order, e.g. {"drops", 0}, {"ecn_marked", 273}.
  std::vector<std::pair<std::string, double>> errors;
};

struct TopOptions {
  std::size_t rows = 10;     ///< slowest ranks, links and ports shown
};

/// The view: deterministic (ties broken by name / rank), lines at most 100 characters.
std::string render_top(const TopData& d, const TopOptions& o = {});

}  // namespace hcsim
