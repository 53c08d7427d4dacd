// Mesh all-reduce (HCCL's intra-server algorithm on 910B): reduce-scatter then all-gather over the
// full HCCS mesh, every peer link busy at once, one slave stream per peer.
//
// For each chunk of the collective buffer (CCL, symmetric on all ranks), rank r owns slice r:
//   main  A  (after the first chunk) wait PULLED from every peer: they finished reading CCL slice r
//   main  B  local copy  in[slice r] -> CCL[slice r]
//   main  C  notify READY on every peer; fork the slaves (local notify)
//   slave    wait READY(q); reduce-copy in[slice q] -> q.CCL[slice q] over HCCS; notify DONE on q
//   main  D  wait DONE from every peer: CCL[slice r] now holds the reduction of all ranks
//   main  E  notify REDUCED on every peer
//   slave    wait REDUCED(q); copy q.CCL[slice q] -> out[slice q] over HCCS; notify PULLED on q; join
//   main  F  local copy CCL[slice r] -> out[slice r]; wait for the slaves
// Time: 2 x (n/p)/link_bw plus latencies and the local copy B (see docs/algorithms.md).
#include <algorithm>

#include "internal.h"

namespace hcomm::detail {

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
  // Every peer must be reachable over HCCS: mesh is an intra-server algorithm.
  std::vector<const RankDesc*> peer(p, nullptr);
  for (std::uint32_t q = 0; q < p; ++q) {
    peer[q] = peer_desc(comm, q);
    if (!peer[q]) return HCOMM_E_NOT_FOUND;
    if (q != r && ctx->drv->pair_link(ctx->device, peer[q]->device) != PairLink::Hccs) {
      logf(ctx, 0, "Rank%u mesh all-reduce needs an HCCS link to rank %u", r, q);
      return HCOMM_E_NOT_SUPPORT;
    }
  }
  std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  while (comm->slaves.size() < p - 1) {
    hcomm_stream_t s = nullptr;
    if (make_stream(ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
    comm->slaves.push_back(s);
  }
  const std::uint64_t ccl_off = ctx->ccl_addr - ctx->base;
  const std::uint64_t chunk_elems = std::max<std::uint64_t>(1, ctx->ccl_bytes / esz);
  auto peer_of = [&](std::uint32_t k) { return (r + 1 + k) % p; };  // staggered peer order

  for (std::uint64_t c0 = 0; c0 < count; c0 += chunk_elems) {
    const std::uint64_t m = std::min(chunk_elems, count - c0);
    const std::uint64_t base = m / p, rem = m % p;
    auto slice_off = [&](std::uint32_t j) { return (j * base + std::min<std::uint64_t>(j, rem)) * esz; };
    auto slice_len = [&](std::uint32_t j) { return (base + (j < rem ? 1 : 0)) * esz; };
    const std::uint64_t in0 = in + c0 * esz, out0 = out + c0 * esz;

    if (comm->pulled_pending)  // A
      for (std::uint32_t k = 0; k < p - 1; ++k) notify_wait(main, notify_key(comm->id, kArPulled, peer_of(k)));
    if (slice_len(r)) copy(main, ctx->ccl_addr + slice_off(r), in0 + slice_off(r), slice_len(r));  // B
    for (std::uint32_t k = 0; k < p - 1; ++k)  // C
      notify_record(main, peer[peer_of(k)]->device, notify_key(comm->id, kArReady, r));
    for (std::uint32_t k = 0; k < p - 1; ++k) notify_record(main, ctx->device, notify_key(comm->id, kFork, r, k));

    for (std::uint32_t k = 0; k < p - 1; ++k) {
      const std::uint32_t q = peer_of(k);
      hcomm_stream_t s = comm->slaves[k];
      const std::uint64_t q_ccl = peer[q]->device_base_addr + ccl_off;
      notify_wait(s, notify_key(comm->id, kFork, r, k));
      notify_wait(s, notify_key(comm->id, kArReady, q));
      if (slice_len(q)) reduce_copy(s, q_ccl + slice_off(q), in0 + slice_off(q), slice_len(q), dtype, op);
      notify_record(s, peer[q]->device, notify_key(comm->id, kArDone, r));
      notify_wait(s, notify_key(comm->id, kArReduced, q));
      if (slice_len(q)) copy(s, out0 + slice_off(q), q_ccl + slice_off(q), slice_len(q));
      notify_record(s, peer[q]->device, notify_key(comm->id, kArPulled, r));
      notify_record(s, ctx->device, notify_key(comm->id, kJoin, r, k));
    }

    for (std::uint32_t k = 0; k < p - 1; ++k) notify_wait(main, notify_key(comm->id, kArDone, peer_of(k)));  // D
    for (std::uint32_t k = 0; k < p - 1; ++k)  // E
      notify_record(main, peer[peer_of(k)]->device, notify_key(comm->id, kArReduced, r));
    if (slice_len(r)) copy(main, out0 + slice_off(r), ctx->ccl_addr + slice_off(r), slice_len(r));  // F
    for (std::uint32_t k = 0; k < p - 1; ++k) notify_wait(main, notify_key(comm->id, kJoin, r, k));
    comm->pulled_pending = true;
  }
  op_end(main, mk);
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
