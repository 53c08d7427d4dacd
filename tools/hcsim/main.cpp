// hcsim: command-line front end of the simulator (docs/architecture.md#tools). This file
// dispatches to the commands of commands.h (one file each) and answers --help and --version.
// Exit codes: 0 ran and every expectation held; 1 an expectation failed; 2 bad input or usage, or
// the trace could not be written; 130/143 stopped by SIGINT/SIGTERM (the trace is finalised).
#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <systemc>

#include "commands.h"

namespace hcsim {
namespace {

const Command* const kCommands[] = {&kRun, &kValidate, &kTopo, &kTrace, &kTop, &kHealth, &kPlot, &kPlan, &kRoutes, &kDiff, &kDiscover};

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
    std::printf("hcsim %s (SystemC %s)\n", HCSIM_VERSION, sc_core::sc_release());
    // What main() left the heap on (see reexec_with_huge_pages).
    const char* t = std::getenv("GLIBC_TUNABLES");
    const char* h = t ? std::strstr(t, "glibc.malloc.hugetlb=") : nullptr;
    const bool huge = h && h[std::strlen("glibc.malloc.hugetlb=")] != '0';
    std::printf("heap: %s (GLIBC_TUNABLES=%s)\n", huge ? "transparent huge pages" : "base pages", t ? t : "");
    return kOk;
  }
  for (const Command* c : kCommands)
    if (cmd == c->name) return c->main({args.begin() + 1, args.end()});
  return usage_error("unknown command \"" + cmd + "\"");
}

namespace {

// The heap on transparent huge pages (docs/architecture.md#speed-at-scale): a run at 8192 ranks
// touches about a gigabyte of small records (flows, QPs, streams, rank stacks) in no particular
// order, and with 4 KiB pages most of its events miss the TLB. glibc backs its heap with huge
// pages only when its tunable glibc.malloc.hugetlb=1 is set, and it reads tunables from the
// environment before main: so hcsim sets it and executes itself once more (the same binary,
// arguments and process). Measured: the 1 GiB all-reduce at 8192 ranks 39.4 -> 33.5 s. The
// tunable is left alone when it is set already; HCSIM_HUGEPAGES=0 turns the re-execution off.
void reexec_with_huge_pages(char* argv[]) {
  if (getenv("HCSIM_HUGEPAGE_REEXEC")) {  // this is the re-executed process
    unsetenv("HCSIM_HUGEPAGE_REEXEC");
    return;
  }
  const char* off = getenv("HCSIM_HUGEPAGES");
  if (off && std::strcmp(off, "0") == 0) return;
  const char* t = getenv("GLIBC_TUNABLES");
  if (t && std::strstr(t, "glibc.malloc.hugetlb")) return;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  const std::string saved = t ? t : "";
  const std::string v = saved.empty() ? "glibc.malloc.hugetlb=1" : saved + ":glibc.malloc.hugetlb=1";
  setenv("GLIBC_TUNABLES", v.c_str(), 1);
  setenv("HCSIM_HUGEPAGE_REEXEC", "1", 1);
  execv(self, argv);
  // Not executed (the binary moved, say): run on as we are, the environment as it was.
  unsetenv("HCSIM_HUGEPAGE_REEXEC");
  if (t) setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

}  // namespace

int main(int argc, char* argv[]) {
  reexec_with_huge_pages(argv);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  // Payload buffers of tens of MiB are allocated and freed per repetition: keep freed memory in the
  // heap instead of returning it to the kernel, which would fault every page in again (measured:
  // page faults were the largest cost of the quickstart).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
