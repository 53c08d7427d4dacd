// hcsim run: simulate a scenario, print its summary, trace it (docs/architecture.md#tools).
#include <unistd.h>

#include <csignal>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "top_live.h"
#include "sim/provenance.h"
#include "sim/host_limits.h"
#include "sim/runner.h"
#include "sim/config/scenario.h"
#include "sim/stop.h"
#include "sim/config/units.h"

namespace hcsim {
namespace {

bool exists(const std::string& p) { return std::ifstream(p).good(); }

std::string default_scenario() {
  const std::string rel = "scenarios/quickstart.json";
  if (exists(rel)) return rel;
  return std::string(HCSIM_SOURCE_DIR) + "/" + rel;
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

// The overrides given, as the provenance row records them: {"set": [{"pointer", "value"}...],
// "fault": [TEXT...], "chaos": "SEED:N" or null}.
std::string overrides_json(const sim::ScenarioOverrides& ov, const std::string& chaos) {
  sim::json sets = sim::json::array(), faults = sim::json::array();
  for (const auto& [ptr, value] : ov.sets) sets.push_back({{"pointer", ptr}, {"value", value}});
  for (const auto& f : ov.faults) faults.push_back(f.text);
  return sim::json{{"set", sets}, {"fault", faults}, {"chaos", chaos.empty() ? sim::json() : sim::json(chaos)}}.dump();
}

extern "C" void on_stop_signal(int sig) { sim::request_stop(sig); }  // only sets a flag

// SIGINT/SIGTERM: stop the simulation at its next time step and finalise the trace (runner).
// SA_RESETHAND: a second signal kills at once. A signal ignored on entry (a background job of a
// non-interactive shell, nohup) stays ignored.
void install_stop_handlers() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {}, sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
}

int run_main(const std::vector<std::string>& argv) {
  std::string scenario, db;
  std::uint64_t max_memory = 0;  // 0: MemAvailable
  bool no_trace = false, quiet = false, db_set = false, force = false, progress = false, top = false, trace_tasks = false,
       all_failures = false;
  std::string report;  // --report FILE: the outcome as JSON
  bool inherit_env = false;
  double refresh_s = 1.0;
  std::int64_t sample_interval = -1;  // -1: the scenario's /trace/sample_interval
  auto flag = [](bool& b) { return [&b](const std::string&) { b = true; return std::string(); }; };
  sim::ScenarioOverrides ov;
  std::string chaos;  // "SEED:N"
  std::uint64_t chaos_seed = 0, chaos_n = 0;
  const Args args(kRun,
                  {{"--db", "", "FILE", "a file name", "the trace database (default: ./<scenario name>.hcsim.db)",
                    [&](const std::string& v) {
                      db = v;
                      db_set = true;
                      return std::string();
                    }},
                   {"--force", "", "", "", "replace FILE even if it is not an hcsim trace (a regular file)", flag(force)},
                   {"--max-memory", "", "SIZE", "a size", "refuse a real-payload run needing more host memory (default: MemAvailable)",
                    [&](const std::string& v) {
                      std::string why;
                      auto b = sim::parse_size(v, &why);
                      if (!b || *b == 0) return "--max-memory: " + (why.empty() ? "must be positive" : why);
                      max_memory = *b;
                      return std::string();
                    }},
                   {"--no-trace", "", "", "", "write no trace", flag(no_trace)},
                   {"--progress", "", "", "", "show progress on stderr even when it is not a terminal (runs over --refresh seconds)", flag(progress)},
                   {"--top", "", "", "", "a live view on stderr: sim time, events/s, ops per rank, busiest links and ports, error counters",
                    flag(top)},
                   {"--refresh", "", "SECONDS", "a number of seconds", "wall time between progress / --top reports, and before the first (default 1)",
                    [&](const std::string& v) {
                      std::string why;
                      const auto x = sim::parse_decimal(v, &why);
                      if (!x || !(*x >= 0.01 && *x <= 3600)) return "--refresh: expected seconds from 0.01 to 3600, got \"" + v + "\"";
                      refresh_s = *x;
                      return std::string();
                    }},
                   {"--sample-interval", "", "DUR", "a duration",
                    "trace counter_samples every DUR of simulated time (0 or off: none; default: the scenario's, else off)",
                    [&](const std::string& v) {
                      std::string why;
                      auto t = sim::parse_sample_interval(v, &why);
                      if (!t) return "--sample-interval: " + why;
                      sample_interval = static_cast<std::int64_t>(*t);
                      return std::string();
                    }},
                   fault_option(ov, "inject a fault as in the scenario's /faults (the same keys; at.step=0 at.after=40% for relative times); repeatable"),
                   set_option(ov, "set a scenario key (e.g. /network/ecmp_hash=src-dst, /workload/0/bytes=8MiB; VALUE as JSON if it parses, "
                    "else a string); repeatable"),
                   {"--chaos", "", "SEED:N", "SEED:N",
                    "add N faults drawn reproducibly from SEED (types the layout supports, inside the workload's span); listed before the run",
                    [&](const std::string& v) {
                      const auto colon = v.find(':');
                      const bool has = colon != std::string::npos;
                      std::string why;
                      const auto seed = has ? sim::parse_uint(v.substr(0, colon), &why) : std::nullopt;
                      const auto n = seed ? sim::parse_uint(v.substr(colon + 1), &why) : std::nullopt;
                      if (!seed || !n || *n < 1 || *n > 1000)
                        return "--chaos " + v + ": expected SEED:N, a seed (an integer from 0 to 18446744073709551615) and 1 to 1000 faults, e.g. --chaos 7:5" +
                               (why.empty() ? std::string() : " (" + why + ")");
                      chaos = v;
                      chaos_seed = *seed;
                      chaos_n = *n;
                      return std::string();
                    }},
                   {"--report", "", "FILE", "a file name",
                    "also write the run's outcome as JSON: status, the fault report, warnings, failures (docs/tools.md#fault-report)",
                    [&](const std::string& v) {
                      if (v.empty()) return std::string("--report needs a file name");
                      report = v;
                      return std::string();
                    }},
                   {"--all-failures", "", "", "", "list every rank that failed (default: the first 8 per distinct cause, then a count)",
                    flag(all_failures)},
                   {"--trace-tasks", "", "", "", "trace one row per stream task the NPUs execute (the tasks table)", flag(trace_tasks)},
                   {"--inherit-env", "", "", "", "let the library read this shell's HCOMM_*/HCCL_* variables (default: ignored; the scenario's hcomm_env wins)",
                    flag(inherit_env)},
                   {"--quiet", "-q", "", "", "no progress line, and no library log lines on stderr (they are still traced)", flag(quiet)}},
                  {"SCENARIO", "the scenario file (default: scenarios/quickstart.json)", [&](const std::string& a) {
                     if (!scenario.empty()) return "run takes one scenario, got a second: " + a;
                     scenario = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (db_set && db.empty()) return args.usage_error("--db needs a file name");
  // How the run was made, before --chaos adds its faults (docs/trace-schema.md#provenance).
  const std::string command_line = sim::shell_words("hcsim run", argv), overrides = overrides_json(ov, chaos);
  sim::CallerEnv env;
  std::string env_why;
  if (!sim::take_caller_env(inherit_env, &env, &env_why)) { std::fprintf(stderr, "hcsim: %s\n", env_why.c_str()); return kBadInput; }
  if (const std::string note = sim::env_ignored_note(env); !note.empty()) std::fprintf(stderr, "hcsim: %s\n", note.c_str());
  if (scenario.empty()) scenario = default_scenario();
  std::vector<std::string> errs, warns;
  auto sc = sim::load_scenario(scenario, ov, &errs, &warns);
  if (sc && chaos.empty() && sc->chaos.faults > 0) {  // the scenario's /chaos, unless --chaos replaces it
    chaos_seed = sc->chaos.seed;
    chaos_n = sc->chaos.faults;
    chaos = std::to_string(chaos_seed) + ":" + std::to_string(chaos_n);
  }
  if (sc && !chaos.empty()) {
    // The campaign is drawn against the loaded scenario (its layout and workload), then added
    // as --fault strings and the scenario read again, so that each is checked like the others.
    const auto drawn = sim::chaos_faults(*sc, chaos_seed, static_cast<std::uint32_t>(chaos_n));
    for (std::size_t k = 0; k < drawn.size(); ++k) {
      std::string why;
      auto f = sim::parse_fault_text(drawn[k], &why);
      if (!f) { std::fprintf(stderr, "hcsim: --chaos %s: drew a bad fault '%s': %s\n", chaos.c_str(), drawn[k].c_str(), why.c_str()); return kBadInput; }
      ov.faults.push_back({drawn[k], *f});
      std::printf("hcsim: --chaos %s fault %zu/%zu: --fault '%s'\n", chaos.c_str(), k + 1, drawn.size(), drawn[k].c_str());
    }
    sc = sim::load_scenario(scenario, ov, &errs, &warns);
  }
  for (auto& w : warns) std::fprintf(stderr, "%s\n", w.c_str());  // as `hcsim validate` prints them
  if (!sc) {
    for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
    return kBadInput;
  }
  if (sc->workload.empty()) {
    std::fprintf(stderr, "%s: /workload: empty: nothing to run (hcsim exec runs a program of your own on it)\n", scenario.c_str());
    return kBadInput;
  }
  // Refuse up front what this machine cannot run (exit 2, with the numbers), rather than failing
  // inside SystemC (too many thread stacks) or growing until the kernel kills the run.
  const std::string fit = sim::check_host_fit(sc->topology.rank_to_npu.size(), sim::payload_memory_estimate(*sc), max_memory,
                                              sim::read_host_limits());
  if (!fit.empty()) {
    std::fprintf(stderr, "hcsim: %s: %s\n", scenario.c_str(), fit.c_str());
    return kBadInput;
  }
  if (!db_set) db = trace_file_name(sc->name);
  if (!no_trace || !report.empty()) {
    // The trace (and its side files) may not be the scenario, its topology or rank table, even
    // with --force; whether an existing FILE may be replaced is the trace's own rule (Trace::open).
    std::vector<OutputFile> outs;
    if (!no_trace) {
      outs.push_back({"--db", db, {}, ""});
      for (auto& o : trace_side_files("--db", db)) outs.push_back(o);
    }
    if (!report.empty()) outs.push_back({"--report", report, {"{"}, "a JSON report of hcsim run"});
    const std::string bad = check_outputs({{"input SCENARIO", scenario}, {"the scenario's topology", sc->topology_path},
                                           {"the topology's rank table", sc->topology.rank_table}},
                                          outs, force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  sim::RunOptions opt;
  opt.db_path = no_trace ? "" : db;
  opt.force_db = force;
  opt.echo_logs = !quiet;
  opt.sample_interval_ps = sample_interval;
  opt.trace_tasks = trace_tasks;
  opt.provenance = {{"command_line", command_line}, {"overrides", overrides}, {"env_ignored", sim::env_ignored_json(env)},
                    {"env_inherited", sim::env_inherited_json(env)}};
  std::printf("hcsim: scenario %s (%s)\n", sc->name.c_str(), scenario.c_str());
  std::size_t by_type[3] = {0, 0, 0};  // HCCS, PCIe, RoCE: an Atlas 800 (910) has PCIe links besides HCCS
  for (const auto& l : sc->topology.links) ++by_type[static_cast<int>(l.type)];
  std::printf("hcsim: topology %s: %zu servers, %zu NPUs, %zu HCCS links, %zu PCIe links, %zu RoCE links; payload %s; %s tier\n",
              sc->topology.name.c_str(), sc->topology.servers.size(), sc->topology.npus.size(), by_type[0], by_type[1],
              by_type[2], sc->store_bytes ? "real bytes (checked)" : "timing only",
              sc->net.flow ? "flow" : sc->net.unit_bytes ? "chunk" : "packet");
  if (!opt.db_path.empty()) std::printf("hcsim: trace database %s\n", opt.db_path.c_str());
  std::fflush(stdout);
  install_stop_handlers();
  // The live view (top_live.h): --top when asked; otherwise a progress line when stderr is a
  // terminal or --progress is given, unless -q. Only stderr: stdout and the trace are the same.
  const bool tty = isatty(STDERR_FILENO) == 1;
  LiveRenderer live(top ? LiveRenderer::kTop : LiveRenderer::kProgress, tty, stderr, sc->name);
  if (top || ((tty || progress) && !quiet)) {
    opt.live.report = [&live](const sim::LiveSnapshot& s) { live(s); };
    opt.live.period_s = refresh_s;
    opt.live.detailed = top;
  }
  sim::RunResult r;
  try {
    r = sim::run_scenario(*sc, opt);
  } catch (const std::exception& e) {
    live.finish();
    std::fprintf(stderr, "hcsim: %s\n", e.what());
    return kBadInput;
  }
  live.finish();
  std::printf("%s", sim::format_summary(*sc, r, all_failures).c_str());
  std::fflush(stdout);
  for (auto& w : r.warnings) std::fprintf(stderr, "hcsim: warning: %s\n", w.c_str());
  if (!report.empty()) {
    std::FILE* f = std::fopen(report.c_str(), "w");
    const std::string j = sim::report_json(*sc, r);
    if (!f || std::fwrite(j.data(), 1, j.size(), f) != j.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "hcsim: --report %s: cannot write it\n", report.c_str());
      return kBadInput;
    }
  }
  std::printf("hcsim: simulated %.3f us, %llu fabric events (at most %llu pending), %.2f s wall\n", static_cast<double>(r.sim_end_ps) / 1e6,
              static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.events_peak), r.wall_s);
  if (!r.trace_error.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "hcsim: %s\n", r.trace_error.c_str());
    return kBadInput;
  }
  if (r.signal) {
    std::printf("hcsim: interrupted by %s at simulated %.3f us%s\n", r.signal == SIGINT ? "SIGINT" : r.signal == SIGTERM ? "SIGTERM" : "a signal",
                static_cast<double>(r.sim_end_ps) / 1e6,
                opt.db_path.empty() ? "" : ("; trace " + opt.db_path + " completed with run.status 'interrupted'").c_str());
    return r.exit_code;
  }
  for (auto& f : sim::condense_by_cause(r.failures, all_failures)) std::printf("FAIL: %s\n", f.c_str());
  const std::string w = r.warnings.empty() ? "" : " (" + std::to_string(r.warnings.size()) + (r.warnings.size() == 1 ? " warning" : " warnings") + " above)";
  std::printf("hcsim: %s%s\n", r.exit_code == 0 ? "PASS: all expectations held" : "FAIL: expectations not met", w.c_str());
  return r.exit_code;
}

}  // namespace

const Command kRun = {
    "run", "run [SCENARIO] [--db FILE] [--force] [--no-trace] [--quiet] [--max-memory SIZE] [--progress] [--top] [--refresh SECONDS]"
            " [--sample-interval DUR] [--trace-tasks] [--fault 'TYPE K=V ...']... [--set /POINTER=VALUE]... [--chaos SEED:N]"
            " [--report FILE] [--all-failures] [--inherit-env]",
    "        run a scenario (default: scenarios/quickstart.json); the trace goes to FILE\n"
    "        (default: ./<scenario name>.hcsim.db); an existing FILE is replaced only if it is\n"
    "        an hcsim trace no other run is writing, or any regular file with --force; progress\n"
    "        on stderr when it is a terminal (or --progress, not with -q); --top a live view\n",
    run_main};

}  // namespace hcsim
