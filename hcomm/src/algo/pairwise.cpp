// Pairwise all-to-all (docs/algorithms/pairwise.md), HCCL's "pairwise": n - 1 steps; at step k
// (1 <= k < n) member m sends its send block for member (m + k) mod n and receives the block of
// member (m - k) mod n. Each transfer is StagedCopy in pieces of slot_bytes (algo/schedule.h
// staged()) and the receiver copies every piece to its out block. The member's own block is a
// Local copy in -> out in the first step. One sender per receiver per step; piece x goes to slot
// x mod 7 (7 slots): the executor runs send x of a step on helper stream x mod min(sends, 7), so
// pieces that share a slot share a stream and take the slot's credits in order (with 2 slots
// alternating, pieces 0 and 2 would wait for the same credit on different streams).
#include <algorithm>

#include "algo/family.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kSpan = 7;  // slots = the executor's helper streams per step (algo/exec.cpp)

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.op != CollOp::AllToAll || in.slots < kSpan) return false;
  const std::uint32_t n = in.n, m = in.me;
  p->size_to(std::max<std::uint32_t>(1, n - 1));
  if (Step* st = p->at(0)) st->locals.push_back(Local{in.out + in.blocks.off(m), in.in + in.send_blocks.off(m), in.blocks.len(m), false});
  for (std::uint64_t j = p->lo(0), e = p->hi(0, n - 1); j < e; ++j) {  // step j: k = j + 1
    Step& st = *p->at(j);
    const std::uint64_t k = j + 1;
    const auto to = static_cast<std::uint32_t>((m + k) % n), from = static_cast<std::uint32_t>((m + n - k) % n);
    staged(in, &st.sends, to, in.in + in.send_blocks.off(to), nullptr, 0, 0, in.send_blocks.len(to), Mode::StagedCopy, 0, 0,
           kSpan);
    staged(in, nullptr, 0, 0, &st.recvs, from, in.out + in.blocks.off(from), in.blocks.len(from), Mode::StagedCopy, 0, 0,
           kSpan);
  }
  return true;
}

// Steps of member in.me's schedule (Family::count).
std::uint64_t count(const ScheduleIn& in) { return in.op == CollOp::AllToAll ? std::max<std::uint32_t>(1, in.n - 1) : 0; }

// docs/algorithms/pairwise.md#cost: n - 1 steps of one block (D / n) each, each paying the
// credit round trip from its new receiver (the executor admits a sender only once the receiver's
// previous step has its data) besides the write's own alpha; pieces of one block stream back to
// back (no extra alpha).
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  if (op != CollOp::AllToAll) return -1;
  const double D = static_cast<double>(bytes), s = n - 1.0;
  return 2 * s * c.alpha_ns + s / n * D * c.beta_ns_per_byte;
}

}  // namespace

const Family kPairwise{"pairwise", build, cost, kSpan, true, count};

}  // namespace hcomm::detail
