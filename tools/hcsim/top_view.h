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

struct TopFault {  ///< a `faults` row (schema 9)
  std::int64_t id = 0;
  std::string type, target;
  bool fired = false;
  double injected_ns = 0;           ///< when it fired (fired only)
  double first_detected_ns = -1, last_detected_ns = -1;  ///< -1: no detection
  double resumed_ns = -1;           ///< -1: nothing resumed
  std::string actions;              ///< "retry: ranks 0-15; warn: rank 3"
  std::int64_t step = -1, rep = -1; ///< the repetition in flight when it fired (-1: none)
  double op_time_us = -1, median_us = -1;  ///< its time, the untouched repetitions' median (-1: none)
};

struct TopFailover {  ///< a `failovers` row
  std::int64_t rank = 0;            ///< detected_by
  std::string action;               ///< abort, retry, resume, shrink, warn
  double fault_ns = -1, detected_ns = 0, resumed_ns = -1;  ///< -1: NULL
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
  bool have_faults = false;         ///< the trace has a faults table (else: no FAULTS section)
  std::vector<TopFault> faults;
  std::vector<TopFailover> failovers;
};

struct TopOptions {
  std::size_t rows = 10;     ///< slowest ranks, links and ports shown
};

/// The view: deterministic (ties broken by name / rank), lines at most 100 characters.
std::string render_top(const TopData& d, const TopOptions& o = {});

}  // namespace hcsim
