// Process set-up shared by the command-line tools (hcsim, hcomm_test), done first thing in main
// (docs/architecture.md#time-concurrency-and-speed-measured).
#pragma once
#include <string>

namespace sim {

/// Put the heap on transparent huge pages, keep freed memory in the heap and silence SystemC's
/// banner. For the first, the process may execute itself once more (same binary, arguments and
/// process id) with glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES: glibc reads its tunables only
/// at start-up. Nothing is re-executed when HCSIM_HUGEPAGES=0, when GLIBC_TUNABLES already sets
/// glibc.malloc.hugetlb, or when the binary cannot be found again.
void prepare_host_process(char* argv[]);

/// What the heap is on, for --version: "transparent huge pages (GLIBC_TUNABLES=...)" or
/// "base pages (GLIBC_TUNABLES=...)".
std::string heap_pages();

}  // namespace sim
