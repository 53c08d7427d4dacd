// The schedule executor (docs/architecture.md#hcomm, docs/algorithms/README.md).
#include "algo/exec.h"

#include <algorithm>
#include <map>
#include <vector>

#include "algo/mesh.h"
#include "core/comm.h"
#include "core/stream.h"
#include "route/route.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kDirectSlot = 0x3ffffff;
constexpr std::uint32_t kMaxScheduleSlaves = 15;  // the pipeline on 8 ranks per server sends 8 blocks, in 2 slots each

std::uint32_t slot_of(Mode m, std::uint32_t slot) { return m == Mode::Direct ? kDirectSlot : slot; }

// A window of a schedule as the executor keeps it while it submits: every step's sends, receives
// and locals back to back in three arrays sized exactly, and per step where its entries end (92
// bytes a ring step instead of about 170 in three small vectors).
struct FlatSchedule {
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  std::vector<Local> locals;
  struct End { std::uint32_t send, recv, local; };
  std::vector<End> ends;
};

FlatSchedule flatten(Schedule&& p) {
  FlatSchedule f;
  std::size_t ns = 0, nr = 0, nl = 0;
  for (const Step& st : p.steps) ns += st.sends.size(), nr += st.recvs.size(), nl += st.locals.size();
  f.sends.reserve(ns);
  f.recvs.reserve(nr);
  f.locals.reserve(nl);
  f.ends.reserve(p.steps.size());
  for (const Step& st : p.steps) {
    f.sends.insert(f.sends.end(), st.sends.begin(), st.sends.end());
    f.recvs.insert(f.recvs.end(), st.recvs.begin(), st.recvs.end());
    f.locals.insert(f.locals.end(), st.locals.begin(), st.locals.end());
    f.ends.push_back({static_cast<std::uint32_t>(f.sends.size()), static_cast<std::uint32_t>(f.recvs.size()),
                      static_cast<std::uint32_t>(f.locals.size())});
  }
  std::vector<Step>().swap(p.steps);
  return f;
}

std::uint64_t g_window = 128;  // steps per window of a windowed schedule (set_schedule_window)

// Where the executor takes a schedule's steps from: a schedule built whole (one window), or a family's
// windows of g_window steps, each built when it is needed — once to schedule the grants and collect
// the peers, once more to submit it — so a rank keeps one window, not its whole schedule.
class Steps {
 public:
  explicit Steps(Schedule&& whole) : total_(whole.steps.size()), window_(std::max<std::uint64_t>(1, total_)) {
    flat_ = flatten(std::move(whole));
  }
  Steps(const Family& f, const ScheduleIn& pi, std::uint64_t total, std::uint64_t window)
      : f_(&f), pi_(pi), total_(total), window_(window) {}
  std::uint64_t total() const { return total_; }
  std::uint64_t window() const { return window_; }
  // Steps [first, first + window()) of the schedule; null when the builder fails.
  const FlatSchedule* get(std::uint64_t first) {
    if (!f_) return first == 0 ? &flat_ : nullptr;
    Schedule p;
    p.first = first;
    p.end = std::min(total_, first + window_);
    if (!f_->build(pi_, &p) || p.steps.size() != p.end - first) return nullptr;
    flat_ = flatten(std::move(p));
    return &flat_;
  }

 private:
  const Family* f_ = nullptr;
  ScheduleIn pi_;
  std::uint64_t total_, window_;
  FlatSchedule flat_;
};

// A credit to send: grant `from` (a member) the right to write slot key `key` at `point` of the
// receiver's receive sequence (run_schedule). Kept for the whole schedule, in receive order, then sorted
// by point (stable: receive order within a point).
struct Grant {
  std::int64_t point;
  std::uint32_t from, key;
};

struct Exec {
  hcomm_comm_t comm;
  hcomm_stream_t main;
  const Members& mem;
  const Area& a;
  int dtype, op;
  std::uint64_t ccl_off(std::uint64_t local) const { return local - comm->ctx->base; }

  const RankDesc* desc(std::uint32_t m) const { return peer_desc(comm, mem.rank(m)); }

  // Grant `to` (a member) the right to write my slot (Direct: my W), from stream `s`.
  hcomm_result_t grant(hcomm_stream_t s, std::uint32_t to, std::uint32_t slot) const {
    const RankDesc* d = desc(to);
    if (!d) return HCOMM_E_NOT_FOUND;
    return remote_notify(s, comm, *d, notify_key(comm->id, kScheduleCredit, comm->rank, slot));
  }

  hcomm_result_t send(hcomm_stream_t s, const Send& x, bool wait_credit, QpSlice qs = {}) const {
    const RankDesc* d = desc(x.to);
    if (!d) return HCOMM_E_NOT_FOUND;
    const std::uint32_t slot = slot_of(x.mode, x.slot);
    if (wait_credit) notify_wait(s, notify_key(comm->id, kScheduleCredit, d->rank, slot));
    const std::uint64_t dst = d->device_base_addr +
                              (x.mode == Mode::Direct ? ccl_off(a.w) + x.dst_off : ccl_off(a.stage) + x.slot * a.slot_bytes);
    return put_notify(s, comm, *d, dst, x.src, x.bytes, notify_key(comm->id, kScheduleData, comm->rank, slot),
                      comm->ctx->ccl_rkey, qs);
  }
};

// The QPs of a step's writes to one receiver (QpSlice, core/objects.h): the threshold rule on
// their total gives K QPs, shared in proportion to the bytes (at least one each; more writes than
// QPs take them in turn), each write on its own consecutive ones. A receiver written once in the
// step keeps the rule's own choice (count 0).
std::vector<QpSlice> share_qps(const RdmaPolicy& p, const Send* sends, std::size_t ns) {
  std::vector<QpSlice> qs(ns);
  std::vector<char> done(ns, 0);
  std::vector<std::size_t> g;
  for (std::size_t j = 0; j < ns; ++j) {
    if (done[j]) continue;
    g.clear();
    std::uint64_t total = 0;
    for (std::size_t i = j; i < ns; ++i)
      if (!done[i] && sends[i].to == sends[j].to && sends[i].bytes) { g.push_back(i); total += sends[i].bytes; done[i] = 1; }
    if (g.size() < 2 || p.qp_count < 2) continue;
    const std::uint32_t k = threshold_qps(p, total);
    std::vector<std::uint32_t> c(g.size(), 1);
    if (g.size() < k) {
      std::uint32_t sum = static_cast<std::uint32_t>(g.size());
      while (sum < k) {  // one more QP to the write with the most bytes per QP (the first of equals)
        std::size_t m = 0;
        for (std::size_t i = 1; i < g.size(); ++i)
          if (sends[g[i]].bytes * c[m] > sends[g[m]].bytes * c[i]) m = i;
        ++c[m];
        ++sum;
      }
    }
    std::uint32_t first = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      qs[g[i]] = QpSlice{first % k, c[i]};
      first += c[i];
    }
  }
  return qs;
}

}  // namespace

namespace {

hcomm_result_t run_steps(hcomm_comm_t comm, hcomm_stream_t main, const Members& mem, Steps& schedule, const Area& a, int dtype,
                         int op) {
  Exec ex{comm, main, mem, a, dtype, op};
  settle_mesh(comm, main);

  // One pass over the schedule's windows: its peers, and when each receive's writer may write
  // (docs/algorithms/README.md#flow-control). Receive i (numbered over the whole schedule) is granted
  // at a point of the receiver's receive sequence (-1: at the start; 2j: receive j's data has
  // arrived; 2j + 1: receive j is consumed, its slot free again):
  //   * its staging slot is free: the previous receive on that slot is consumed;
  //   * admission: when the previous step with receives took data from another sender, all of
  //     that step's data has arrived — a member that runs ahead cannot write into a receiver
  //     still taking another member's data of an earlier step (two writers into one port would
  //     queue, mark ECN and throttle both); the receives of one step are admitted together;
  //   * grants to one sender on one key go out in its order (the point never decreases).
  std::vector<Grant> grants;          // in receive order, then sorted by point
  std::vector<std::uint32_t> start_step;  // the step of each grant due at the start, in receive order
  std::vector<std::uint32_t> peers;
  std::vector<std::uint32_t> first_to;    // the members the schedule's step 0 writes to
  {
    std::vector<std::int64_t> last_on_slot(a.slots, -1);
    std::map<std::uint64_t, std::int64_t> last_point;  // (sender, key) -> point of its previous grant
    std::int64_t prev_last = -1;                       // last receive of the previous step that had any
    std::vector<std::uint32_t> prev_from;              // that step's senders
    std::int64_t ri = 0;                               // receives so far
    std::uint64_t step = 0;
    for (std::uint64_t first = 0; first < schedule.total(); first += schedule.window()) {
      const FlatSchedule* fp = schedule.get(first);
      if (!fp) return HCOMM_E_INTERNAL;
      for (const Send& x : fp->sends) peers.push_back(mem.rank(x.to));
      for (const Recv& x : fp->recvs) peers.push_back(mem.rank(x.from));
      std::sort(peers.begin(), peers.end());
      peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
      std::uint32_t rb = 0;
      for (const FlatSchedule::End& e : fp->ends) {
        if (step == 0)  // step 0 only: a later step's sends wait for the receives before them
          for (std::uint32_t i = 0; i < e.send; ++i) first_to.push_back(fp->sends[i].to);
        const std::uint32_t step_b = rb;
        rb = e.recv;
        if (step_b == e.recv) { ++step; continue; }
        for (std::uint32_t i = step_b; i < e.recv; ++i, ++ri) {
          const Recv& r = fp->recvs[i];
          // A sender that wrote in that step keeps its turn (its writes and the others' already
          // overlapped there); only a sender new to this receiver since then waits for admission.
          std::int64_t point = -1;
          if (!prev_from.empty() && std::find(prev_from.begin(), prev_from.end(), r.from) == prev_from.end())
            point = 2 * prev_last;
          if (r.mode != Mode::Direct) {
            if (r.slot >= a.slots) return HCOMM_E_INTERNAL;
            if (last_on_slot[r.slot] >= 0) point = std::max(point, 2 * last_on_slot[r.slot] + 1);
            last_on_slot[r.slot] = ri;
          }
          const std::uint32_t key = slot_of(r.mode, r.slot);
          const std::uint64_t k = (static_cast<std::uint64_t>(r.from) << 32) | key;
          auto it = last_point.find(k);
          if (it != last_point.end()) point = std::max(point, it->second);
          last_point[k] = point;
          grants.push_back({point, r.from, key});
          if (point == -1) start_step.push_back(static_cast<std::uint32_t>(step));
        }
        prev_last = ri - 1;
        prev_from.clear();
        for (std::uint32_t i = step_b; i < e.recv; ++i) prev_from.push_back(fp->recvs[i].from);
        ++step;
      }
    }
    std::stable_sort(grants.begin(), grants.end(), [](const Grant& x, const Grant& y) { return x.point < y.point; });
  }
  route::prepare(comm, peers);  // every peer of the schedule routed together (route/route.h: one probe batch for the new ones)
  std::vector<std::uint32_t>().swap(peers);

  std::size_t gi = 0;
  auto grant_after = [&](hcomm_stream_t s, std::int64_t point) -> hcomm_result_t {
    for (; gi < grants.size() && grants[gi].point == point; ++gi)
      if (hcomm_result_t rc = ex.grant(s, grants[gi].from, grants[gi].key); rc != HCOMM_SUCCESS) return rc;
    return HCOMM_SUCCESS;
  };
  // The grants due at the start go out from a grant stream forked off main here (W is free from
  // this point of main on): a remote grant is a write that holds its stream until acknowledged,
  // and main's first steps need not wait behind many of them.
  // A start grant to a member the first step writes to goes out from the stream that writes to
  // it, just before its first write there (`early`), not from the grant stream: posted after the
  // write, it would queue behind the write's bytes on the QP (RC keeps a QP's writes in order; on
  // HCCS, behind the copy on the link) and the member's own first write would wait for them — a
  // race of a few ns between the two streams that cost the pipeline all-gather a whole transfer.
  std::vector<Grant> early;
  {
    std::size_t kept = 0;
    const std::size_t n0 = start_step.size();
    for (std::size_t i = 0; i < n0; ++i) {
      if (std::find(first_to.begin(), first_to.end(), grants[i].from) != first_to.end()) {
        early.push_back(grants[i]);
        continue;
      }
      grants[kept] = grants[i];
      start_step[kept] = start_step[i];
      ++kept;
    }
    grants.erase(grants.begin() + static_cast<std::ptrdiff_t>(kept), grants.begin() + static_cast<std::ptrdiff_t>(n0));
    start_step.resize(kept);
  }
  auto grant_early = [&](hcomm_stream_t s, std::uint32_t to) -> hcomm_result_t {
    for (Grant& g : early)
      if (g.from == to && g.point == -1) {
        if (hcomm_result_t rc = ex.grant(s, g.from, g.key); rc != HCOMM_SUCCESS) return rc;
        g.point = -2;  // issued
      }
    return HCOMM_SUCCESS;
  };
  const std::size_t start_grants = start_step.size();
  // Of those, in each step the grants to senders reached by SDMA go first: a RoCE grant holds
  // the grant stream for its round trip, and an SDMA grant issued after the sender's own copy to
  // this rank has begun queues behind that copy on the link (the pipeline: a server peer's first
  // block waited ~20 us for it). Grants to one sender keep their order (stable).
  if (start_grants > 1) {
    std::vector<char> sdma(mem.n, 2);  // per member: 2 unknown, else via_sdma
    std::vector<std::pair<std::uint64_t, Grant>> keyed(start_grants);
    for (std::size_t i = 0; i < start_grants; ++i) {
      const std::uint32_t f = grants[i].from;
      if (sdma[f] == 2) {
        const RankDesc* d = ex.desc(f);
        sdma[f] = d && via_sdma(comm, *d) ? 1 : 0;
      }
      keyed[i] = {2 * static_cast<std::uint64_t>(start_step[i]) + (sdma[f] == 1 ? 0 : 1), grants[i]};
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::size_t i = 0; i < start_grants; ++i) grants[i] = keyed[i].second;
  }
  std::vector<std::uint32_t>().swap(start_step);
  hcomm_stream_t gs = main;
  if (start_grants > 1) {
    if (!comm->grant_stream && make_stream(comm->ctx, &comm->grant_stream) != HCOMM_SUCCESS) return HCOMM_E_DRV;
    gs = comm->grant_stream;
    notify_record(main, comm->ctx->device, notify_key(comm->id, kScheduleFork, comm->rank, kMaxScheduleSlaves));
    notify_wait(gs, notify_key(comm->id, kScheduleFork, comm->rank, kMaxScheduleSlaves));
  }
  if (hcomm_result_t rc = grant_after(gs, -1); rc != HCOMM_SUCCESS) return rc;
  if (gs != main) notify_record(gs, comm->ctx->device, notify_key(comm->id, kScheduleJoin, comm->rank, kMaxScheduleSlaves));

  std::int64_t ri = 0;  // receives so far
  for (std::uint64_t first = 0; first < schedule.total(); first += schedule.window()) {
    const FlatSchedule* fp = schedule.get(first);
    if (!fp) return HCOMM_E_INTERNAL;
    std::uint32_t sb = 0, rb = 0, lb = 0;  // the step's first send, receive and local in the window
    for (const FlatSchedule::End& e : fp->ends) {
      const Send* sends = fp->sends.data() + sb;
      const std::size_t ns = e.send - sb;
      sb = e.send;
      if (ns == 1) {
        const Send& x = sends[0];
        if (hcomm_result_t rc = grant_early(main, x.to); rc != HCOMM_SUCCESS) return rc;  // before any wait
        if (hcomm_result_t rc = ex.send(main, x, true); rc != HCOMM_SUCCESS) return rc;
      } else if (ns > 1) {
        const auto lanes = static_cast<std::uint32_t>(std::min<std::size_t>(ns, kMaxScheduleSlaves));
        while (comm->schedule_slaves.size() < lanes) {
          hcomm_stream_t s = nullptr;
          if (make_stream(comm->ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
          comm->schedule_slaves.push_back(s);
        }
        for (std::uint32_t k = 0; k < lanes; ++k) {
          notify_record(main, comm->ctx->device, notify_key(comm->id, kScheduleFork, comm->rank, k));
          notify_wait(comm->schedule_slaves[k], notify_key(comm->id, kScheduleFork, comm->rank, k));
        }
        // Sends that share a receiver's slot stay on one lane, in schedule order: a credit is a count,
        // so two lanes waiting for the same slot could take each other's grant.
        std::vector<std::pair<std::uint64_t, std::uint32_t>> lane_of;  // (to, slot) -> lane
        std::vector<std::uint32_t> lane_j(ns);
        std::uint32_t next_lane = 0;
        for (std::size_t j = 0; j < ns; ++j) {
          const Send& x = sends[j];
          const std::uint64_t k = (static_cast<std::uint64_t>(x.to) << 32) | slot_of(x.mode, x.slot);
          std::uint32_t lane = next_lane;
          auto it = std::find_if(lane_of.begin(), lane_of.end(), [&](const auto& le) { return le.first == k; });
          if (it != lane_of.end()) lane = it->second;
          else { lane_of.emplace_back(k, lane); next_lane = (next_lane + 1) % lanes; }
          lane_j[j] = lane;
        }
        // Each lane's early grants first, before any of its credit waits (a grant behind a wait
        // could wait for the data it lets in).
        for (std::size_t j = 0; j < ns; ++j)
          if (hcomm_result_t rc = grant_early(comm->schedule_slaves[lane_j[j]], sends[j].to); rc != HCOMM_SUCCESS) return rc;
        const std::vector<QpSlice> qs = share_qps(route::rdma_policy(comm), sends, ns);
        for (std::size_t j = 0; j < ns; ++j)
          if (hcomm_result_t rc = ex.send(comm->schedule_slaves[lane_j[j]], sends[j], true, qs[j]); rc != HCOMM_SUCCESS) return rc;
        for (std::uint32_t k = 0; k < lanes; ++k)
          notify_record(comm->schedule_slaves[k], comm->ctx->device, notify_key(comm->id, kScheduleJoin, comm->rank, k));
      }
      for (; rb < e.recv; ++rb, ++ri) {
        const Recv& r = fp->recvs[rb];
        const RankDesc* d = ex.desc(r.from);
        if (!d) return HCOMM_E_NOT_FOUND;
        notify_wait(main, notify_key(comm->id, kScheduleData, d->rank, slot_of(r.mode, r.slot)));
        if (hcomm_result_t rc = grant_after(main, 2 * ri); rc != HCOMM_SUCCESS) return rc;
        if (r.mode != Mode::Direct && r.bytes) {
          const std::uint64_t slot = a.stage + r.slot * a.slot_bytes;
          if (r.mode == Mode::StagedReduce) reduce_copy(main, r.dst, slot, r.bytes, dtype, op);
          else if (r.width) copy_2d(main, r.dst, r.dpitch, slot, r.width, r.width, r.bytes / r.width);
          else copy(main, r.dst, slot, r.bytes);
        }
        if (hcomm_result_t rc = grant_after(main, 2 * ri + 1); rc != HCOMM_SUCCESS) return rc;
      }
      if (ns > 1)
        for (std::uint32_t k = 0; k < std::min<std::size_t>(ns, kMaxScheduleSlaves); ++k)
          notify_wait(main, notify_key(comm->id, kScheduleJoin, comm->rank, k));
      for (; lb < e.local; ++lb) {
        const Local& l = fp->locals[lb];
        if (!l.bytes) continue;
        if (l.reduce) reduce_copy(main, l.dst, l.src, l.bytes, dtype, op);
        else if (l.width) copy_2d(main, l.dst, l.dpitch, l.src, l.spitch, l.width, l.bytes / l.width);
        else copy(main, l.dst, l.src, l.bytes);
      }
    }
  }
  if (gs != main) notify_wait(main, notify_key(comm->id, kScheduleJoin, comm->rank, kMaxScheduleSlaves));
  return HCOMM_SUCCESS;
}

}  // namespace

void set_schedule_window(std::uint64_t steps) { g_window = std::max<std::uint64_t>(1, steps); }

hcomm_result_t run_schedule(hcomm_comm_t comm, hcomm_stream_t main, const Members& mem, Schedule&& schedule, const Area& a,
                        int dtype, int op) {
  Steps st(std::move(schedule));
  return run_steps(comm, main, mem, st, a, dtype, op);
}

hcomm_result_t run_family(hcomm_comm_t comm, hcomm_stream_t main, const Family& f, const Members& mem, ScheduleIn pi,
                          std::uint64_t stage_off, int dtype, int op) {
  hcomm_context_t ctx = comm->ctx;
  Area a;
  a.w = pi.w;
  a.slots = f.slots ? f.slots : 2 * pi.local;  // 0: two per rank of a server (the pipeline)
  a.stage = ctx->ccl_addr + stage_off;
  a.slot_bytes = (ctx->ccl_bytes - stage_off) / a.slots / pi.esz * pi.esz;
  pi.slot_bytes = a.slot_bytes;
  pi.slots = a.slots;
  if (const std::uint64_t total = f.count ? f.count(pi) : 0; total > g_window) {  // a window at a time
    Schedule probe;  // the family builds this op: its first step alone, to ask
    probe.end = 1;
    if (!f.build(pi, &probe)) return HCOMM_E_NOT_SUPPORT;
    Steps st(f, pi, total, g_window);
    return run_steps(comm, main, mem, st, a, dtype, op);
  }
  Schedule p;
  if (!f.build(pi, &p)) return HCOMM_E_NOT_SUPPORT;
  return run_schedule(comm, main, mem, std::move(p), a, dtype, op);
}

}  // namespace hcomm::detail
