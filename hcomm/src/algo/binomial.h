// Helpers shared by the logarithmic families (docs/algorithms/halving-doubling.md,
// docs/algorithms/nhr.md, docs/algorithms/nb.md): a near-equal partition as a block layout, runs
// of consecutive blocks modulo n, and the binomial-tree scatter and gather (Direct, in place).
// Members are addressed relative to a root: relative index v is member (v + rot) % n; the block of
// relative index t is block (t + bsh) % n of the layout.
#pragma once
#include <algorithm>
#include <cstdint>

#include "algo/family.h"
#include "algo/partition.h"
#include "algo/schedule.h"

namespace hcomm::detail {

/// A Partition as a block layout (off/len like Blocks).
struct PartLayout {
  Partition part;
  std::uint64_t off(std::uint32_t j) const { return part.off(j); }
  std::uint64_t len(std::uint32_t j) const { return part.len(j); }
};

/// Calls f(byte offset, bytes) for the blocks first, first+1, ..., first+count-1 (mod n): one run,
/// or two when they wrap past block n-1. count <= n; count 0 gives one empty run.
template <class B, class F>
void block_runs(const B& blk, std::uint32_t n, std::uint32_t first, std::uint32_t count, F f) {
  if (first + count <= n) {
    f(blk.off(first), blk.off(first + count) - blk.off(first));
  } else {
    f(blk.off(first), blk.off(n) - blk.off(first));
    f(blk.off(0), blk.off(first + count - n));
  }
}

/// Relative addressing around a root.
struct Rel {
  std::uint32_t n, rot, bsh;
  std::uint32_t member(std::uint64_t v) const { return static_cast<std::uint32_t>((v + rot) % n); }
  std::uint32_t block(std::uint64_t t) const { return static_cast<std::uint32_t>((t + bsh) % n); }
  std::uint32_t rel(std::uint32_t m) const { return (m + n - rot) % n; }
};

/// Direct sends (to member `to`) and receives (from member `from`) of the blocks of relative
/// indexes [first, first + count); both sides call it with the same first and count.
template <class B>
void direct_send(const ScheduleIn& in, const B& blk, const Rel& r, std::uint32_t to, std::uint32_t first,
                 std::uint32_t count, Step* st) {
  block_runs(blk, r.n, r.block(first), count, [&](std::uint64_t off, std::uint64_t len) {
    st->sends.push_back(Send{to, in.w + off, len, Mode::Direct, off, 0});
  });
}
template <class B>
void direct_recv(const ScheduleIn& in, const B& blk, const Rel& r, std::uint32_t from, std::uint32_t first,
                 std::uint32_t count, Step* st) {
  block_runs(blk, r.n, r.block(first), count, [&](std::uint64_t off, std::uint64_t len) {
    st->recvs.push_back(Recv{from, in.w + off, len, Mode::Direct, 0});
  });
}

/// Binomial scatter from relative 0: ceil(log2 n) steps; at step j (h = 2^(L-1-j)) every v with
/// v % 2h == 0 sends the blocks [v+h, min(v+2h, n)) to v+h. Afterwards relative v holds the blocks
/// [v, min(v + lowbit(v), n)) (v = 0: all).
template <class B>
void binomial_scatter(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t n = r.n, v = r.rel(in.me), L = ceil_log2(n);
  for (std::uint32_t j = 0; j < L; ++j) {
    const std::uint64_t h = 1ULL << (L - 1 - j);
    Step st;
    if (v % (2 * h) == 0 && v + h < n)
      direct_send(in, blk, r, r.member(v + h), static_cast<std::uint32_t>(v + h),
                  static_cast<std::uint32_t>(std::min<std::uint64_t>(h, n - v - h)), &st);
    if (v % (2 * h) == h)
      direct_recv(in, blk, r, r.member(v - h), v, static_cast<std::uint32_t>(std::min<std::uint64_t>(h, n - v)), &st);
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

/// Binomial gather to relative 0, the scatter reversed: at step j (h = 2^j) every v with
/// v % 2h == h sends the blocks [v, min(v+h, n)) to v-h.
template <class B>
void binomial_gather(const ScheduleIn& in, const B& blk, const Rel& r, Schedule* p) {
  const std::uint32_t n = r.n, v = r.rel(in.me), L = ceil_log2(n);
  for (std::uint32_t j = 0; j < L; ++j) {
    const std::uint64_t h = 1ULL << j;
    Step st;
    if (v % (2 * h) == h)
      direct_send(in, blk, r, r.member(v - h), v, static_cast<std::uint32_t>(std::min<std::uint64_t>(h, n - v)), &st);
    if (v % (2 * h) == 0 && v + h < n)
      direct_recv(in, blk, r, r.member(v + h), static_cast<std::uint32_t>(v + h),
                  static_cast<std::uint32_t>(std::min<std::uint64_t>(h, n - v - h)), &st);
    if (!st.sends.empty() || !st.recvs.empty()) p->steps.push_back(std::move(st));
  }
}

}  // namespace hcomm::detail
