// hcsim validate: check topology, scenario and plan files (docs/architecture.md#tools).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "plan.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"

namespace hcsim {
namespace {

int validate_main(const std::vector<std::string>& argv) {
  std::vector<std::string> files;
  const Args args(kValidate, {}, {"FILE...", "topology, scenario or plan files (told apart by their top-level keys)",
                                  [&](const std::string& f) { files.push_back(f); return std::string(); }});
  if (auto rc = args.parse(argv)) return *rc;
  if (files.empty()) return args.usage_error("validate needs at least one file");
  int rc = kOk;
  for (const auto& f : files) {
    sim::Diagnostics d(f);
    auto j = sim::read_json_file(f, d);
    std::vector<std::string> errs, warns;
    // A scenario or a plan by its top level ("format", or keys only it has: a workload, faults,
    // ...; sweep, workloads, ...); anything else is read as a topology, which names a rank table
    // as the wrong kind of file.
    const std::string kind = j ? sim::document_kind(*j) : "";
    if (kind == "scenario") {
      if (!sim::load_scenario(f, &errs, &warns)) rc = kBadInput;
    } else if (kind == "plan") {
      plan::Plan p;
      if (!plan::load_plan(f, p, d) || !plan::check_layouts(p, d)) rc = kBadInput;  // the layouts as hcsim plan checks them
      errs = d.messages();
      warns = d.warnings();
    } else if (j) {
      auto k = f.find_last_of('/');
      if (!sim::topology_from_json(*j, d, k == std::string::npos ? "" : f.substr(0, k + 1))) rc = kBadInput;
      errs = d.messages();
    } else {
      errs = d.messages();
      rc = kBadInput;
    }
    for (auto& w : warns) std::fprintf(stderr, "%s\n", w.c_str());
    for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
    if (errs.empty()) std::printf("%s: ok\n", f.c_str());
  }
  return rc;
}

}  // namespace

const Command kValidate = {
    "validate", "validate FILE...",
    "        check topology, scenario and plan files; every problem is printed as file: /pointer: reason\n",
    validate_main};

}  // namespace hcsim
