// Hierarchical all-to-all (docs/algorithms/pairwise.md#hierarchical-all-to-all-meshpairwise),
// HCCL's two-level all-to-all on several servers of L ranks each (members server-major: member
// m = s * L + l). Phase A, across servers, on my rail: S - 1 pairwise steps; at step k member
// (s, l) sends server s + k's L blocks (contiguous in its input: they go to ranks (s + k, 0..L-1))
// in ONE message to (s + k, l), and receives server s - k's into its work area W at
// W[(s - k) * L .. + L) — L x fewer, L x larger RoCE messages than the flat pairwise. Phase B,
// inside the server: L - 1 pairwise steps over the HCCS mesh; at step k member l sends to local
// peer l + k the S blocks from every server t destined to that peer, which land in the peer's
// output at out[t * L + l]: when a block fits a staging piece, W is kept by destination (phase A
// places each received block with a 2-D copy) and those S blocks go as one message placed with one
// 2-D copy; otherwise one transfer per block. My own blocks go in -> W (own server) and W -> out as
// local copies. W holds n blocks: the selection offers it only when they fit in the
// work area (the first half of the collective buffer); uniform blocks only (not all-to-all-v).
#include <algorithm>

#include "algo/family.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kSpan = 7;  // slots, as pairwise (algo/pairwise.cpp)

bool build(const ScheduleIn& in, Schedule* p) {
  if (in.op != CollOp::AllToAll || in.blocks.counts || in.send_blocks.counts || in.slots < kSpan) return false;
  const std::uint32_t L = in.local, n = in.n;
  if (L < 2 || n % L != 0 || n / L < 2) return false;
  const std::uint32_t S = n / L, s = in.me / L, l = in.me % L;
  const std::uint64_t b = in.blocks.len(0);
  if (in.send_blocks.len(0) != b) return false;
  const std::uint64_t W = in.w;
  p->size_to(S - 1 + L - 1);
  // Rows: when a block fits a staging piece, W is laid out by destination (region q = the S
  // blocks for local rank q, in server order): phase A's receives land rail-major with one 2-D
  // copy each, and phase B sends region q to peer q as ONE staged message whose receiver places
  // its S rows with one 2-D copy — L - 1 transfers per rank instead of S (L - 1). Otherwise (a
  // block larger than a piece) W is server-major and phase B moves one block per transfer.
  const bool rows = rows_fit_slot(in, b, std::max(std::uint64_t(S) * b, std::uint64_t(L) * b));
  // Phase A: across servers, on my rail.
  for (std::uint64_t j = p->lo(0), e = p->hi(0, S - 1); j < e; ++j) {  // step j: k = j + 1
    Step& st = *p->at(j);
    const auto k = static_cast<std::uint32_t>(j + 1);
    const std::uint32_t ts = (s + k) % S, fs = (s + S - k) % S;
    const std::uint64_t src = in.in + std::uint64_t(ts) * L * b;
    if (rows) {  // from (fs, l): its blocks for my server's ranks, block q to W[q][fs]
      staged_rows(in, &st.sends, ts * L + l, src, nullptr, 0, 0, L * b, b, 0, 0, 0, kSpan);
      staged_rows(in, nullptr, 0, 0, &st.recvs, fs * L + l, W + std::uint64_t(fs) * b, L * b, b, std::uint64_t(S) * b, 0, 0,
                  kSpan);
    } else {
      staged(in, &st.sends, ts * L + l, src, nullptr, 0, 0, L * b, Mode::StagedCopy, 0, 0, kSpan);
      staged(in, nullptr, 0, 0, &st.recvs, fs * L + l, W + std::uint64_t(fs) * L * b, L * b, Mode::StagedCopy, 0, 0, kSpan);
    }
  }
  // My server's blocks: input -> W (before phase B reads them).
  if (Step* st = p->at(0); st && rows)
    st->locals.push_back(Local{W + std::uint64_t(s) * b, in.in + std::uint64_t(s) * L * b, L * b, false,
                               static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b),
                               static_cast<std::uint32_t>(std::uint64_t(S) * b)});
  else if (st)
    st->locals.push_back(Local{W + std::uint64_t(s) * L * b, in.in + std::uint64_t(s) * L * b, L * b, false});
  // Phase B: inside the server.
  for (std::uint64_t j = p->lo(S - 1), e = p->hi(S - 1, L - 1); j < e; ++j) {  // step S - 1 + j: k = j + 1
    Step& st = *p->at(S - 1 + j);
    const auto k = static_cast<std::uint32_t>(j + 1);
    const std::uint32_t tl = (l + k) % L, fl = (l + L - k) % L;
    if (rows) {  // region tl to (s, tl); from (s, fl): block t of its region l goes to out[t * L + fl]
      staged_rows(in, &st.sends, s * L + tl, W + std::uint64_t(tl) * S * b, nullptr, 0, 0, std::uint64_t(S) * b, b, 0, k % kSpan,
                  0, kSpan);
      staged_rows(in, nullptr, 0, 0, &st.recvs, s * L + fl, in.out + std::uint64_t(fl) * b, std::uint64_t(S) * b, b,
                  std::uint64_t(L) * b, k % kSpan, 0, kSpan);
      continue;
    }
    for (std::uint32_t t = 0; t < S; ++t) {  // transfer t (from server t's blocks) on slots from t mod 7
      staged(in, &st.sends, s * L + tl, W + (std::uint64_t(t) * L + tl) * b, nullptr, 0, 0, b, Mode::StagedCopy, t % kSpan, 0,
             kSpan);
      staged(in, nullptr, 0, 0, &st.recvs, s * L + fl, in.out + (std::uint64_t(t) * L + fl) * b, b, Mode::StagedCopy, t % kSpan,
             0, kSpan);
    }
  }
  // The blocks that stay with me (from (t, l), in W's region l or at W[t * L + l]) -> out[t * L + l].
  if (Step* st = p->at(S - 1); st && rows)
    st->locals.push_back(Local{in.out + std::uint64_t(l) * b, W + std::uint64_t(l) * S * b, std::uint64_t(S) * b, false,
                               static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b),
                               static_cast<std::uint32_t>(std::uint64_t(L) * b)});
  else if (st)
    for (std::uint32_t t = 0; t < S; ++t)
      st->locals.push_back(Local{in.out + (std::uint64_t(t) * L + l) * b, W + (std::uint64_t(t) * L + l) * b, b, false});
  return true;
}

// Steps of member in.me's schedule (Family::count): S - 1 across servers, L - 1 inside (0 when the
// shape is not one it builds; build() has the last word).
std::uint64_t count(const ScheduleIn& in) {
  if (in.op != CollOp::AllToAll || in.local < 2 || in.n % in.local != 0 || in.n / in.local < 2) return 0;
  return in.n / in.local - 1 + in.local - 1;
}

double cost(CollOp, std::uint32_t, std::uint64_t, const LinkCost&) { return -1; }  // shape-aware: hier_alltoall_cost

}  // namespace

// docs/algorithms/pairwise.md#hierarchical-all-to-all-meshpairwise: block b = D / (S L); phase A
// S - 1 RoCE messages of L b, phase B L - 1 HCCS steps of S blocks to one peer; every step pays a
// credit round trip besides its write, as the flat pairwise (algo/pairwise.cpp).
double hier_alltoall_cost(std::uint32_t servers, std::uint32_t local, std::uint64_t bytes, const LinkCost& hccs,
                          const LinkCost& roce) {
  const double S = servers, L = local, b = static_cast<double>(bytes) / (S * L);
  return (S - 1) * (2 * roce.alpha_ns + L * b * roce.beta_ns_per_byte) + (L - 1) * (2 * hccs.alpha_ns + S * b * hccs.beta_ns_per_byte);
}

const Family kHierAllToAll{"mesh+pairwise", build, cost, kSpan, false, count};

}  // namespace hcomm::detail
