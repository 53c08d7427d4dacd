// Star (docs/algorithms/star.md), HCCL's intra-server "star": the root talks to every member
// directly in ONE step; the several sends of that step run on the executor's parallel helper
// streams (at most 7, algo/exec.cpp; more sends share them round robin).
//   broadcast  the root sends the whole W Direct to every member
//   scatter    the root sends block j Direct to member j (into block j of its W)
//   gather     every member sends its block Direct into block `me` of the root's W
//   reduce     every member sends W StagedReduce to the root, in pieces of slot_bytes
//   all-to-all every member sends every send block at once, StagedCopy in pieces, and copies its
//              own block locally
// Staged transfers: a sender's x-th send of the step (x counts all its sends in order) uses the
// receiver's slot x mod 7 (reduce: (x + k) mod 7, k = the sender's distance from the root). The
// executor puts send x on helper stream x mod min(sends, 7), so a sender's sends that share a
// receiver's slot share a stream and go out in order: the slot's credits (counted per sender,
// receiver and slot) cannot be taken by a later piece. The receiver takes the pieces in the order
// (piece j, k = receiver - sender); every wait is on an earlier transfer in that order, so the step
// cannot deadlock. Up to 7 transfers are in flight toward one receiver, but its reductions and
// copies run one after another on its main stream: star reduce serialises (n - 1) * D bytes of
// reduction at the root. All-to-all-v (per-block counts) is not scheduled: a receiver could not
// compute a sender's send index without the sender's counts.
#include <algorithm>
#include <cmath>

#include "algo/family.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kLanes = 7;  // the executor's helper streams per step (algo/exec.cpp)

std::uint64_t piece_of(const ScheduleIn& in) { return std::max<std::uint64_t>(in.esz, in.slot_bytes / in.esz * in.esz); }
std::uint64_t pieces(std::uint64_t bytes, std::uint64_t piece) { return (bytes + piece - 1) / piece; }

void reduce(const ScheduleIn& in, Step* st) {
  const std::uint32_t n = in.n, v = (in.me + n - in.root) % n;
  const std::uint64_t piece = piece_of(in), np = pieces(in.bytes, piece);
  for (std::uint64_t j = 0; j < np; ++j) {
    const std::uint64_t o = j * piece, b = std::min(piece, in.bytes - o);
    if (v != 0) {
      st->sends.push_back(Send{in.root, in.w + o, b, Mode::StagedReduce, 0, static_cast<std::uint32_t>((j + v) % kLanes)});
      continue;
    }
    for (std::uint32_t k = 1; k < n; ++k)
      st->recvs.push_back(Recv{(in.root + k) % n, in.w + o, b, Mode::StagedReduce, static_cast<std::uint32_t>((j + k) % kLanes)});
  }
}

// Uniform blocks only: every sender has np pieces for every other member, and its send of piece j
// to member m + k is its x = j * (n - 1) + k - 1-th send.
void alltoall(const ScheduleIn& in, Step* st) {
  const std::uint32_t n = in.n, m = in.me;
  const std::uint64_t piece = piece_of(in), len = in.blocks.elems * in.esz, np = pieces(len, piece);
  for (std::uint64_t j = 0; j < np; ++j)
    for (std::uint32_t k = 1; k < n; ++k) {
      const std::uint32_t to = (m + k) % n, from = (m + n - k) % n;
      const std::uint64_t o = j * piece, b = std::min(piece, len - o);
      const auto slot = static_cast<std::uint32_t>((j * (n - 1) + k - 1) % kLanes);
      st->sends.push_back(Send{to, in.in + in.send_blocks.off(to) + o, b, Mode::StagedCopy, 0, slot});
      st->recvs.push_back(Recv{from, in.out + in.blocks.off(from) + o, b, Mode::StagedCopy, slot});
    }
  st->locals.push_back(Local{in.out + in.blocks.off(m), in.in + in.send_blocks.off(m), in.blocks.len(m), false});
}

bool build(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n, me = in.me, root = in.root;
  switch (in.op) {
    case CollOp::Broadcast: case CollOp::Scatter: case CollOp::Gather: case CollOp::Reduce: case CollOp::AllToAll: break;
    default: return false;
  }
  if (in.op == CollOp::AllToAll && (in.blocks.counts || in.send_blocks.counts)) return false;
  if ((in.op == CollOp::Reduce || in.op == CollOp::AllToAll) && in.slots < kLanes) return false;
  if (n == 1 && in.op != CollOp::AllToAll) return true;
  Step st;
  switch (in.op) {
    case CollOp::Broadcast:
      if (me == root) {
        for (std::uint32_t k = 1; k < n; ++k) st.sends.push_back(Send{(root + k) % n, in.w, in.bytes, Mode::Direct, 0, 0});
      } else {
        st.recvs.push_back(Recv{root, in.w, in.bytes, Mode::Direct, 0});
      }
      break;
    case CollOp::Scatter:
      if (me == root) {
        for (std::uint32_t k = 1; k < n; ++k) {
          const std::uint32_t j = (root + k) % n;
          st.sends.push_back(Send{j, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, in.blocks.off(j), 0});
        }
      } else {
        st.recvs.push_back(Recv{root, in.w + in.blocks.off(me), in.blocks.len(me), Mode::Direct, 0});
      }
      break;
    case CollOp::Gather:
      if (me == root) {
        for (std::uint32_t k = 1; k < n; ++k) {
          const std::uint32_t j = (root + k) % n;
          st.recvs.push_back(Recv{j, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, 0});
        }
      } else {
        st.sends.push_back(Send{root, in.w + in.blocks.off(me), in.blocks.len(me), Mode::Direct, in.blocks.off(me), 0});
      }
      break;
    case CollOp::Reduce: reduce(in, &st); break;
    case CollOp::AllToAll: alltoall(in, &st); break;
    default: return false;
  }
  p->steps.push_back(std::move(st));
  return true;
}

// docs/algorithms/star.md#cost: one step; the root's n - 1 sends go out on at most 7 parallel
// streams, so ceil((n - 1) / 7) messages follow one another on the busiest stream. Staged
// transfers are taken as one piece per message (a block fits a slot).
double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes), s = n - 1.0;
  const double rounds = s > 0 ? std::ceil(s / kLanes) : 0;  // messages one after another on a helper stream
  switch (op) {
    case CollOp::Broadcast: return rounds * (c.alpha_ns + D * c.beta_ns_per_byte);
    case CollOp::Scatter: return rounds * (c.alpha_ns + D / n * c.beta_ns_per_byte);
    case CollOp::Gather: return s > 0 ? c.alpha_ns + D / n * c.beta_ns_per_byte : 0;
    case CollOp::Reduce: return s > 0 ? c.alpha_ns + D * c.beta_ns_per_byte + s * D * c.gamma_ns_per_byte : 0;
    case CollOp::AllToAll: return rounds * (c.alpha_ns + D / n * c.beta_ns_per_byte);
    default: return -1;
  }
}

}  // namespace

const Family kStar{"star", build, cost, kLanes, false};

}  // namespace hcomm::detail
