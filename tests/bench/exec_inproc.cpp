// bench_exec_inproc TOPOLOGY N BYTES ITERS: exec_loop_program's loop (tests/exec/loop_program.h)
// on N ranks of TOPOLOGY in the simulator's own rank threads — the in-process side of exec's
// speed figure (docs/exec.md#speed): time it against
//   hcsim exec --topology TOPOLOGY -n N --no-trace -q -- exec_loop_program BYTES ITERS
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "../exec/in_process.h"
#include "../exec/loop_program.h"
#include "sim/config/scenario.h"
#include "sim/runner.h"

#include <systemc>


int sc_main(int argc, char** argv) {
  if (argc != 5) { std::fprintf(stderr, "usage: bench_exec_inproc TOPOLOGY N BYTES ITERS\n"); return 2; }
  const std::string path = "/tmp/bench_exec_inproc.json";
  std::ofstream(path) << R"({"format": "hcsim-scenario", "version": 1, "name": "inproc", "topology": ")" << argv[1]
                      << R"(", "payload": "real", "workload": []})";
  std::vector<std::string> errs;
  auto sc = sim::load_scenario(path, &errs);
  if (!sc) { std::fprintf(stderr, "%s\n", errs.empty() ? "bad scenario" : errs[0].c_str()); return 2; }
  sc->topology.rank_to_npu.resize(std::strtoul(argv[2], nullptr, 10));
  const std::uint64_t bytes = std::strtoull(argv[3], nullptr, 10);
  const auto iters = static_cast<std::uint32_t>(std::atoi(argv[4]));
  std::vector<exec_test::LoopResult> res(sc->topology.rank_to_npu.size());
  exec_test::InProcess host(sc->topology,
                            [&](std::uint32_t r, std::uint32_t n, std::uint32_t dev) { res[r] = exec_test::run_loop(r, n, dev, bytes, iters); });
  sim::RunOptions opt;
  opt.echo_logs = false;
  opt.host = &host;
  sim::run_scenario(*sc, opt);
  std::printf("rank 0: simulated end %llu ns, wrong %llu%s\n", (unsigned long long)res[0].end_ns, (unsigned long long)res[0].wrong,
              res[0].error.empty() ? "" : (" " + res[0].error).c_str());
  return 0;
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
