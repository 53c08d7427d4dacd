// Large zero-filled allocations backed by transparent huge pages where the kernel allows it
// (THP "madvise" mode): one page fault per 2 MiB instead of per 4 KiB.
#pragma once
#include <cstddef>

namespace models {

constexpr std::size_t kArenaBytes = 32u << 20;
void* huge_alloc(std::size_t bytes);  ///< nullptr on failure; memory reads as zero; huge pages from 2 MiB up
void huge_free(void* p, std::size_t bytes);

/// Owning buffer over huge_alloc.
class HugeBuffer {
 public:
  /// No mapping for 0 bytes (get() is nullptr).
  explicit HugeBuffer(std::size_t bytes) : n_(bytes), p_(bytes ? static_cast<unsigned char*>(huge_alloc(n_)) : nullptr) {}
  ~HugeBuffer() { huge_free(p_, n_); }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  unsigned char* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  std::size_t n_;
  unsigned char* p_;
};

}  // namespace models
