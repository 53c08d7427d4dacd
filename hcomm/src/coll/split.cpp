// Sub-communicators (docs/architecture.md#hcomm): hcomm_comm_split / hcomm_group_split (MPI and
// HCCL semantics) and hcomm_comm_create_group (a rank list). Collective over the parent: every
// member contributes one record — color, key, server, the notify-key ids in use on its context —
// and every member gets the same child, derived once from all the records:
//   members: the parent ranks of my color, ordered by (key, parent rank); comm rank = position
//   id:      the highest notify-key comm id (1..255) free on every member's context, so a child
//            never shares keys with its parent or any other live communicator of its members
//   shape:   ranks per server when the members' servers are contiguous in rank order and equal
//            (algo/groups.cpp), else none (flat algorithms only)
// The exchange is real device traffic (point-to-point messages over the parent, so it costs
// simulated time) in four phases; only parent rank 0 (the root) holds every rank's record:
//   1 gather:  the records up a binomial tree over the parent ranks to the root (rank r > 0 holds
//              the block of its subtree [r, r + lowbit(r)): odd ranks their own only, n/2 at most,
//              O(n log n) words over all ranks)
//   2 answers: the root checks the records (one call sequence and kind, one rank list), derives
//              every child and sends each rank a fixed-size answer (status, size, comm rank, id,
//              shape, where its member list comes from) back down the same tree
//   3 lists:   each child's member list (parent ranks) down the same tree to the child's comm
//              rank 0 only (a subtree carries the lists of the leaders in it)
//   4 child:   the list from comm rank 0 to the other members down a binomial tree in comm rank
//              order: every member ends with O(members) words
// A child maps comm ranks to global ranks (members, O(members)); its collective buffer and p2p
// window are the context's, shared with the parent (hcomm.h says what that means for overlap).
#include <algorithm>
#include <cstring>
#include <numeric>
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

// One member's record, in 32-bit words.
enum Word : std::uint32_t { kMagic, kSeq, kKind, kColor, kKey, kServer, kListHash, kListSize, kIds, kWords = kIds + 8 };
constexpr std::uint32_t kRecordMagic = 0x53504c31;  // "SPL1"
enum Kind : std::uint32_t { kSplit = 1, kGroup = 2 };
// The root's answer to one rank, in 32-bit words.
enum Answer : std::uint32_t {
  kStatus,   // Status below
  kBad,      // kMismatch / kOtherList: the first parent rank whose record differs from the root's
  kBadSeq,   //   its split number (kMismatch) or list size (kOtherList)
  kBadKind,  //   its kind (kMismatch)
  kRootVal,  //   the root's split number or list size
  kSize,     // kOk / kNoId: ranks in my child
  kRank,     // kOk: my comm rank
  kId,       // kOk: the child's comm id
  kShape,    // kOk: ranks per server, 0 = none
  kSrc,      // kOk, comm rank > 0: the parent rank my member list comes from (phase 4)
  kOwnList,  // words of the member list I receive in phase 3 (my child's size when I am its comm rank 0)
  kSubList,  // words of the member lists of the leaders in my gather subtree (phase 3 block)
  kAnswerWords
};
enum Status : std::uint32_t { kOk = 1, kNoColor, kMismatch, kOtherList, kNoId };
// Reserved point-to-point tags (below kBatchTag, p2p/batch.cpp), one per phase.
constexpr std::uint32_t kTagGather = (1u << 26) - 3, kTagAnswer = kTagGather - 1, kTagLists = kTagGather - 2,
                        kTagChild = kTagGather - 3;

struct Request {
  Kind kind = kSplit;
  std::uint32_t color = 0, key = 0;
  std::uint32_t list_hash = 0, list_size = 0;  // create_group: every member must pass the same list
};

std::uint32_t fnv(std::uint32_t h, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 16777619u;
  return h;
}

// The binomial tree over ranks 0..n-1 rooted at 0: rank r > 0 hangs under r - lowbit(r) and roots
// the subtree [r, r + lowbit(r)) (clipped to n); its children are r + 2^k for 2^k < lowbit(r).
std::uint32_t low_bit(std::uint32_t r) { return r & (~r + 1); }
std::uint32_t subtree_end(std::uint32_t r, std::uint32_t n) {
  return r == 0 ? n : static_cast<std::uint32_t>(std::min<std::uint64_t>(n, std::uint64_t{r} + low_bit(r)));
}
std::uint32_t high_bit(std::uint32_t i) {
  std::uint32_t b = 1;
  while (b <= i / 2) b <<= 1;
  return b;
}

// Point-to-point messages of one phase on the parent's internal stream, synchronized together.
class Phase {
 public:
  explicit Phase(hcomm_comm_t c) : c_(c) {}
  ~Phase() { drop(); }
  void recv(void* buf, std::uint64_t words, std::uint32_t src, std::uint32_t tag) {
    if (rc_ != HCOMM_SUCCESS || !words) return;
    hcomm_request_t r = nullptr;
    rc_ = hcomm_irecv(buf, words, HCOMM_DATA_TYPE_INT32, src, tag, c_, c_->internal, &r);
    if (r) reqs_.push_back(r);
  }
  void send(const void* buf, std::uint64_t words, std::uint32_t dst, std::uint32_t tag) {
    if (rc_ != HCOMM_SUCCESS || !words) return;
    hcomm_request_t r = nullptr;
    rc_ = hcomm_isend(buf, words, HCOMM_DATA_TYPE_INT32, dst, tag, c_, c_->internal, &r);
    if (r) reqs_.push_back(r);
  }
  void to_device(void* dst, const void* src, std::uint64_t bytes) {
    if (rc_ == HCOMM_SUCCESS && bytes) rc_ = hcomm_memcpy_host_to_device(dst, src, bytes, c_->internal);
  }
  void to_host(void* dst, const void* src, std::uint64_t bytes) {
    if (rc_ == HCOMM_SUCCESS && bytes) rc_ = hcomm_memcpy_device_to_host(dst, src, bytes, c_->internal);
  }
  // Wait for everything queued (also when a submit failed: nothing stays in flight).
  hcomm_result_t finish() {
    const hcomm_result_t sync = sync_timeout(c_->internal, c_->cfg.timeout_ms);
    if (rc_ == HCOMM_SUCCESS) rc_ = sync;
    drop();
    return rc_;
  }

 private:
  void drop() {  // the requests' events are recorded on the synchronized stream: no wait per request
    for (hcomm_request_t r : reqs_) {
      hcomm_destroy_event(r->done);
      untrack(r);
      delete r;
    }
    reqs_.clear();
  }
  hcomm_comm_t c_;
  hcomm_result_t rc_ = HCOMM_SUCCESS;
  std::vector<hcomm_request_t> reqs_;
};

// A device buffer freed on scope exit.
struct DevBuf {
  hcomm_context_t ctx;
  void* p = nullptr;
  DevBuf(hcomm_context_t c, std::uint64_t words) : ctx(c) {
    if (words && hcomm_malloc(ctx, words * 4, &p) != HCOMM_SUCCESS) p = nullptr;
  }
  ~DevBuf() { if (p) hcomm_free(ctx, p); }
  std::uint32_t* w(std::uint64_t at = 0) const { return static_cast<std::uint32_t*>(p) + at; }
};

// The root: every rank's answer (n x kAnswerWords) and the leaders' member lists, concatenated
// in the leaders' parent rank order, from all records (n x kWords).
void answer_all(const std::vector<std::uint32_t>& recs, std::uint32_t n, std::vector<std::uint32_t>* ans,
                std::vector<std::uint32_t>* lists) {
  ans->assign(static_cast<std::size_t>(n) * kAnswerWords, 0);
  lists->clear();
  auto rec = [&](std::uint32_t q) { return &recs[static_cast<std::size_t>(q) * kWords]; };
  auto an = [&](std::uint32_t q) { return &(*ans)[static_cast<std::size_t>(q) * kAnswerWords]; };
  const std::uint32_t* root = rec(0);
  for (std::uint32_t q = 0; q < n; ++q) {
    const std::uint32_t* r = rec(q);
    Status st = kOk;
    if (r[kMagic] != kRecordMagic || r[kSeq] != root[kSeq] || r[kKind] != root[kKind])
      st = kMismatch;
    else if (root[kKind] == kGroup && (r[kListHash] != root[kListHash] || r[kListSize] != root[kListSize]))
      st = kOtherList;
    if (st == kOk) continue;
    for (std::uint32_t p = 0; p < n; ++p) {  // every rank fails the same way
      std::uint32_t* a = an(p);
      a[kStatus] = st;
      a[kBad] = q;
      a[kBadSeq] = st == kMismatch ? r[kSeq] : r[kListSize];
      a[kBadKind] = r[kKind];
      a[kRootVal] = st == kMismatch ? root[kSeq] : root[kListSize];
    }
    return;
  }
  // Ranks by (color, key, parent rank): each color's members, in comm rank order, are a run.
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return rec(a)[kColor] != rec(b)[kColor] ? rec(a)[kColor] < rec(b)[kColor] : rec(a)[kKey] < rec(b)[kKey];
  });
  std::vector<std::uint32_t> leader_of_list;  // per list: its first member (a parent rank)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;  // [begin, end) in order, per color
  for (std::uint32_t i = 0; i < n;) {
    std::uint32_t j = i;
    while (j < n && rec(order[j])[kColor] == rec(order[i])[kColor]) ++j;
    const std::uint32_t m = j - i;
    if (rec(order[i])[kColor] == HCOMM_SPLIT_NOCOLOR) {
      for (std::uint32_t k = i; k < j; ++k) an(order[k])[kStatus] = kNoColor;
      i = j;
      continue;
    }
    std::uint32_t used[8] = {};
    for (std::uint32_t k = i; k < j; ++k)
      for (int w = 0; w < 8; ++w) used[w] |= rec(order[k])[kIds + w];
    std::uint32_t id = 0;
    for (std::uint32_t k = 255; k >= 1 && !id; --k)
      if (!(used[k / 32] & (1u << (k % 32)))) id = k;
    // Shape: servers contiguous in the new rank order and of equal size, or 0.
    auto server = [&](std::uint32_t x) { return rec(order[i + x])[kServer]; };
    std::uint32_t L = 0;
    bool uniform = true;
    std::vector<std::uint32_t> seen;  // servers of the runs so far (sorted)
    for (std::uint32_t x = 0; x < m && uniform;) {
      std::uint32_t y = x;
      while (y < m && server(y) == server(x)) ++y;
      if (L == 0) L = y - x;
      auto at = std::lower_bound(seen.begin(), seen.end(), server(x));
      uniform = y - x == L && (at == seen.end() || *at != server(x));
      seen.insert(at, server(x));
      x = y;
    }
    for (std::uint32_t k = i; k < j; ++k) {
      std::uint32_t* a = an(order[k]);
      const std::uint32_t cr = k - i;
      a[kStatus] = id ? kOk : kNoId;
      a[kSize] = m;
      a[kRank] = cr;
      a[kId] = id;
      a[kShape] = uniform ? L : 0;
      a[kSrc] = cr ? order[i + cr - high_bit(cr)] : 0;
    }
    if (id) {
      an(order[i])[kOwnList] = m;
      runs.emplace_back(i, j);
    }
    i = j;
  }
  // The lists in the leaders' parent rank order; kSubList from prefix sums over parent ranks.
  std::sort(runs.begin(), runs.end(), [&](const auto& a, const auto& b) { return order[a.first] < order[b.first]; });
  for (const auto& [i, j] : runs)
    for (std::uint32_t k = i; k < j; ++k) lists->push_back(order[k]);
  std::vector<std::uint64_t> before(static_cast<std::size_t>(n) + 1, 0);  // list words of leaders < q
  for (std::uint32_t q = 0; q < n; ++q) before[q + 1] = before[q] + an(q)[kOwnList];
  for (std::uint32_t q = 0; q < n; ++q) an(q)[kSubList] = static_cast<std::uint32_t>(before[subtree_end(q, n)] - before[q]);
}

// The collective part shared by split and create_group (the phases: the comment at the top).
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
  auto failed = [&](hcomm_result_t rc) {
    logf(ctx, 0, "Rank%u %s: the exchange over the parent communicator failed (%s)", me, what, hcomm_result_string(rc));
    return rc;
  };
  // My place in the gather tree: my subtree [me, end), its parent `up`, my children `kids`.
  const std::uint32_t end = subtree_end(me, n), sub = end - me, up = me - low_bit(me);
  std::vector<std::uint32_t> kids;
  for (std::uint64_t b = 1; me + b < n && (me == 0 || b < low_bit(me)); b <<= 1)
    kids.push_back(static_cast<std::uint32_t>(me + b));
  auto size_of = [&](std::uint32_t c) { return std::uint64_t{subtree_end(c, n) - c}; };
  DevBuf rb(ctx, std::uint64_t{sub} * (kWords + kAnswerWords));  // my subtree's records, then its answers
  if (!rb.p) return failed(HCOMM_E_MEMORY);
  std::uint32_t *drec = rb.w(), *dans = rb.w(std::uint64_t{sub} * kWords);
  Phase ph(parent);
  // 1: the records up the tree.
  ph.to_device(drec, mine, sizeof mine);
  for (std::uint32_t c : kids) ph.recv(drec + (c - me) * kWords, size_of(c) * kWords, c, kTagGather);
  if (me) ph.send(drec, std::uint64_t{sub} * kWords, up, kTagGather);
  if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
  // 2: the answers down the tree (my subtree's, mine first).
  std::vector<std::uint32_t> ans, lists;
  if (me == 0) {
    std::vector<std::uint32_t> recs(static_cast<std::size_t>(n) * kWords);
    ph.to_host(recs.data(), drec, recs.size() * 4);
    if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
    answer_all(recs, n, &ans, &lists);
    ph.to_device(dans, ans.data(), ans.size() * 4);
  } else {
    ans.resize(static_cast<std::size_t>(sub) * kAnswerWords);
    ph.recv(dans, ans.size(), up, kTagAnswer);
  }
  // Down the tree the largest subtree first: it has the most hops left.
  for (auto c = kids.rbegin(); c != kids.rend(); ++c)
    ph.send(dans + (*c - me) * kAnswerWords, size_of(*c) * kAnswerWords, *c, kTagAnswer);
  if (me) ph.to_host(ans.data(), dans, ans.size() * 4);
  if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
  ++parent->splits;
  const std::uint32_t* a = ans.data();
  // 3: the leaders' member lists down the tree (a subtree's block: its root's own list, if it
  // leads a child, then its children's blocks in order).
  const std::uint32_t m = a[kStatus] == kOk ? a[kSize] : 0, cr = a[kRank];
  DevBuf lb(ctx, std::uint64_t{a[kSubList]} + m);  // the block, then my list when another member sends it
  if ((a[kSubList] || m) && !lb.p) return failed(HCOMM_E_MEMORY);
  if (me == 0) ph.to_device(lb.w(), lists.data(), lists.size() * 4);
  else ph.recv(lb.w(), a[kSubList], up, kTagLists);
  std::vector<std::uint64_t> at(kids.size() + 1, a[kOwnList]);  // kids[i]'s block: [at[i], at[i + 1])
  for (std::size_t i = 0; i < kids.size(); ++i)
    at[i + 1] = at[i] + ans[static_cast<std::size_t>(kids[i] - me) * kAnswerWords + kSubList];
  for (std::size_t i = kids.size(); i-- > 0;) ph.send(lb.w(at[i]), at[i + 1] - at[i], kids[i], kTagLists);
  if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
  *out = nullptr;
  switch (a[kStatus]) {
    case kOk: break;
    case kNoColor: return HCOMM_SUCCESS;
    case kMismatch:
      logf(ctx, 0, "Rank%u %s: parent rank %u is in another call (split #%u, %s; parent rank 0 is in #%u)", me, what, a[kBad],
           a[kBadSeq], a[kBadKind] == kSplit ? "comm split" : a[kBadKind] == kGroup ? "create group" : "not a split record",
           a[kRootVal]);
      return HCOMM_E_PARA;
    case kOtherList:
      logf(ctx, 0, "Rank%u create group: parent rank %u passed another rank list (%u ranks) than parent rank 0 (%u ranks)", me,
           a[kBad], a[kBadSeq], a[kRootVal]);
      return HCOMM_E_PARA;
    case kNoId:
      logf(ctx, 0, "Rank%u %s: no communicator id is free on all %u members (255 live communicators)", me, what, a[kSize]);
      return HCOMM_E_UNAVAIL;
    default:
      logf(ctx, 0, "Rank%u %s: the exchange returned an unknown answer (%u)", me, what, a[kStatus]);
      return HCOMM_E_INTERNAL;
  }
  // 4: my member list from comm rank 0 down a binomial tree in comm rank order (comm rank i
  // hangs under i - highbit(i) and sends to i + 2^k for 2^k > i).
  std::uint32_t* dl = cr == 0 ? lb.w() : lb.w(a[kSubList]);
  std::vector<std::uint32_t> list(m);
  if (cr) ph.recv(dl, m, a[kSrc], kTagChild);
  ph.to_host(list.data(), dl, std::uint64_t{m} * 4);
  if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
  if (list[cr] != me) {
    logf(ctx, 0, "Rank%u %s: the member list received names parent rank %u at comm rank %u", me, what, list[cr], cr);
    return HCOMM_E_INTERNAL;
  }
  std::vector<std::uint32_t> fwd;
  for (std::uint64_t b = high_bit(cr) * (cr ? 2 : 1); cr + b < m; b <<= 1) fwd.push_back(static_cast<std::uint32_t>(cr + b));
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) ph.send(dl, m, list[*it], kTagChild);  // the largest subtree first
  if (hcomm_result_t rc = ph.finish(); rc != HCOMM_SUCCESS) return failed(rc);
  std::vector<std::uint32_t> members(m);
  for (std::uint32_t i = 0; i < m; ++i) members[i] = global_rank(parent, list[i]);
  if (hcomm_result_t rc = comm_make_child(parent, a[kId], std::move(members), cr, a[kShape], out); rc != HCOMM_SUCCESS) return rc;
  logf(ctx, 2, "Rank%u %s: color %u -> rank %u of %u (comm id %u, %u ranks per server)", me, what, req.color, cr, m, a[kId],
       a[kShape]);
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
  if (hcomm_result_t rc = comm_make_child(parent, id, std::move(members), my_rank, uniform ? L : 0, out); rc != HCOMM_SUCCESS) return rc;
  logf(ctx, 1, "Rank%u comm %u shrunk: %u lost, rank %u of %u in comm %u", me, parent->id, n_lost, my_rank, m, id);
  if (!parent->rec.error.text.empty() || n_lost) {
    FailoverInfo f;
    f.comm = parent->id;
    f.rank = global_rank(parent, me);
    f.origin = parent->rec.error.origin >= 0 ? static_cast<std::int64_t>(global_rank(parent, static_cast<std::uint32_t>(parent->rec.error.origin))) : -1;
    f.op_seq = parent->op_seq;
    f.fault = parent->rec.error.text.empty() ? "shrink requested" : parent->rec.error.text;
    f.action = "shrink";
    f.path_before = std::to_string(p) + " ranks (comm " + std::to_string(parent->id) + ")";
    f.path_after = std::to_string(m) + " ranks (comm " + std::to_string(id) + ")";
    f.detected_ns = parent->rec.error.at_ns ? parent->rec.error.at_ns : port::now_ns(ctx);
    f.resumed_ns = port::now_ns(ctx);
    port::failover_reported(ctx, f);
  }
  return HCOMM_SUCCESS;
}

}  // extern "C"
