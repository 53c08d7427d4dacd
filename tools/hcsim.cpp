// hcsim: command-line front end of the simulator.
//   hcsim run [SCENARIO] [--db FILE] [--force] [--no-trace] [--quiet]
//   hcsim validate FILE...
// Exit codes: 0 ran and every expectation held; 1 an expectation failed; 2 bad input or usage, or
// the trace could not be written; 130/143 stopped by SIGINT/SIGTERM (the trace is finalised).
#include <malloc.h>

#include <csignal>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <systemc>

#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/stop.h"
#include "sim/topology.h"
#include "sim/units.h"

namespace {

const char* kUsage =
    "usage: hcsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO] [--db FILE] [--force] [--no-trace] [--quiet]\n"
    "        run a scenario (default: scenarios/quickstart.json); the trace goes to FILE\n"
    "        (default: ./<scenario name>.hcsim.db); an existing FILE is replaced only if it is\n"
    "        an hcsim trace no other run is writing, or any regular file with --force\n"
    "  validate FILE...\n"
    "        check topology and scenario files; every problem is printed as file: /pointer: reason\n"
    "  topo FILE [--summary] [--dot] [--svg] [--ranktable 1.0|1.2] [--full] [-o OUT]\n"
    "        describe a topology: counts, bisection bandwidth and diameter (--summary, the default),\n"
    "        a Graphviz DOT or SVG picture (large layouts collapsed unless --full), or an Ascend\n"
    "        rank table for its rank order; written to OUT or stdout\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 ok, 1 an expectation failed, 2 bad input or usage or a trace write error,\n"
    "            130 / 143 run stopped by SIGINT / SIGTERM (trace finalised, run.status interrupted)\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "hcsim: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

bool exists(const std::string& p) { return std::ifstream(p).good(); }

std::string default_scenario() {
  const std::string rel = "scenarios/quickstart.json";
  if (exists(rel)) return rel;
  return std::string(HCSIM_SOURCE_DIR) + "/" + rel;
}

int cmd_validate(const std::vector<std::string>& files) {
  if (files.empty()) return usage_error("validate needs at least one file");
  int rc = 0;
  for (const auto& f : files) {
    sim::Diagnostics d(f);
    auto j = sim::read_json_file(f, d);
    std::vector<std::string> errs, warns;
    if (j && j->is_object() && j->contains("format") && (*j)["format"] == "hcsim-scenario") {
      if (!sim::load_scenario(f, &errs, &warns)) rc = 2;
    } else if (j) {
      auto k = f.find_last_of('/');
      if (!sim::topology_from_json(*j, d, k == std::string::npos ? "" : f.substr(0, k + 1))) rc = 2;
      errs = d.messages();
    } else {
      errs = d.messages();
      rc = 2;
    }
    for (auto& w : warns) std::fprintf(stderr, "%s\n", w.c_str());
    for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
    if (errs.empty()) std::printf("%s: ok\n", f.c_str());
  }
  return rc;
}

int cmd_topo(const std::vector<std::string>& args) {
  std::string file, out, what = "summary", rt_version;
  bool full = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--summary") what = "summary";
    else if (a == "--dot") what = "dot";
    else if (a == "--svg") what = "svg";
    else if (a == "--full") full = true;
    else if (a == "--ranktable") {
      what = "ranktable";
      if (i + 1 >= args.size() || (args[i + 1] != "1.0" && args[i + 1] != "1.2")) return usage_error("--ranktable needs a version: 1.0 or 1.2");
      rt_version = args[++i];
    } else if (a == "-o") {
      if (i + 1 >= args.size()) return usage_error("-o needs a file name");
      out = args[++i];
    } else if (!a.empty() && a[0] == '-') return usage_error("unknown option " + a);
    else if (file.empty()) file = a;
    else return usage_error("topo takes one file");
  }
  if (file.empty()) return usage_error("topo needs a topology file");
  sim::Diagnostics d(file);
  auto t = sim::load_topology(file, d);
  if (!t) {
    for (auto& e : d.messages()) std::fprintf(stderr, "%s\n", e.c_str());
    return 2;
  }
  std::string text;
  if (what == "summary") text = sim::format_summary(*t, sim::summarize(*t));
  else if (what == "dot") text = sim::to_dot(*t, full ? SIZE_MAX : 64);
  else if (what == "svg") text = sim::to_svg(*t, full ? SIZE_MAX : 64);
  else {
    for (auto& n : t->npus)
      if (!n.device_ip) {
        std::fprintf(stderr, "%s: /servers: %s has no device IP; a rank table needs one per NPU (set nic.device_ip)\n", file.c_str(), n.name.c_str());
        return 2;
      }
    text = sim::export_rank_table(*t, rt_version).dump(2) + "\n";
  }
  if (out.empty()) { std::fputs(text.c_str(), stdout); return 0; }
  std::ofstream f(out, std::ios::binary);
  if (!(f << text)) { std::fprintf(stderr, "hcsim: %s: cannot write\n", out.c_str()); return 2; }
  return 0;
}

// The default trace file name from a scenario name: only [A-Za-z0-9._-] are kept (others become
// '_'), a leading '.' or '-' becomes '_', so the name cannot leave the current directory, hide
// itself or read as an option.
std::string trace_file_name(const std::string& name) {
  std::string f;
  for (char c : name.substr(0, 200)) f += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (f.empty()) f = "scenario";
  if (f[0] == '.' || f[0] == '-') f[0] = '_';
  return f + ".hcsim.db";
}

extern "C" void on_stop_signal(int sig) { sim::request_stop(sig); }  // only sets a flag

int cmd_run(const std::vector<std::string>& args) {
  std::string scenario, db;
  bool no_trace = false, quiet = false, db_set = false, force = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--db") {
      if (i + 1 >= args.size()) return usage_error("--db needs a file name");
      db = args[++i];
      db_set = true;
    } else if (a.rfind("--db=", 0) == 0) {
      db = a.substr(5);
      db_set = true;
    } else if (a == "--force") {
      force = true;
    } else if (a == "--no-trace") {
      no_trace = true;
    } else if (a == "--quiet" || a == "-q") {
      quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option " + a);
    } else if (scenario.empty()) {
      scenario = a;
    } else {
      return usage_error("run takes one scenario, got a second: " + a);
    }
  }
  if (scenario.empty()) scenario = default_scenario();
  if (db_set && db.empty()) return usage_error("--db needs a file name");
  std::vector<std::string> errs;
  auto sc = sim::load_scenario(scenario, &errs);
  if (!sc) {
    for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
    return 2;
  }
  if (!db_set) db = trace_file_name(sc->name);
  sim::RunOptions opt;
  opt.db_path = no_trace ? "" : db;
  opt.force_db = force;
  opt.echo_logs = !quiet;
  std::printf("hcsim: scenario %s (%s)\n", sc->name.c_str(), scenario.c_str());
  std::printf("hcsim: topology %s: %zu servers, %zu NPUs, %zu HCCS links; payload %s\n", sc->topology.name.c_str(),
              sc->topology.servers.size(), sc->topology.npus.size(), sc->topology.links.size(),
              sc->store_bytes ? "real bytes (checked)" : "timing only");
  if (!opt.db_path.empty()) std::printf("hcsim: trace database %s\n", opt.db_path.c_str());
  std::fflush(stdout);
  // SIGINT/SIGTERM: stop the simulation at its next time step and finalise the trace (runner).
  // SA_RESETHAND: a second signal kills at once. A signal ignored on entry (a background job of a
  // non-interactive shell, nohup) stays ignored.
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {}, sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
  sim::RunResult r;
  try {
    r = sim::run_scenario(*sc, opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hcsim: %s\n", e.what());
    return 2;
  }
  std::printf("%s", sim::format_summary(*sc, r).c_str());
  std::printf("hcsim: simulated %.3f us, %llu fabric events, %.2f s wall\n", static_cast<double>(r.sim_end_ps) / 1e6,
              static_cast<unsigned long long>(r.events), r.wall_s);
  if (!r.trace_error.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "hcsim: %s\n", r.trace_error.c_str());
    return 2;
  }
  if (r.signal) {
    std::printf("hcsim: interrupted by %s at simulated %.3f us%s\n", r.signal == SIGINT ? "SIGINT" : r.signal == SIGTERM ? "SIGTERM" : "a signal",
                static_cast<double>(r.sim_end_ps) / 1e6,
                opt.db_path.empty() ? "" : ("; trace " + opt.db_path + " completed with run.status 'interrupted'").c_str());
    return r.exit_code;
  }
  for (auto& f : r.failures) std::printf("FAIL: %s\n", f.c_str());
  std::printf("hcsim: %s\n", r.exit_code == 0 ? "PASS: all expectations held" : "FAIL: expectations not met");
  return r.exit_code;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage_error("no command given");
  const std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") { std::printf("%s", kUsage); return 0; }
  if (cmd == "--version") { std::printf("hcsim %s (SystemC %s)\n", HCSIM_VERSION, sc_core::sc_release()); return 0; }
  if (cmd == "run") return cmd_run(rest);
  if (cmd == "validate") return cmd_validate(rest);
  if (cmd == "topo") return cmd_topo(rest);
  return usage_error("unknown command \"" + cmd + "\"");
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  // Payload buffers of tens of MiB are allocated and freed per repetition: keep freed memory in the
  // heap instead of returning it to the kernel, which would fault every page in again (measured:
  // page faults were the largest cost of the quickstart).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
