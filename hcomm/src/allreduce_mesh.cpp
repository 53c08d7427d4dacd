// All-reduce inside a server: mesh (HCCL's intra-server algorithm on 910B) — reduce-scatter then
// all-gather over the full HCCS mesh, every peer link busy at once, one slave stream per peer.
// Across servers: hierarchical (HCCL's "level0 mesh, level1 ring"): the mesh reduce-scatter
// leaves each rank with its server's reduction of slice l; the ranks with the same local index l
// on every server all-reduce that slice with a ring over RoCE; the mesh all-gather finishes.
//
// For each chunk of the collective buffer (CCL, symmetric on all ranks), local rank l owns slice l:
//   main  A  (after the first chunk) wait PULLED from every local peer: they finished reading it
//   main  B  local copy  in[slice l] -> CCL[slice l]
//   main  C  notify READY on every local peer; fork the slaves (local notify)
//   slave    wait READY(q); reduce-copy in[slice q] -> q.CCL[slice q] over HCCS; notify DONE on q
//   main  D  wait DONE from every local peer: CCL[slice l] holds the server's reduction
//   main  R  (several servers) ring all-reduce of CCL[slice l] with the same slice on the others
//   main  E  notify REDUCED on every local peer
//   slave    wait REDUCED(q); copy q.CCL[slice q] -> out[slice q] over HCCS; notify PULLED on q; join
//   main  F  local copy CCL[slice l] -> out[slice l]; wait for the slaves
// Time (one server): 2 x (n/p)/link_bw plus latencies and the local copy B (docs/algorithms.md).
#include <algorithm>

#include "internal.h"

namespace hcomm::detail {

namespace {

// Ring all-reduce of `bytes` at CCL offset `x` (same offset on every ring member) over S members.
// Member i sends to i+1. Each step moves one of S blocks into the next member's staging area
// (CCL second half) by RDMA write + notify; the receiver reduces (reduce-scatter) or copies
// (all-gather) it into place, then returns a credit: the staging area is free again.
void ring_allreduce(hcomm_comm_t comm, hcomm_stream_t s, const std::vector<const RankDesc*>& ring, std::uint32_t pos,
                    std::uint64_t x, std::uint64_t bytes, std::uint64_t esz, int dtype, int op, std::uint64_t stage_off) {
  hcomm_context_t ctx = comm->ctx;
  const auto S = static_cast<std::uint32_t>(ring.size());
  const RankDesc& next = *ring[(pos + 1) % S];
  const RankDesc& prev = *ring[(pos + S - 1) % S];
  const std::uint64_t elems = bytes / esz, base = elems / S, rem = elems % S;
  auto boff = [&](std::uint32_t j) { return (j * base + std::min<std::uint64_t>(j, rem)) * esz; };
  auto blen = [&](std::uint32_t j) { return (base + (j < rem ? 1 : 0)) * esz; };
  const std::uint64_t ccl_off = ctx->ccl_addr - ctx->base;
  const std::uint64_t my_stage = ctx->ccl_addr + stage_off, next_stage = next.device_base_addr + ccl_off + stage_off;
  if (!comm->ring_primed) {  // the very first ring: my staging area is free
    remote_notify(s, comm, prev, notify_key(comm->id, kRingCredit, comm->rank));
    comm->ring_primed = true;
  }
  for (std::uint32_t k = 0; k < 2 * (S - 1); ++k) {
    const bool rs = k < S - 1;
    const std::uint32_t kk = rs ? k : k - (S - 1);
    const std::uint32_t send = rs ? (pos + S - kk) % S : (pos + 1 + S - kk) % S;
    const std::uint32_t recv = rs ? (pos + S - kk - 1) % S : (pos + S - kk) % S;
    notify_wait(s, notify_key(comm->id, kRingCredit, next.rank));
    put_notify(s, comm, next, next_stage, x + boff(send), blen(send), notify_key(comm->id, kRingData, comm->rank), ctx->ccl_rkey);
    notify_wait(s, notify_key(comm->id, kRingData, prev.rank));
    if (blen(recv)) {
      if (rs) reduce_copy(s, x + boff(recv), my_stage, blen(recv), dtype, op);
      else copy(s, x + boff(recv), my_stage, blen(recv));
    }
    remote_notify(s, comm, prev, notify_key(comm->id, kRingCredit, comm->rank));
  }
}

}  // namespace

hcomm_result_t allreduce_mesh(hcomm_comm_t comm, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                              int dtype, int op, hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t p = comm->nranks, r = comm->rank;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  OpInfo info{r, p, "allreduce", "mesh", count * esz, dtype, op, -1, comm->op_seq};
  if (p == 1) {
    std::uint64_t mk = op_begin(main, info);
    ++comm->op_seq;
    if (count && in != out) copy(main, out, in, count * esz);
    op_end(main, mk);
    return HCOMM_SUCCESS;
  }
  // Local group: the ranks of my server (HCCL keeps them contiguous), found by descriptor.
  const RankDesc* me = peer_desc(comm, r);
  if (!me) return HCOMM_E_NOT_FOUND;
  std::uint32_t first = r, last = r;
  while (first > 0) { const RankDesc* d = peer_desc(comm, first - 1); if (!d) return HCOMM_E_NOT_FOUND; if (d->server != me->server) break; --first; }
  while (last + 1 < p) { const RankDesc* d = peer_desc(comm, last + 1); if (!d) return HCOMM_E_NOT_FOUND; if (d->server != me->server) break; ++last; }
  const std::uint32_t L = last - first + 1, l = r - first;
  if (p % L != 0) {
    logf(ctx, 0, "Rank%u all-reduce needs the same number of ranks on every server (%u here, %u in all)", r, L, p);
    return HCOMM_E_NOT_SUPPORT;
  }
  const std::uint32_t S = p / L;
  std::vector<const RankDesc*> local(L), ring(S);
  for (std::uint32_t q = 0; q < L; ++q) {
    local[q] = peer_desc(comm, first + q);
    if (q != l && !via_sdma(comm, *local[q])) {
      logf(ctx, 0, "Rank%u mesh all-reduce needs an HCCS link or PCIe peer-to-peer path to rank %u", r, first + q);
      return HCOMM_E_NOT_SUPPORT;
    }
  }
  for (std::uint32_t s = 0; s < S; ++s) {
    ring[s] = peer_desc(comm, s * L + l);
    if (!ring[s] || (s != first / L && ring[s]->server == me->server)) {
      logf(ctx, 0, "Rank%u all-reduce needs servers of %u contiguous ranks each", r, L);
      return HCOMM_E_NOT_SUPPORT;
    }
  }
  if (S > 1) info.algorithm = L > 1 ? "mesh+ring" : "ring";
  std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  while (comm->slaves.size() < L - 1) {
    hcomm_stream_t s = nullptr;
    if (make_stream(ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
    comm->slaves.push_back(s);
  }
  const std::uint64_t ccl_off = ctx->ccl_addr - ctx->base;
  // Several servers: the second half of the CCL stages ring blocks.
  const std::uint64_t area = S > 1 ? ctx->ccl_bytes / 2 : ctx->ccl_bytes;
  const std::uint64_t chunk_elems = std::max<std::uint64_t>(1, area / esz);
  auto peer_of = [&](std::uint32_t k) { return (l + 1 + k) % L; };  // staggered peer order

  for (std::uint64_t c0 = 0; c0 < count; c0 += chunk_elems) {
    const std::uint64_t m = std::min(chunk_elems, count - c0);
    const std::uint64_t base = m / L, rem = m % L;
    auto slice_off = [&](std::uint32_t j) { return (j * base + std::min<std::uint64_t>(j, rem)) * esz; };
    auto slice_len = [&](std::uint32_t j) { return (base + (j < rem ? 1 : 0)) * esz; };
    const std::uint64_t in0 = in + c0 * esz, out0 = out + c0 * esz;

    if (comm->pulled_pending)  // A
      for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kArPulled, first + peer_of(k)));
    if (slice_len(l)) copy(main, ctx->ccl_addr + slice_off(l), in0 + slice_off(l), slice_len(l));  // B
    for (std::uint32_t k = 0; k < L - 1; ++k)  // C
      notify_record(main, local[peer_of(k)]->device, notify_key(comm->id, kArReady, r));
    for (std::uint32_t k = 0; k < L - 1; ++k) notify_record(main, ctx->device, notify_key(comm->id, kFork, r, k));

    for (std::uint32_t k = 0; k < L - 1; ++k) {
      const std::uint32_t q = peer_of(k), qr = first + q;
      hcomm_stream_t s = comm->slaves[k];
      const std::uint64_t q_ccl = local[q]->device_base_addr + ccl_off;
      notify_wait(s, notify_key(comm->id, kFork, r, k));
      notify_wait(s, notify_key(comm->id, kArReady, qr));
      if (slice_len(q)) reduce_copy(s, q_ccl + slice_off(q), in0 + slice_off(q), slice_len(q), dtype, op);
      notify_record(s, local[q]->device, notify_key(comm->id, kArDone, r));
      notify_wait(s, notify_key(comm->id, kArReduced, qr));
      if (slice_len(q)) copy(s, out0 + slice_off(q), q_ccl + slice_off(q), slice_len(q));
      notify_record(s, local[q]->device, notify_key(comm->id, kArPulled, r));
      notify_record(s, ctx->device, notify_key(comm->id, kJoin, r, k));
    }

    for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kArDone, first + peer_of(k)));  // D
    if (S > 1 && slice_len(l))  // R
      ring_allreduce(comm, main, ring, first / L, ctx->ccl_addr + slice_off(l), slice_len(l), esz, dtype, op, area);
    for (std::uint32_t k = 0; k < L - 1; ++k)  // E
      notify_record(main, local[peer_of(k)]->device, notify_key(comm->id, kArReduced, r));
    if (slice_len(l)) copy(main, out0 + slice_off(l), ctx->ccl_addr + slice_off(l), slice_len(l));  // F
    for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kJoin, r, k));
    comm->pulled_pending = L > 1;
  }
  op_end(main, mk);
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
