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

#include "sim/config/topology.h"

namespace hcsim::plan {

using sim::json;

struct Sweep {
  std::string pointer, name;
  bool scenario = false;            ///< /sweep/i/in "scenario": the pointer is into every point's scenario
  std::vector<json> values;
  std::vector<std::string> labels;  ///< /sweep/i/labels: the table's text per value (else the value's own)
  /// /sweep/i/whatif: a condition, not a choice (default: scenario-side sweeps and /as_built): the
  /// verdict compares the layouts of each what-if value apart (docs/plan-format.md#what-if).
  bool whatif = false;
};

struct Workload {
  std::string op, algo = "auto", fidelity, dtype;
  /// The sizes as the plan states them; `bytes` of the rows and the scenarios' step sizes follow
  /// from them by size_convention (nccl-tests' size in version 2).
  std::vector<std::uint64_t> sizes;
  std::uint64_t repeat = 1;
  std::map<std::string, std::string> env;  ///< HCOMM_* for this workload's runs, over the plan's
  json step;  ///< train_step: model, parallel, micro_batches, bucket, efficiency (docs/training-steps.md)
  bool is_step() const { return op == "train_step"; }
};

struct Prices {
  bool given = false;
  double server = 0, sw = 0, cable = 0;
  std::string currency;
};

struct Target {
  std::string op;
  std::uint64_t bytes = 0;
  double max_time_us = 0, min_busbw = 0;  // 0: not stated
  /// "allreduce 64 MiB under 1500.0 us"
  std::string what() const;
  bool met(double time_us, double busbw) const {
    return (max_time_us <= 0 || time_us <= max_time_us) && (min_busbw <= 0 || busbw >= min_busbw);
  }
};

/// One run of a point: the ECN/drop/payload seed (scenario /seed) and the ECMP hash salt
/// (scenario /network/ecmp_salt) it runs with; `set` false: the scenario's default.
struct Variant {
  bool seed_set = false, salt_set = false;
  std::uint64_t seed = 1, salt = 0;
  std::string label() const;  ///< "seed=2 salt=1", "" for the default
};

struct Plan {
  std::string file, dir, name, topology_path, fidelity = "flow", payload = "timing";
  bool trace_routes = true;  ///< /trace_routes: the points' traces keep their `routes` rows
  bool inherit_env = false;  ///< --inherit-env: the points' runs read the caller's HCOMM_*/HCCL_* variables
  int version = 2;           ///< 1: all-gather sizes are per-rank inputs (docs/plan-format.md#sizes)
  json base;
  std::vector<Sweep> sweeps;
  std::vector<Workload> workloads;
  std::map<std::string, std::string> env;
  Prices prices;
  std::vector<Target> targets;           ///< /targets (or version 1's /target)
  std::vector<std::uint64_t> seeds, salts;  ///< /seeds/seed, /seeds/ecmp_salt (empty: not varied)
  /// The runs of every point: the product of seeds and salts (one default run without /seeds).
  std::vector<Variant> variants() const;
};

/// A row's size in nccl-tests' convention (hcomm_test's and `hcsim run`'s: the larger buffer, an
/// all-gather's output) from the plan's size of workload `w` on `npus` ranks, and the per-rank
/// input bytes its scenario step gets; false (*why) when the size does not divide.
bool size_convention(const Plan& p, const Workload& w, std::uint64_t size, std::size_t npus, std::uint64_t* row_bytes,
                     std::uint64_t* step_bytes, std::string* why);

struct Layout {
  std::vector<json> values;  // one per sweep
  std::string label;         // "servers=64 oversub=1:1"
  std::size_t servers = 0, npus = 0, nics = 0, switches = 0, cables = 0;
  double cost = 0;
  std::string infeasible;  ///< why its topology cannot be built ("" when it can)
};

struct Result {
  std::size_t layout = 0, workload = 0, variant = 0;
  std::uint64_t size = 0;   ///< the plan's size (its workload's sizes[k])
  std::uint64_t bytes = 0;  ///< nccl-tests' size (size_convention)
  int step = -1;            ///< its step in the point's scenario; -1: infeasible (status says why)
  std::string algorithm, status = "not run";
  double time_us = NAN, algbw = NAN, busbw = NAN, wall_s = NAN, peak_mib = NAN;
  double cpu_s = NAN;  ///< the child's user + system CPU time (its wall time on an idle core)
  /// Over the variants (seeds, salts): the row is the lower-median run's, with the fastest and
  /// slowest runs' times and the number of runs with a time.
  double time_min = NAN, time_max = NAN;
  /// train_step rows: the iteration's exposed communication (µs) and overlap (0..1), from the
  /// trace's train_steps table (the mean over repetitions); time_us is the iteration time.
  double exposed_us = NAN, overlap = NAN;
  std::size_t runs = 0;
  /// --dry-run's and -j's estimates of the point's wall time and peak memory (docs/plan-format.md#estimates).
  double est_wall_s = NAN, est_peak_mib = NAN;
  /// The point's (its whole run's, the same on each of its rows) peak port utilisation: the
  /// busiest Ethernet switch egress port's busy time over the run's span of operations (first
  /// start to last end), and that port as "switch:port" ("-" without switch traffic); for
  /// --tier-check (docs/plan-format.md#tier-check).
  double peak_util = NAN;
  std::string peak_port;
};


/// One (layout, workload) point: a child `hcsim run` of `scen` writing the trace `db`.
struct Point {
  std::size_t layout, workload, variant = 0;
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
  /// --resume: point i as an earlier run of this plan finished it (its DIR/STEM.done names the
  /// same inputs: scenario, topology, hcsim version and commit; its trace is there); false when
  /// it must run again.
  bool resume(std::size_t i, Finished& f) const;
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
                    const std::vector<std::vector<Result>>& results, const std::string& out, unsigned jobs,
                    std::vector<TierCheck>& checks);
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
/// "lK-wJ" (and "-vV" with more than one seed run): the stem of a point's files in DIR.
std::string point_stem(const Plan& p, std::size_t li, std::size_t wi, std::size_t vi);
/// Every layout (its counts, cost, or why it is infeasible) and every (layout, workload, seed run)
/// point with its rows: the layouts' topologies and the points' scenarios written into `out`
/// (when `write`) and checked by the loaders; a size or point that cannot run gets the status
/// "infeasible: <reason>" and step -1. False on a write error (reported on stderr).
bool build_points(const Plan& p, const std::string& out, bool write, std::vector<Layout>& layouts, std::vector<Point>& points,
                  std::vector<std::vector<Result>>& results);
/// A train_step's /parallel for a layout of `npus` ranks: as given, or with dp = npus / (tp x pp)
/// when it names no dp; false (*why) when that does not divide.
bool step_parallel(const Workload& w, std::size_t npus, json* out, std::string* why);
/// Whether a point has a step to run (a feasible size).
inline bool runnable(const std::vector<Result>& rows) {
  for (auto& r : rows)
    if (r.step >= 0) return true;
  return false;
}
/// A point's estimated wall time and peak memory (plan_estimate.cpp, docs/plan-format.md#estimates).
struct Estimate {
  double wall_s = 0, peak_mib = 0;
};
Estimate estimate(const Plan& p, const Layout& L, const Workload& w, const std::vector<Result>& rows);
/// /proc/meminfo's MemAvailable in MiB (NaN when unknown).
double available_mib();
/// -j under memory (docs/plan-format.md#estimates): a child starts only while the estimated peaks
/// of the running children and its own fit in 90 % of the memory available when the plan started
/// (the first child always starts).
class MemoryGate {
 public:
  MemoryGate(const std::vector<double>& peak_mib, double available_mib);
  bool admits(std::size_t i) const;
  void started(std::size_t i);
  void finished(std::size_t i);

 private:
  std::vector<double> peak_;
  double budget_, reserved_ = 0;
  std::size_t running_ = 0;
};

/// hcsim validate of a plan: every layout's topology checked as hcsim plan checks it; one that
/// cannot be built is a warning (hcsim plan makes its rows infeasible cells), "FILE: /sweep:
/// warning: layout N (LABEL) is infeasible: TOPOLOGY-ERROR". False when no layout can be built.
bool check_layouts(const Plan& p, sim::Diagnostics& d);

std::string value_text(const json& v);       ///< a sweep value as the table shows it ("1:1", 64)
std::string dir_of(const std::string& f);    ///< "a/b/" of "a/b/c", "" without a slash
std::string absolute(const std::string& p);  ///< relative to the working directory
std::string fmt(double v, int prec);         ///< "-" when not finite
bool write_file(const std::string& path, const std::string& text, std::string* why);

/// Per (layout, workload), in point order: its rows over the seed runs (plan_aggregate.cpp): the
/// lower-median run's row with the fastest and slowest times and the count of runs with a time.
std::vector<std::vector<Result>> aggregate(const Plan& p, const std::vector<Point>& points,
                                           const std::vector<std::vector<Result>>& raw);
/// The automatic algorithm choice against the forced ones on stdout (docs/plan-format.md#selection).
void selection_report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<const Result*>& flat);

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
