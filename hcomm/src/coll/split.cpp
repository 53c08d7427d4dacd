// Sub-communicators (docs/architecture.md#hcomm): hcomm_comm_split / hcomm_group_split (MPI and
// HCCL semantics) and hcomm_comm_create_group (a rank list). Collective over the parent: every
// member contributes one record — color, key, server, the notify-key ids in use on its context —
// through a real all-gather over the parent (device buffers, so the exchange costs simulated
// time), and every member derives the same children from the same records:
//   members: the parent ranks of my color, ordered by (key, parent rank); comm rank = position
//   id:      the highest notify-key comm id (1..255) free on every member's context, so a child
//            never shares keys with its parent or any other live communicator of its members
//   shape:   ranks per server when the members' servers are contiguous in rank order and equal
//            (algo/groups.cpp), else none (flat algorithms only)
// A child maps comm ranks to global ranks (members, O(members)); its collective buffer and p2p
// window are the context's, shared with the parent (hcomm.h says what that means for overlap).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/recovery.h"
#include "core/stream.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace {

// One member's record, in 32-bit words (an INT32 all-gather of kWords per rank).
enum Word : std::uint32_t { kMagic, kSeq, kKind, kColor, kKey, kServer, kListHash, kListSize, kIds, kWords = kIds + 8 };
constexpr std::uint32_t kRecordMagic = 0x53504c31;  // "SPL1"
enum Kind : std::uint32_t { kSplit = 1, kGroup = 2 };

struct Request {
  Kind kind = kSplit;
  std::uint32_t color = 0, key = 0;
  std::uint32_t list_hash = 0, list_size = 0;  // create_group: every member must pass the same list
};

std::uint32_t fnv(std::uint32_t h, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 16777619u;
  return h;
}

// Exchange every parent member's record; recs gets nranks * kWords words.
hcomm_result_t exchange(hcomm_comm_t parent, const std::uint32_t* mine, std::vector<std::uint32_t>* recs) {
  hcomm_context_t ctx = parent->ctx;
  const std::uint32_t n = parent->nranks;
  const std::uint64_t rec_bytes = kWords * 4;
  void *send = nullptr, *recv = nullptr;
  if (hcomm_malloc(ctx, rec_bytes, &send) != HCOMM_SUCCESS) return HCOMM_E_MEMORY;
  if (hcomm_malloc(ctx, rec_bytes * n, &recv) != HCOMM_SUCCESS) {
    hcomm_free(ctx, send);
    return HCOMM_E_MEMORY;
  }
  recs->assign(static_cast<std::size_t>(n) * kWords, 0);
  hcomm_stream_t s = parent->internal;
  hcomm_result_t rc = hcomm_memcpy_host_to_device(send, mine, rec_bytes, s);
  if (rc == HCOMM_SUCCESS) rc = hcomm_allgather(send, recv, kWords, HCOMM_DATA_TYPE_INT32, parent, s);
  if (rc == HCOMM_SUCCESS) rc = hcomm_memcpy_device_to_host(recs->data(), recv, rec_bytes * n, s);
  const hcomm_result_t sync = sync_timeout(s, parent->cfg.timeout_ms);  // also when a submit failed: nothing in flight
  if (rc == HCOMM_SUCCESS) rc = sync;
  hcomm_free(ctx, send);
  hcomm_free(ctx, recv);
  return rc;
}

hcomm_result_t make_child(hcomm_comm_t parent, std::uint32_t id, std::vector<std::uint32_t> members, std::uint32_t rank,
                          std::uint32_t server_size, hcomm_comm_t* out) {
  hcomm_context_t ctx = parent->ctx;
  auto* c = new hcomm_comm_s;
  c->ctx = ctx;
  c->cfg = parent->cfg;
  c->rdma = parent->rdma;
  c->algo = parent->algo;
  c->algo_spec = parent->algo_spec;
  c->cfg.algo = parent->cfg.algo ? c->algo_spec.c_str() : nullptr;
  c->id = id;
  c->rank = rank;
  c->nranks = static_cast<std::uint32_t>(members.size());
  c->members = std::move(members);
  c->server_size = server_size;
  if (!peer_desc(c, rank)) { delete c; return HCOMM_E_NOT_FOUND; }
  hcomm_result_t r = make_stream(ctx, &c->internal);
  if (r == HCOMM_SUCCESS) r = make_stream(ctx, &c->recv_stream);
  if (r != HCOMM_SUCCESS) {
    if (c->internal) hcomm_destroy_stream(c->internal);
    delete c;
    return r;
  }
  hold_comm_id(c);
  track(c, kComm);
  recovery::comm_created(c);
  *out = c;
  return HCOMM_SUCCESS;
}

// The collective part shared by split and create_group.
hcomm_result_t split(hcomm_comm_t parent, const Request& req, hcomm_comm_t* out) {
  hcomm_context_t ctx = parent->ctx;
  const std::uint32_t n = parent->nranks, me = parent->rank;
  const char* what = req.kind == kSplit ? "comm split" : "create group";
  const RankDesc* my = peer_desc(parent, me);
  if (!my) return HCOMM_E_NOT_FOUND;
  std::uint32_t mine[kWords] = {};
  mine[kMagic] = kRecordMagic;
  mine[kSeq] = parent->splits;
  mine[kKind] = req.kind;
  mine[kColor] = req.color;
  mine[kKey] = req.key;
  mine[kServer] = my->server;
  mine[kListHash] = req.list_hash;
  mine[kListSize] = req.list_size;
  for (std::uint32_t id = 0; id < 256; ++id)
    if (ctx->comm_id_use[id]) mine[kIds + id / 32] |= 1u << (id % 32);
  std::vector<std::uint32_t> recs;
  if (hcomm_result_t rc = exchange(parent, mine, &recs); rc != HCOMM_SUCCESS) {
    logf(ctx, 0, "Rank%u %s: the exchange over the parent communicator failed (%s)", me, what, hcomm_result_string(rc));
    return rc;
  }
  ++parent->splits;
  // Every member checks every record, so inconsistent calls fail the same way everywhere.
  for (std::uint32_t q = 0; q < n; ++q) {
    const std::uint32_t* r = &recs[static_cast<std::size_t>(q) * kWords];
    if (r[kMagic] != kRecordMagic || r[kSeq] != mine[kSeq] || r[kKind] != mine[kKind]) {
      logf(ctx, 0, "Rank%u %s: parent rank %u is in another call (split #%u, %s; mine is #%u)", me, what, q, r[kSeq],
           r[kKind] == kSplit ? "comm split" : r[kKind] == kGroup ? "create group" : "not a split record", mine[kSeq]);
      return HCOMM_E_PARA;
    }
    if (req.kind == kGroup && (r[kListHash] != mine[kListHash] || r[kListSize] != mine[kListSize])) {
      logf(ctx, 0, "Rank%u create group: parent rank %u passed another rank list (%u ranks) than this rank (%u ranks)", me, q,
           r[kListSize], mine[kListSize]);
      return HCOMM_E_PARA;
    }
  }
  *out = nullptr;
  if (req.color == HCOMM_SPLIT_NOCOLOR) return HCOMM_SUCCESS;
  // Members of my color, ordered by (key, parent rank); the id bitmaps of their contexts.
  std::vector<std::uint32_t> order;
  std::uint32_t used[8] = {};
  for (std::uint32_t q = 0; q < n; ++q) {
    const std::uint32_t* r = &recs[static_cast<std::size_t>(q) * kWords];
    if (r[kColor] != req.color) continue;
    order.push_back(q);
    for (int w = 0; w < 8; ++w) used[w] |= r[kIds + w];
  }
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return recs[static_cast<std::size_t>(a) * kWords + kKey] < recs[static_cast<std::size_t>(b) * kWords + kKey];
  });
  std::uint32_t id = 0;
  for (std::uint32_t k = 255; k >= 1 && !id; --k)
    if (!(used[k / 32] & (1u << (k % 32)))) id = k;
  if (!id) {
    logf(ctx, 0, "Rank%u %s: no communicator id is free on all %zu members (255 live communicators)", me, what, order.size());
    return HCOMM_E_UNAVAIL;
  }
  // Shape: servers contiguous in the new rank order and of equal size, or 0.
  const std::uint32_t m = static_cast<std::uint32_t>(order.size());
  auto server = [&](std::uint32_t i) { return recs[static_cast<std::size_t>(order[i]) * kWords + kServer]; };
  std::uint32_t L = 0;
  bool uniform = true;
  std::vector<std::uint32_t> seen;  // servers of the runs so far (sorted)
  for (std::uint32_t i = 0; i < m && uniform;) {
    std::uint32_t j = i;
    while (j < m && server(j) == server(i)) ++j;
    if (L == 0) L = j - i;
    auto at = std::lower_bound(seen.begin(), seen.end(), server(i));
    uniform = j - i == L && (at == seen.end() || *at != server(i));
    seen.insert(at, server(i));
    i = j;
  }
  std::vector<std::uint32_t> members(m);
  std::uint32_t my_rank = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    members[i] = global_rank(parent, order[i]);
    if (order[i] == me) my_rank = i;
  }
  if (hcomm_result_t rc = make_child(parent, id, std::move(members), my_rank, uniform ? L : 0, out); rc != HCOMM_SUCCESS)
    return rc;
  logf(ctx, 2, "Rank%u %s: color %u -> rank %u of %u (comm id %u, %u ranks per server)", me, what, req.color, my_rank, m, id,
       uniform ? L : 0);
  return HCOMM_SUCCESS;
}

}  // namespace

extern "C" {

hcomm_result_t hcomm_comm_split(hcomm_comm_t comm, uint32_t color, uint32_t key, hcomm_comm_t* out) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  *out = nullptr;
  Request req;
  req.kind = kSplit;
  req.color = color;
  req.key = key;
  return split(comm, req, out);
}

hcomm_result_t hcomm_group_split(hcomm_comm_t comm, uint32_t color, uint32_t key, hcomm_comm_t* out) {
  return hcomm_comm_split(comm, color, key, out);
}

hcomm_result_t hcomm_comm_create_group(hcomm_comm_t parent, uint32_t n, const uint32_t* ranks, hcomm_comm_t* out) {
  if (!live(parent, kComm)) return HCOMM_E_UNAVAIL;
  if (!out || (n && !ranks)) return HCOMM_E_PTR;
  *out = nullptr;
  const std::uint32_t p = parent->nranks, me = parent->rank;
  if (n == 0 || n > p) {
    logf(parent->ctx, 0, "Rank%u create group: %u ranks listed, the parent has %u (1..%u allowed)", me, n, p, p);
    return HCOMM_E_PARA;
  }
  // Membership bitmap over the parent's ranks: every listed rank in range and listed once.
  std::vector<bool> in(p, false);
  Request req;
  req.kind = kGroup;
  req.color = HCOMM_SPLIT_NOCOLOR;
  req.list_size = n;
  req.list_hash = 2166136261u;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t q = ranks[i];
    if (q >= p) {
      logf(parent->ctx, 0, "Rank%u create group: ranks[%u] = %u is not a rank of the parent (size %u)", me, i, q, p);
      return HCOMM_E_PARA;
    }
    if (in[q]) {
      logf(parent->ctx, 0, "Rank%u create group: parent rank %u is listed twice (ranks[%u])", me, q, i);
      return HCOMM_E_PARA;
    }
    in[q] = true;
    req.list_hash = fnv(req.list_hash, q);
    if (q == me) {
      req.color = 0;
      req.key = i;  // the new rank is the position in the list
    }
  }
  return split(parent, req, out);
}

// hcomm_comm_shrink (docs/failover.md#shrink): the survivors only, agreed over the control
// channel (the parent's devices may be in error, so nothing goes through them).
hcomm_result_t hcomm_comm_shrink(hcomm_comm_t parent, uint32_t n_lost, const uint32_t* lost, hcomm_comm_t* out) {
  if (!live(parent, kComm)) return HCOMM_E_UNAVAIL;
  if (!out || (n_lost && !lost)) return HCOMM_E_PTR;
  *out = nullptr;
  hcomm_context_t ctx = parent->ctx;
  const std::uint32_t p = parent->nranks, me = parent->rank;
  if (n_lost >= p) {
    logf(ctx, 0, "Rank%u comm shrink: %u ranks lost of %u: nobody would be left", me, n_lost, p);
    return HCOMM_E_PARA;
  }
  std::vector<bool> gone(p, false);
  for (std::uint32_t i = 0; i < n_lost; ++i) {
    const std::uint32_t q = lost[i];
    if (q >= p || gone[q] || q == me) {
      logf(ctx, 0, "Rank%u comm shrink: lost_ranks[%u] = %u is %s", me, i, q,
           q >= p ? "not a rank of the communicator" : q == me ? "the caller itself" : "listed twice");
      return HCOMM_E_PARA;
    }
    gone[q] = true;
  }
  std::vector<std::uint32_t> survivors;
  for (std::uint32_t r = 0; r < p; ++r)
    if (!gone[r]) survivors.push_back(r);
  std::uint32_t used[8] = {}, all[8] = {};
  for (std::uint32_t id = 1; id < 256; ++id)
    if (ctx->comm_id_use[id]) used[id / 32] |= 1u << (id % 32);
  if (hcomm_result_t rc = recovery::agree_ids(parent, survivors, used, all); rc != HCOMM_SUCCESS) return rc;
  std::uint32_t id = 0;
  for (std::uint32_t k = 255; k >= 1 && !id; --k)
    if (!(all[k / 32] & (1u << (k % 32)))) id = k;
  if (!id) return HCOMM_E_UNAVAIL;
  // Shape: servers contiguous and of equal size in the survivors' order, else 0.
  const std::uint32_t m = static_cast<std::uint32_t>(survivors.size());
  std::vector<std::uint32_t> server(m), members(m);
  std::uint32_t my_rank = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    const RankDesc* d = peer_desc(parent, survivors[i]);
    if (!d) return HCOMM_E_NOT_FOUND;
    server[i] = d->server;
    members[i] = global_rank(parent, survivors[i]);
    if (survivors[i] == me) my_rank = i;
  }
  std::uint32_t L = 0;
  bool uniform = true;
  std::vector<std::uint32_t> seen;
  for (std::uint32_t i = 0; i < m && uniform;) {
    std::uint32_t j = i;
    while (j < m && server[j] == server[i]) ++j;
    if (L == 0) L = j - i;
    auto at = std::lower_bound(seen.begin(), seen.end(), server[i]);
    uniform = j - i == L && (at == seen.end() || *at != server[i]);
    seen.insert(at, server[i]);
    i = j;
  }
  if (hcomm_result_t rc = make_child(parent, id, std::move(members), my_rank, uniform ? L : 0, out); rc != HCOMM_SUCCESS) return rc;
  logf(ctx, 1, "Rank%u comm %u shrunk: %u lost, rank %u of %u in comm %u", me, parent->id, n_lost, my_rank, m, id);
  if (!parent->error.text.empty() || n_lost) {
    FailoverInfo f;
    f.comm = parent->id;
    f.rank = global_rank(parent, me);
    f.origin = parent->error.origin >= 0 ? static_cast<std::int64_t>(global_rank(parent, static_cast<std::uint32_t>(parent->error.origin))) : -1;
    f.op_seq = parent->op_seq;
    f.fault = parent->error.text.empty() ? "shrink requested" : parent->error.text;
    f.action = "shrink";
    f.path_before = std::to_string(p) + " ranks (comm " + std::to_string(parent->id) + ")";
    f.path_after = std::to_string(m) + " ranks (comm " + std::to_string(id) + ")";
    f.detected_ns = parent->error.at_ns ? parent->error.at_ns : port::now_ns(ctx);
    f.resumed_ns = port::now_ns(ctx);
    port::failover_reported(ctx, f);
  }
  return HCOMM_SUCCESS;
}

}  // extern "C"
