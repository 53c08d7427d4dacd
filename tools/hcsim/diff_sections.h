// Parts of hcsim diff (docs/tools.md#diff) that cmd_diff.cpp assembles: the route section (load
// per switch port and link, uplinks used per switch, then the moved decisions, all in natural
// order), the comparison with a timing golden (hcsim summary), and the JUnit report.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "routes_io.h"
#include "summary_tsv.h"

namespace hcsim {

/// One JUnit test case: `items` are its differences (none: it passed); not `compared`: skipped.
struct DiffCase {
  std::string name;
  bool compared = true;
  std::vector<std::string> items;
};

/// A changed aggregate: what it is named by ("leaf0", "leaf0:4") and its line.
struct Aggregate {
  std::string name, line;
};

struct RoutesDiff {
  std::vector<Aggregate> uplinks;  ///< "leaf0 uplinks used 4 -> 2", by |change| then name
  std::vector<Aggregate> ports;    ///< "leaf0:4 16 -> 0 (-16)", by |change| then name
  std::size_t switches = 0, links = 0;  ///< how many were compared (in A or B)
  std::vector<std::string> moved;  ///< decisions added, removed or changed, by (comm, src, dst, qp, n)
};
RoutesDiff diff_routes(const std::vector<RouteLine>& a, const std::vector<RouteLine>& b);

/// A timing golden (or a trace's timing rows) against another: one case per workload step
/// ("summary step 0 allreduce 16777216 B"); a time outside `tol_pct`, another operation, size,
/// algorithm or repetition count, a step in one only are differences.
std::vector<DiffCase> diff_timing(const std::vector<TimingRow>& a, const std::vector<TimingRow>& b, double tol_pct);

/// The lines of `v` (at most `max_lines`, then "... and N more"), each after `indent`.
void print_list(const std::vector<std::string>& v, std::size_t max_lines, const char* indent = "  ");

/// How a JUnit report of hcsim diff begins (what --junit may replace without --force).
extern const char* const kJunitHead;
/// The report: one <testcase> per case, failure bodies bounded by `max_lines`.
std::string junit_xml(const std::vector<DiffCase>& cases, std::size_t max_lines);

}  // namespace hcsim
