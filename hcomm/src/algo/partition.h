// Near-equal partition of a buffer into blocks (docs/architecture.md#hcomm): `elems` elements of
// `esz` bytes into `parts` blocks, the first elems % parts of them one element longer. Used by the
// mesh (slices) and the ring (blocks).
#pragma once
#include <algorithm>
#include <cstdint>

namespace hcomm::detail {

struct Partition {
  std::uint64_t base = 0, rem = 0, esz = 0;
  Partition(std::uint64_t elems, std::uint32_t parts, std::uint64_t elem_size)
      : base(elems / parts), rem(elems % parts), esz(elem_size) {}
  /// Byte offset of block j.
  std::uint64_t off(std::uint32_t j) const { return (j * base + std::min<std::uint64_t>(j, rem)) * esz; }
  /// Byte length of block j.
  std::uint64_t len(std::uint32_t j) const { return (base + (j < rem ? 1 : 0)) * esz; }
};

}  // namespace hcomm::detail
