// hcsim: command-line front end of the simulator (docs/architecture.md#tools). This file
// dispatches to the commands of commands.h (one file each) and answers --help and --version.
// Exit codes: 0 ran and every expectation held; 1 an expectation failed; 2 bad input or usage, or
// the trace could not be written; 130/143 stopped by SIGINT/SIGTERM (the trace is finalised).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <systemc>

#include "commands.h"
#include "sim/host_process.h"
#include "sim/provenance.h"

namespace hcsim {
namespace {

const Command* const kCommands[] = {&kRun, &kValidate, &kTopo, &kTrace, &kTop, &kHealth, &kPlot, &kPlan, &kRoutes, &kDiff, &kSummary, &kDiscover, &kExec};

std::string usage() {
  std::string u = "usage: hcsim <command> [options]\n\ncommands:\n";
  for (const Command* c : kCommands) u += std::string("  ") + c->synopsis + "\n" + c->summary;
  return u +
         "  --help, --version\n"
         "\n"
         "exit codes: 0 ok, 1 an expectation failed, 2 bad input or usage or a trace write error,\n"
         "            130 / 143 run stopped by SIGINT / SIGTERM (trace finalised, run.status interrupted)\n";
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "hcsim: %s\n\n%s", msg.c_str(), usage().c_str());
  return kBadInput;
}

}  // namespace
}  // namespace hcsim

int sc_main(int argc, char* argv[]) {
  using namespace hcsim;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage_error("no command given");
  const std::string cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") { std::printf("%s", usage().c_str()); return kOk; }
  if (cmd == "--version") {
    std::printf("hcsim %s (commit %s, SystemC %s)\n", sim::build_version(), sim::build_commit(), sc_core::sc_release());
    std::printf("heap: %s\n", sim::heap_pages().c_str());
    return kOk;
  }
  for (const Command* c : kCommands)
    if (cmd == c->name) return c->main({args.begin() + 1, args.end()});
  return usage_error("unknown command \"" + cmd + "\"");
}

int main(int argc, char* argv[]) {
  sim::prepare_host_process(argv);
  return sc_core::sc_elab_and_sim(argc, argv);
}
