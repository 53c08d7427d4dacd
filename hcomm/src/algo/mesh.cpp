// Mesh collectives (docs/architecture.md#hcomm, docs/algorithms/mesh.md). The all-reduce:
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
// The phases alone (mesh_reduce_scatter without then_gather, mesh_all_gather without
// after_reduce) give the reduce-scatter (A-D, F) and the all-gather (A, B, fork, E, F), each
// slave forked and joined around its one half.
#include "algo/mesh.h"

#include "algo/chunk_loop.h"

#include <algorithm>

#include "algo/partition.h"
#include "algo/passes.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/recovery.h"
#include "core/stream.h"
#include "route/route.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

namespace {

/// Staggered peer order: slave k serves local peer (l + 1 + k) mod L.
std::uint32_t peer_of(const ServerGroups& g, std::uint32_t k) { return (g.index + 1 + k) % g.size; }

std::uint64_t peer_ccl(hcomm_comm_t comm, const ServerGroups& g, std::uint32_t q) {
  return g.local[q]->device_base_addr + (comm->ctx->ccl_addr - comm->ctx->base);
}

// Step A and B on main: wait until the peers have read my CCL, then stage my slice in it.
void stage(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, hcomm_stream_t main) {
  const std::uint32_t l = g.index;
  settle_mesh(comm, main);  // A
  if (c.len[l] && c.in[l] != comm->ctx->ccl_addr + c.ccl[l]) copy(main, comm->ctx->ccl_addr + c.ccl[l], c.in[l], c.len[l]);  // B
}

// Fork the slaves (local notifies on main).
void fork(hcomm_comm_t comm, const ServerGroups& g, hcomm_stream_t main) {
  for (std::uint32_t k = 0; k + 1 < g.size; ++k) notify_record(main, comm->ctx->device, notify_key(comm->id, kFork, comm->rank, k));
}

// Slave k's reduce-scatter half: wait READY(q); reduce-copy in[q] -> q.CCL[q]; notify DONE on q.
void slave_reduce(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, int dtype, int op, std::uint32_t k) {
  const std::uint32_t q = peer_of(g, k);
  hcomm_stream_t s = comm->slaves[k];
  notify_wait(s, notify_key(comm->id, kArReady, g.first + q));
  sdma_write(s, comm, *g.local[q], peer_ccl(comm, g, q) + c.ccl[q], c.in[q], c.len[q], true, dtype, op);
  remote_notify(s, comm, *g.local[q], notify_key(comm->id, kArDone, comm->rank));
}

// Slave k's all-gather half: wait REDUCED(q); copy q.CCL[q] -> out[q]; notify PULLED on q.
void slave_gather(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, std::uint32_t k) {
  const std::uint32_t q = peer_of(g, k);
  hcomm_stream_t s = comm->slaves[k];
  notify_wait(s, notify_key(comm->id, kArReduced, g.first + q));
  sdma_read(s, comm, *g.local[q], c.out[q], peer_ccl(comm, g, q) + c.ccl[q], c.len[q]);
  remote_notify(s, comm, *g.local[q], notify_key(comm->id, kArPulled, comm->rank));
}

void slave_join(hcomm_comm_t comm, std::uint32_t k) {
  notify_record(comm->slaves[k], comm->ctx->device, notify_key(comm->id, kJoin, comm->rank, k));
}

// Step F and the joins on main: local copy CCL[l] -> out[l]; wait for the slaves.
void finish(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, hcomm_stream_t main) {
  const std::uint32_t l = g.index;
  if (c.len[l] && c.out[l] != comm->ctx->ccl_addr + c.ccl[l]) copy(main, c.out[l], comm->ctx->ccl_addr + c.ccl[l], c.len[l]);  // F
  for (std::uint32_t k = 0; k + 1 < g.size; ++k) notify_wait(main, notify_key(comm->id, kJoin, comm->rank, k));
}

}  // namespace

void settle_mesh(hcomm_comm_t comm, hcomm_stream_t main) {
  // Every communicator of the context shares its collective buffer (a parent and its children,
  // coll/split.cpp): wait for the pulls any of them still owes, not only this one's.
  for (hcomm_comm_t c : comm->ctx->mesh_owed) {
    for (std::uint32_t q : c->pulled_from) notify_wait(main, notify_key(c->id, kArPulled, q));
    c->pulled_from.clear();
  }
  comm->ctx->mesh_owed.clear();
}

void forget_mesh_debts(hcomm_context_t ctx) { ctx->mesh_owed.clear(); }

void forget_mesh_debts(hcomm_comm_t comm, bool drop) {
  comm->pulled_from.clear();
  if (!drop) return;
  auto& owed = comm->ctx->mesh_owed;
  owed.erase(std::remove(owed.begin(), owed.end(), comm), owed.end());
}

MeshChunk::MeshChunk(std::uint32_t L) : len(L, 0), ccl(L, 0), in(L, 0), out(L, 0) {}

hcomm_result_t mesh_slaves(hcomm_comm_t comm, const ServerGroups& g) {
  while (comm->slaves.size() + 1 < g.size) {
    hcomm_stream_t s = nullptr;
    if (make_stream(comm->ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
    comm->slaves.push_back(s);
  }
  return HCOMM_SUCCESS;
}

void mesh_reduce_scatter(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, int dtype, int op,
                         hcomm_stream_t main, bool then_gather) {
  const std::uint32_t L = g.size, first = g.first, r = comm->rank;
  stage(comm, g, c, main);  // A, B
  for (std::uint32_t k = 0; k < L - 1; ++k)  // C
    remote_notify(main, comm, *g.local[peer_of(g, k)], notify_key(comm->id, kArReady, r));
  fork(comm, g, main);
  for (std::uint32_t k = 0; k < L - 1; ++k) {
    notify_wait(comm->slaves[k], notify_key(comm->id, kFork, r, k));
    slave_reduce(comm, g, c, dtype, op, k);
    if (then_gather) slave_gather(comm, g, c, k);
    slave_join(comm, k);
  }
  for (std::uint32_t k = 0; k < L - 1; ++k) notify_wait(main, notify_key(comm->id, kArDone, first + peer_of(g, k)));  // D
  if (!then_gather) finish(comm, g, c, main);
}

void mesh_all_gather(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, hcomm_stream_t main, bool after_reduce) {
  const std::uint32_t L = g.size, r = comm->rank;
  if (!after_reduce) {
    stage(comm, g, c, main);  // A, B
    fork(comm, g, main);
    for (std::uint32_t k = 0; k < L - 1; ++k) {
      notify_wait(comm->slaves[k], notify_key(comm->id, kFork, r, k));
      slave_gather(comm, g, c, k);
      slave_join(comm, k);
    }
  }
  for (std::uint32_t k = 0; k < L - 1; ++k)  // E
    remote_notify(main, comm, *g.local[peer_of(g, k)], notify_key(comm->id, kArReduced, r));
  finish(comm, g, c, main);  // F, joins
  comm->pulled_from.clear();
  for (std::uint32_t k = 0; k + 1 < L; ++k) comm->pulled_from.push_back(g.first + peer_of(g, k));
  auto& owed = comm->ctx->mesh_owed;
  if (!comm->pulled_from.empty() && std::find(owed.begin(), owed.end(), comm) == owed.end()) owed.push_back(comm);
}

void route_server_peers(hcomm_comm_t comm, ServerGroups* g) {
  g->local.assign(g->size, nullptr);
  for (std::uint32_t q = 0; q < g->size; ++q) {
    g->local[q] = peer_desc(comm, g->first + q);
    if (q != g->index && (!g->local[q] || !via_sdma(comm, *g->local[q]))) return;
  }
}

bool server_is_mesh(hcomm_comm_t comm, const ServerGroups& g) {
  if (g.local.size() != g.size) return false;
  for (std::uint32_t q = 0; q < g.size; ++q) {
    if (q == g.index) continue;
    const PeerRoute* r = g.local[q] ? route::known(comm, g.local[q]->rank) : nullptr;
    if (!r || (r->link != PairLink::Hccs && r->link != PairLink::Pcie)) return false;
  }
  return true;
}

hcomm_result_t mesh_chunks(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                           int dtype, int op, hcomm_stream_t main, std::uint64_t area, const MeshMiddle& middle) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, l = g.index;
  if (hcomm_result_t rc = mesh_slaves(comm, g); rc != HCOMM_SUCCESS) return rc;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t chunk_elems = std::max<std::uint64_t>(1, area / esz);
  MeshChunk c(L);
  return chunk_loop(comm, main, 0, count, chunk_elems, [&](std::uint64_t c0, std::uint64_t m) {
    const Partition sl(m, L, esz);
    for (std::uint32_t q = 0; q < L; ++q) {
      c.len[q] = sl.len(q);
      c.ccl[q] = sl.off(q);
      c.in[q] = in + c0 * esz + sl.off(q);
      c.out[q] = out + c0 * esz + sl.off(q);
    }
    mesh_reduce_scatter(comm, g, c, dtype, op, main, true);
    if (middle && c.len[l]) middle(ctx->ccl_addr + c.ccl[l], c.len[l]);  // M
    mesh_all_gather(comm, g, c, main, true);
    return HCOMM_SUCCESS;
  });
}

hcomm_result_t allreduce_mesh(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                              std::uint64_t count, int dtype, int op, hcomm_stream_t main) {
  return mesh_chunks(comm, g, in, out, count, dtype, op, main, passes::mesh_area(comm->ctx->ccl_bytes), nullptr);
}

hcomm_result_t mesh_blocks(hcomm_comm_t comm, const ServerGroups& g, const CollReq& r, std::uint64_t esz, hcomm_stream_t main) {
  const std::uint32_t L = g.size;
  const std::uint64_t chunk_elems = passes::mesh_block_elems(comm->ctx->ccl_bytes, esz);
  MeshChunk c(L);
  return chunk_loop(comm, main, r.from, r.count, chunk_elems, [&](std::uint64_t c0, std::uint64_t m) {
    for (std::uint32_t q = 0; q < L; ++q) {
      c.len[q] = m * esz;
      c.ccl[q] = 0;
      if (r.op == CollOp::ReduceScatter) {
        c.in[q] = r.in + ((g.first + q) * r.count + c0) * esz;
        c.out[q] = r.out + c0 * esz;
      } else {
        c.in[q] = r.in + c0 * esz;
        c.out[q] = r.out + ((g.first + q) * r.count + c0) * esz;
      }
    }
    if (r.op == CollOp::ReduceScatter) mesh_reduce_scatter(comm, g, c, r.dtype, r.redop, main, false);
    else mesh_all_gather(comm, g, c, main, false);
    return HCOMM_SUCCESS;
  });
}

}  // namespace hcomm::detail
