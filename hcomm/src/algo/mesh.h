// Mesh collectives (docs/architecture.md#hcomm, docs/algorithms/mesh.md): HCCL's intra-server
// algorithms on 910B over the full HCCS mesh, every peer link busy at once, one slave stream per
// peer. Two phases — reduce-scatter and all-gather — make the all-reduce (both), the
// reduce-scatter and the all-gather (one each).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "algo/coll_req.h"
#include "algo/groups.h"

namespace hcomm::detail {

/// Part of a collective's prologue (coll/run.cpp), the one step that decides routes before the
/// algorithm is chosen: fill g->local and decide the route to each peer of my server in local
/// order (route::to: first use re-reads my HCCS ports, may pick a relay NPU), stopping at the
/// first peer SDMA cannot reach (the server is then no mesh, and the flat algorithms route their
/// own peers when they use them).
void route_server_peers(hcomm_comm_t comm, ServerGroups* g);
/// Whether every peer of my server is reached by SDMA (HCCS, a relay NPU or PCIe peer-to-peer),
/// read from the routes route_server_peers decided: a query, it decides and records nothing (a
/// peer without a decided route counts as not reached).
bool server_is_mesh(hcomm_comm_t comm, const ServerGroups& g);

/// One chunk of a mesh phase, per local index q (bytes and addresses): slice q is len[q] bytes at
/// offset ccl[q] of rank q's collective buffer (CCL); in[q] is where I read my contribution to it
/// (in[l] is staged into my CCL), out[q] where I write it when gathered.
struct MeshChunk {
  explicit MeshChunk(std::uint32_t L);
  std::vector<std::uint64_t> len, ccl, in, out;
};

/// Wait on `main` until the local peers have finished reading my CCL (the all-gather half of the
/// last mesh phase); every user of the CCL calls this before writing it.
void settle_mesh(hcomm_comm_t comm, hcomm_stream_t main);
/// Forget the pulls the context's communicators owe (their device was stopped: the notifies will
/// not come), or those of one communicator (`comm`: its pulls; `drop`: it leaves the context's
/// list too, as when it is destroyed). The debts are algo's: only this room writes them.
void forget_mesh_debts(hcomm_context_t ctx);
void forget_mesh_debts(hcomm_comm_t comm, bool drop);

/// Create the L-1 slave streams on first use (HCOMM_E_DRV when that fails).
hcomm_result_t mesh_slaves(hcomm_comm_t comm, const ServerGroups& g);

/// Reduce-scatter phase of one chunk (slaves made by mesh_slaves): stage in[l] into CCL[l], every
/// peer's slave reduce-copies in[q] into q's CCL[q]; on return (stream order) my CCL[l] holds the
/// reduction of slice l. With `then_gather` the slaves' all-gather half follows on them (for
/// mesh_all_gather(after_reduce = true)); without, CCL[l] is copied to out[l] and the slaves joined.
void mesh_reduce_scatter(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, int dtype, int op,
                         hcomm_stream_t main, bool then_gather);

/// All-gather phase of one chunk: every rank's CCL[q] is copied to out[q] on every rank, the slaves
/// joined. `after_reduce`: CCL[l] is already in place and the slaves' halves submitted by
/// mesh_reduce_scatter(then_gather = true); otherwise in[l] is staged into CCL[l] first.
void mesh_all_gather(hcomm_comm_t comm, const ServerGroups& g, const MeshChunk& c, hcomm_stream_t main, bool after_reduce);

/// Runs between the two halves of a chunk on the main stream, with CCL[slice l] (address, bytes)
/// holding the server's reduction of my slice; it must leave the final result there.
using MeshMiddle = std::function<void(std::uint64_t slice_addr, std::uint64_t slice_bytes)>;

/// The mesh reduce-scatter and all-gather over `count` elements, in chunks of `area` bytes of the
/// collective buffer, with `middle` (if any) between the halves of every chunk. Creates the slave
/// streams on first use (HCOMM_E_DRV when that fails).
hcomm_result_t mesh_chunks(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                           int dtype, int op, hcomm_stream_t main, std::uint64_t area, const MeshMiddle& middle);

/// The mesh all-reduce inside one server (chunks of the whole collective buffer).
hcomm_result_t allreduce_mesh(hcomm_comm_t comm, const ServerGroups& g, std::uint64_t in, std::uint64_t out,
                              std::uint64_t count, int dtype, int op, hcomm_stream_t main);

/// The one-server all-gather and reduce-scatter (r.op): one mesh phase per chunk of the blocks,
/// from r.from on (a resumption).
hcomm_result_t mesh_blocks(hcomm_comm_t comm, const ServerGroups& g, const CollReq& r, std::uint64_t esz, hcomm_stream_t main);

}  // namespace hcomm::detail
