// Ring (docs/algorithms/ring.md). Member m sends to m+1 and receives from m-1 (mod n).
//   all-reduce      reduce-scatter then all-gather: 2(n-1) steps of D/n
//   reduce-scatter  n-1 steps; step k sends block m-k-1, receives (and reduces) block m-k-2
//   all-gather      n-1 steps; step k sends block m-k, receives block m-k-1 (Direct, in place)
//   broadcast       a chain from the root, pipelined in P slices: n+P-2 steps of D/P
//   reduce          the chain toward the root, pipelined, reducing at every hop
//   scatter         the chain from the root, farthest block first: n-1 steps
//   gather          the chain toward the root, own block first: n-1 steps
// Reductions travel staged (slot k mod 2), gathered data Direct into its final place in W.
#include "algo/family.h"

#include <algorithm>

#include "algo/partition.h"
#include "algo/ring_steps.h"

namespace hcomm::detail {

namespace {

std::uint32_t sub(std::uint32_t a, std::uint64_t b, std::uint32_t n) {
  return static_cast<std::uint32_t>((a + n - b % n) % n);
}

struct PartBlocks {  // Partition as a block layout
  Partition part;
  std::uint64_t off(std::uint32_t j) const { return part.off(j); }
  std::uint64_t len(std::uint32_t j) const { return part.len(j); }
};

// Pipeline slices of a chain: at most slot_bytes each, about 8 per member count for overlap.
Partition slices(const ScheduleIn& in) {
  const std::uint64_t elems = in.bytes / in.esz;
  const std::uint64_t per_slot = std::max<std::uint64_t>(1, in.slot_bytes / in.esz);
  std::uint64_t P = std::max<std::uint64_t>(std::min<std::uint64_t>(elems, 8), (elems + per_slot - 1) / per_slot);
  P = std::max<std::uint64_t>(P, 1);
  return Partition(elems, static_cast<std::uint32_t>(P), in.esz);
}

std::uint32_t slice_count(const ScheduleIn& in) {
  const std::uint64_t elems = in.bytes / in.esz;
  const std::uint64_t per_slot = std::max<std::uint64_t>(1, in.slot_bytes / in.esz);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(
      1, std::max<std::uint64_t>(std::min<std::uint64_t>(elems, 8), (elems + per_slot - 1) / per_slot)));
}

void chain_broadcast(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n, v = sub(in.me, in.root, n), P = slice_count(in);
  const Partition sl = slices(in);
  const std::uint32_t next = (in.me + 1) % n, prev = (in.me + n - 1) % n;
  p->size_to(n + P - 2);
  for (std::uint64_t t = p->lo(0), e = p->hi(0, n + P - 2); t < e; ++t) {
    Step& st = *p->at(t);
    if (v + 1 < n && t >= v && t - v < P) {
      const std::uint32_t i = t - v;
      st.sends.push_back(Send{next, in.w + sl.off(i), sl.len(i), Mode::Direct, sl.off(i), 0});
    }
    if (v >= 1 && t + 1 >= v && t + 1 - v < P) {
      const std::uint32_t i = t + 1 - v;
      st.recvs.push_back(Recv{prev, in.w + sl.off(i), sl.len(i), Mode::Direct, 0});
    }
  }
}

void chain_reduce(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n, v = sub(in.me, in.root, n), P = slice_count(in);
  const Partition sl = slices(in);
  const std::uint32_t toward = (in.me + n - 1) % n, from = (in.me + 1) % n;
  p->size_to(n + P - 2);
  for (std::uint64_t t = p->lo(0), e = p->hi(0, n + P - 2); t < e; ++t) {
    Step& st = *p->at(t);
    const std::uint32_t d_send = n - 1 - v, d_recv = n - 2 - v;  // hops from the chain's start
    if (v >= 1 && t >= d_send && t - d_send < P) {
      const std::uint32_t i = t - d_send;
      st.sends.push_back(Send{toward, in.w + sl.off(i), sl.len(i), Mode::StagedReduce, 0, i % 2});
    }
    if (v + 1 < n && t >= d_recv && t - d_recv < P) {
      const std::uint32_t i = t - d_recv;
      st.recvs.push_back(Recv{from, in.w + sl.off(i), sl.len(i), Mode::StagedReduce, i % 2});
    }
  }
}

void chain_scatter(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n, v = sub(in.me, in.root, n);
  const std::uint32_t next = (in.me + 1) % n, prev = (in.me + n - 1) % n;
  auto member = [&](std::uint64_t d) { return static_cast<std::uint32_t>((d + in.root) % n); };
  p->size_to(n - 1);
  for (std::uint64_t t = p->lo(0), e = p->hi(0, n - 1); t < e; ++t) {
    Step& st = *p->at(t);
    if (t >= v && n - 1 - t + v > v) {
      const std::uint32_t j = member(n - 1 - t + v);
      st.sends.push_back(Send{next, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, in.blocks.off(j), 0});
    }
    if (v >= 1 && t + 1 >= v) {
      const std::uint32_t j = member(n - 2 - t + v);
      st.recvs.push_back(Recv{prev, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, 0});
    }
  }
}

void chain_gather(const ScheduleIn& in, Schedule* p) {
  const std::uint32_t n = in.n, v = sub(in.me, in.root, n);
  const std::uint32_t toward = (in.me + n - 1) % n, from = (in.me + 1) % n;
  auto member = [&](std::uint64_t d) { return static_cast<std::uint32_t>((d + in.root) % n); };
  p->size_to(n - 1);
  for (std::uint64_t t = p->lo(0), e = p->hi(0, n - 1); t < e; ++t) {
    Step& st = *p->at(t);
    if (v >= 1 && t + v < n) {
      const std::uint32_t j = member(v + t);
      st.sends.push_back(Send{toward, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, in.blocks.off(j), 0});
    }
    if (t + v + 1 < n) {
      const std::uint32_t j = member(v + 1 + t);
      st.recvs.push_back(Recv{from, in.w + in.blocks.off(j), in.blocks.len(j), Mode::Direct, 0});
    }
  }
}

// Steps of member in.me's schedule (Family::count); 0 when the family does not build in.op.
std::uint64_t count(const ScheduleIn& in) {
  if (in.n == 1) return 0;
  switch (in.op) {
    case CollOp::AllReduce: return 2ULL * (in.n - 1);
    case CollOp::ReduceScatter:
    case CollOp::AllGather:
    case CollOp::Scatter:
    case CollOp::Gather: return in.n - 1;
    case CollOp::Broadcast:
    case CollOp::Reduce: return in.n + slice_count(in) - 2ULL;
    case CollOp::AllToAll: return 0;
  }
  return 0;
}

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.n == 1) return in.op != CollOp::AllToAll;
  const RingDir d{1, 0, in.n};
  switch (in.op) {
    case CollOp::AllReduce: {
      const PartBlocks blk{Partition(in.bytes / in.esz, in.n, in.esz)};
      p->size_to(count(in));
      ring_rs_into(in, blk, d, p, 0);
      ring_ag_into(in, blk, d, p, in.n - 1);
      return true;
    }
    case CollOp::ReduceScatter: p->size_to(count(in)); ring_rs_into(in, in.blocks, d, p, 0); return true;
    case CollOp::AllGather: p->size_to(count(in)); ring_ag_into(in, in.blocks, d, p, 0); return true;
    case CollOp::Broadcast: chain_broadcast(in, p); return true;
    case CollOp::Reduce: chain_reduce(in, p); return true;
    case CollOp::Scatter: chain_scatter(in, p); return true;
    case CollOp::Gather: chain_gather(in, p); return true;
    case CollOp::AllToAll: return false;
  }
  return false;
}

double cost(CollOp op, std::uint32_t n, std::uint64_t bytes, const LinkCost& c) {
  const double D = static_cast<double>(bytes), s = n - 1.0;
  const double P = 8;  // chain slices
  switch (op) {
    case CollOp::AllReduce: return 2 * s * c.alpha_ns + 2 * s / n * D * c.beta_ns_per_byte + s / n * D * c.gamma_ns_per_byte;
    case CollOp::ReduceScatter: return s * c.alpha_ns + s / n * D * (c.beta_ns_per_byte + c.gamma_ns_per_byte);
    case CollOp::AllGather: return s * c.alpha_ns + s / n * D * c.beta_ns_per_byte;
    case CollOp::Broadcast: return (s + P - 1) * (c.alpha_ns + D / P * c.beta_ns_per_byte);
    case CollOp::Reduce: return (s + P - 1) * (c.alpha_ns + D / P * (c.beta_ns_per_byte + c.gamma_ns_per_byte));
    case CollOp::Scatter:
    case CollOp::Gather: return s * (c.alpha_ns + D / n * c.beta_ns_per_byte);
    case CollOp::AllToAll: return -1;
  }
  return -1;
}

}  // namespace

const Family kRing{"ring", build, cost, 2, true, count};

}  // namespace hcomm::detail
