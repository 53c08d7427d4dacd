// hcsim plan (docs/plan-format.md): the plan file's model, its loader (plan_file.cpp), the points'
// child processes (plan_children.cpp) and the reports of a finished sweep (plan_report.cpp);
// cmd_plan.cpp builds the layouts and runs the points, plan_mpi.h spreads them over MPI ranks.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/topology.h"

namespace hcsim::plan {

using sim::json;

struct Sweep {
  std::string pointer, name;
  std::vector<json> values;
};

struct Workload {
  std::string op, algo = "auto", fidelity, dtype;
  std::vector<std::uint64_t> sizes;
  std::uint64_t repeat = 1;
  std::map<std::string, std::string> env;  ///< HCOMM_* for this workload's runs, over the plan's
};

struct Prices {
  bool given = false;
  double server = 0, sw = 0, cable = 0;
  std::string currency;
};

struct Target {
  bool given = false;
  std::string op;
  std::uint64_t bytes = 0;
  double max_time_us = 0, min_busbw = 0;  // 0: not stated
};

struct Plan {
  std::string file, dir, name, topology_path, fidelity = "flow", payload = "timing";
  bool trace_routes = true;  ///< /trace_routes: the points' traces keep their `routes` rows
  bool inherit_env = false;  ///< --inherit-env: the points' runs read the caller's HCOMM_*/HCCL_* variables
  json base;
  std::vector<Sweep> sweeps;
  std::vector<Workload> workloads;
  std::map<std::string, std::string> env;
  Prices prices;
  Target target;
};

struct Layout {
  std::vector<json> values;  // one per sweep
  std::string label;         // "servers=64 oversub=1:1"
  std::size_t servers = 0, npus = 0, switches = 0, cables = 0;
  double cost = 0;
};

struct Result {
  std::size_t layout = 0, workload = 0;
  std::uint64_t bytes = 0;
  std::string algorithm, status = "not run";
  double time_us = NAN, algbw = NAN, busbw = NAN, wall_s = NAN, peak_mib = NAN;
  /// The point's (its whole run's, the same on each of its rows) peak port utilisation: the
  /// busiest Ethernet switch egress port's busy time over the run's span of operations (first
  /// start to last end), and that port as "switch:port" ("-" without switch traffic); for
  /// --tier-check (docs/plan-format.md#tier-check).
  double peak_util = NAN;
  std::string peak_port;
};


/// One (layout, workload) point: a child `hcsim run` of `scen` writing the trace `db`.
struct Point {
  std::size_t layout, workload;
  std::string scen, db, log;
  pid_t pid = 0;
  std::chrono::steady_clock::time_point start;
};

/// One finished point as the rank that ran it reports it: the child's exit code and its rows
/// (status, numbers from its trace, wall time and peak memory). Under MPI this travels to rank 0
/// (plan_mpi.cpp), so rank 0 never reads another machine's files.
struct Finished {
  std::size_t index = 0;
  int code = 0;  // kOk, kExpectationFailed or kBadInput
  std::vector<Result> rows;
};

/// Up to -j child `hcsim run` processes on this machine (plan_children.cpp). The child's
/// environment is this one's without Open MPI's and PMIx's variables (OMPI_*, PMIX_*, PMI_*) (and
/// without HCOMM_*/HCCL_*, which plan_ranks removed unless --inherit-env), built
/// before fork so the child only calls async-signal-safe functions before exec
/// (docs/plan-format.md#mpi).
class Children {
 public:
  Children(const Plan& p, std::vector<Point>& points, const std::vector<std::vector<Result>>& results);
  /// This executable's path, which the children run; false (*why) when it cannot be found.
  bool find_self(std::string* why);
  std::size_t running() const { return by_pid_.size(); }
  /// Start point i's `hcsim run`, its output into the point's log.
  bool spawn(std::size_t i, std::string* why);
  /// Reap one finished child (waiting for one when `block`); false when none finished (or none runs).
  bool reap(bool block, Finished& f, std::string* why);

 private:
  const Plan& p_;
  std::vector<Point>& points_;
  const std::vector<std::vector<Result>>& results_;
  std::vector<std::string> env_;
  std::vector<char*> envp_;
  std::string self_;
  std::map<pid_t, std::size_t> by_pid_;
};

/// --tier-check (docs/plan-format.md#tier-check): one (layout, workload) point of the sweep picked
/// for its peak port utilisation and re-run whole in the next finer fidelity tier.
struct TierCheck {
  std::size_t point = 0;     ///< index of the sweep's (coarse) point
  std::string coarse, finer;  ///< the point's tier and the next finer one ("" after packet: none)
  Point run;                  ///< the finer run's files (`finer` not empty)
  std::vector<Result> rows;   ///< the finer run's rows, one per size, as the sweep's
  int code = 0;
};

/// The tiers from coarse to fine, and the one after `tier` ("" for packet, the finest).
std::string finer_tier(const std::string& tier);
/// The K points of each layout with the highest peak port utilisation (ties: workload order),
/// among the points whose run was ok; in (layout, workload) order.
std::vector<TierCheck> pick_tier_checks(const Plan& p, const std::vector<Point>& points,
                                        const std::vector<std::vector<Result>>& results, std::size_t k);
/// Write each picked point's finer scenario (DIR/lK-wJ.TIER.scenario.json: its scenario with the
/// finer tier) and run them, up to `jobs` at once, progress on stderr. Returns kOk, or the worst
/// exit code of a finer run (kBadInput also when a scenario cannot be written or a child started).
int run_tier_checks(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
                    const std::string& out, unsigned jobs, std::vector<TierCheck>& checks);
/// The --tier-check threshold: a |spread| above it is warned about.
constexpr double kTierSpreadWarn = 0.05;

/// The most points a plan may have (docs/plan-format.md): layouts (the product of every sweep's
/// values) times the sizes of all workloads, i.e. the rows of its table. A plan beyond it is
/// refused before anything is written.
constexpr std::size_t kMaxPoints = 10000;

/// The marker file that says a directory is a plan's output (docs/plan-format.md).
constexpr const char* kMarker = ".hcsim-plan";

/// Load and check a plan file; every problem goes to `d` as "FILE: /pointer: reason".
bool load_plan(const std::string& path, Plan& p, sim::Diagnostics& d);
/// The layouts of a loaded plan: the cartesian product of its sweeps, the first outermost (one,
/// "base", without sweeps), with their values and labels.
std::vector<Layout> plan_layouts(const Plan& p);
/// Layout `li`'s topology document: the base with the layout's values, named after the plan, its
/// rank table (if any) made absolute.
json layout_topology(const Plan& p, const Layout& L, std::size_t li);
/// hcsim validate of a plan: every layout's topology checked as hcsim plan checks it, the errors
/// as "FILE: /sweep: layout N (LABEL): TOPOLOGY-ERROR". False when one is invalid.
bool check_layouts(const Plan& p, sim::Diagnostics& d);

std::string value_text(const json& v);       ///< a sweep value as the table shows it ("1:1", 64)
std::string dir_of(const std::string& f);    ///< "a/b/" of "a/b/c", "" without a slash
std::string absolute(const std::string& p);  ///< relative to the working directory
std::string fmt(double v, int prec);         ///< "-" when not finite
bool write_file(const std::string& path, const std::string& text, std::string* why);

/// The table on stdout, DIR/plan.csv, DIR/plan.db, the SVG plots and the target's verdict (not
/// judged for a dry run). Returns `rc` raised to 1 when the target is not met, 2 on a write error.
/// `meta` adds rows to plan.db's meta table (under MPI: the ranks and the points each ran).
/// `checks`: the --tier-check re-runs (null without --tier-check): DIR/tier_check.csv, plan.db's
/// tier_check table, a table on stdout, a warning on stderr per row whose |spread| > 5 %, and a
/// mention in the verdict.
int report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
           const std::vector<std::vector<Result>>& results, const std::string& out, bool dry, int rc,
           const std::vector<std::pair<std::string, std::string>>& meta = {},
           const std::vector<TierCheck>* checks = nullptr);

}  // namespace hcsim::plan
