// Hierarchical all-reduce (docs/architecture.md#hcomm, docs/algorithms/README.md): the mesh
// reduce-scatter leaves each rank with its server's reduction of slice l; the ranks with the same
// local index l on every server (one NIC rail) all-reduce that slice with the level-1 family's
// schedule; the mesh all-gather finishes. With L ranks per server a chunk's slice is 1/L of it, and no
// level-1 family stages more than half a slice per slot, so a chunk takes L / (L + slots / 2) of
// the collective buffer and the slots the rest (8 ranks, 2 slots: 8/9 of it, a 1 GiB all-reduce in
// 5 chunks of a 256 MiB buffer instead of 8 halves). One rank per server: half and half.
#include "algo/hierarchical.h"

#include "algo/chunk_loop.h"
#include "algo/exec.h"
#include "algo/mesh.h"
#include "algo/partition.h"
#include "algo/passes.h"
#include "core/recovery.h"
#include "transport/tasks.h"

#include <algorithm>

namespace hcomm::detail {

hcomm_result_t allreduce_hierarchical(hcomm_comm_t comm, const ServerGroups& g, const Family& level1, std::uint64_t in,
                                      std::uint64_t out, std::uint64_t count, int dtype, int op, hcomm_stream_t main) {
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(dtype));
  const std::uint64_t ccl = comm->ctx->ccl_bytes, slots = level1.slots ? level1.slots : 2;
  const std::uint64_t area = passes::hier_allreduce_area(ccl, g.size, slots, esz);
  const Members rail{g.index, g.size, g.servers};
  hcomm_result_t rc = HCOMM_SUCCESS;
  auto middle = [&](std::uint64_t slice_addr, std::uint64_t slice_bytes) {
    if (rc != HCOMM_SUCCESS) return;
    ScheduleIn pi;
    pi.op = CollOp::AllReduce;
    pi.n = g.servers;
    pi.me = g.first / g.size;  // my server's place on the rail
    pi.esz = esz;
    pi.w = slice_addr;
    pi.bytes = slice_bytes;
    rc = run_family(comm, main, level1, rail, pi, area, dtype, op);
  };
  if (g.size == 1) {  // one rank per server: the level-1 schedule over the whole buffer, in chunks
    return chunk_loop(comm, main, 0, count, area / esz, [&](std::uint64_t c0, std::uint64_t m) {
      copy(main, comm->ctx->ccl_addr, in + c0 * esz, m * esz);
      middle(comm->ctx->ccl_addr, m * esz);
      if (rc == HCOMM_SUCCESS) copy(main, out + c0 * esz, comm->ctx->ccl_addr, m * esz);
      return rc;
    });
  }
  hcomm_result_t mrc = mesh_chunks(comm, g, in, out, count, dtype, op, main, area, middle);
  return mrc != HCOMM_SUCCESS ? mrc : rc;
}

namespace {

// A schedule of family `f` for `op` among `mem` (me = my member index) on W = `w` with `blocks` or
// `bytes`, staging in the collective buffer's second half.
hcomm_result_t group_schedule(hcomm_comm_t comm, const Family& f, CollOp op, const Members& mem, std::uint32_t me,
                          std::uint32_t root, std::uint64_t w, const Blocks& blocks, std::uint64_t bytes, std::uint64_t esz,
                          const CollReq& r, hcomm_stream_t main) {
  ScheduleIn pi;
  pi.op = op;
  pi.n = mem.n;
  pi.me = me;
  pi.root = root;
  pi.esz = esz;
  pi.w = w;
  pi.bytes = bytes;
  pi.blocks = blocks;
  return run_family(comm, main, f, mem, pi, comm->ctx->ccl_bytes / 2, r.dtype, r.redop);
}

}  // namespace

// Hierarchical all-gather (docs/algorithms/README.md#compositions): level 1 first — the ranks of
// my rail (local index l on every server) all-gather their blocks with the family's schedule into
// region l of a gathered area G (L regions of S blocks, rail-major) — then the mesh all-gather
// of the regions inside the server, then G is copied out in server-major order (L 2-D copies of
// S rows each).
hcomm_result_t hier_allgather(hcomm_comm_t comm, const ServerGroups& g, const Family& f, const CollReq& r, std::uint64_t esz,
                              hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, S = g.servers, l = g.index, me = g.first / L, n = L * S;
  const std::uint64_t m_max = passes::hier_allgather_elems(ctx->ccl_bytes, n, esz);
  if (m_max == 0) return too_small(comm, r, n);
  MeshChunk c(L);
  return chunk_loop(comm, main, r.from, r.count, m_max, [&](std::uint64_t c0, std::uint64_t m) {
    const std::uint64_t rb = S * m * esz;  // region bytes
    const std::uint64_t G = ctx->ccl_addr;
    copy_if(main, G + l * rb + me * m * esz, r.in + c0 * esz, m * esz);
    if (hcomm_result_t rc = group_schedule(comm, f, CollOp::AllGather, Members{l, L, S}, me, 0, G + l * rb, Blocks{S, esz, m, nullptr, nullptr}, 0, esz, r, main); rc != HCOMM_SUCCESS)
      return rc;
    for (std::uint32_t q = 0; q < L; ++q) {
      c.len[q] = rb;
      c.ccl[q] = q * rb;
      c.in[q] = G + q * rb;
      c.out[q] = G + q * rb;
    }
    mesh_all_gather(comm, g, c, main, false);
    for (std::uint32_t q = 0; q < L; ++q)  // region q's S blocks to their server-major places: one 2-D copy
      copy_2d(main, r.out + (static_cast<std::uint64_t>(q) * r.count + c0) * esz, static_cast<std::uint64_t>(L) * r.count * esz,
              G + q * rb, m * esz, m * esz, S);
    return HCOMM_SUCCESS;
  });
}

// Hierarchical reduce-scatter: level 0 first — my input is rearranged rail-major (region q =
// the blocks of rail q, one 2-D copy of S rows per rail), the mesh reduce-scatter leaves my server's reduction of region
// l in area X — then the ranks of my rail reduce-scatter X with the family's schedule; my block
// goes out.
hcomm_result_t hier_reduce_scatter(hcomm_comm_t comm, const ServerGroups& g, const Family& f, const CollReq& r,
                                   std::uint64_t esz, hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, S = g.servers, me = g.first / L, n = L * S;
  const std::uint64_t m_max = passes::hier_reduce_scatter_elems(ctx->ccl_bytes, n, S, esz);
  if (m_max == 0) return too_small(comm, r, n);
  MeshChunk c(L);
  return chunk_loop(comm, main, r.from, r.count, m_max, [&](std::uint64_t c0, std::uint64_t m) {
    const std::uint64_t rb = S * m * esz;
    const std::uint64_t T = ctx->ccl_addr, X_off = static_cast<std::uint64_t>(L) * rb, X = T + X_off;
    for (std::uint32_t q = 0; q < L; ++q)  // the S blocks of rail q, server-major in the input: one 2-D copy
      copy_2d(main, T + q * rb, m * esz, r.in + (static_cast<std::uint64_t>(q) * r.count + c0) * esz,
              static_cast<std::uint64_t>(L) * r.count * esz, m * esz, S);
    for (std::uint32_t q = 0; q < L; ++q) {
      c.len[q] = rb;
      c.ccl[q] = X_off;
      c.in[q] = T + q * rb;
      c.out[q] = X;
    }
    mesh_reduce_scatter(comm, g, c, r.dtype, r.redop, main, false);
    if (hcomm_result_t rc = group_schedule(comm, f, CollOp::ReduceScatter, Members{g.index, L, S}, me, 0, X, Blocks{S, esz, m, nullptr, nullptr}, 0, esz, r, main); rc != HCOMM_SUCCESS)
      return rc;
    copy_if(main, r.out + c0 * esz, X + me * m * esz, m * esz);
    return HCOMM_SUCCESS;
  });
}

// Hierarchical broadcast (docs/algorithms/README.md#compositions): the root scatters its vector's
// L slices to its server's ranks in one step (star), each of them broadcasts its slice along its
// rail with the family's schedule, and every server's mesh all-gather assembles the vector.
// Hierarchical reduce: the mesh reduce-scatter leaves each rank with its server's reduction of
// slice l, the family reduces it along the rail to the root's server, and a one-step gather
// (star) brings the slices to the root. Chunks of half the collective buffer.
hcomm_result_t hier_rooted(hcomm_comm_t comm, const ServerGroups& g, const Family& f, const CollReq& r, std::uint64_t esz,
                           hcomm_stream_t main) {
  hcomm_context_t ctx = comm->ctx;
  const std::uint32_t L = g.size, l = g.index, me = g.first / L;
  const std::uint32_t root_server = r.root / L, root_local = r.root % L;
  const bool in_root_server = me == root_server, root = comm->rank == r.root;
  const std::uint64_t chunk = std::max<std::uint64_t>(1, passes::flat_area(ctx->ccl_bytes, esz) / esz);
  const std::uint64_t W = ctx->ccl_addr;
  const Members local{g.first, 1, L}, rail{l, L, g.servers};
  std::vector<std::uint64_t> cnt(L), pre(L + 1);
  MeshChunk c(L);
  return chunk_loop(comm, main, 0, r.count, chunk, [&](std::uint64_t c0, std::uint64_t m) {
    const Partition sl(m, L, esz);
    for (std::uint32_t q = 0; q < L; ++q) {
      cnt[q] = sl.len(q) / esz;
      pre[q + 1] = pre[q] + cnt[q];
    }
    const Blocks slices{L, esz, 0, &cnt, &pre};
    if (r.op == CollOp::Broadcast) {
      if (root) copy_if(main, W, r.in + c0 * esz, m * esz);
      if (in_root_server)
        if (hcomm_result_t rc = group_schedule(comm, kStar, CollOp::Scatter, local, l, root_local, W, slices, 0, esz, r, main);
            rc != HCOMM_SUCCESS)
          return rc;
      if (hcomm_result_t rc = group_schedule(comm, f, CollOp::Broadcast, rail, me, root_server, W + sl.off(l), Blocks{}, sl.len(l),
                                         esz, r, main);
          rc != HCOMM_SUCCESS)
        return rc;
      for (std::uint32_t q = 0; q < L; ++q) {
        c.len[q] = sl.len(q);
        c.ccl[q] = sl.off(q);
        c.in[q] = W + sl.off(q);
        c.out[q] = r.out + c0 * esz + sl.off(q);
      }
      mesh_all_gather(comm, g, c, main, false);
    } else {  // Reduce
      for (std::uint32_t q = 0; q < L; ++q) {
        c.len[q] = sl.len(q);
        c.ccl[q] = sl.off(q);
        c.in[q] = r.in + c0 * esz + sl.off(q);
        c.out[q] = W + sl.off(q);
      }
      mesh_reduce_scatter(comm, g, c, r.dtype, r.redop, main, false);
      if (hcomm_result_t rc = group_schedule(comm, f, CollOp::Reduce, rail, me, root_server, W + sl.off(l), Blocks{}, sl.len(l), esz,
                                         r, main);
          rc != HCOMM_SUCCESS)
        return rc;
      if (in_root_server)
        if (hcomm_result_t rc = group_schedule(comm, kStar, CollOp::Gather, local, l, root_local, W, slices, 0, esz, r, main);
            rc != HCOMM_SUCCESS)
          return rc;
      if (root) copy_if(main, r.out + c0 * esz, W, m * esz);
    }
    return HCOMM_SUCCESS;
  });
}

}  // namespace hcomm::detail
