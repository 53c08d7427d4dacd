// exec_loop_program BYTES ITERS: loop_program.h's program as a rank process under hcsim exec.
#include <cstdio>
#include <cstdlib>

#include "loop_program.h"

int main(int argc, char** argv) {
  const char* r = std::getenv("RANK");
  const char* n = std::getenv("WORLD_SIZE");
  const char* d = std::getenv("LOCAL_RANK");
  if (argc != 3 || !r || !n || !d) { std::fprintf(stderr, "usage (under hcsim exec): exec_loop_program BYTES ITERS\n"); return 2; }
  const auto res = exec_test::run_loop(std::atoi(r), std::atoi(n), std::atoi(d), std::strtoull(argv[1], nullptr, 10), std::atoi(argv[2]));
  if (std::atoi(r) == 0) std::printf("rank 0: simulated end %llu ns, wrong %llu\n", (unsigned long long)res.end_ns, (unsigned long long)res.wrong);
  if (!res.error.empty()) std::fprintf(stderr, "rank %s: %s\n", r, res.error.c_str());
  return res.error.empty() && res.wrong == 0 ? 0 : 1;
}
