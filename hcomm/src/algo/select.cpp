// Algorithm selection (docs/algorithms/README.md#selection).
#include "algo/select.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "algo/contention.h"
#include "algo/passes.h"
#include "core/algo_knob.h"
#include "core/log.h"

namespace hcomm::detail {

namespace {

const Family* const kFamilies[] = {&kRing, &kHd, &kNhr, &kNb, &kTree, &kPairwise, &kStar, &kDoubleRing};

const Family* family_named(const std::string& c) {
  for (const Family* f : kFamilies)
    if (c == f->name) return f;
  return nullptr;
}

double mesh_cost(CollOp op, const Shape& s, std::uint64_t bytes) {
  const LinkCost h = hccs_cost();
  const double D = static_cast<double>(bytes), L = s.local;
  switch (op) {
    case CollOp::AllReduce: return 2 * h.alpha_ns + 2 * D / L * h.beta_ns_per_byte + D / L * h.gamma_ns_per_byte;
    case CollOp::ReduceScatter: return h.alpha_ns + D / L * (h.beta_ns_per_byte + h.gamma_ns_per_byte);
    case CollOp::AllGather: return h.alpha_ns + D / L * h.beta_ns_per_byte;
    default: return -1;
  }
}

// The server phases of a hierarchical composition (level 0, over HCCS): all-reduce, all-gather
// and reduce-scatter as the mesh; broadcast = a one-step scatter from the root + the mesh
// all-gather; reduce = the mesh reduce-scatter + a one-step gather to the root.
double level0_cost(CollOp op, const Shape& s, std::uint64_t bytes) {
  const LinkCost h = hccs_cost();
  const double D = static_cast<double>(bytes), L = s.local;
  switch (op) {
    case CollOp::Broadcast: return 2 * h.alpha_ns + 2 * D / L * h.beta_ns_per_byte;
    case CollOp::Reduce: return 2 * h.alpha_ns + 2 * D / L * h.beta_ns_per_byte + D / L * h.gamma_ns_per_byte;
    default: return mesh_cost(op, s, bytes);
  }
}

// Operations with a hierarchical composition (mesh inside servers, a family across).
bool hier_does(CollOp op) {
  return op == CollOp::AllReduce || op == CollOp::AllGather || op == CollOp::ReduceScatter || op == CollOp::Broadcast ||
         op == CollOp::Reduce;
}

// HCCL's pipeline: all-reduce, reduce-scatter and all-gather on several servers of several ranks
// each, with the server's ranks in a mesh.
bool pipeline_does(CollOp op, const Shape& s) {
  return (op == CollOp::AllReduce || op == CollOp::ReduceScatter || op == CollOp::AllGather) && s.servers > 1 &&
         s.local > 1 && s.mesh && !s.v && s.n == s.servers * s.local;
}

// The hierarchical all-to-all: uniform blocks on several servers of more than one SDMA-connected
// rank, all n blocks fitting the work area (the first half of the collective buffer).
bool hier_a2a_does(CollOp op, const Shape& s, std::uint64_t bytes, std::uint64_t ccl) {
  return op == CollOp::AllToAll && s.servers > 1 && s.local > 1 && s.mesh && !s.v && s.n == s.servers * s.local &&
         bytes <= ccl / 2;
}

bool mesh_does(CollOp op) { return op == CollOp::AllReduce || op == CollOp::ReduceScatter || op == CollOp::AllGather; }

Choice make_one(Choice::Kind k, const Family* f, const Shape& s, CollOp op, std::uint64_t bytes, const FabricView& fv) {
  Choice c;
  c.kind = k;
  c.family = f;
  if (k == Choice::Mesh) {
    c.name = "mesh";
    c.est_ns = mesh_cost(op, s, bytes);
  } else if (k == Choice::Hier) {
    c.name = std::string("mesh+") + f->name;
    const std::uint64_t b1 = bytes / std::max<std::uint32_t>(1, s.local);
    double inner = f->cost(op, s.servers, b1, roce_cost());
    // On an oversubscribed fabric the steps to partners under other leaves share the leaf's
    // uplinks: their share of the bandwidth term grows by the contention factor.
    c.contention = inner < 0 ? 1 : contention_factor(f, op, fv);
    c.plain_ns = inner < 0 ? -1 : level0_cost(op, s, bytes) + inner;
    if (c.contention > 1) inner += (c.contention - 1) * f->cost(op, s.servers, b1, LinkCost{0, roce_cost().beta_ns_per_byte, 0});
    c.est_ns = inner < 0 ? -1 : level0_cost(op, s, bytes) + inner;
    return c;
  } else if (f == &kPipeline) {
    c.name = f->name;
    c.est_ns = pipeline_cost(op, s.servers, s.local, bytes, hccs_cost(), roce_cost());
  } else if (f == &kHierAllToAll) {
    c.name = f->name;
    c.est_ns = hier_alltoall_cost(s.servers, s.local, bytes, hccs_cost(), roce_cost());
  } else {
    c.name = f->name;
    c.est_ns = f->cost(op, s.n, bytes, s.servers > 1 ? roce_cost() : hccs_cost());
  }
  c.plain_ns = c.est_ns;
  return c;
}

// An operation larger than a pass through the collective buffer runs as C chunks one after
// another, each paying every step's alpha again: the estimate is C x the estimate of one chunk,
// C counted as the runner cuts the operation (pass_bytes). Without this a family with many steps
// (the pipeline's S per chunk, the ring's 2(S - 1)) looks as cheap at 1 GiB as in one pass
// (docs/algorithms/README.md#chunking).
Choice make(Choice::Kind k, const Family* f, const Shape& s, CollOp op, std::uint64_t bytes, std::uint64_t ccl,
            const FabricView& fv) {
  const std::uint64_t pass = pass_bytes(k, f, op, s, ccl);
  const std::uint64_t chunks = pass ? std::max<std::uint64_t>(1, (bytes + pass - 1) / pass) : 1;
  Choice c = make_one(k, f, s, op, bytes / chunks, fv);
  if (c.est_ns >= 0) c.est_ns *= static_cast<double>(chunks);
  if (c.plain_ns >= 0) c.plain_ns *= static_cast<double>(chunks);
  return c;
}

}  // namespace

std::uint64_t pass_bytes(Choice::Kind k, const Family* f, CollOp op, const Shape& s, std::uint64_t ccl) {
  const std::uint64_t esz = std::max<std::uint32_t>(1, s.esz), n = s.n;
  if (op == CollOp::AllToAll) return 0;
  const bool blocks = op == CollOp::AllGather || op == CollOp::ReduceScatter || op == CollOp::Scatter || op == CollOp::Gather;
  if (k == Choice::Mesh) return op == CollOp::AllReduce ? passes::mesh_area(ccl) : passes::mesh_block_elems(ccl, esz) * esz * n;
  if (k == Choice::Hier) {
    switch (op) {
      case CollOp::AllReduce:
        return passes::hier_allreduce_area(ccl, s.local, f && f->slots ? f->slots : 2, esz);
      case CollOp::AllGather: return passes::hier_allgather_elems(ccl, n, esz) * esz * n;
      case CollOp::ReduceScatter: return passes::hier_reduce_scatter_elems(ccl, n, s.servers, esz) * esz * n;
      default: return passes::flat_area(ccl, esz);
    }
  }
  return blocks ? passes::flat_block_elems(ccl, n, esz) * esz * n : passes::flat_area(ccl, esz);
}

LinkCost hccs_cost() { return LinkCost{2000.0, 1.0 / 28.0, 1.0 / 100.0}; }
LinkCost roce_cost() { return LinkCost{10000.0, 1.0 / 25.0, 1.0 / 100.0}; }

Choice select_algo(hcomm_comm_t comm, CollOp op, std::uint64_t bytes, const Shape& s) {
  const int oi = static_cast<int>(op == CollOp::Gather ? CollOp::Reduce : op);  // gather: internal, follows reduce
  const std::uint64_t ccl = comm->ctx->ccl_bytes;
  if (s.servers > 1 && s.local > 0 && s.n == s.servers * s.local) read_fabric(comm, s.servers, s.local);
  const FabricView& fv = comm->fabric;
  const std::string& l0 = comm->algo.level0[oi];
  const std::string& l1 = comm->algo.level1[oi];
  // The forced choice, if it can run.
  const std::string& forced = s.servers > 1 ? l1 : (l0.empty() ? l1 : l0);
  if (!forced.empty()) {
    Choice c;
    bool ok = false;
    if (forced == "mesh") {
      ok = s.servers == 1 && s.mesh && mesh_does(op);
      if (ok) c = make(Choice::Mesh, nullptr, s, op, bytes, ccl, fv);
    } else if (forced == kPipeline.name) {  // HCCL: where it does not apply, H-D_R or ring instead
      ok = pipeline_does(op, s);
      if (ok) c = make(Choice::Flat, &kPipeline, s, op, bytes, ccl, fv);
    } else if (forced == kPairwise.name && hier_a2a_does(op, s, bytes, ccl)) {  // level1:pairwise: the two levels
      ok = true;
      c = make(Choice::Flat, &kHierAllToAll, s, op, bytes, ccl, fv);
    } else if (const Family* f = family_named(forced)) {
      if (f->cost(op, s.n, bytes, roce_cost()) >= 0 && (!s.v || op != CollOp::AllToAll || f->alltoallv)) {
        ok = true;
        c = s.servers > 1 && hier_does(op) && s.mesh && s.local > 1 && f->cost(op, s.servers, bytes, roce_cost()) >= 0
                ? make(Choice::Hier, f, s, op, bytes, ccl, fv)
                : make(Choice::Flat, f, s, op, bytes, ccl, fv);
      }
    }
    if (ok) {
      c.by = comm->algo.by[oi];
      return c;
    }
    logf(comm->ctx, 1, "Rank%u %s: %s=%s does not do %s on %u server(s) x %u rank(s); selecting automatically", comm->rank,
         coll_op_name(op), comm->algo.by[oi].c_str(), forced.c_str(), coll_op_name(op), s.servers, s.local);
  }
  // Automatic: every candidate's estimate; ties go to the earlier candidate.
  std::vector<Choice> cand;
  if (s.servers == 1 && s.mesh && mesh_does(op)) cand.push_back(make(Choice::Mesh, nullptr, s, op, bytes, ccl, fv));
  for (const Family* f : kFamilies) {
    // Star and the double ring are intra-server algorithms: never across servers, neither over
    // all ranks nor as the level-1 phase of a composition.
    if ((f == &kStar || f == &kDoubleRing) && s.servers > 1) continue;
    if (s.servers > 1 && hier_does(op) && s.mesh && s.local > 1) {
      Choice h = make(Choice::Hier, f, s, op, bytes, ccl, fv);
      if (h.est_ns >= 0) cand.push_back(h);
    }
    if (s.v && op == CollOp::AllToAll && !f->alltoallv) continue;
    Choice c = make(Choice::Flat, f, s, op, bytes, ccl, fv);
    if (c.est_ns >= 0) cand.push_back(c);
  }
  if (pipeline_does(op, s)) cand.push_back(make(Choice::Flat, &kPipeline, s, op, bytes, ccl, fv));
  if (hier_a2a_does(op, s, bytes, ccl)) cand.push_back(make(Choice::Flat, &kHierAllToAll, s, op, bytes, ccl, fv));
  // The choice without the leaf-uplink term: the first of the smallest plain estimates.
  std::size_t plain = 0;
  for (std::size_t i = 1; i < cand.size(); ++i)
    if (cand[i].plain_ns < cand[plain].plain_ns) plain = i;
  const std::string plain_name = cand[plain].name;
  std::stable_sort(cand.begin(), cand.end(), [](const Choice& a, const Choice& b) { return a.est_ns < b.est_ns; });
  // The leaf-uplink term overturns the choice the plain estimates make only for a predicted gain
  // of more than kOverturn: halving-doubling, NHR and NB move the same bytes in the same steps,
  // and where leaves do not align with their partners the term tells them apart by 1-2 %, less
  // than their estimates' own errors (NB runs up to 9 % over its estimate at 64 MiB from 256
  // servers on, and its 1 MiB all-reduce on clos-1024 at 2:1 11 % slower than H-D_R's; H-D_R
  // within 1 %; docs/algorithms/README.md#oversubscription).
  constexpr double kOverturn = 0.05;
  std::size_t pick = 0;
  if (fv.known)
    for (std::size_t i = 1; i < cand.size(); ++i)
      if (cand[i].name == plain_name) {
        if (cand[i].est_ns <= cand[0].est_ns * (1 + kOverturn)) pick = i;
        break;
      }
  Choice c = cand[pick];
  const std::size_t next = pick == 0 ? 1 : 0;
  if (cand.size() > 1) {
    c.runner_up = cand[next].name;
    c.runner_up_ns = cand[next].est_ns;
  }
  c.by = "auto";
  return c;
}

}  // namespace hcomm::detail
