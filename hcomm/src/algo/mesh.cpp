// Mesh all-reduce (docs/architecture.md#hcomm, docs/algorithms.md).
// For each chunk of the collective buffer (CCL, symmetric on all ranks), local rank l owns slice l:
//   main  A  (after the first chunk) wait PULLED from every local peer: they finished reading it
//   main  B  local copy  in[slice l] -> CCL[slice l]
//   main  C  notify READY on every local peer; fork the slaves (local notify)
//   slave    wait READY(q); reduce-copy in[slice q] -> q.CCL[slice q] over HCCS; notify DONE on q
//   main  D  wait DONE from every local peer: CCL[slice l] holds the server's reduction
//   main  M  (mesh_chunks' `middle`; hierarchical: the ring across servers)
//   main  E  notify REDUCED on every local peer
//   slave    wait REDUCED(q); copy q.CCL[slice q] -> out[slice q] over HCCS; notify PULLED on q; join
//   main  F  local copy CCL[slice l] -> out[slice l]; wait for the slaves
// A slave's whole program (both halves) is submitted with the reduce-scatter half: it waits on
// REDUCED between them. Time (one server): 2 x (n/p)/link_bw plus latencies and the local copy B.
#include "algo/mesh.h"

#include <algorithm>

#include "algo/partition.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/stream.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

namespace {

/// One chunk: where its input and output start, and its slices.
struct Chunk {
  std::uint64_t in0, out0;
  Partition slice;
};

/// Staggered peer order: slave k serves local peer (l + 1 + k) mod L.
std::uint32_t peer_of(const ServerGroups& g, std::uint32_t k) { return (g.index + 1 + k) % g.size; }

// Steps A-D on main, and both halves of every slave's program.
void reduce_scatter(hcomm_comm_t comm, const ServerGroups& g, const Chunk& c, int dtype, int op, hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, l = g.index, first = g.first, r = comm->rank;
  const std::uint64_t ccl_off = ctx->ccl_addr - ctx->base;
  const Partition& sl = c.slice;
  if (comm->pulled_pending)  // A
    for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kArPulled, first + peer_of(g, k)));
  if (sl.len(l)) copy(main, ctx->ccl_addr + sl.off(l), c.in0 + sl.off(l), sl.len(l));  // B
  for (std::uint32_t k = 0; k < L - 1; ++k)  // C
    notify_record(main, g.local[peer_of(g, k)]->device, notify_key(comm->id, kArReady, r));
  for (std::uint32_t k = 0; k < L - 1; ++k) notify_record(main, ctx->device, notify_key(comm->id, kFork, r, k));

  for (std::uint32_t k = 0; k < L - 1; ++k) {
    const std::uint32_t q = peer_of(g, k), qr = first + q;
    hcomm_stream_t s = comm->slaves[k];
    const std::uint64_t q_ccl = g.local[q]->device_base_addr + ccl_off;
    notify_wait(s, notify_key(comm->id, kFork, r, k));
    notify_wait(s, notify_key(comm->id, kArReady, qr));
    if (sl.len(q)) reduce_copy(s, q_ccl + sl.off(q), c.in0 + sl.off(q), sl.len(q), dtype, op);
    notify_record(s, g.local[q]->device, notify_key(comm->id, kArDone, r));
    notify_wait(s, notify_key(comm->id, kArReduced, qr));
    if (sl.len(q)) copy(s, c.out0 + sl.off(q), q_ccl + sl.off(q), sl.len(q));
    notify_record(s, g.local[q]->device, notify_key(comm->id, kArPulled, r));
    notify_record(s, ctx->device, notify_key(comm->id, kJoin, r, k));
  }

  for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kArDone, first + peer_of(g, k)));  // D
}

// Steps E-F and the joins on main.
void all_gather(hcomm_comm_t comm, const ServerGroups& g, const Chunk& c, hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, l = g.index, r = comm->rank;
  const Partition& sl = c.slice;
  for (std::uint32_t k = 0; k < L - 1; ++k)  // E
    notify_record(main, g.local[peer_of(g, k)]->device, notify_key(comm->id, kArReduced, r));
  if (sl.len(l)) copy(main, c.out0 + sl.off(l), ctx->ccl_addr + sl.off(l), sl.len(l));  // F
  for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kJoin, r, k));
  comm->pulled_pending = L > 1;
}

}  // namespace

hcomm_result_t mesh_check(hcomm_comm_t comm, ServerGroups* g) {
  g->local.assign(g->size, nullptr);
  for (std::uint32_t q = 0; q < g->size; ++q) {
    g->local[q] = peer_desc(comm, g->first + q);
    if (q != g->index && !via_sdma(comm, *g->local[q])) {
      logf(comm->ctx, 0, "Rank%u mesh all-reduce needs an HCCS link or PCIe peer-to-peer path to rank %u", comm->rank,
           g->first + q);
      return HCOMM_E_NOT_SUPPORT;
    }
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t mesh_chunks(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                           int dtype, int op, hcomm_stream_t main, std::uint64_t area, const MeshMiddle& middle) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, l = g.index;
  while (comm->slaves.size() < L - 1) {
    hcomm_stream_t s = nullptr;
    if (make_stream(ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
    comm->slaves.push_back(s);
  }
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t chunk_elems = std::max<std::uint64_t>(1, area / esz);
  for (std::uint64_t c0 = 0; c0 < count; c0 += chunk_elems) {
    const std::uint64_t m = std::min(chunk_elems, count - c0);
    const Chunk c{in + c0 * esz, out + c0 * esz, Partition(m, L, esz)};
    reduce_scatter(comm, g, c, dtype, op, main);
    if (middle && c.slice.len(l)) middle(ctx->ccl_addr + c.slice.off(l), c.slice.len(l));  // M
    all_gather(comm, g, c, main);
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t allreduce_mesh(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                              std::uint64_t count, int dtype, int op, hcomm_stream_t main) {
  return mesh_chunks(comm, g, in, out, count, dtype, op, main, comm->ctx->ccl_bytes, nullptr);
}

}  // namespace hcomm::detail
