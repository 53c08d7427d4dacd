// Failover (docs/failover.md), the protocol's core: a fault's report to the other members, the
// sticky error, the recovery that runs the agreement (recovery/failover_agree.cpp) and re-executes.
// See recovery/failover.h for the protocol.
#include "recovery/failover.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "algo/mesh.h"
#include "coll/run.h"
#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/stream.h"
#include "driver_port.h"
#include "recovery/failover_msg.h"
#include "recovery/failover_state.h"
#include "recovery/retry_path.h"
#include "recovery/ring_order.h"
#include "route/route.h"
#include "transport/relay.h"

namespace hcomm::detail {

namespace failover {

hcomm_comm_t find_comm(hcomm_context_t ctx, std::uint32_t id) {
  for (hcomm_comm_t c : ctx->rec.comms)
    if (c->id == id) return c;
  return nullptr;
}

void add_pair(hcomm_comm_t c, std::uint32_t a, std::uint32_t b) {
  if (a == b || a >= c->nranks || b >= c->nranks) return;
  const auto p = std::minmax(a, b);
  const std::pair<std::uint32_t, std::uint32_t> q{p.first, p.second};
  auto it = std::lower_bound(c->rec.dead_pairs.begin(), c->rec.dead_pairs.end(), q);
  if (it == c->rec.dead_pairs.end() || *it != q) c->rec.dead_pairs.insert(it, q);
}

void add_lost(hcomm_comm_t c, std::uint32_t r) {
  auto it = std::lower_bound(c->rec.lost.begin(), c->rec.lost.end(), r);
  if (it == c->rec.lost.end() || *it != r) c->rec.lost.insert(it, r);
}

void report(hcomm_comm_t c, const char* action, const std::string& path_before, const std::string& path_after,
            std::uint64_t bytes, std::uint64_t resumed_ns, const PendingOp* op) {
  FailoverInfo f;
  f.comm = c->id;
  f.rank = me_global(c);
  f.origin = c->rec.error.origin >= 0 ? static_cast<std::int64_t>(global_rank(c, static_cast<std::uint32_t>(c->rec.error.origin))) : -1;
  f.op_seq = op ? op->seq : c->op_seq ? c->op_seq - 1 : 0;
  f.fault = c->rec.error.text;
  f.action = action;
  f.path_before = path_before;
  f.path_after = path_after;
  f.code = resumed_ns ? 0 : c->rec.error.code;
  f.bytes_resent = bytes;
  f.detected_ns = c->rec.error.at_ns;
  f.resumed_ns = resumed_ns;
  port::failover_reported(c->ctx, f);
  // The application's report (docs/failover.md#the-applications-view): a survived fault is a
  // notice (HCOMM_I_FAILOVER, read once by hcomm_get_async_error), not an error; the callback
  // held back while op retry decided is told the outcome now.
  if (resumed_ns) {
    c->rec.notice = HCOMM_I_FAILOVER;
    c->rec.notice_text = "fault survived (" + std::string(action) + (path_after.empty() ? "" : " on " + path_after) + "): " + c->rec.error.text;
  }
  if (c->rec.cb_owed) {
    c->rec.cb_owed = false;
    if (c->rec.error_cb) {
      if (resumed_ns) c->rec.error_cb(c, HCOMM_I_FAILOVER, c->rec.notice_text.c_str(), c->rec.error_cb_data);
      else c->rec.error_cb(c, c->rec.error.code, c->rec.error.text.c_str(), c->rec.error_cb_data);
    }
  }
}

// The first error the communicator learns: sticky, logged, and the callback told.
void set_error(hcomm_comm_t c, hcomm_result_t code, std::int64_t origin, const std::string& text) {
  if (c->rec.error.code != HCOMM_SUCCESS) return;
  c->rec.error.code = code;
  c->rec.error.origin = origin;
  c->rec.error.text = text;
  c->rec.error.at_ns = port::now_ns(c->ctx);
  logf(c->ctx, 0, "Rank%u comm %u: %s (%s)", c->rank, c->id, hcomm_result_string(code), text.c_str());
  if (c->cfg.op_retry && c->nranks > 1) c->rec.cb_owed = true;  // told with the recovery's outcome (report)
  else if (c->rec.error_cb) c->rec.error_cb(c, code, c->rec.error.text.c_str(), c->rec.error_cb_data);
}

// A member is lost (its connection closed, the heartbeat, or silent in an agreement): the
// communicator's error says so, whatever was learned first (a failed transfer to it, a report).
void mark_rank_lost(hcomm_comm_t c) {
  if (c->rec.lost.empty() || c->rec.error.code == HCOMM_SUCCESS || c->rec.error.code == HCOMM_E_RANK_LOST) return;
  std::string who;
  for (std::uint32_t l : c->rec.lost) who += (who.empty() ? "" : ", ") + std::to_string(l) + " (rank " + std::to_string(global_rank(c, l)) + ")";
  c->rec.error.code = HCOMM_E_RANK_LOST;
  c->rec.error.text = "comm rank " + who + " lost; first learned: " + c->rec.error.text;
  logf(c->ctx, 0, "Rank%u comm %u: %s", c->rank, c->id, c->rec.error.text.c_str());
}

const PendingOp* pending_of(hcomm_comm_t c) {
  const PendingOp* found = nullptr;
  std::uint32_t n = 0;
  for (const PendingOp& p : c->ctx->rec.pending)
    if (p.comm == c) { found = &p; ++n; }
  return n == 1 ? found : nullptr;  // one operation in the window: re-executing it is well defined
}

// This rank's NIC is present and its link down (the port's state, docs/routing.md).
bool nic_down(hcomm_comm_t c) {
  NicInfo n;
  return port::nic_info(c->ctx, &n) == HCOMM_SUCCESS && n.present && !n.link_up;
}

// The rank's error is an RDMA write's failure (its own, or the one a peer reported): some QP's
// path may cross a dead cable between switches, which no port event shows (docs/failover.md).
bool roce_failure(hcomm_comm_t c) { return c->rec.error.text.find("RDMA write failed") != std::string::npos; }

// The bound within which every survivor learns that a member is lost (docs/failover.md#rank-loss):
// a crashed process's connections close within kCloseBoundNs; with the heartbeat agent, its
// periods x (misses + 1); with HCOMM_HEARTBEAT_TIMEOUT_MS, that timeout. The largest applies.
std::uint64_t loss_bound_ns(hcomm_comm_t c) {
  std::uint64_t b = kCloseBoundNs;
  if (!c->ctx->rec.hb_unavailable) b = std::max<std::uint64_t>(b, c->ctx->hb_period_ns * (c->ctx->hb_misses + 1ULL));
  b = std::max<std::uint64_t>(b, c->cfg.heartbeat_timeout_ms * 1000000ULL);
  return b;
}

std::uint64_t agree_timeout_ns(hcomm_comm_t c) {
  return std::min<std::uint64_t>(kAgreeBounds * loss_bound_ns(c), c->cfg.timeout_ms * 1000000ULL);
}

namespace {

// Tell every other member of `c` (urgent messages).
void broadcast_abort(hcomm_comm_t c, bool retry) {
  Msg m;
  m.kind = kAbort;
  m.comm = c->id;
  m.origin = c->rank;
  m.code = c->rec.error.code;
  m.seq = c->op_seq;
  // Bit 0: retry requested; bits 1-6: how many re-executions of this operation the sender had
  // started (a failure during a re-execution is news to ranks that recovered from the first one).
  const std::uint32_t attempt = c->rec.stale_below == c->op_seq ? std::min<std::uint32_t>(c->rec.stale_attempt, 63) : 0;
  m.flag = static_cast<std::uint8_t>((retry ? 1 : 0) | (attempt << 1));
  for (const auto& [a, b] : c->rec.dead_pairs) { m.list.push_back(a); m.list.push_back(b); }
  m.text = c->rec.error.text;
  const CtrlMsg raw = encode(m);
  for (std::uint32_t r = 0; r < c->nranks; ++r)
    if (r != c->rank) port::ctrl_signal(c->ctx, me_global(c), global_rank(c, r), raw);
}

// Read every urgent message that has arrived; returns whether one concerned a communicator here.
bool drain(hcomm_context_t ctx, bool* aborts = nullptr) {
  if (ctx->rec.grank < 0) return false;
  take_events(ctx);
  bool any = false;
  for (;;) {
    std::uint32_t from = 0;
    CtrlMsg raw;
    if (port::ctrl_signal_poll(ctx, static_cast<std::uint32_t>(ctx->rec.grank), &from, &raw) != HCOMM_SUCCESS) break;
    Msg m;
    if (!decode(raw, &m) || m.kind != kAbort) continue;
    hcomm_comm_t c = find_comm(ctx, m.comm);
    if (!c || m.origin >= c->nranks) continue;  // a communicator already destroyed here
    // Another rank's report of a fault already recovered from (stale_below 0: none yet; a report
    // of seq 0, a p2p fault before any collective, is news); a report of the re-executed
    // operation sent during its latest re-execution is news too.
    const std::uint32_t attempt = m.flag >> 1;
    if (c->rec.stale_below && (m.seq < c->rec.stale_below || (m.seq == c->rec.stale_below && attempt < std::min<std::uint32_t>(c->rec.stale_attempt, 63))))
      continue;
    any = true;
    for (std::size_t i = 0; i + 1 < m.list.size(); i += 2) add_pair(c, m.list[i], m.list[i + 1]);
    if (c->rec.error.code == HCOMM_SUCCESS) {
      set_error(c, HCOMM_E_REMOTE, m.origin,
                "comm rank " + std::to_string(m.origin) + " (rank " + std::to_string(global_rank(c, m.origin)) + ") reported " +
                    hcomm_result_string(static_cast<hcomm_result_t>(m.code)) + ": " + m.text);
      c->rec.retry_wanted = (m.flag & 1) != 0 && c->cfg.op_retry;
    }
  }
  if (aborts) *aborts = any;
  const bool lost = ctx->rec.lost_news;
  ctx->rec.lost_news = false;
  return any || lost;
}

// Only heartbeat LOST news and no communicator work in flight on this device (the ranks are
// between operations, or the host waits on a plain copy): nothing to stop, nothing to re-execute;
// each communicator in error records its failover (detected when the host's agent learned it).
bool settle_without_work(hcomm_context_t ctx) {
  for (hcomm_comm_t c : ctx->rec.comms)
    if (c->rec.busy_streams > 0) return false;
  for (hcomm_comm_t c : ctx->rec.comms) {
    if (c->rec.error.code == HCOMM_SUCCESS || c->rec.recovered_round == c->rec.error.at_ns + 1) continue;
    c->rec.recovered_round = c->rec.error.at_ns + 1;
    mark_rank_lost(c);
    report(c, "abort", "", "", 0, 0, pending_of(c));
  }
  return true;
}

// Elements (per block) of `p` this rank has completed: its last slice marker that completed in
// this attempt (after device_abort nothing more completes), or where the attempt started.
std::uint64_t delivered(hcomm_comm_t c, const PendingOp& p) {
  if (!p.mark_base || !c->rec.prog_event || !c->ctx->retry_resume) return p.from;
  const std::uint64_t v = port::event_value(c->ctx, c->rec.prog_event);
  return v > p.mark_base ? std::max(p.from, v - p.mark_base) : p.from;
}


// Run the recoveries the communicators of `ctx` need. Returns HCOMM_E_AGAIN when every one that
// had the failure re-executed its operation successfully, else the first error code.
hcomm_result_t recover(hcomm_context_t ctx) {
  ctx->rec.recovering = true;
  port::device_abort(ctx);  // stop what is left of the failed attempt on this device (all its streams)
  forget_mesh_debts(ctx);
  hcomm_result_t out = HCOMM_E_AGAIN;
  const std::vector<hcomm_comm_t> comms = ctx->rec.comms;
  for (hcomm_comm_t c : comms) {
    if (c->rec.error.code == HCOMM_SUCCESS || c->rec.recovered_round == c->rec.error.at_ns + 1) continue;
    c->rec.recovered_round = c->rec.error.at_ns + 1;  // one recovery per error
    forget_mesh_debts(c, false);
    const PendingOp* p = pending_of(c);
    const bool want = c->rec.retry_wanted && c->cfg.op_retry;
    if (!want) {
      mark_rank_lost(c);
      report(c, "abort", "", "", 0, 0, p);
      if (out == HCOMM_E_AGAIN) out = c->rec.error.code;
      continue;
    }
    const bool can = p && p->retryable;
    // One agreement per fault: a fault that hits the re-execution (its rank reports it, marked with
    // the re-execution, so every member's re-execution ends) starts another agreement over
    // everything known dead by then, up to kMaxRounds per operation
    // (docs/failover.md#a-failure-during-the-re-execution).
    constexpr std::uint32_t kMaxRounds = 8;
    std::uint64_t resume_at = 0;  // the later rounds resume where the first agreed (their slices are not tracked)
    for (std::uint32_t round = 1;; ++round) {
      const std::string before = c->rec.dead_pairs.empty() ? "as selected" : "as selected; dead hccs " + pairs_text(c);
      const std::uint64_t done = !can ? 0 : round == 1 ? delivered(c, *p) : resume_at;
      if (!agree(c, can, done, can ? p->seq : ~0ULL)) {
        std::string why;
        if (!can) why += "; this rank holds no re-executable operation";
        if (!c->rec.lost.empty()) {
          why += "; lost comm rank(s)";
          for (std::uint32_t l : c->rec.lost) why += " " + std::to_string(l);
        }
        if (why.empty()) why = "; the coordinator found no safe re-execution (logged above)";
        logf(c->ctx, 0, "Rank%u comm %u: op retry not possible (%s); the error stands", c->rank, c->id, why.c_str() + 2);
        mark_rank_lost(c);
        report(c, "abort", before, "", 0, 0, p);
        if (out == HCOMM_E_AGAIN) out = c->rec.error.code;
        break;
      }
      // An RDMA write failed somewhere: before re-executing, every rank re-probes its RoCE QPs'
      // paths and moves those whose probe is lost (a dead cable between switches) to new source
      // ports (route/route.cpp), so the re-execution does not fail on the same cable.
      std::string after_extra;
      if (c->rec.roce_failed && c->ctx->retry_reroute) {
        // The trigger names the fault as the error's text does: "RDMA write failed: ... (...)".
        const std::size_t at = c->rec.error.text.find("RDMA write failed");
        std::string what = at == std::string::npos ? c->rec.error.text : c->rec.error.text.substr(at);
        if (const std::size_t close = what.find(')'); close != std::string::npos) what.resize(close + 1);
        char trig[192];
        std::snprintf(trig, sizeof trig, "op retry of %s seq %llu: %s", p->kind, static_cast<unsigned long long>(p->seq), what.c_str());
        const std::uint32_t moved = route::reroute_broken(c, trig);
        after_extra = "; RoCE re-routed: " + std::to_string(moved) + " QPs on new source ports";
      }
      // Re-execute from the inputs: with the dead HCCS pairs moved to a relay NPU or PCIe where
      // that is all that failed, else on a flat ring that avoids the dead links (coll/run.cpp).
      // Dead NICs only: each borrowed from a server peer's NIC (borrow_nics; it also ends an earlier
      // borrowing when there is nothing to borrow for now). The two are exclusive when they succeed.
      std::string relayed, borrowed;
      const bool by_relay = reroute_hccs(c, &relayed);
      const bool by_lender = borrow_nics(c, &borrowed);
      c->rec.avoid = !by_relay && !by_lender;
      if (c->rec.avoid) {
        // On the ring: a route of mine through a relay with a dead hop (chosen by discovery or for an
        // earlier fault) is decided again too; the ring's neighbours may still need it.
        const std::vector<std::uint32_t> over = routes_over_dead(c);
        if (!over.empty()) route::redecide(c, over, "op retry: hccs " + pairs_text(c) + " down");
      }
      const std::string rerouted = by_relay ? relayed : borrowed;
      PendingOp op = *p;
      // Resumption (docs/failover.md#resumption): the slices every rank completed are final
      // everywhere (out of place, the inputs intact): the re-execution starts after them, and
      // re-sends only the rest.
      op.from = c->rec.resume_from < op.count ? c->rec.resume_from : 0;
      if (round == 1) resume_at = op.from;
      op.mark_base = 0;
      const std::uint64_t resent = op.count ? op.in_bytes / op.count * (op.count - op.from) : op.in_bytes;
      const char* action = op.from ? "resume" : "retry";
      std::string resume_text;
      if (op.from) {
        char b[160];
        std::snprintf(b, sizeof b, "; from element %llu of %llu (%.1f %% delivered to every rank before the fault)",
                      static_cast<unsigned long long>(op.from), static_cast<unsigned long long>(op.count), 100.0 * op.from / op.count);
        resume_text = b;
      }
      const std::string after = (c->rec.avoid ? ring_text(c) : rerouted) + after_extra + resume_text;
      const std::uint64_t resumed = port::now_ns(ctx);
      const CommError err = c->rec.error;
      c->rec.error = CommError{};
      c->rec.stale_attempt = c->rec.stale_below == c->op_seq ? c->rec.stale_attempt + 1 : 1;
      c->rec.stale_below = c->op_seq;  // the other reports of this fault are stale from now on
      if (round > 1) relay::drop_channels(ctx);  // before a later round's re-execution
      hcomm_result_t rc = rerun(c, op);
      if (rc == HCOMM_SUCCESS) rc = sync_timeout(op.stream, c->cfg.timeout_ms);
      const CommError news = c->rec.error;  // a fault that hit the re-execution (its own task, or a member's report)
      c->rec.error = err;
      if (rc != HCOMM_SUCCESS) {
        logf(c->ctx, 0, "Rank%u comm %u: op retry of %s seq %llu failed: %s", c->rank, c->id, op.kind,
             static_cast<unsigned long long>(op.seq), hcomm_result_string(rc));
        report(c, action, before, after, resent, 0, &op);
        if (c->cfg.op_retry && can && news.code != HCOMM_SUCCESS && news.code != HCOMM_E_RANK_LOST && round < kMaxRounds) {
          // Another fault: stop what is left of this re-execution and agree again, on what is dead now.
          logf(c->ctx, 0, "Rank%u comm %u: a fault during the re-execution of %s seq %llu: agreeing again (round %u)", c->rank, c->id,
               op.kind, static_cast<unsigned long long>(op.seq), round + 1);
          c->rec.error = news;
          c->rec.recovered_round = c->rec.error.at_ns + 1;
          port::device_abort(ctx);
          forget_mesh_debts(ctx);
          probe_dead_links(c);
          continue;
        }
        if (news.code != HCOMM_SUCCESS) {
          c->rec.error = news;  // the latest fault stands
          c->rec.recovered_round = c->rec.error.at_ns + 1;
        }
        if (out == HCOMM_E_AGAIN) out = c->rec.error.code;
        break;
      }
      {  // always logged (whatever HCOMM_DEBUG says): the run recovered from a fault
        const std::string line = "[HCOMM_WARN] Rank" + std::to_string(c->rank) + " comm " + std::to_string(c->id) + ": " + op.kind + " seq " +
                                 std::to_string(op.seq) + (op.from ? " resumed from its inputs " : " re-executed from its inputs ") +
                                 (c->rec.avoid ? "on a " : "") + after + " (op retry, " + std::to_string(resent) + " B)";
        port::log(ctx, 1, line.c_str());
      }
      report(c, action, before, after, resent, resumed, &op);
      c->rec.error = CommError{};  // recovered: the communicator is healthy again (on the avoiding paths)
      c->rec.retry_wanted = false;
      break;
    }
  }
  ctx->rec.pending.clear();
  ctx->rec.recovering = false;
  return out;
}

}  // namespace

hcomm_result_t check(hcomm_comm_t comm) {
  bool aborts = false;
  if (!comm->ctx->rec.recovering && drain(comm->ctx, &aborts) && comm->rec.error.code != HCOMM_SUCCESS) {
    if (!aborts && settle_without_work(comm->ctx)) return comm->rec.error.code;
    const hcomm_result_t rc = recover(comm->ctx);
    if (rc == HCOMM_E_AGAIN) return HCOMM_SUCCESS;
  }
  if (comm->rec.cb_owed && !comm->ctx->rec.recovering && comm->rec.error.code != HCOMM_SUCCESS) {  // no recovery ran for it
    comm->rec.cb_owed = false;
    if (comm->rec.error_cb) comm->rec.error_cb(comm, comm->rec.error.code, comm->rec.error.text.c_str(), comm->rec.error_cb_data);
  }
  return comm->rec.error.code;
}

namespace {
// `s` has no communicator work left: each live communicator on it has one busy stream fewer.
void clear_used(hcomm_stream_t s) {
  for (hcomm_comm_t c : s->used_by)
    if (std::find(s->ctx->rec.comms.begin(), s->ctx->rec.comms.end(), c) != s->ctx->rec.comms.end() && c->rec.busy_streams) --c->rec.busy_streams;
  s->used_by.clear();
}

// This context's NIC raised a port-error event (IBV_EVENT_PORT_ERR) that is news: its port went
// down after the last recovery agreement read it as down. Takes every delivered event.
bool fresh_port_event(hcomm_context_t ctx, std::string* text, std::uint64_t* since_ns) {
  bool fresh = false;
  take_events(ctx);
  const std::vector<DeviceEvent> stash = std::move(ctx->rec.port_stash);
  ctx->rec.port_stash.clear();
  for (const DeviceEvent& ev : stash) {
    if (ctx->rec.nic_down_known_ns && ev.since_ns <= ctx->rec.nic_down_known_ns) {
      logf(ctx, 1, "Device%u: %s (already known to the recovery: ignored)", ctx->device_id, ev.text.c_str());
      continue;
    }
    fresh = true;
    *text = ev.text;
    *since_ns = ev.since_ns;
  }
  return fresh;
}

// Whether `c` has members on another server (its traffic may cross this rank's NIC).
bool spans_servers(hcomm_comm_t c) {
  const RankDesc* me = peer_desc(c, c->rank);
  if (!me) return false;
  for (std::uint32_t r = 0; r < c->nranks; ++r) {
    RankDesc d;
    auto it = c->peers.find(r);
    if (it != c->peers.end()) { if (it->second.server != me->server) return true; continue; }
    if (port::rank_desc(c->ctx, global_rank(c, r), &d) == HCOMM_SUCCESS && d.server != me->server) return true;
  }
  return false;
}
}  // namespace

namespace {
// A failure of `s`'s synchronize (rc: HCOMM_E_RUNTIME, a task of this device failed or its NIC's
// port went down; HCOMM_E_REMOTE, a report arrived). See on_sync_failure.
hcomm_result_t handle(hcomm_stream_t s, hcomm_result_t rc, const std::string& why, bool port_event, std::uint64_t port_since) {
  hcomm_context_t ctx = s->ctx;
  if (ctx->rec.recovering) {  // the re-execution's own synchronize: a new fault fails it, stale reports do not
    if (rc != HCOMM_E_REMOTE) {
      // A task of the re-execution failed: the other members wait in their own re-execution, so
      // they are told now (a report marked with this re-execution, news to them), not left to
      // their timeout. The recovery restores the communicator's error afterwards.
      for (const PendingOp& p : ctx->rec.pending) {  // the operations being re-executed on this stream
        hcomm_comm_t c = p.comm;
        if (p.stream != s || c->nranks < 2) continue;
        set_error(c, HCOMM_E_RUNTIME, c->rank, "rank " + std::to_string(me_global(c)) + " (comm rank " + std::to_string(c->rank) + "): " + why);
        probe_dead_links(c);
        broadcast_abort(c, c->cfg.op_retry && p.retryable);
      }
      return rc;
    }
    bool fresh = false;
    for (hcomm_comm_t c : ctx->rec.comms) fresh = fresh || c->rec.error.code != HCOMM_SUCCESS;
    if (fresh) return rc;
    drain(ctx);
    for (hcomm_comm_t c : ctx->rec.comms) fresh = fresh || c->rec.error.code != HCOMM_SUCCESS;
    return fresh ? rc : HCOMM_E_AGAIN;
  }
  if (rc == HCOMM_E_REMOTE) {
    bool aborts = false;
    if (!drain(ctx, &aborts)) return HCOMM_E_AGAIN;  // nothing for a communicator of this context: keep waiting
    // Heartbeat LOST news only, while no communicator work is in flight (e.g. the host waits on a
    // plain copy): recorded, nothing stopped; the next call on the communicator returns the error.
    if (!aborts && s->used_by.empty() && settle_without_work(ctx)) return HCOMM_E_AGAIN;
  } else {
    drain(ctx);  // a peer's report may have arrived already
    // The communicators with work on this stream (a failure of a plain copy concerns none). A
    // port event concerns those with members on another server and work on this stream or on
    // another one not yet synchronized (the host may wait on a helper stream).
    std::vector<hcomm_comm_t> hit;
    for (hcomm_comm_t c : ctx->rec.comms) {
      const bool here = std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end();
      if (port_event ? (here || c->rec.busy_streams > 0) && spans_servers(c) : here) hit.push_back(c);
    }
    bool any_error = false;
    for (hcomm_comm_t c : ctx->rec.comms) any_error = any_error || c->rec.error.code != HCOMM_SUCCESS;
    if (port_event && hit.empty() && !any_error) {
      // No work crosses the NIC now: the event is owed to the next synchronize of such work.
      ctx->rec.port_owed = why;
      ctx->rec.port_owed_since_ns = port_since;
      logf(ctx, 1, "Device%u: no communicator work crosses the NIC now; the port event is taken at the next synchronize of such work",
           ctx->device_id);
      return HCOMM_E_AGAIN;
    }
    clear_used(s);
    if (hit.empty() && !any_error) return rc;
    for (hcomm_comm_t c : hit) {
      if (c->nranks < 2) continue;
      probe_dead_links(c);
      const bool fresh = c->rec.error.code == HCOMM_SUCCESS;
      set_error(c, HCOMM_E_RUNTIME, c->rank, "rank " + std::to_string(me_global(c)) + " (comm rank " + std::to_string(c->rank) + "): " + why);
      if (!fresh) continue;
      const PendingOp* p = pending_of(c);
      c->rec.retry_wanted = c->cfg.op_retry && p && p->retryable;
      broadcast_abort(c, c->rec.retry_wanted);
    }
  }
  return recover(ctx);
}
}  // namespace

hcomm_result_t on_sync_failure(hcomm_stream_t s, hcomm_result_t rc, const std::string& why_in) {
  hcomm_context_t ctx = s->ctx;
  // An interruption may be this device's own NIC port-error event (docs/failover.md#nic-port-event):
  // taken like a failed task of the device.
  if (rc == HCOMM_E_REMOTE) {
    std::string text;
    std::uint64_t since = 0;
    if (fresh_port_event(ctx, &text, &since)) {
      const std::string why = "NIC port event (IBV_EVENT_PORT_ERR): " + text;
      logf(ctx, 0, "Device%u stream %u: %s", ctx->device_id, s->id, why.c_str());
      return handle(s, HCOMM_E_RUNTIME, why, true, since);
    }
  }
  return handle(s, rc, why_in, false, 0);
}

hcomm_result_t owed_port_event(hcomm_stream_t s) {
  hcomm_context_t ctx = s->ctx;
  if (ctx->rec.port_owed.empty() || ctx->rec.recovering) return HCOMM_E_AGAIN;
  NicInfo n;
  if ((port::nic_info(ctx, &n) == HCOMM_SUCCESS && n.present && n.link_up) ||
      (ctx->rec.nic_down_known_ns && ctx->rec.port_owed_since_ns <= ctx->rec.nic_down_known_ns)) {
    ctx->rec.port_owed.clear();  // up again, or a recovery since knew the NIC down: nothing owed
    return HCOMM_E_AGAIN;
  }
  bool crosses = false;
  for (hcomm_comm_t c : ctx->rec.comms)
    crosses = crosses || (std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end() && spans_servers(c));
  if (!crosses) return HCOMM_E_AGAIN;
  const std::string why = ctx->rec.port_owed + " (taken at the next synchronize of work across servers)";
  ctx->rec.port_owed.clear();
  logf(ctx, 0, "Device%u stream %u: %s", ctx->device_id, s->id, why.c_str());
  return handle(s, HCOMM_E_RUNTIME, why, true, ctx->rec.port_owed_since_ns);
}

void slice_done(hcomm_comm_t comm, hcomm_stream_t s, std::uint64_t done, std::uint64_t total) {
  if (!comm->mark_base || done >= total) return;
  if (!comm->rec.prog_event) comm->rec.prog_event = new_event_id(comm->ctx);
  DrvTask t;
  t.kind = DrvTaskKind::EventRecord;
  t.key = comm->rec.prog_event;
  t.value = comm->mark_base + comm->mark_shift + done;
  t.passive = true;  // written with the slice's last task's completion: fault-free runs pay nothing
  port::submit(s, t);
}

void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op) {
  if (!comm->cfg.op_retry || comm->ctx->rec.recovering) return;
  // Two entries per communicator and stream say "more than one" as well as a thousand (op retry
  // re-executes only a lone pending operation): memory stays bounded when the caller submits
  // many collectives before it synchronizes.
  std::uint32_t same = 0;
  for (const PendingOp& q : comm->ctx->rec.pending) same += q.comm == comm && q.stream == s;
  if (same >= 2) return;
  PendingOp p = op;
  p.comm = comm;
  p.stream = s;
  comm->ctx->rec.pending.push_back(p);
}

std::uint64_t heartbeat_ns(hcomm_stream_t s) {
  std::uint64_t hb = 0;
  for (hcomm_comm_t c : s->ctx->rec.comms)  // live ones only
    if (std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end() && c->cfg.heartbeat_timeout_ms && (!hb || c->cfg.heartbeat_timeout_ms * 1000000ULL < hb)) hb = c->cfg.heartbeat_timeout_ms * 1000000ULL;
  return hb;
}

void uses(hcomm_comm_t comm, hcomm_stream_t s) {
  if (s && std::find(s->used_by.begin(), s->used_by.end(), comm) == s->used_by.end()) {
    s->used_by.push_back(comm);
    ++comm->rec.busy_streams;
  }
}

void synced(hcomm_stream_t s) {
  clear_used(s);
  auto& v = s->ctx->rec.pending;
  if (v.empty() || s->ctx->rec.recovering) return;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const PendingOp& p) { return p.stream == s; }), v.end());
}

void comm_created(hcomm_comm_t comm) {
  hcomm_context_t ctx = comm->ctx;
  if (ctx->rec.grank < 0) ctx->rec.grank = global_rank(comm, comm->rank);
  ctx->rec.comms.push_back(comm);
  hb_update(ctx);
}

void comm_destroyed(hcomm_comm_t comm) {
  hcomm_context_t ctx = comm->ctx;
  if (!live(ctx, kCtx)) return;
  ctx->rec.comms.erase(std::remove(ctx->rec.comms.begin(), ctx->rec.comms.end(), comm), ctx->rec.comms.end());
  hb_update(ctx);
  auto& v = ctx->rec.pending;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const PendingOp& p) { return p.comm == comm; }), v.end());
}

}  // namespace failover
}  // namespace hcomm::detail
