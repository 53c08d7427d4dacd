// exec_ops_program: ops_program.h's rank program as an OS process of its own (run by hcsim exec).
// Prints "rank R wrong W times T1 T2 ..." and exits 1 when a call failed or a result was wrong.
#include <cstdio>
#include <cstdlib>

#include "ops_program.h"

int main() {
  const char* r = std::getenv("RANK");
  const char* n = std::getenv("WORLD_SIZE");
  const char* d = std::getenv("LOCAL_RANK");
  if (!r || !n || !d) { std::fprintf(stderr, "RANK, WORLD_SIZE and LOCAL_RANK must be set (run under hcsim exec)\n"); return 2; }
  const auto res = exec_test::run_ops(static_cast<std::uint32_t>(std::atoi(r)), static_cast<std::uint32_t>(std::atoi(n)),
                                      static_cast<std::uint32_t>(std::atoi(d)));
  std::printf("rank %s wrong %llu times", r, static_cast<unsigned long long>(res.wrong));
  for (auto t : res.times_ns) std::printf(" %llu", static_cast<unsigned long long>(t));
  std::printf("\n");
  if (!res.error.empty()) std::fprintf(stderr, "rank %s: %s\n", r, res.error.c_str());
  return res.error.empty() && res.wrong == 0 ? 0 : 1;
}
