// HBM: capacity, bandwidth and access latency (timing parameters used by the SDMA engine), and a
// sparse byte store allocated on first write. Unwritten bytes read as zero. In timing-only mode no
// bytes are stored (reads return zeros), so 8192 NPUs x 1 GiB fit in memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/time.h"

namespace models {

struct HbmParams {
  std::uint64_t capacity_bytes = 64ULL << 30;     ///< bytes; Atlas 800T A2: 64 GB per NPU
  std::uint64_t bandwidth_Bps = 1600ULL * 1000 * 1000 * 1000;  ///< bytes/s; 1.6 TB/s (docs/models/hbm.md)
  Tick access_latency_ps = 100 * kPsPerNs;       ///< first-access latency; assumption, no public figure
  bool store_bytes = true;                        ///< false: timing-only mode
};

class SparseMemory {
 public:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;

  explicit SparseMemory(std::uint64_t capacity, bool store_bytes = true)
      : capacity_(capacity), store_(store_bytes) {}

  std::uint64_t capacity() const { return capacity_; }
  bool stores_bytes() const { return store_; }
  /// Keep the bytes written from now on (or stop keeping them): Machine::keep_bytes.
  void set_store(bool on) { store_ = on; }
  /// True when [offset, offset+len) lies inside the capacity.
  bool in_range(std::uint64_t offset, std::uint64_t len) const { return fits(capacity_, offset, len); }
  /// True when [offset, offset+len) lies inside `capacity` bytes (without overflow).
  static bool fits(std::uint64_t capacity, std::uint64_t offset, std::uint64_t len) {
    return offset <= capacity && len <= capacity - offset;
  }
  void write(std::uint64_t offset, const void* src, std::uint64_t len);
  void read(std::uint64_t offset, void* dst, std::uint64_t len) const;
  /// In-place reduce of `len` bytes at offset with src (see reduce.h). Unwritten bytes count as 0.
  void reduce(std::uint64_t offset, const void* src, std::uint64_t len, int dtype, int op);
  /// [d, d+len) = src's [so, so+len), page to page without a bounce buffer (src may be this
  /// memory; overlapping ranges are copied as memmove would). Unwritten source bytes read as zero.
  void copy_from(const SparseMemory& src, std::uint64_t so, std::uint64_t d, std::uint64_t len);
  /// In-place reduce of [d, d+len) with src's [so, so+len), as reduce() with src's bytes.
  void reduce_from(const SparseMemory& src, std::uint64_t so, std::uint64_t d, std::uint64_t len, int dtype, int op);
  std::uint64_t pages_allocated() const { return pages_.size(); }
  /// [offset, offset+len) filled in place, page by page: fill(dst, n) writes n bytes at dst (false:
  /// it could not; the pages written so far keep their bytes, and this returns false). For a
  /// source that is not a plain pointer (another process's memory) without a bounce buffer.
  template <class Fill>
  bool write_with(std::uint64_t offset, std::uint64_t len, Fill&& fill) {
    if (!in_range(offset, len)) throw std::out_of_range("HBM write outside capacity");
    while (len > 0) {
      const std::uint64_t page = offset / kPageBytes, in = offset % kPageBytes, n = std::min(len, kPageBytes - in);
      if (!fill(page_for_write(page, n == kPageBytes) + in, n)) return false;
      offset += n;
      len -= n;
    }
    return true;
  }
  /// [offset, offset+len) handed out in place, page by page: take(src, n) (zeros for a page never
  /// written); false when take returns false.
  template <class Take>
  bool read_with(std::uint64_t offset, std::uint64_t len, Take&& take) const {
    if (!in_range(offset, len)) throw std::out_of_range("HBM read outside capacity");
    while (len > 0) {
      const std::uint64_t page = offset / kPageBytes, in = offset % kPageBytes, n = std::min(len, kPageBytes - in);
      const std::uint8_t* p = page_for_read(page);
      if (!take(p ? p + in : zeros() + in, n)) return false;
      offset += n;
      len -= n;
    }
    return true;
  }

 private:
  std::uint8_t* page_for_write(std::uint64_t page, bool whole);
  const std::uint8_t* page_for_read(std::uint64_t page) const;  // nullptr: never written
  static const std::uint8_t* zeros();                              // one page of zeros
  std::uint64_t capacity_;
  bool store_;
  std::unordered_map<std::uint64_t, std::uint8_t*> pages_;  // lookups only, never iterated
  // Pages are carved from arenas: the first 1 MiB (16 pages, ordinary pages), then 32 MiB ones
  // backed by transparent huge pages: touching gigabytes of simulated HBM then costs one page
  // fault per 2 MiB instead of per 4 KiB (measured: faults dominated large real-byte runs), while
  // an NPU that stores a few pages (a timing run's communicator split at 8192 ranks) does not
  // fault in a whole 2 MiB huge page.
  static constexpr std::size_t kFirstArenaBytes = 1u << 20;
  struct Arena { std::uint8_t* base; std::size_t used, size; };
  std::vector<Arena> arenas_;

 public:
  ~SparseMemory();
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;
  SparseMemory(SparseMemory&& o) noexcept;
  SparseMemory& operator=(SparseMemory&&) = delete;
};

}  // namespace models
