#include "sim/host_process.h"

#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace sim {

namespace {

constexpr const char* kHugetlb = "glibc.malloc.hugetlb=";
constexpr const char* kMarker = "HCSIM_HUGEPAGE_REEXEC";  // set for the re-executed process only

// A run at 8192 ranks touches about a gigabyte of small records (flows, QPs, streams, transfers)
// in no particular order: with 4 KiB pages most of its events miss the TLB. The kernel gives huge
// pages to memory advised for them (transparent_hugepage = madvise), and glibc advises its heap
// only under the tunable glibc.malloc.hugetlb=1, read from the environment before main.
void reexec_with_huge_pages(char* argv[]) {
  if (std::getenv(kMarker)) {
    unsetenv(kMarker);
    return;
  }
  const char* off = std::getenv("HCSIM_HUGEPAGES");
  if (off && std::strcmp(off, "0") == 0) return;
  const char* t = std::getenv("GLIBC_TUNABLES");
  if (t && std::strstr(t, "glibc.malloc.hugetlb")) return;  // the user's own setting
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  const std::string saved = t ? t : "";
  const std::string v = saved.empty() ? std::string(kHugetlb) + "1" : saved + ":" + kHugetlb + "1";
  setenv("GLIBC_TUNABLES", v.c_str(), 1);
  setenv(kMarker, "1", 1);
  // What the caller had, for the processes hcsim starts (hcsim exec's ranks get the user's environment).
  setenv("HCSIM_CALLER_GLIBC_TUNABLES", t ? saved.c_str() : "", 1);
  execv(self, argv);
  // Not executed: run on as we are, the environment as it was.
  unsetenv(kMarker);
  unsetenv("HCSIM_CALLER_GLIBC_TUNABLES");
  if (t) setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

}  // namespace

void prepare_host_process(char* argv[]) {
  reexec_with_huge_pages(argv);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  // Payload buffers of tens of MiB are allocated and freed per repetition: keep freed memory in
  // the heap instead of returning it to the kernel, which would fault every page in again
  // (measured: page faults were the largest cost of the quickstart).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
}

std::string heap_pages() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  const char* h = t ? std::strstr(t, kHugetlb) : nullptr;
  const bool huge = h && h[std::strlen(kHugetlb)] != '0' && h[std::strlen(kHugetlb)] != '\0';
  return std::string(huge ? "transparent huge pages" : "base pages") + " (GLIBC_TUNABLES=" + (t ? t : "") + ")";
}

}  // namespace sim
