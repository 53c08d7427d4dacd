#include "models/mem/huge_alloc.h"

#include <sys/mman.h>

namespace models {

void* huge_alloc(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
  if (bytes >= (2u << 20)) madvise(p, bytes, MADV_HUGEPAGE);  // a smaller mapping holds no huge page
#endif
  return p;
}

void huge_free(void* p, std::size_t bytes) {
  if (p) munmap(p, bytes);
}

}  // namespace models
