// hcsim exec: run a user's own program, one OS process per rank, on the simulated cluster
// (docs/exec.md). mpirun's shape: `hcsim exec (--topology T | SCENARIO) [-n N] -- PROGRAM ARGS...`.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "top_live.h"
#include "sim/config/scenario.h"
#include "sim/config/units.h"
#include "sim/exec.h"
#include "sim/provenance.h"
#include "sim/runner.h"
#include "sim/stop.h"

namespace hcsim {
namespace {

bool exists(const std::string& p) { return std::ifstream(p).good(); }

// This hcsim's own directory ("" when /proc/self/exe cannot be read).
std::string exe_dir() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  const std::string p(self, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// A topology given by name ("a2-2node") is a shipped topologies/<name>.json: in the current
// directory's topologies/, the installed share/hcsim/topologies/, or the source tree's.
std::string resolve_topology(const std::string& t) {
  if (exists(t)) return t;
  for (const std::string& dir : {std::string("topologies/"), exe_dir() + "/../share/hcsim/topologies/",
                                std::string(HCSIM_SOURCE_DIR) + "/topologies/"})
    if (exists(dir + t + ".json")) return dir + t + ".json";
  return t;
}

// The emulation driver library the rank processes load (HCOMM_DRIVER): $HCSIM_EXEC_DRIVER, else
// the installed one beside this hcsim (<prefix>/lib), else the one built with it.
std::string driver_library() {
  if (const char* e = std::getenv("HCSIM_EXEC_DRIVER"); e && *e) return e;
  const std::string installed = exe_dir() + "/../lib/libhcsim_exec_driver.so";
  if (exists(installed)) return installed;
  return HCSIM_EXEC_DRIVER_BUILT;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\t') { if (!cur.empty()) w.push_back(cur), cur.clear(); }
    else cur += c;
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

extern "C" void on_exec_signal(int sig) { sim::request_stop(sig); }

int exec_main(const std::vector<std::string>& argv_in) {
  // Everything after "--" is the program and its arguments, never options of ours.
  std::vector<std::string> argv = argv_in, program;
  for (std::size_t i = 0; i < argv.size(); ++i)
    if (argv[i] == "--") {
      program.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      argv.resize(i);
      break;
    }
  std::string scenario, topology, db, host_time = "zero";
  bool db_set = false, no_trace = false, force = false, quiet = false, all_failures = false, progress = false;
  std::uint64_t n = 0, per_server = 0;
  sim::ExecOptions eo;
  sim::ScenarioOverrides ov;
  std::string wrapper;
  auto flag = [](bool& b) { return [&b](const std::string&) { b = true; return std::string(); }; };
  auto count = [](const char* name, std::uint64_t* out) {
    return [name, out](const std::string& v) {
      std::string why;
      const auto x = sim::parse_uint(v, &why);
      if (!x || *x < 1 || *x > 1000000) return std::string(name) + ": expected a count from 1, got \"" + v + "\"";
      *out = *x;
      return std::string();
    };
  };
  const Args args(kExec,
                  {{"--topology", "", "T", "a topology", "the cluster: a topology file or a shipped name (a2-2node); or give a SCENARIO",
                    [&](const std::string& v) { topology = v; return std::string(); }},
                   {"-n", "", "N", "a count", "ranks to start (default: every NPU of the topology)", count("-n", &n)},
                   {"--ranks-per-server", "", "K", "a count", "take K NPUs of each server in turn (default: fill servers in rank-table order)",
                    count("--ranks-per-server", &per_server)},
                   fault_option(ov, "inject a fault as in a scenario's /faults; repeatable"),
                   set_option(ov, "set a scenario key (as hcsim run --set); repeatable"),
                   {"--db", "", "FILE", "a file name", "the trace database (default: ./exec.hcsim.db)",
                    [&](const std::string& v) { db = v; db_set = true; return std::string(); }},
                   {"--force", "", "", "", "replace FILE even if it is not an hcsim trace", flag(force)},
                   {"--no-trace", "", "", "", "write no trace", flag(no_trace)},
                   {"--host-time", "", "zero|measured[:SCALE]", "zero or measured[:SCALE]",
                    "what host code between driver calls costs in simulated time: nothing (default, deterministic) or each "
                    "rank's own CPU time x SCALE (default 1; not deterministic)",
                    [&](const std::string& v) {
                      host_time = v;
                      if (v == "zero") { eo.host_time_scale = 0; return std::string(); }
                      if (v.rfind("measured", 0) == 0) {
                        if (v == "measured") { eo.host_time_scale = 1; return std::string(); }
                        std::string why;
                        const auto x = v.size() > 9 && v[8] == ':' ? sim::parse_decimal(v.substr(9), &why) : std::nullopt;
                        if (x && *x > 0 && *x <= 1e6) { eo.host_time_scale = *x; return std::string(); }
                      }
                      return "--host-time: expected zero, measured or measured:SCALE (SCALE > 0), got \"" + v + "\"";
                    }},
                   {"--tag-output", "", "", "", "prefix every line a rank prints with [RANK]", flag(eo.tag_output)},
                   {"--wrapper", "", "CMD", "a command", "start each rank's program under CMD (e.g. 'gdb -batch -ex run --args')",
                    [&](const std::string& v) { wrapper = v; return std::string(); }},
                   {"--wrapper-rank", "", "R", "a rank", "apply --wrapper to rank R only",
                    [&](const std::string& v) {
                      std::string why;
                      const auto x = sim::parse_uint(v, &why);
                      if (!x) return "--wrapper-rank: expected a rank, got \"" + v + "\"";
                      eo.wrapper_rank = static_cast<std::int64_t>(*x);
                      return std::string();
                    }},
                   {"--watchdog", "", "SECONDS", "a number of seconds",
                    "end the run when a rank makes no driver call for SECONDS of wall time while the others wait (default 60; 0: never)",
                    [&](const std::string& v) {
                      std::string why;
                      const auto x = sim::parse_decimal(v, &why);
                      if (!x || *x < 0 || *x > 1e6) return "--watchdog: expected seconds, got \"" + v + "\"";
                      eo.watchdog_s = *x;
                      return std::string();
                    }},
                   {"--progress", "", "", "", "a progress line on stderr every second: simulated time, events/s", flag(progress)},
                   {"--all-failures", "", "", "", "list every rank's message (default: the first 8 per distinct cause, then a count)",
                    flag(all_failures)},
                   {"--quiet", "-q", "", "", "no library log lines on stderr (they are still traced)", flag(quiet)}},
                  {"SCENARIO", "a scenario (its topology, network, faults and hcomm_env; its workload is not run)",
                   [&](const std::string& a) {
                     if (!scenario.empty()) return "exec takes one scenario, got a second: " + a + " (the program goes after --)";
                     scenario = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (program.empty()) return args.usage_error("no program: give it after --, e.g. hcsim exec --topology a2-2node -- ./my_program");
  if (scenario.empty() == topology.empty()) return args.usage_error("give either --topology T or a SCENARIO (not both)");
  if (db_set && db.empty()) return args.usage_error("--db needs a file name");
  eo.argv = program;
  eo.wrapper = split_words(wrapper);

  // --topology: a scenario of that topology with no workload (real bytes), written beside nothing:
  // it is loaded from a temporary file so that --set and --fault are checked as for any scenario.
  std::string tmp, topology_file;  // topology_file: as the user named it (or resolved by name)
  if (!topology.empty()) {
    const std::string t = topology_file = resolve_topology(topology);
    if (!exists(t)) { std::fprintf(stderr, "hcsim: --topology %s: no such file, and no shipped topology of that name\n", topology.c_str()); return kBadInput; }
    char path[] = "/tmp/hcsim-exec-XXXXXX.json";
    const int fd = mkstemps(path, 5);
    if (fd < 0) { std::fprintf(stderr, "hcsim: cannot create a temporary scenario: %s\n", std::strerror(errno)); return kBadInput; }
    char abs[4096];
    const std::string tabs = realpath(t.c_str(), abs) ? abs : t;
    const std::string j = sim::json{{"format", "hcsim-scenario"}, {"version", 1}, {"name", "exec"}, {"topology", tabs}, {"payload", "real"},
                                    {"workload", sim::json::array()}}.dump();
    (void)!write(fd, j.data(), j.size());
    close(fd);
    tmp = scenario = path;
  }
  std::vector<std::string> errs, warns;
  auto sc = sim::load_scenario(scenario, ov, &errs, &warns);
  if (!tmp.empty()) std::remove(tmp.c_str());
  for (auto& w : warns) std::fprintf(stderr, "%s\n", w.c_str());
  if (!sc) {
    for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
    return kBadInput;
  }
  if (!topology.empty()) sc->file = topology;
  if (!sc->workload.empty())
    std::fprintf(stderr, "hcsim: %s: its workload (%zu steps) is not run: the program replaces it\n", scenario.c_str(), sc->workload.size());
  sc->workload.clear();
  sc->store_bytes = true;  // the program's bytes are real
  // The ranks: the topology's NPUs in rank-table order, or K per server in turn.
  auto& topo = sc->topology;
  const std::uint64_t npus = topo.rank_to_npu.size();
  if (n == 0) n = npus;
  if (n > npus) {
    std::fprintf(stderr, "hcsim: -n %llu: the topology %s has %llu NPUs\n", static_cast<unsigned long long>(n), topo.name.c_str(),
                 static_cast<unsigned long long>(npus));
    return kBadInput;
  }
  std::vector<std::uint32_t> order = topo.rank_to_npu;
  if (per_server) {
    std::vector<std::vector<std::uint32_t>> by_server(topo.servers.size());
    for (std::uint32_t x : topo.rank_to_npu) by_server[topo.npus[x].server].push_back(x);
    order.clear();
    for (std::size_t round = 0; order.size() < npus; ++round)
      for (auto& s : by_server)
        for (std::size_t i = round * per_server; i < std::min<std::size_t>(s.size(), (round + 1) * per_server); ++i) order.push_back(s[i]);
  }
  order.resize(n);
  topo.rank_to_npu = order;
  if (eo.wrapper_rank >= static_cast<std::int64_t>(n)) {
    std::fprintf(stderr, "hcsim: --wrapper-rank %lld: there are %llu ranks\n", static_cast<long long>(eo.wrapper_rank), static_cast<unsigned long long>(n));
    return kBadInput;
  }
  for (const auto& [k, v] : sc->hcomm_env) eo.env.emplace_back(k, v);
  eo.driver_path = driver_library();
  if (!exists(eo.driver_path)) {
    std::fprintf(stderr, "hcsim: the emulation driver %s is missing (set HCSIM_EXEC_DRIVER)\n", eo.driver_path.c_str());
    return kBadInput;
  }
  if (!db_set) db = "exec.hcsim.db";
  if (!no_trace) {
    std::vector<OutputFile> outs{{"--db", db, {}, ""}};
    for (auto& o : trace_side_files("--db", db)) outs.push_back(o);
    // Never an input (docs/tools.md#outputs): the scenario, the topology, its rank table, the program.
    std::vector<InputFile> ins;
    if (topology.empty()) ins.push_back({"input SCENARIO", scenario});
    ins.push_back({topology.empty() ? "the scenario's topology" : "--topology", topology.empty() ? sc->topology_path : topology_file});
    ins.push_back({"the topology's rank table", sc->topology.rank_table});
    if (exists(program[0])) ins.push_back({"the program", program[0]});
    const std::string bad = check_outputs(ins, outs, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  std::printf("hcsim exec: %llu ranks of %s on %s; trace %s\n", static_cast<unsigned long long>(n), program[0].c_str(), topo.name.c_str(),
              no_trace ? "off" : db.c_str());
  std::fflush(stdout);

  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction sa {};
    sa.sa_handler = on_exec_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // no SA_RESTART: a proxy's poll() wakes up
    sigaction(sig, &sa, nullptr);
  }
  signal(SIGPIPE, SIG_IGN);
  sim::ExecHost host(topo, eo);
  std::string why;
  if (!host.launch(&why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  sim::RunOptions opt;
  opt.db_path = no_trace ? "" : db;
  opt.force_db = force;
  opt.echo_logs = !quiet;
  opt.host = &host;
  opt.provenance = {{"command_line", sim::shell_words("hcsim exec", argv_in)}, {"host_time", host_time}};
  LiveRenderer live(LiveRenderer::kProgress, isatty(STDERR_FILENO) == 1, stderr, sc->name);
  if (progress) {
    opt.live.report = [&live](const sim::LiveSnapshot& s) { live(s); };
    opt.live.period_s = 1.0;
  }
  sim::RunResult r;
  try {
    r = sim::run_scenario(*sc, opt);
  } catch (const std::exception& e) {
    live.finish();
    std::fprintf(stderr, "hcsim: %s\n", e.what());
    host.finish();
    return kBadInput;
  }
  live.finish();
  const sim::ExecOutcome o = host.finish();
  std::fflush(stdout);  // the ranks' own output first, then what hcsim says about them
  // At most 8 lines per distinct cause (rank numbers and pids masked), then a count.
  for (const auto& m : sim::condense_by_cause(o.messages, all_failures)) std::fprintf(stderr, "hcsim exec: %s\n", m.c_str());
  for (const auto& line : sim::condense_by_cause(r.rank_outcomes, all_failures)) std::fprintf(stderr, "hcsim exec: %s\n", line.c_str());
  for (const auto& w : r.warnings) std::fprintf(stderr, "hcsim: warning: %s\n", w.c_str());
  std::printf("hcsim exec: simulated %.3f us, %.2f s wall; ranks' exit codes:", static_cast<double>(r.sim_end_ps) / 1e6, r.wall_s);
  for (std::size_t i = 0; i < o.exit_codes.size() && i < 16; ++i) std::printf(" %d", o.exit_codes[i]);
  std::printf("%s\n", o.exit_codes.size() > 16 ? " ..." : "");
  std::fflush(stdout);
  if (!r.trace_error.empty()) { std::fprintf(stderr, "hcsim: %s\n", r.trace_error.c_str()); return kBadInput; }
  if (r.signal) return 128 + r.signal;
  if (o.watchdog) return 124;
  return o.worst != 0 ? o.worst : r.exit_code;
}

}  // namespace

const Command kExec = {
    "exec", "exec (--topology T | SCENARIO) [-n N] [--ranks-per-server K] [--fault 'TYPE K=V ...']... [--set /POINTER=VALUE]..."
            " [--db FILE] [--no-trace] [--host-time zero|measured[:SCALE]] [--tag-output] [--wrapper CMD [--wrapper-rank R]]"
            " [--watchdog SECONDS] [--progress] [--all-failures] [-q] -- PROGRAM [ARGS...]",
    "        run PROGRAM once per rank, each an OS process of its own, on the simulated cluster:\n"
    "        libhcomm in it talks to the simulator, which times every call (docs/exec.md); the exit\n"
    "        code is the worst rank's (128 + n for a signal, 124 after the watchdog)\n",
    exec_main};

}  // namespace hcsim
