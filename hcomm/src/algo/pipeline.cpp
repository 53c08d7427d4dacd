// Pipeline (docs/algorithms/pipeline.md): HCCL's hierarchical pipeline for all-gather,
// reduce-scatter and all-reduce on S servers of L ranks (members numbered server-major, member
// m = s * L + l). Each rail (the ranks with local index l) runs a ring across the servers, and in
// the same step every rank exchanges with its L - 1 server peers over HCCS the block the ring
// moves — so the server links work while the NICs do, instead of in a phase of their own.
//   all-gather      S steps. Step t: send block (s - t, l) to the ring's next rank and to every
//                   server peer (the own block at t = 0, then the block the ring brought in the
//                   step before); receive block (s - t - 1, l) from the ring's previous rank and
//                   block (s - t, l') from each peer l'. The ring is idle in the last step.
//   reduce-scatter  S steps. Step t: every peer l' sends me its input block (c_t, l), c_t = s - t - 1,
//                   reduced into mine; from t = 1, the ring's previous rank sends its partial
//                   sum of (c_t, l) (reduced into mine) while I send it mine of (c_{t-1}, l). The
//                   block reduced last, c_{S-1} = s, is my result. The ring is idle in step 0.
//   all-reduce      reduce-scatter then all-gather over S * L blocks of the vector.
// Per step a rank sends one block over RoCE and L - 1 over HCCS in parallel: time ~ S steps of
// max(RoCE, HCCS) per phase. Staged transfers: the ring's on slots 0-1, peer l''s on 2 + 2i,
// 3 + 2i (i its index among my peers), so 2L slots.
#include <algorithm>

#include "algo/family.h"
#include "algo/partition.h"

namespace hcomm::detail {

namespace {

struct Pos {
  std::uint32_t S, L, s, l;
  std::uint32_t member(std::uint32_t server, std::uint32_t local) const { return (server % S) * L + local; }
  std::uint32_t srv(std::int64_t k) const { return static_cast<std::uint32_t>(((k % S) + S) % S); }
  // Slot base of sender `from` (a peer's local index, or L for the ring) at this member.
  std::uint32_t slot_base(std::uint32_t from) const {
    if (from == L) return 0;
    return 2 + 2 * (from < l ? from : from - 1);
  }
  // Slot base of this member at receiver with local index `to` (a peer) or the ring's next (L).
  std::uint32_t my_base_at(std::uint32_t to) const {
    if (to == L) return 0;
    return 2 + 2 * (l < to ? l : l - 1);
  }
};

template <class B>
void ag_steps(const ScheduleIn& in, const Pos& p, const B& blk, Schedule* out, std::uint64_t start) {
  const std::uint32_t next = p.member(p.s + 1, p.l), prev = p.member(p.s + p.S - 1, p.l);
  for (std::uint64_t j = out->lo(start), e = out->hi(start, p.S); j < e; ++j) {
    Step& st = *out->at(start + j);
    const auto t = static_cast<std::uint32_t>(j);
    const std::uint32_t b = p.member(p.srv(std::int64_t(p.s) - t), p.l);  // the block I move this step
    if (t + 1 < p.S) st.sends.push_back(Send{next, in.w + blk.off(b), blk.len(b), Mode::Direct, blk.off(b), 0});
    for (std::uint32_t q = 0; q < p.L; ++q)
      if (q != p.l) st.sends.push_back(Send{p.member(p.s, q), in.w + blk.off(b), blk.len(b), Mode::Direct, blk.off(b), 0});
    if (t + 1 < p.S) {
      const std::uint32_t r = p.member(p.srv(std::int64_t(p.s) - t - 1), p.l);
      st.recvs.push_back(Recv{prev, in.w + blk.off(r), blk.len(r), Mode::Direct, 0});
    }
    for (std::uint32_t q = 0; q < p.L; ++q)
      if (q != p.l) {
        const std::uint32_t r = p.member(p.srv(std::int64_t(p.s) - t), q);
        st.recvs.push_back(Recv{p.member(p.s, q), in.w + blk.off(r), blk.len(r), Mode::Direct, 0});
      }
  }
}

template <class B>
void rs_steps(const ScheduleIn& in, const Pos& p, const B& blk, Schedule* out, std::uint64_t start) {
  const std::uint32_t next = p.member(p.s + 1, p.l), prev = p.member(p.s + p.S - 1, p.l);
  for (std::uint64_t j = out->lo(start), e = out->hi(start, p.S); j < e; ++j) {
    Step& st = *out->at(start + j);
    const auto t = static_cast<std::uint32_t>(j);
    const std::uint32_t c = p.srv(std::int64_t(p.s) - t - 1);  // the server whose block I gather now
    if (t >= 1) {  // my partial sum of the block gathered in the step before, to the ring's next
      const std::uint32_t b = p.member(p.srv(std::int64_t(p.s) - t), p.l);
      staged(in, &st.sends, next, in.w + blk.off(b), nullptr, 0, 0, blk.len(b), Mode::StagedReduce, t, p.my_base_at(p.L));
    }
    for (std::uint32_t q = 0; q < p.L; ++q)
      if (q != p.l) {  // my input block (c, q) to peer q
        const std::uint32_t b = p.member(c, q);
        staged(in, &st.sends, p.member(p.s, q), in.w + blk.off(b), nullptr, 0, 0, blk.len(b), Mode::StagedReduce, t,
               p.my_base_at(q));
      }
    // The peers' blocks first, the ring's partial last: the peers' arrive over HCCS while the
    // ring's is still on the wire (it was reduced at the previous rank in the step before), so
    // they are reduced in the meantime and only the ring's own reduction stands between its
    // arrival and the next step's send of this block.
    const std::uint32_t mine = p.member(c, p.l);
    for (std::uint32_t q = 0; q < p.L; ++q)
      if (q != p.l)
        staged(in, nullptr, 0, 0, &st.recvs, p.member(p.s, q), in.w + blk.off(mine), blk.len(mine), Mode::StagedReduce, t,
               p.slot_base(q));
    if (t >= 1)
      staged(in, nullptr, 0, 0, &st.recvs, prev, in.w + blk.off(mine), blk.len(mine), Mode::StagedReduce, t,
             p.slot_base(p.L));
  }
}

struct PartBlocks {
  Partition part;
  std::uint64_t off(std::uint32_t j) const { return part.off(j); }
  std::uint64_t len(std::uint32_t j) const { return part.len(j); }
};

bool build(const ScheduleIn& in, Schedule* out) {
  const std::uint32_t L = in.local;
  if (L < 2 || in.n % L != 0 || in.n / L < 2 || in.slots < 2 * L) return false;
  const Pos p{in.n / L, L, in.me / L, in.me % L};
  switch (in.op) {
    case CollOp::AllGather: out->size_to(p.S); ag_steps(in, p, in.blocks, out, 0); return true;
    case CollOp::ReduceScatter: out->size_to(p.S); rs_steps(in, p, in.blocks, out, 0); return true;
    case CollOp::AllReduce: {
      const PartBlocks blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      out->size_to(2ULL * p.S);
      rs_steps(in, p, blk, out, 0);
      ag_steps(in, p, blk, out, p.S);
      return true;
    }
    default: return false;
  }
}

// Steps of member in.me's schedule (Family::count): S per phase; 0 where it does not build.
std::uint64_t count(const ScheduleIn& in) {
  const std::uint32_t L = in.local;
  if (L < 2 || in.n % L != 0 || in.n / L < 2 || in.slots < 2 * L) return 0;
  switch (in.op) {
    case CollOp::AllGather:
    case CollOp::ReduceScatter: return in.n / L;
    case CollOp::AllReduce: return 2ULL * (in.n / L);
    default: return 0;
  }
}

// One rank per server is not a pipeline: the cost is not defined on n alone (select.cpp estimates
// it from the shape with pipeline_cost).
double cost(CollOp, std::uint32_t, std::uint64_t, const LinkCost&) { return -1; }

}  // namespace

double pipeline_cost(CollOp op, std::uint32_t servers, std::uint32_t local, std::uint64_t bytes, const LinkCost& hccs,
                     const LinkCost& roce) {
  const double S = servers, L = local, b = static_cast<double>(bytes) / (S * L);  // one block
  const double step = std::max(roce.alpha_ns + b * roce.beta_ns_per_byte, hccs.alpha_ns + b * hccs.beta_ns_per_byte);
  const double reduce = L * b * hccs.gamma_ns_per_byte;  // L - 1 peers' blocks and the ring's
  switch (op) {
    case CollOp::AllGather: return S * step;
    // A step's reduction of what arrived overlaps the next step's transfers: the slower of the
    // two sets the pace, and the last step's transfer is not overlapped.
    case CollOp::ReduceScatter: return S * std::max(step, reduce) + step;
    case CollOp::AllReduce: return S * (2 * step + reduce);
    default: return -1;
  }
}

// Slots: 2 x ranks per server (ScheduleIn::local); run_family sizes them (slots 0 = 2 * local).
const Family kPipeline{"pipeline", build, cost, 0, true, count};

}  // namespace hcomm::detail
