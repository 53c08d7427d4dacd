// A flat family's schedule over all ranks, chunked (algo/flat.h).
#include "algo/flat.h"

#include <algorithm>

#include "algo/chunk_loop.h"
#include "algo/exec.h"
#include "algo/passes.h"
#include "transport/tasks.h"

namespace hcomm::detail {

namespace {

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
  std::uint32_t local = 1;  // ranks per server (the pipeline's ScheduleIn::local)
  const std::vector<std::uint32_t>* order = nullptr;  // member -> comm rank (null: identity)
  std::vector<std::uint32_t> pos;                     // comm rank -> member (with order)

  std::uint32_t member(std::uint32_t j) const { return order ? pos[j] : j; }
  std::uint32_t rank_of(std::uint32_t m) const { return order ? (*order)[m] : m; }
  bool is_root() const { return comm->rank == r.root; }

  ScheduleIn base() const {
    ScheduleIn pi;
    pi.op = r.op;
    pi.n = n;
    pi.me = me;
    pi.root = r.root < n ? member(r.root) : r.root;
    pi.esz = esz;
    pi.w = w;
    pi.local = local;
    return pi;
  }
  hcomm_result_t schedule(const ScheduleIn& pi) {
    return run_family(comm, main, f, Members{0, 1, n, order ? order->data() : nullptr}, pi, wcap, r.dtype, r.redop);
  }

  hcomm_result_t vector_op() {  // AllReduce, Broadcast, Reduce
    const std::uint64_t chunk = std::max<std::uint64_t>(1, wcap / esz);
    const bool root = is_root();
    return chunk_loop(comm, main, 0, r.count, chunk, [&](std::uint64_t c0, std::uint64_t m) {
      const std::uint64_t off = c0 * esz;
      if (r.op != CollOp::Broadcast || root) copy_if(main, w, r.in + off, m * esz);
      ScheduleIn pi = base();
      pi.bytes = m * esz;
      if (hcomm_result_t rc = schedule(pi); rc != HCOMM_SUCCESS) return rc;
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
      ScheduleIn pi = base();
      pi.blocks = b;
      if (hcomm_result_t rc = schedule(pi); rc != HCOMM_SUCCESS) return rc;
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
    ScheduleIn pi = base();
    pi.blocks = rb;
    pi.send_blocks = sb;
    pi.in = r.in;
    pi.out = r.out;
    return schedule(pi);
  }
};

}  // namespace

hcomm_result_t run_flat(hcomm_comm_t comm, hcomm_stream_t main, const CollReq& r, const Family& f, std::uint64_t esz,
                        std::uint32_t local, const std::vector<std::uint32_t>* order) {
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

}  // namespace hcomm::detail
