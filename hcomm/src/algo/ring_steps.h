// The ring's reduce-scatter and all-gather steps (docs/algorithms/ring.md), for the ring family
// and the double ring (docs/algorithms/double-ring.md), in either direction: dir = +1, member m
// sends to m+1; dir = -1, to m-1 (the +1 ring on mirrored member and block indices). Staged
// transfers use slots base, base+1 alternately. Step k is step start + k of the schedule, written
// when it is in the schedule's window (Schedule::at; the caller has sized the schedule).
#pragma once
#include <cstdint>
#include <vector>

#include "algo/schedule.h"

namespace hcomm::detail {

struct RingDir {
  int dir = 1;
  std::uint32_t base = 0;
  std::uint32_t n = 1;
  // Actual member (and block) of virtual index v.
  std::uint32_t actual(std::uint64_t v) const {
    const std::uint32_t x = static_cast<std::uint32_t>(v % n);
    return dir > 0 ? x : (n - x) % n;
  }
  std::uint32_t virt(std::uint32_t m) const { return dir > 0 ? m : (n - m) % n; }
};

/// Reduce-scatter: block m ends fully reduced at member m (n - 1 steps).
template <class B>
void ring_rs_into(const ScheduleIn& in, const B& blk, const RingDir& d, Schedule* p, std::uint64_t start) {
  const std::uint32_t n = in.n, v = d.virt(in.me), next = d.actual(v + 1), prev = d.actual(v + n - 1);
  for (std::uint64_t k = p->lo(start), e = p->hi(start, n - 1); k < e; ++k) {
    Step& st = *p->at(start + k);
    const std::uint32_t s = d.actual(v + 2 * n - k - 1), r = d.actual(v + 2 * n - k - 2);
    staged(in, &st.sends, next, in.w + blk.off(s), nullptr, 0, 0, blk.len(s), Mode::StagedReduce, k, d.base);
    staged(in, nullptr, 0, 0, &st.recvs, prev, in.w + blk.off(r), blk.len(r), Mode::StagedReduce, k, d.base);
  }
}

/// All-gather: block m is in place at member m; every block ends everywhere (n - 1 steps).
template <class B>
void ring_ag_into(const ScheduleIn& in, const B& blk, const RingDir& d, Schedule* p, std::uint64_t start) {
  const std::uint32_t n = in.n, v = d.virt(in.me), next = d.actual(v + 1), prev = d.actual(v + n - 1);
  for (std::uint64_t k = p->lo(start), e = p->hi(start, n - 1); k < e; ++k) {
    Step& st = *p->at(start + k);
    const std::uint32_t s = d.actual(v + 2 * n - k), r = d.actual(v + 2 * n - k - 1);
    st.sends.push_back(Send{next, in.w + blk.off(s), blk.len(s), Mode::Direct, blk.off(s), 0});
    st.recvs.push_back(Recv{prev, in.w + blk.off(r), blk.len(r), Mode::Direct, 0});
  }
}

}  // namespace hcomm::detail
