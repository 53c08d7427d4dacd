// One runner for every collective (docs/architecture.md#hcomm, docs/algorithms/README.md).
#include "coll/run.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "algo/chunk_loop.h"
#include "algo/exec.h"
#include "algo/groups.h"
#include "algo/hierarchical.h"
#include "algo/mesh.h"
#include "algo/partition.h"
#include "algo/passes.h"
#include "algo/select.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/profile.h"
#include "core/recovery.h"
#include "discovery/topo.h"
#include "route/route.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

namespace {

bool is_v(const CollReq& r) { return r.counts != nullptr; }
bool block_op(CollOp op) { return op == CollOp::ReduceScatter || op == CollOp::AllGather || op == CollOp::Scatter || op == CollOp::Gather; }

// Block j's element count and displacement in the user buffer that holds all blocks.
std::uint64_t cnt(const CollReq& r, std::uint32_t j) { return r.counts ? r.counts[j] : r.count; }
std::uint64_t dsp(const CollReq& r, std::uint32_t j) { return r.displs ? r.displs[j] : j * r.count; }

void copy_if(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes) {
  if (bytes && dst != src) copy(s, dst, src, bytes);
}

// Bytes the operation moves, by the busbw convention (family.h).
std::uint64_t op_bytes(const CollReq& r, std::uint32_t n, std::uint32_t me, std::uint64_t esz) {
  if (!block_op(r.op) && r.op != CollOp::AllToAll) return r.count * esz;
  std::uint64_t total = 0;
  const std::uint64_t* c = r.op == CollOp::AllToAll ? r.scounts : r.counts;
  if (!c) return static_cast<std::uint64_t>(n) * r.count * esz;
  for (std::uint32_t j = 0; j < n; ++j) total += c[j];
  (void)me;
  return total * esz;
}

// The one-rank case: the operation is a copy of my part.
void one_rank(const CollReq& r, hcomm_stream_t s, std::uint64_t esz) {
  switch (r.op) {
    case CollOp::AllToAll: copy_if(s, r.out + (r.displs ? r.displs[0] : 0) * esz, r.in + (r.sdispls ? r.sdispls[0] : 0) * esz,
                                   (r.counts ? r.counts[0] : r.count) * esz); break;
    case CollOp::AllGather: copy_if(s, r.out + dsp(r, 0) * esz, r.in, cnt(r, 0) * esz); break;
    case CollOp::ReduceScatter: copy_if(s, r.out, r.in + dsp(r, 0) * esz, cnt(r, 0) * esz); break;
    default: copy_if(s, r.out, r.in, r.count * esz); break;
  }
}

// The collective buffer cannot hold one element per rank: HCOMM_E_NOT_SUPPORT, logged.
hcomm_result_t too_small(hcomm_comm_t comm, const CollReq& r, std::uint32_t n) {
  logf(comm->ctx, 0, "Rank%u %s: the collective buffer (%llu B) cannot hold one element per rank (%u ranks)", comm->rank,
       r.kind, static_cast<unsigned long long>(comm->ctx->ccl_bytes), n);
  return HCOMM_E_NOT_SUPPORT;
}

// HCOMM_DEBUG=3: what the library decided for this operation, one line in HCCL's style
// (docs/algorithms/README.md#where-the-choice-is-recorded): the algorithm as the trace records it
// and by level, why (auto / a knob) with the estimates, and how it moves through the collective
// buffer — its passes and the most bytes of it one pass carries (pass_bytes, as the runner cuts
// it), and the staging slots of the plan (the buffer's second half).
void log_decision(hcomm_comm_t comm, const CollReq& r, const OpInfo& info, const Choice& c, const Shape& shape) {
  if (comm->ctx->debug < 3) return;
  static const char* const dtypes[] = {"int8", "int16", "int32", "fp16", "fp32", "int64", "?", "?", "?", "?", "fp64", "bf16"};
  static const char* const redops[] = {"sum", "prod", "max", "min"};
  const bool reduces = r.op == CollOp::AllReduce || r.op == CollOp::ReduceScatter || r.op == CollOp::Reduce;
  const bool two_level_a2a = c.kind == Choice::Flat && c.family == &kHierAllToAll;  // n blocks through W
  const std::uint64_t n = comm->nranks;
  const std::uint64_t per_pass = pass_bytes(c.kind, c.family, r.op, shape, comm->ctx->ccl_bytes);  // as the runner cuts it
  const std::uint64_t chunks = per_pass ? std::max<std::uint64_t>(1, (info.bytes + per_pass - 1) / per_pass) : 1;
  std::string levels;
  if (c.kind == Choice::Mesh) levels = "level0:mesh";
  else if (c.kind == Choice::Hier) levels = std::string("level0:mesh level1:") + c.family->name;
  else if (two_level_a2a) levels = "level0:mesh level1:pairwise";
  else levels = std::string(shape.servers > 1 ? "level1:" : "level0:") + c.family->name + " over all " + std::to_string(n) + " ranks";
  char root[32] = "";
  if (info.peer >= 0) std::snprintf(root, sizeof root, " root=%lld", static_cast<long long>(info.peer));
  char runner[128] = "";
  if (!c.runner_up.empty()) std::snprintf(runner, sizeof runner, "; runner-up %s %.1f us", c.runner_up.c_str(), c.runner_up_ns / 1e3);
  if (c.contention > 1)
    std::snprintf(runner + std::strlen(runner), sizeof runner - std::strlen(runner), "; leaf uplinks x%.2f", c.contention);
  logf(comm->ctx, 3, "HCOMM(rank %u) %s seq=%llu count=%llu dtype=%s op=%s%s: algorithm %s (%s; chosen by %s, est %.1f us%s), chunks=%llu of %llu MiB, staging slots=%u",
       comm->rank, r.kind, static_cast<unsigned long long>(info.seq), static_cast<unsigned long long>(r.count),
       r.dtype >= 0 && r.dtype < 12 ? dtypes[r.dtype] : "?", reduces && r.redop >= 0 && r.redop < 4 ? redops[r.redop] : "-", root,
       c.name.c_str(), levels.c_str(), c.by.c_str(), c.est_ns / 1e3, runner, static_cast<unsigned long long>(chunks),
       static_cast<unsigned long long>(per_pass >> 20), c.kind == Choice::Mesh ? 0u : c.family->slots ? c.family->slots : 2 * shape.local);  // 0: two per rank of a server (run_family)
}

// A flat family over all ranks. With `order` (op retry's ring, recovery/ring_order.h) member m is
// comm rank order[m]: blocks sit in W in member order, a root is named by its member index.
struct Flat {
  hcomm_comm_t comm;
  hcomm_stream_t main;
  const CollReq& r;
  const Family& f;
  std::uint32_t n, me;  // me: my member index
  std::uint64_t esz;
  std::uint64_t w;     // W: the collective buffer's start
  std::uint64_t wcap;  // W capacity, bytes; the staging slots follow it
  std::uint32_t local = 1;  // ranks per server (the pipeline's PlanIn::local)
  const std::vector<std::uint32_t>* order = nullptr;  // member -> comm rank (null: identity)
  std::vector<std::uint32_t> pos;                     // comm rank -> member (with order)

  std::uint32_t member(std::uint32_t j) const { return order ? pos[j] : j; }
  std::uint32_t rank_of(std::uint32_t m) const { return order ? (*order)[m] : m; }
  bool is_root() const { return comm->rank == r.root; }

  PlanIn base() const {
    PlanIn pi;
    pi.op = r.op;
    pi.n = n;
    pi.me = me;
    pi.root = r.root < n ? member(r.root) : r.root;
    pi.esz = esz;
    pi.w = w;
    pi.local = local;
    return pi;
  }
  hcomm_result_t plan(const PlanIn& pi) {
    return run_family(comm, main, f, Members{0, 1, n, order ? order->data() : nullptr}, pi, wcap, r.dtype, r.redop);
  }

  hcomm_result_t vector_op() {  // AllReduce, Broadcast, Reduce
    const std::uint64_t chunk = std::max<std::uint64_t>(1, wcap / esz);
    const bool root = is_root();
    return chunk_loop(comm, main, 0, r.count, chunk, [&](std::uint64_t c0, std::uint64_t m) {
      const std::uint64_t off = c0 * esz;
      if (r.op != CollOp::Broadcast || root) copy_if(main, w, r.in + off, m * esz);
      PlanIn pi = base();
      pi.bytes = m * esz;
      if (hcomm_result_t rc = plan(pi); rc != HCOMM_SUCCESS) return rc;
      if (r.op == CollOp::AllReduce || (r.op == CollOp::Broadcast && !root) || (r.op == CollOp::Reduce && root))
        copy_if(main, r.out + off, w, m * esz);
      return HCOMM_SUCCESS;
    });
  }

  hcomm_result_t blocks_op() {  // ReduceScatter, AllGather, Scatter, Gather (and their -v forms)
    std::uint64_t maxc = 0;
    for (std::uint32_t j = 0; j < n && is_v(r); ++j) maxc = std::max(maxc, cnt(r, j));
    if (!is_v(r)) maxc = r.count;
    const std::uint64_t per = passes::flat_block_elems(comm->ctx->ccl_bytes, n, esz);  // elements per block per chunk
    if (per == 0) return too_small(comm, r, n);
    std::vector<std::uint64_t> cc, pre;
    const bool root = is_root();
    const bool in_all = r.op == CollOp::ReduceScatter || (r.op == CollOp::Scatter && root);
    const bool out_all = r.op == CollOp::AllGather || (r.op == CollOp::Gather && root);
    return chunk_loop(comm, main, r.from, maxc, per, [&](std::uint64_t c0, std::uint64_t m) {
      Blocks b{n, esz, m, nullptr, nullptr};
      if (is_v(r)) {  // block m of W is member m's (comm rank rank_of(m))
        cc.resize(n);
        pre.assign(n + 1, 0);
        for (std::uint32_t m = 0; m < n; ++m) {
          const std::uint64_t c = cnt(r, rank_of(m));
          cc[m] = c > c0 ? std::min(per, c - c0) : 0;
          pre[m + 1] = pre[m] + cc[m];
        }
        b.counts = &cc;
        b.prefix = &pre;
      }
      // One chunk of uniform blocks in comm-rank order: contiguous.
      const bool whole = !is_v(r) && !order && c0 == 0 && per >= maxc;
      if (in_all) {
        if (whole) copy_if(main, w, r.in, b.total());
        else if (!is_v(r) && !order) copy_2d(main, w, b.len(0), r.in + c0 * esz, r.count * esz, b.len(0), n);  // n blocks, one task
        else for (std::uint32_t j = 0; j < n; ++j) copy_if(main, w + b.off(member(j)), r.in + (dsp(r, j) + c0) * esz, b.len(member(j)));
      } else if (r.op == CollOp::AllGather || r.op == CollOp::Gather) {
        copy_if(main, w + b.off(me), r.in + c0 * esz, b.len(me));
      }
      PlanIn pi = base();
      pi.blocks = b;
      if (hcomm_result_t rc = plan(pi); rc != HCOMM_SUCCESS) return rc;
      if (out_all) {
        if (whole) copy_if(main, r.out, w, b.total());
        else if (!is_v(r) && !order) copy_2d(main, r.out + c0 * esz, r.count * esz, w, b.len(0), b.len(0), n);
        else for (std::uint32_t j = 0; j < n; ++j) copy_if(main, r.out + (dsp(r, j) + c0) * esz, w + b.off(member(j)), b.len(member(j)));
      } else if (r.op == CollOp::ReduceScatter || r.op == CollOp::Scatter) {
        copy_if(main, r.out + c0 * esz, w + b.off(me), b.len(me));
      }
      return HCOMM_SUCCESS;
    });
  }

  hcomm_result_t alltoall() {
    std::vector<std::uint64_t> rc_, rp, sc, sp;
    Blocks rb{n, esz, r.count, nullptr, nullptr}, sb = rb;
    if (r.counts) {
      rc_.assign(r.counts, r.counts + n);
      sc.assign(r.scounts, r.scounts + n);
      rp.assign(r.displs, r.displs + n);
      sp.assign(r.sdispls, r.sdispls + n);
      rp.push_back(0);
      sp.push_back(0);
      rb.counts = &rc_;
      rb.prefix = &rp;
      sb.counts = &sc;
      sb.prefix = &sp;
    }
    settle_mesh(comm, main);
    PlanIn pi = base();
    pi.blocks = rb;
    pi.send_blocks = sb;
    pi.in = r.in;
    pi.out = r.out;
    return plan(pi);
  }
};

hcomm_result_t run_flat(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r, const Family& f, std::uint64_t esz,
                        std::uint32_t local, const std::vector<std::uint32_t>* order = nullptr) {
  hcomm_context_t ctx = comm->ctx;
  if (order && (order->size() != comm->nranks || r.op == CollOp::AllToAll)) order = nullptr;
  Flat x{comm, main, r, f, comm->nranks, comm->rank, esz, ctx->ccl_addr,
         r.op == CollOp::AllToAll && &f != &kHierAllToAll ? 0 : passes::flat_area(ctx->ccl_bytes, esz), local, order, {}};
  if (order) {
    x.pos.assign(comm->nranks, 0);
    for (std::uint32_t m = 0; m < comm->nranks; ++m) x.pos[(*order)[m]] = m;
    x.me = x.pos[comm->rank];
  }
  if (r.op == CollOp::AllToAll) return x.alltoall();
  return block_op(r.op) ? x.blocks_op() : x.vector_op();
}

// The one-server mesh for all-gather and reduce-scatter (algo/mesh phases), chunked.
void mesh_block_op(hcomm_comm_t comm, const ServerGroups& g, const CollReq& r, std::uint64_t esz, hcomm_stream_t main) {
  const std::uint32_t L = g.size;
  const std::uint64_t chunk_elems = passes::mesh_block_elems(comm->ctx->ccl_bytes, esz);
  MeshChunk c(L);
  chunk_loop(comm, main, r.from, r.count, chunk_elems, [&](std::uint64_t c0, std::uint64_t m) {
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

// A plan of family `f` for `op` among `mem` (me = my member index) on W = `w` with `blocks` or
// `bytes`, staging in the collective buffer's second half.
hcomm_result_t group_plan(hcomm_comm_t comm, const Family& f, CollOp op, const Members& mem, std::uint32_t me,
                          std::uint32_t root, std::uint64_t w, const Blocks& blocks, std::uint64_t bytes, std::uint64_t esz,
                          const CollReq& r, hcomm_stream_t main) {
  PlanIn pi;
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

// Hierarchical all-gather (docs/algorithms/README.md#compositions): level 1 first — the ranks of
// my rail (local index l on every server) all-gather their blocks with the family's plan into
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
    if (hcomm_result_t rc = group_plan(comm, f, CollOp::AllGather, Members{l, L, S}, me, 0, G + l * rb, Blocks{S, esz, m, nullptr, nullptr}, 0, esz, r, main); rc != HCOMM_SUCCESS)
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
// l in area X — then the ranks of my rail reduce-scatter X with the family's plan; my block
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
    if (hcomm_result_t rc = group_plan(comm, f, CollOp::ReduceScatter, Members{g.index, L, S}, me, 0, X, Blocks{S, esz, m, nullptr, nullptr}, 0, esz, r, main); rc != HCOMM_SUCCESS)
      return rc;
    copy_if(main, r.out + c0 * esz, X + me * m * esz, m * esz);
    return HCOMM_SUCCESS;
  });
}

// Hierarchical broadcast (docs/algorithms/README.md#compositions): the root scatters its vector's
// L slices to its server's ranks in one step (star), each of them broadcasts its slice along its
// rail with the family's plan, and every server's mesh all-gather assembles the vector.
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
        if (hcomm_result_t rc = group_plan(comm, kStar, CollOp::Scatter, local, l, root_local, W, slices, 0, esz, r, main);
            rc != HCOMM_SUCCESS)
          return rc;
      if (hcomm_result_t rc = group_plan(comm, f, CollOp::Broadcast, rail, me, root_server, W + sl.off(l), Blocks{}, sl.len(l),
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
      if (hcomm_result_t rc = group_plan(comm, f, CollOp::Reduce, rail, me, root_server, W + sl.off(l), Blocks{}, sl.len(l), esz,
                                         r, main);
          rc != HCOMM_SUCCESS)
        return rc;
      if (in_root_server)
        if (hcomm_result_t rc = group_plan(comm, kStar, CollOp::Gather, local, l, root_local, W, slices, 0, esz, r, main);
            rc != HCOMM_SUCCESS)
          return rc;
      if (root) copy_if(main, r.out + c0 * esz, W, m * esz);
    }
    return HCOMM_SUCCESS;
  });
}

}  // namespace

namespace {
hcomm_result_t run_checked(hcomm_comm_t comm, hcomm_stream_t main, CollReq r);
}  // namespace

hcomm_result_t rerun(hcomm_comm_t comm, const PendingOp& p) {
  CollReq r;
  r.op = static_cast<CollOp>(p.op);
  r.kind = p.kind;
  r.dtype = p.dtype;
  r.redop = p.redop;
  r.root = p.root;
  r.in = p.in;
  r.out = p.out;
  r.count = p.count;
  r.from = p.from;  // a resumption: the slices before it were delivered to every rank
  // Not marked (mark_base stays 0): one recovery per operation.
  return run_checked(comm, p.stream, r);
}

namespace {
// Re-executing is exactly once when the inputs are intact: out of place (or a broadcast, whose
// root only reads), no -v arrays (their storage is the caller's), not all-to-all (no ring).
bool retryable(const CollReq& r, std::uint64_t in_bytes, std::uint64_t out_bytes) {
  if (r.counts || r.scounts || r.op == CollOp::AllToAll) return false;
  if (r.op == CollOp::Broadcast) return true;
  return r.in + in_bytes <= r.out || r.out + out_bytes <= r.in;
}
}  // namespace

hcomm_result_t run_collective(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r) {
  // A communicator in error (docs/failover.md) refuses new work with its error.
  if (hcomm_result_t e = recovery::check(comm); e != HCOMM_SUCCESS) return e;
  recovery::maybe_restore(comm);  // back to the selected algorithms and direct paths once the faults are gone
  const std::uint64_t seq = comm->op_seq;
  recovery::uses(comm, main);
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(r.dtype));
  const std::uint64_t n = comm->nranks;
  std::uint64_t in_b = r.count * esz, out_b = r.count * esz;
  if (r.op == CollOp::AllGather) out_b *= n;
  if (r.op == CollOp::ReduceScatter || r.op == CollOp::Scatter) in_b *= n;
  if (r.op == CollOp::Gather) out_b *= n;
  const bool can_retry = comm->cfg.op_retry && retryable(r, in_b, out_b);
  // Slice markers (docs/failover.md#resumption): values mark_base + elements done, above every
  // value an earlier collective of this communicator recorded.
  comm->mark_base = 0;
  if (can_retry && comm->ctx->retry_resume && r.count) {
    comm->mark_base = comm->mark_top + 1;
    comm->mark_top = comm->mark_base + r.count;
  }
  const std::uint64_t mark_base = comm->mark_base;
  const hcomm_result_t rc = run_checked(comm, main, r);
  comm->mark_base = 0;
  if (rc == HCOMM_SUCCESS && comm->cfg.op_retry) {
    PendingOp p;
    p.seq = seq;
    p.op = static_cast<int>(r.op);
    p.kind = r.kind;
    p.dtype = r.dtype;
    p.redop = r.redop;
    p.root = r.root;
    p.in = r.in;
    p.out = r.out;
    p.count = r.count;
    p.in_bytes = in_b;
    p.out_bytes = out_b;
    p.retryable = can_retry;
    p.mark_base = mark_base;
    recovery::op_submitted(comm, main, p);
  }
  return rc;
}

namespace {
hcomm_result_t run_checked(hcomm_comm_t comm, hcomm_stream_t main, CollReq r) {
  const std::uint32_t n = comm->nranks;
  const std::uint64_t esz = hcomm_data_type_size(static_cast<hcomm_data_type_t>(r.dtype));
  comm->mark_shift = 0;
  if (r.from && r.from < r.count && !block_op(r.op) && r.op != CollOp::AllToAll) {
    // A resumed vector operation is the same operation on the elements not yet delivered; its
    // slice markers count from the whole vector's start (recovery/failover.h).
    r.in += r.from * esz;
    r.out += r.from * esz;
    r.count -= r.from;
    comm->mark_shift = r.from;
    r.from = 0;
  }
  // The trace speaks global ranks (the same on a world communicator; a child maps, coll/split.cpp).
  OpInfo info{global_rank(comm, comm->rank), n, r.kind, "local", op_bytes(r, n, comm->rank, esz), r.dtype, r.redop,
              (r.op == CollOp::Broadcast || r.op == CollOp::Reduce || r.op == CollOp::Scatter)
                  ? std::int64_t{global_rank(comm, r.root)} : -1,
              comm->op_seq, {}, 0, {}, 0};
  // Discovery found a pair of this server's ranks without SDMA: the algorithms need the server
  // to be a mesh (docs/discovery.md#degrade-refuse), so refuse rather than compute wrong results.
  if (n > 1 && comm->ctx->topo && !comm->ctx->topo->server_not_mesh.empty()) {
    logf(comm->ctx, 0, "Rank%u %s refused: %s (docs/discovery.md)", comm->rank, r.kind, comm->ctx->topo->server_not_mesh.c_str());
    return HCOMM_E_NOT_SUPPORT;
  }
  if (n == 1) {
    const std::uint64_t mk = op_begin(main, info);
    ++comm->op_seq;
    one_rank(r, main, esz);
    op_end(main, mk);
    return HCOMM_SUCCESS;
  }
  // The shape: servers of equal size (else the flat families only), and whether my server's
  // ranks reach each other by SDMA (the mesh and the hierarchical all-reduce need it).
  ServerGroups g;
  Shape shape;
  shape.n = n;
  shape.v = is_v(r) || r.scounts != nullptr;
  shape.esz = static_cast<std::uint32_t>(esz);
  if (find_server_groups(comm, &g) == HCOMM_SUCCESS) {
    shape.servers = g.servers;
    shape.local = g.size;
    // The prologue's one routing step: the routes to my server's peers are decided here, in local
    // order (algo/mesh.h), and the shape then only reads them.
    if (!is_v(r) && g.size > 1) route_server_peers(comm, &g);
    shape.mesh = !is_v(r) && g.size > 1 && server_is_mesh(comm, g);
  } else {
    shape.servers = n;  // unequal servers: treat every rank as its own server (RoCE costs, flat only)
  }
  route::check(comm);  // congestion since the last operation may move this rank's RoCE routes
  Choice c = select_algo(comm, r.op, info.bytes, shape);
  if (comm->avoid && r.op != CollOp::AllToAll) {
    // After an op retry (docs/failover.md): a flat ring in the order the recovery agreement
    // chose (recovery/ring_order.h), whose neighbours use no dead HCCS link and whose RoCE edges no
    // dead NIC.
    c = Choice{};
    c.kind = Choice::Flat;
    c.family = &kRing;
    c.name = "ring";
    c.by = "op retry";
    c.retry_ring = true;
  }
  info.algorithm = c.name;
  info.chosen_by = c.by;
  info.est_ns = c.est_ns;
  info.runner_up = c.runner_up;
  info.runner_up_ns = c.runner_up_ns;
  if (comm->ctx->debug == 2)  // at 3, log_decision's line says all this and more
    logf(comm->ctx, 2, "Rank%u %s seq %llu: %llu B on %u rank(s) (%u server(s) x %u): %s (%s, est %.1f us; runner-up %s %.1f us)",
         comm->rank, r.kind, static_cast<unsigned long long>(comm->op_seq), static_cast<unsigned long long>(info.bytes), n,
         shape.servers, shape.local, c.name.c_str(), c.by.c_str(), c.est_ns / 1e3,
         c.runner_up.empty() ? "-" : c.runner_up.c_str(), c.runner_up_ns / 1e3);
  log_decision(comm, r, info, c, shape);
  if (c.kind != Choice::Flat && mesh_slaves(comm, g) != HCOMM_SUCCESS) return HCOMM_E_DRV;
  const std::uint64_t mk = op_begin(main, info);
  ++comm->op_seq;
  hcomm_result_t rc = HCOMM_SUCCESS;
  switch (c.kind) {
    case Choice::Mesh:
      if (r.op == CollOp::AllReduce) rc = allreduce_mesh(comm, g, r.in, r.out, r.count, r.dtype, r.redop, main);
      else mesh_block_op(comm, g, r, esz, main);
      break;
    case Choice::Hier:
      if (r.op == CollOp::AllGather) rc = hier_allgather(comm, g, *c.family, r, esz, main);
      else if (r.op == CollOp::ReduceScatter) rc = hier_reduce_scatter(comm, g, *c.family, r, esz, main);
      else if (r.op == CollOp::Broadcast || r.op == CollOp::Reduce) rc = hier_rooted(comm, g, *c.family, r, esz, main);
      else rc = allreduce_hierarchical(comm, g, *c.family, r.in, r.out, r.count, r.dtype, r.redop, main);
      break;
    case Choice::Flat: rc = run_flat(comm, main, r, *c.family, esz, c.family == &kPipeline || c.family == &kHierAllToAll ? shape.local : 1,
                                     c.retry_ring && !comm->ring_order.empty() ? &comm->ring_order : nullptr);
      break;
  }
  if (rc != HCOMM_SUCCESS) return rc;
  // The RDMA writes end at their doorbells: the op ends when they are acknowledged, so that a
  // write still being retransmitted does not read a buffer the caller or the next op already
  // reuses (the NIC reads its source again when it retransmits; docs/algorithms/README.md#the-executor).
  if (take_unfenced_writes(comm)) {
    if (hcomm_result_t frc = rdma_fence(main); frc != HCOMM_SUCCESS) return frc;
  }
  op_end(main, mk);
  return HCOMM_SUCCESS;
}

}  // namespace

}  // namespace hcomm::detail
