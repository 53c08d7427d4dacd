// hcsim routes: the library's route decisions of a run (docs/routing.md#cli). Input: a trace,
// a routes file, or a scenario (run first). Output: the routes file format, or JSON with the
// cost terms and times. Exit 0, or 2 for bad input.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "routes_io.h"
#include "sim/config/scenario.h"
#include "sim/provenance.h"

namespace hcsim {
namespace {

int routes_main(const std::vector<std::string>& argv) {
  std::string file, out;
  bool json = false, force = false, inherit_env = false;
  const Args args(kRoutes,
                  {{"--json", "", "", "", "JSON with the cost terms and decision times instead of the routes file format",
                    [&](const std::string&) { json = true; return std::string(); }},
                   {"--output", "-o", "FILE", "a file name", "write to FILE instead of standard output",
                    [&](const std::string& v) { out = v; return v.empty() ? std::string("--output needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace FILE even if it is not a routes file (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }},
                   {"--inherit-env", "", "", "", "a SCENARIO's run reads this shell's HCOMM_*/HCCL_* variables (default: ignored)",
                    [&](const std::string&) { inherit_env = true; return std::string(); }}},
                  {"SCENARIO|DB|ROUTES", "a scenario (run first, trace discarded), a trace database or a routes file",
                   [&](const std::string& a) {
                     if (!file.empty()) return std::string("routes takes one input, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("routes needs a scenario, a trace database or a routes file");
  // A JSON input is a scenario to run (load_routes): its run is hermetic unless --inherit-env.
  bool scenario = false;
  {
    std::ifstream in(file);
    char c = 0;
    while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {}
    scenario = c == '{';
  }
  if (scenario) {
    sim::CallerEnv env;
    std::string why;
    if (!sim::take_caller_env(inherit_env, &env, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    if (const std::string note = sim::env_ignored_note(env); !note.empty()) std::fprintf(stderr, "hcsim: %s\n", note.c_str());
  }
  if (!out.empty()) {
    // A scenario's topology and rank table are inputs too (the run reads them).
    std::vector<InputFile> inputs = {{"the input", file}};
    std::vector<std::string> errs;
    if (scenario)
      if (auto sc = sim::load_scenario(file, &errs)) {
        inputs.push_back({"the scenario's topology", sc->topology_path});
        inputs.push_back({"the topology's rank table", sc->topology.rank_table});
      }
    // The routes file format, or the JSON of --json (an empty list too).
    const std::string bad = check_outputs(
        inputs, {{"-o", out, {std::string(kRoutesHeader) + "\n", "[\n {\n  \"comm\":", "[]\n"}, "a routes file (or --json output) of hcsim routes"}},
        force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  std::vector<RouteLine> rs;
  std::string why;
  if (!load_routes(file, true, &rs, &why, nullptr, inherit_env)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  const std::string text = json ? routes_json(rs) : routes_text(rs);
  if (out.empty()) { std::fwrite(text.data(), 1, text.size(), stdout); return kOk; }
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) { std::fprintf(stderr, "hcsim: %s: cannot write it\n", out.c_str()); return kBadInput; }
  return kOk;
}

}  // namespace

const Command kRoutes = {
    "routes", "routes SCENARIO|DB|ROUTES [--json] [-o FILE] [--force] [--inherit-env]",
    "        print the library's route decisions (transport, NIC, QP, UDP source port, the hops\n"
    "        through switches and ports, reason, trigger), sorted; the format golden files use\n",
    routes_main};

}  // namespace hcsim
