// A live view of a running simulation for `hcsim run`'s progress line and --top (README, CLI
// reference; docs/architecture.md#sim). The fabric scheduler polls a hook every few thousand
// events; the hook only reads the wall clock and, about once per refresh period, the state of the
// run (simulated time, events, operations done per rank, link and port counters). Nothing is
// written to the models, the trace or stdout, so a run with a live view is the same run.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sim {

struct LiveLink {
  std::string name;        ///< the link and the direction: "server0/hccs0-1 npu0->npu1", "server0/npu3/host host->npu3"
  const char* kind = "";   ///< "hccs", "pcie"
  double busy = 0;         ///< fraction of the simulated time so far the direction was busy (0..1)
  std::uint64_t bytes = 0;
};

struct LivePort {
  std::string name;        ///< "leaf0/3"
  std::uint64_t tx_bytes = 0, drops = 0, ecn_marked = 0, pause_sent = 0;
  double gbps = 0;         ///< tx_bytes over the simulated time so far, GB/s
};

struct LiveSnapshot {
  double wall_s = 0;                    ///< since the run started
  std::uint64_t sim_ps = 0, events = 0;
  double events_per_s = 0;              ///< fabric events per wall second since the previous snapshot
  std::uint64_t ops_total = 0;          ///< workload operations each rank runs (sum of repeats); 0 unknown
  std::vector<std::uint64_t> ops_done;  ///< per rank: operations completed
  // Filled only when LiveOptions::detailed (--top):
  std::vector<LiveLink> links;          ///< busiest first
  std::vector<LivePort> ports;          ///< most bytes first (RoCE switch and NIC ports)
  std::map<std::string, double> counters;  ///< read_counters() so far (drops, ecn_marked, pfc_pause_sent, rdma_retransmits, ...)
};

struct LiveOptions {
  std::function<void(const LiveSnapshot&)> report;  ///< empty: no live view (and no polling)
  double period_s = 1.0;   ///< wall seconds between reports; also the wall time before the first
  bool detailed = false;   ///< links, ports and counters (--top)
  std::size_t top_n = 8;   ///< busiest links and ports kept
  std::uint64_t poll_events = 4096;  ///< fabric events between two reads of the wall clock
};

/// True while `hcsim run` keeps a progress line at the bottom of a terminal: stderr writers (the
/// driver's log echo) clear it before printing a line of their own.
inline bool g_status_line = false;

}  // namespace sim
