#include "models/mem/hbm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "models/mem/reduce.h"
#include "models/mem/huge_alloc.h"

namespace models {

SparseMemory::~SparseMemory() {
  for (auto& a : arenas_) huge_free(a.base, a.size);
}

SparseMemory::SparseMemory(SparseMemory&& o) noexcept
    : capacity_(o.capacity_), store_(o.store_), pages_(std::move(o.pages_)), arenas_(std::move(o.arenas_)) {
  o.arenas_.clear();
}

std::uint8_t* SparseMemory::page_for_write(std::uint64_t page, bool) {
  auto& p = pages_[page];
  if (!p) {
    if (arenas_.empty() || arenas_.back().used + kPageBytes > arenas_.back().size) {
      const std::size_t size = arenas_.empty() ? kFirstArenaBytes : kArenaBytes;
      auto* base = static_cast<std::uint8_t*>(huge_alloc(size));  // zero-filled by the kernel
      if (!base) throw std::bad_alloc();
      arenas_.push_back(Arena{base, 0, size});
    }
    p = arenas_.back().base + arenas_.back().used;
    arenas_.back().used += kPageBytes;
  }
  return p;
}

void SparseMemory::write(std::uint64_t offset, const void* src, std::uint64_t len) {
  if (!in_range(offset, len)) throw std::out_of_range("HBM write outside capacity");
  if (!store_) return;
  auto* s = static_cast<const std::uint8_t*>(src);
  while (len > 0) {
    std::uint64_t page = offset / kPageBytes, in = offset % kPageBytes;
    std::uint64_t n = std::min(len, kPageBytes - in);
    std::memcpy(page_for_write(page, n == kPageBytes) + in, s, n);
    s += n; offset += n; len -= n;
  }
}

void SparseMemory::read(std::uint64_t offset, void* dst, std::uint64_t len) const {
  if (!in_range(offset, len)) throw std::out_of_range("HBM read outside capacity");
  auto* d = static_cast<std::uint8_t*>(dst);
  if (!store_) { std::memset(d, 0, len); return; }
  while (len > 0) {
    std::uint64_t page = offset / kPageBytes, in = offset % kPageBytes;
    std::uint64_t n = std::min(len, kPageBytes - in);
    auto it = pages_.find(page);
    if (it == pages_.end()) std::memset(d, 0, n);
    else std::memcpy(d, it->second + in, n);
    d += n; offset += n; len -= n;
  }
}

// One page of zeros: the source of a never-written page's bytes.
const std::uint8_t* SparseMemory::zeros() {
  static const std::vector<std::uint8_t> z(kPageBytes, 0);
  return z.data();
}

const std::uint8_t* SparseMemory::page_for_read(std::uint64_t page) const {
  auto it = pages_.find(page);
  return it == pages_.end() ? nullptr : it->second;
}

namespace {
bool overlaps(std::uint64_t a, std::uint64_t b, std::uint64_t len) { return a < b + len && b < a + len; }
}  // namespace

// Segments end at a page boundary of the source or of the destination, whichever comes first:
// each is one memcpy (or one reduce) from the source page into the destination page.
void SparseMemory::copy_from(const SparseMemory& src, std::uint64_t so, std::uint64_t d, std::uint64_t len) {
  if (!src.in_range(so, len)) throw std::out_of_range("HBM read outside capacity");
  if (!in_range(d, len)) throw std::out_of_range("HBM write outside capacity");
  if (!store_) return;
  if (!src.store_ || (&src == this && overlaps(so, d, len))) {  // through a buffer: zeros, or memmove semantics
    std::vector<std::uint8_t> tmp(len);
    src.read(so, tmp.data(), len);
    write(d, tmp.data(), len);
    return;
  }
  while (len > 0) {
    const std::uint64_t si = so % kPageBytes, di = d % kPageBytes;
    const std::uint64_t n = std::min({len, kPageBytes - si, kPageBytes - di});
    const std::uint8_t* sp = src.page_for_read(so / kPageBytes);
    std::memcpy(page_for_write(d / kPageBytes, n == kPageBytes) + di, sp ? sp + si : zeros(), n);
    so += n; d += n; len -= n;
  }
}

void SparseMemory::reduce_from(const SparseMemory& src, std::uint64_t so, std::uint64_t d, std::uint64_t len, int dtype, int op) {
  if (!src.in_range(so, len)) throw std::out_of_range("HBM read outside capacity");
  if (!in_range(d, len)) throw std::out_of_range("HBM reduce outside capacity");
  if (!store_) return;
  const std::size_t esz = dtype_size(static_cast<DType>(dtype));
  if (!src.store_ || (&src == this && overlaps(so, d, len)) || so % esz != 0 || d % esz != 0) {
    std::vector<std::uint8_t> tmp(len);  // zeros, memmove semantics, or elements across a page: the general path
    src.read(so, tmp.data(), len);
    reduce(d, tmp.data(), len, dtype, op);
    return;
  }
  // Both offsets element-aligned: page boundaries (multiples of every element size) never split one.
  while (len > 0) {
    const std::uint64_t si = so % kPageBytes, di = d % kPageBytes;
    std::uint64_t n = std::min({len, kPageBytes - si, kPageBytes - di});
    n -= n % esz;
    if (n == 0) throw std::invalid_argument("HBM reduce: misaligned element");
    const std::uint8_t* sp = src.page_for_read(so / kPageBytes);
    reduce_inplace(page_for_write(d / kPageBytes, false) + di, sp ? sp + si : zeros(), n, static_cast<DType>(dtype),
                   static_cast<ReduceOp>(op));
    so += n; d += n; len -= n;
  }
}

void SparseMemory::reduce(std::uint64_t offset, const void* src, std::uint64_t len, int dtype, int op) {
  if (!in_range(offset, len)) throw std::out_of_range("HBM reduce outside capacity");
  if (!store_) return;
  auto* s = static_cast<const std::uint8_t*>(src);
  std::size_t esz = dtype_size(static_cast<DType>(dtype));
  // Page boundaries are multiples of every element size, so elements never straddle pages
  // as long as offset is element-aligned (the driver checks alignment).
  while (len > 0) {
    std::uint64_t page = offset / kPageBytes, in = offset % kPageBytes;
    std::uint64_t n = std::min(len, kPageBytes - in);
    n -= n % esz;
    if (n == 0) throw std::invalid_argument("HBM reduce: misaligned element");
    reduce_inplace(page_for_write(page, false) + in, s, n, static_cast<DType>(dtype), static_cast<ReduceOp>(op));
    s += n; offset += n; len -= n;
  }
}

}  // namespace models
