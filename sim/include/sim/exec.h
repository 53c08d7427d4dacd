// hcsim exec (docs/exec.md): users' own programs, one OS process per rank, on the simulated cluster.
// ExecHost starts the processes, and in each rank's thread of the simulation a proxy replays its
// process's driver calls on the simulated driver. Simulated time advances only while every live
// rank is blocked in a driver call or has ended (a proxy waiting for its process's next call
// blocks the whole simulation), so a run is deterministic whatever the host's scheduling.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/runner.h"

namespace sim {

struct ExecOptions {
  std::vector<std::string> argv;  ///< PROGRAM ARGS...
  /// Extra environment of every rank (the scenario's hcomm_env, --set), after the caller's own.
  std::vector<std::pair<std::string, std::string>> env;
  std::string driver_path;        ///< the emulation driver library (HCOMM_DRIVER)
  std::vector<std::string> wrapper;  ///< e.g. {"gdb", "--args"}: run PROGRAM under it
  std::int64_t wrapper_rank = -1;    ///< the one rank the wrapper applies to (-1: every rank)
  bool tag_output = false;           ///< prefix each line of a rank's stdout/stderr with "[rank]"
  double watchdog_s = 60;            ///< wall seconds without a driver call from a rank while the others wait
  double host_time_scale = 0;        ///< 0: host code costs no simulated time; else its CPU time x this
  bool virtual_clocks = true;        ///< the wall clocks of the programs report simulated time (LD_PRELOAD)
};

/// How the rank processes ended.
struct ExecOutcome {
  std::vector<int> exit_codes;       ///< per rank: exit status, 128 + signal, or -1 (never reaped)
  int worst = 0;                     ///< the largest of them
  std::vector<std::string> messages; ///< what went wrong, one line each ("rank 3 (pid 1234): ...")
  bool watchdog = false;             ///< the watchdog ended the run
};

class ExecHost final : public RankHost {
 public:
  ExecHost(const Topology& topo, ExecOptions opt);
  ~ExecHost() override;
  /// Start one process per rank (before the simulation runs). False: `why` says what failed.
  bool launch(std::string* why);
  void attach(SimDriver& drv, RankLife& life) override;
  void run(std::uint32_t r) override;
  void killed(std::uint32_t r) override;
  /// After the simulation: end the processes still running, reap them all.
  ExecOutcome finish();

 private:
  struct Rank;
  bool serve(Rank& k, std::uint32_t r);
  void kill_all(int sig);
  void end_run(std::uint32_t self, const std::string& why);
  const Topology& topo_;
  ExecOptions opt_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  SimDriver* drv_ = nullptr;
  RankLife* life_ = nullptr;
  std::vector<std::string> messages_;
  bool watchdog_ = false, ending_ = false;
  int out_pipe_ = -1;   // --tag-output: the read ends are polled by a thread
  struct Tagger;
  std::unique_ptr<Tagger> tagger_;
};

}  // namespace sim
