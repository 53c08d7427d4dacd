// hcsim plan (docs/plan-format.md): the plan file's model, its loader (plan_file.cpp) and the
// reports of a finished sweep (plan_report.cpp); cmd_plan.cpp builds the layouts and runs the points.
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
};


/// One (layout, workload) point: a child `hcsim run` of `scen` writing the trace `db`.
struct Point {
  std::size_t layout, workload;
  std::string scen, db, log;
  pid_t pid = 0;
  std::chrono::steady_clock::time_point start;
};

/// The marker file that says a directory is a plan's output (docs/plan-format.md).
constexpr const char* kMarker = ".hcsim-plan";

/// Load and check a plan file; every problem goes to `d` as "FILE: /pointer: reason".
bool load_plan(const std::string& path, Plan& p, sim::Diagnostics& d);

std::string value_text(const json& v);       ///< a sweep value as the table shows it ("1:1", 64)
std::string dir_of(const std::string& f);    ///< "a/b/" of "a/b/c", "" without a slash
std::string absolute(const std::string& p);  ///< relative to the working directory
std::string fmt(double v, int prec);         ///< "-" when not finite
bool write_file(const std::string& path, const std::string& text, std::string* why);

/// The table on stdout, DIR/plan.csv, DIR/plan.db, the SVG plots and the target's verdict (not
/// judged for a dry run). Returns `rc` raised to 1 when the target is not met, 2 on a write error.
/// `meta` adds rows to plan.db's meta table (under MPI: the ranks and the points each ran).
int report(const Plan& p, const std::vector<Layout>& layouts, const std::vector<Point>& points,
           const std::vector<std::vector<Result>>& results, const std::string& out, bool dry, int rc,
           const std::vector<std::pair<std::string, std::string>>& meta = {});

}  // namespace hcsim::plan
