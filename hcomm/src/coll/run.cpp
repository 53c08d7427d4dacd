// One runner for every collective (docs/architecture.md#hcomm, docs/algorithms/README.md).
#include "coll/run.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "algo/exec.h"
#include "algo/flat.h"
#include "algo/groups.h"
#include "algo/hierarchical.h"
#include "algo/mesh.h"
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

// HCOMM_DEBUG=3: what the library decided for this operation, one line in HCCL's style
// (docs/algorithms/README.md#where-the-choice-is-recorded): the algorithm as the trace records it
// and by level, why (auto / a knob) with the estimates, and how it moves through the collective
// buffer — its passes and the most bytes of it one pass carries (pass_bytes, as the runner cuts
// it), and the staging slots of the schedule (the buffer's second half).
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
  if (comm->rec.avoid && r.op != CollOp::AllToAll) {
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
      else rc = mesh_blocks(comm, g, r, esz, main);
      break;
    case Choice::Hier:
      if (r.op == CollOp::AllGather) rc = hier_allgather(comm, g, *c.family, r, esz, main);
      else if (r.op == CollOp::ReduceScatter) rc = hier_reduce_scatter(comm, g, *c.family, r, esz, main);
      else if (r.op == CollOp::Broadcast || r.op == CollOp::Reduce) rc = hier_rooted(comm, g, *c.family, r, esz, main);
      else rc = allreduce_hierarchical(comm, g, *c.family, r.in, r.out, r.count, r.dtype, r.redop, main);
      break;
    case Choice::Flat: rc = run_flat(comm, main, r, *c.family, esz, c.family == &kPipeline || c.family == &kHierAllToAll ? shape.local : 1,
                                     c.retry_ring && !comm->rec.ring_order.empty() ? &comm->rec.ring_order : nullptr);
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
