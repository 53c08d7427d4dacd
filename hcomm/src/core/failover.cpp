// Failover (docs/failover.md): see core/failover.h for the protocol.
#include "core/failover.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/failover_msg.h"
#include "core/retry_path.h"
#include "core/ring_order.h"
#include "core/stream.h"
#include "driver_port.h"

namespace hcomm::detail {

// Set by the collective runner (coll/run.cpp): re-submit a pending collective. The core cannot
// include the collectives (tests/layering_test.sh), so they register themselves.
hcomm_result_t (*g_rerun_op)(hcomm_comm_t, const PendingOp&) = nullptr;
void (*g_redecide_routes)(hcomm_comm_t, const std::vector<std::uint32_t>&, const std::string&) = nullptr;
std::uint32_t (*g_reroute_broken)(hcomm_comm_t, const std::string&) = nullptr;

namespace failover {

namespace {

hcomm_comm_t find_comm(hcomm_context_t ctx, std::uint32_t id) {
  for (hcomm_comm_t c : ctx->comms)
    if (c->id == id) return c;
  return nullptr;
}

void add_pair(hcomm_comm_t c, std::uint32_t a, std::uint32_t b) {
  if (a == b || a >= c->nranks || b >= c->nranks) return;
  const auto p = std::minmax(a, b);
  const std::pair<std::uint32_t, std::uint32_t> q{p.first, p.second};
  auto it = std::lower_bound(c->dead_pairs.begin(), c->dead_pairs.end(), q);
  if (it == c->dead_pairs.end() || *it != q) c->dead_pairs.insert(it, q);
}

void add_lost(hcomm_comm_t c, std::uint32_t r) {
  auto it = std::lower_bound(c->lost.begin(), c->lost.end(), r);
  if (it == c->lost.end() || *it != r) c->lost.insert(it, r);
}

// The HCCS links of this rank that are down, as comm-rank pairs (its port registers; a port's
// number is the device id it is cabled to, docs/discovery.md).
void probe_dead_links(hcomm_comm_t c) {
  const RankDesc* me = peer_desc(c, c->rank);
  if (!me) return;
  std::uint32_t down = 0;
  for (std::uint32_t p = 0; p < kHccsPortCount; ++p) {
    HccsPortInfo info;
    if (port::hccs_port(c->ctx, p, &info) == HCOMM_SUCCESS && info.cabled && !info.up) down |= 1u << p;
  }
  if (!down) return;
  for (std::uint32_t r = 0; r < c->nranks; ++r) {  // only on a failure: a scan of the descriptors
    const RankDesc* d = r == c->rank ? nullptr : peer_desc(c, r);
    if (d && d->server == me->server && d->device_id < kHccsPortCount && (down >> d->device_id & 1u)) add_pair(c, c->rank, r);
  }
}

void report(hcomm_comm_t c, const char* action, const std::string& path_before, const std::string& path_after,
            std::uint64_t bytes, std::uint64_t resumed_ns, const PendingOp* op = nullptr) {
  FailoverInfo f;
  f.comm = c->id;
  f.rank = me_global(c);
  f.origin = c->error.origin >= 0 ? static_cast<std::int64_t>(global_rank(c, static_cast<std::uint32_t>(c->error.origin))) : -1;
  f.op_seq = op ? op->seq : c->op_seq ? c->op_seq - 1 : 0;
  f.fault = c->error.text;
  f.action = action;
  f.path_before = path_before;
  f.path_after = path_after;
  f.code = resumed_ns ? 0 : c->error.code;
  f.bytes_resent = bytes;
  f.detected_ns = c->error.at_ns;
  f.resumed_ns = resumed_ns;
  port::failover_reported(c->ctx, f);
}

// The first error the communicator learns: sticky, logged, and the callback told.
void set_error(hcomm_comm_t c, hcomm_result_t code, std::int64_t origin, const std::string& text) {
  if (c->error.code != HCOMM_SUCCESS) return;
  c->error.code = code;
  c->error.origin = origin;
  c->error.text = text;
  c->error.at_ns = port::now_ns(c->ctx);
  logf(c->ctx, 0, "Rank%u comm %u: %s (%s)", c->rank, c->id, hcomm_result_string(code), text.c_str());
  if (c->error_cb) c->error_cb(c, code, c->error.text.c_str(), c->error_cb_data);
}

const PendingOp* pending_of(hcomm_comm_t c) {
  const PendingOp* found = nullptr;
  std::uint32_t n = 0;
  for (const PendingOp& p : c->ctx->pending)
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
bool roce_failure(hcomm_comm_t c) { return c->error.text.find("RDMA write failed") != std::string::npos; }

std::uint64_t agree_timeout_ns(hcomm_comm_t c) {
  const std::uint64_t hb = c->cfg.heartbeat_timeout_ms;
  return (hb ? hb : std::min<std::uint64_t>(c->cfg.timeout_ms, 1000)) * 1000000ULL;
}

// The agreement (core/failover.h). True: every rank re-executes on the ring the coordinator
// chose (c->ring_order) avoiding the merged dead pairs and dead NICs.
//
// GO's list: the lost ranks, the dead NICs, the ring order as the positions where it differs from
// comm-rank order (position, rank), then the dead pairs, each list with its count first but the
// pairs (to the end); its text: the order's description (GO) or why not (NO-GO).
bool agree(hcomm_comm_t c, bool can) {
  const std::uint64_t round = ++c->retries;
  std::uint32_t coord = 0;
  while (std::binary_search(c->lost.begin(), c->lost.end(), coord) && coord < c->nranks) ++coord;
  if (coord >= c->nranks) return false;
  // The coordinator gives the others one timeout to answer; they give it two (it may spend the
  // first waiting for a lost rank) plus the RESET round.
  const std::uint64_t deadline = port::now_ns(c->ctx) + agree_timeout_ns(c) * (c->rank == coord ? 1 : 3);
  auto pairs = [&] {
    std::vector<std::uint32_t> v;
    for (const auto& [a, b] : c->dead_pairs) { v.push_back(a); v.push_back(b); }
    return v;
  };
  const bool my_nic_down = nic_down(c);
  if (my_nic_down) c->ctx->nic_down_known_ns = port::now_ns(c->ctx);  // port events of this NIC until now are known
  const bool my_roce = roce_failure(c);
  c->roce_failed = false;
  if (c->rank != coord) {
    Msg m;
    m.kind = kReady; m.comm = c->id; m.origin = c->rank; m.seq = round;
    m.flag = static_cast<std::uint8_t>((can ? 1 : 0) | (my_nic_down ? 2 : 0) | (my_roce ? 4 : 0));
    m.list = pairs();
    send_ctrl(c, coord, m);
    Msg in;
    if (!recv_ctrl(c, coord, round, deadline, &in)) {
      add_lost(c, coord);
      logf(c->ctx, 0, "Rank%u comm %u: recovery coordinator rank %u did not answer: lost", c->rank, c->id, coord);
      return false;
    }
    if (in.kind == kReset) {
      port::notify_reset(c->ctx);
      Msg r2;
      r2.kind = kReady2; r2.comm = c->id; r2.origin = c->rank; r2.seq = round;
      send_ctrl(c, coord, r2);
      if (!recv_ctrl(c, coord, round, deadline, &in)) { add_lost(c, coord); return false; }
    }
    if (in.kind != kGo || in.list.empty()) return false;
    std::size_t at = 0;
    auto next = [&]() -> std::uint32_t { return at < in.list.size() ? in.list[at++] : 0; };
    const std::uint32_t nlost = next();
    for (std::uint32_t i = 0; i < nlost; ++i) add_lost(c, next());
    const std::uint32_t nnic = next();
    c->dead_nics.clear();
    for (std::uint32_t i = 0; i < nnic; ++i) c->dead_nics.push_back(next());
    const std::uint32_t ndiff = next();
    c->ring_order.clear();
    if (ndiff) {
      c->ring_order.resize(c->nranks);
      for (std::uint32_t r = 0; r < c->nranks; ++r) c->ring_order[r] = r;
      for (std::uint32_t i = 0; i < ndiff; ++i) {
        const std::uint32_t pos = next(), r = next();
        if (pos < c->nranks && r < c->nranks) c->ring_order[pos] = r;
      }
    }
    for (; at + 1 < in.list.size(); at += 2) add_pair(c, in.list[at], in.list[at + 1]);
    if (in.flag) c->ring_desc = in.text;
    else logf(c->ctx, 0, "Rank%u comm %u: the recovery coordinator says no re-execution: %s", c->rank, c->id, in.text.c_str());
    c->roce_failed = (in.flag & 2) != 0;
    return (in.flag & 1) != 0;
  }
  // The coordinator: every other rank's READY, in rank order.
  bool go = can;
  std::string why = can ? "" : "the coordinator holds no re-executable operation";
  std::vector<std::uint32_t> dead_nics;
  if (my_nic_down) dead_nics.push_back(c->rank);
  bool roce = my_roce;
  for (std::uint32_t r = 0; r < c->nranks; ++r) {
    if (r == c->rank || std::binary_search(c->lost.begin(), c->lost.end(), r)) continue;
    Msg in;
    if (!recv_ctrl(c, r, round, deadline, &in) || in.kind != kReady) {
      add_lost(c, r);
      logf(c->ctx, 0, "Rank%u comm %u: rank %u did not answer the recovery agreement: lost", c->rank, c->id, r);
      continue;
    }
    if (!(in.flag & 1) && go) { go = false; why = "comm rank " + std::to_string(r) + " holds no re-executable operation"; }
    if (in.flag & 2) dead_nics.push_back(r);
    if (in.flag & 4) roce = true;
    for (std::size_t i = 0; i + 1 < in.list.size(); i += 2) add_pair(c, in.list[i], in.list[i + 1]);
  }
  std::sort(dead_nics.begin(), dead_nics.end());
  c->dead_nics = dead_nics;
  if (!c->lost.empty() && go) { go = false; why = "comm rank " + std::to_string(c->lost.front()) + " is lost"; }
  // The ring order (core/ring_order.h): servers contiguous, inside each a path over its live
  // links whose two ends (the RoCE edges) have live NICs.
  c->ring_order.clear();
  c->ring_desc.clear();
  if (go) {
    const RingOrderIn in = ring_input(c, dead_nics);
    std::string no;
    if (!ring_order(in, &c->ring_order, &no)) {
      go = false;
      why = "no ring order avoids the dead links and NICs: " + no;
      c->ring_order.clear();
    } else {
      c->ring_desc = describe_order(in, c->ring_order);
    }
  }
  if (!go) logf(c->ctx, 0, "Rank%u comm %u: no re-execution: %s", c->rank, c->id, why.c_str());
  auto members = [&](auto&& f) {
    for (std::uint32_t r = 0; r < c->nranks; ++r)
      if (r != c->rank && !std::binary_search(c->lost.begin(), c->lost.end(), r)) f(r);
  };
  if (go) {  // every rank has aborted: nothing of the failed attempt is in flight any more
    Msg rs;
    rs.kind = kReset; rs.comm = c->id; rs.origin = c->rank; rs.seq = round;
    members([&](std::uint32_t r) { send_ctrl(c, r, rs); });
    port::notify_reset(c->ctx);
    members([&](std::uint32_t r) {
      Msg in;
      if (!recv_ctrl(c, r, round, deadline, &in) || in.kind != kReady2) {
        add_lost(c, r);
        if (go) why = "comm rank " + std::to_string(r) + " did not answer RESET";
        go = false;
      }
    });
  }
  Msg g;
  c->roce_failed = go && roce;
  g.kind = kGo; g.comm = c->id; g.origin = c->rank; g.seq = round;
  g.flag = static_cast<std::uint8_t>((go ? 1 : 0) | (c->roce_failed ? 2 : 0));  // 2: re-probe the RoCE paths
  g.list.push_back(static_cast<std::uint32_t>(c->lost.size()));
  g.list.insert(g.list.end(), c->lost.begin(), c->lost.end());
  g.list.push_back(static_cast<std::uint32_t>(dead_nics.size()));
  g.list.insert(g.list.end(), dead_nics.begin(), dead_nics.end());
  std::vector<std::uint32_t> diff;
  for (std::uint32_t i = 0; go && i < c->ring_order.size(); ++i)
    if (c->ring_order[i] != i) { diff.push_back(i); diff.push_back(c->ring_order[i]); }
  g.list.push_back(static_cast<std::uint32_t>(diff.size() / 2));
  g.list.insert(g.list.end(), diff.begin(), diff.end());
  for (std::uint32_t v : pairs()) g.list.push_back(v);
  g.text = go ? c->ring_desc : why;
  members([&](std::uint32_t r) { send_ctrl(c, r, g); });
  if (diff.empty()) c->ring_order.clear();  // comm-rank order
  return go;
}

// ---- the host's device events: heartbeat LOST, port up, CRC storm (docs/failover.md) ----

// Comm rank of global rank g in c (~0u: not a member).
std::uint32_t comm_rank_of(hcomm_comm_t c, std::uint32_t g) {
  if (c->members.empty()) return g < c->nranks ? g : ~0u;
  for (std::uint32_t r = 0; r < c->members.size(); ++r)
    if (c->members[r] == g) return r;
  return ~0u;
}

// The heartbeat agent (its own detection, or a notice from the agent that detected it) says rank
// ev.peer is LOST: every communicator of this context holding it is put in error with
// HCOMM_E_RANK_LOST, detected when the host learned it (ev.at_ns), and lists it as lost.
void peer_lost(hcomm_context_t ctx, const DeviceEvent& ev) {
  const std::uint32_t g = ev.peer;
  if (ctx->grank >= 0 && g == static_cast<std::uint32_t>(ctx->grank)) return;
  auto it = std::lower_bound(ctx->lost_global.begin(), ctx->lost_global.end(), g);
  if (it != ctx->lost_global.end() && *it == g) return;  // a second notice
  ctx->lost_global.insert(it, g);
  for (hcomm_comm_t c : ctx->comms) {
    const std::uint32_t cr = c->nranks >= 2 ? comm_rank_of(c, g) : ~0u;
    if (cr == ~0u) continue;
    add_lost(c, cr);
    if (c->error.code != HCOMM_SUCCESS) continue;
    const std::uint32_t by = ev.reporter == static_cast<std::uint32_t>(ctx->grank) ? ~0u : comm_rank_of(c, ev.reporter);
    const std::string who = ev.reporter == static_cast<std::uint32_t>(ctx->grank) ? "this rank's heartbeat agent"
                                                                                   : "rank " + std::to_string(ev.reporter) + "'s heartbeat agent";
    set_error(c, HCOMM_E_RANK_LOST, by == ~0u ? -1 : static_cast<std::int64_t>(by),
              "comm rank " + std::to_string(cr) + " (rank " + std::to_string(g) + ") LOST, reported by " + who + ": " + ev.text);
    c->error.at_ns = ev.at_ns;  // when the host learned it (the application may have been away)
    c->retry_wanted = false;
    ctx->lost_news = true;
  }
}

// IBV_EVENT_PORT_ACTIVE: this NIC has its link again. The context forgets what it owed or knew of
// the port being down; each communicator drops this rank from its dead NICs (routes to peers may
// probe through it again; the op retry's ring order, if one was adopted, stays: not re-planned).
void port_up(hcomm_context_t ctx, const DeviceEvent& ev) {
  // Always logged (whatever HCOMM_DEBUG says), as the recovery lines are.
  port::log(ctx, 1, ("[HCOMM_WARN] Device" + std::to_string(ctx->device_id) + ": NIC port event (IBV_EVENT_PORT_ACTIVE): " + ev.text +
                     "; NIC-down state cleared").c_str());
  ctx->port_owed.clear();
  ctx->port_owed_since_ns = 0;
  ctx->nic_down_known_ns = 0;
  // A port-down event taken but not yet handled that the port-up follows is stale.
  ctx->port_stash.erase(std::remove_if(ctx->port_stash.begin(), ctx->port_stash.end(),
                                       [&](const DeviceEvent& d) { return d.since_ns <= ev.since_ns; }),
                        ctx->port_stash.end());
  for (hcomm_comm_t c : ctx->comms) {
    auto it = std::lower_bound(c->dead_nics.begin(), c->dead_nics.end(), c->rank);
    if (it != c->dead_nics.end() && *it == c->rank) c->dead_nics.erase(it);
  }
  ++ctx->nic_ups;
}

// A CRC storm on a link of this device: non-fatal (the link's replay keeps the data correct, only
// slower). Logged as a warning and recorded as a `failovers` row with action "warn", code 0, for
// each communicator of the context; no communicator is put in error.
void link_storm(hcomm_context_t ctx, const DeviceEvent& ev) {
  ++ctx->link_storms;
  port::log(ctx, 1, ("[HCOMM_WARN] Device" + std::to_string(ctx->device_id) + ": " + ev.text + " (non-fatal: no abort)").c_str());
  for (hcomm_comm_t c : ctx->comms) {
    FailoverInfo f;
    f.comm = c->id;
    f.rank = me_global(c);
    f.op_seq = c->op_seq ? c->op_seq - 1 : 0;
    f.fault = ev.text;
    f.action = "warn";
    f.detected_ns = ev.at_ns;
    port::failover_reported(ctx, f);
    break;  // one row per rank (the first communicator)
  }
}

// Take every delivered device event: port-down events are kept for fresh_port_event (they concern
// the synchronize that reads them), the others are handled here.
void take_events(hcomm_context_t ctx) {
  DeviceEvent ev;
  while (port::device_event_poll(ctx, &ev) == HCOMM_SUCCESS) {
    switch (ev.kind) {
      case DeviceEventKind::NicPortDown: ctx->port_stash.push_back(ev); break;
      case DeviceEventKind::NicPortUp: port_up(ctx, ev); break;
      case DeviceEventKind::PeerLost: peer_lost(ctx, ev); break;
      case DeviceEventKind::LinkErrorStorm: link_storm(ctx, ev); break;
    }
  }
}

// Tell every other member of `c` (urgent messages).
void broadcast_abort(hcomm_comm_t c, bool retry) {
  Msg m;
  m.kind = kAbort;
  m.comm = c->id;
  m.origin = c->rank;
  m.code = c->error.code;
  m.seq = c->op_seq;
  // Bit 0: retry requested; bits 1-7: how many re-executions of this operation the sender had
  // started (a failure during a re-execution is news to ranks that recovered from the first one).
  const std::uint32_t attempt = c->stale_below == c->op_seq ? std::min<std::uint32_t>(c->stale_attempt, 127) : 0;
  m.flag = static_cast<std::uint8_t>((retry ? 1 : 0) | (attempt << 1));
  for (const auto& [a, b] : c->dead_pairs) { m.list.push_back(a); m.list.push_back(b); }
  m.text = c->error.text;
  const CtrlMsg raw = encode(m);
  for (std::uint32_t r = 0; r < c->nranks; ++r)
    if (r != c->rank) port::ctrl_signal(c->ctx, me_global(c), global_rank(c, r), raw);
}

// Read every urgent message that has arrived; returns whether one concerned a communicator here.
bool drain(hcomm_context_t ctx, bool* aborts = nullptr) {
  if (ctx->grank < 0) return false;
  take_events(ctx);
  bool any = false;
  for (;;) {
    std::uint32_t from = 0;
    CtrlMsg raw;
    if (port::ctrl_signal_poll(ctx, static_cast<std::uint32_t>(ctx->grank), &from, &raw) != HCOMM_SUCCESS) break;
    Msg m;
    if (!decode(raw, &m) || m.kind != kAbort) continue;
    hcomm_comm_t c = find_comm(ctx, m.comm);
    if (!c || m.origin >= c->nranks) continue;  // a communicator already destroyed here
    // Another rank's report of a fault already recovered from (stale_below 0: none yet; a report
    // of seq 0, a p2p fault before any collective, is news); a report of the re-executed
    // operation sent during its latest re-execution is news too.
    const std::uint32_t attempt = m.flag >> 1;
    if (c->stale_below && (m.seq < c->stale_below || (m.seq == c->stale_below && attempt < std::min<std::uint32_t>(c->stale_attempt, 127))))
      continue;
    any = true;
    for (std::size_t i = 0; i + 1 < m.list.size(); i += 2) add_pair(c, m.list[i], m.list[i + 1]);
    if (c->error.code == HCOMM_SUCCESS) {
      set_error(c, HCOMM_E_REMOTE, m.origin,
                "comm rank " + std::to_string(m.origin) + " (rank " + std::to_string(global_rank(c, m.origin)) + ") reported " +
                    hcomm_result_string(static_cast<hcomm_result_t>(m.code)) + ": " + m.text);
      c->retry_wanted = (m.flag & 1) != 0 && c->cfg.op_retry;
    }
  }
  if (aborts) *aborts = any;
  const bool lost = ctx->lost_news;
  ctx->lost_news = false;
  return any || lost;
}

// Only heartbeat LOST news and no communicator work in flight on this device (the ranks are
// between operations, or the host waits on a plain copy): nothing to stop, nothing to re-execute;
// each communicator in error records its failover (detected when the host's agent learned it).
bool settle_without_work(hcomm_context_t ctx) {
  for (hcomm_comm_t c : ctx->comms)
    if (c->busy_streams > 0) return false;
  for (hcomm_comm_t c : ctx->comms) {
    if (c->error.code == HCOMM_SUCCESS || c->recovered_round == c->error.at_ns + 1) continue;
    c->recovered_round = c->error.at_ns + 1;
    report(c, "abort", "", "", 0, 0, pending_of(c));
  }
  return true;
}

// Run the recoveries the communicators of `ctx` need. Returns HCOMM_E_AGAIN when every one that
// had the failure re-executed its operation successfully, else the first error code.
hcomm_result_t recover(hcomm_context_t ctx) {
  ctx->recovering = true;
  port::device_abort(ctx);  // stop what is left of the failed attempt on this device (all its streams)
  ctx->mesh_owed.clear();
  hcomm_result_t out = HCOMM_E_AGAIN;
  const std::vector<hcomm_comm_t> comms = ctx->comms;
  for (hcomm_comm_t c : comms) {
    if (c->error.code == HCOMM_SUCCESS || c->recovered_round == c->error.at_ns + 1) continue;
    c->recovered_round = c->error.at_ns + 1;  // one recovery per error
    c->pulled_from.clear();
    const PendingOp* p = pending_of(c);
    const bool want = c->retry_wanted && c->cfg.op_retry;
    if (!want) {
      report(c, "abort", "", "", 0, 0, p);
      if (out == HCOMM_E_AGAIN) out = c->error.code;
      continue;
    }
    const bool can = p && p->retryable;
    const std::string before = c->dead_pairs.empty() ? "as selected" : "as selected; dead hccs " + pairs_text(c);
    if (!agree(c, can)) {
      std::string why;
      if (!can) why += "; this rank holds no re-executable operation";
      if (!c->lost.empty()) {
        why += "; lost comm rank(s)";
        for (std::uint32_t l : c->lost) why += " " + std::to_string(l);
      }
      if (why.empty()) why = "; the coordinator found no safe re-execution (logged above)";
      logf(c->ctx, 0, "Rank%u comm %u: op retry not possible (%s); the error stands", c->rank, c->id, why.c_str() + 2);
      report(c, "abort", before, "", 0, 0, p);
      if (out == HCOMM_E_AGAIN) out = c->error.code;
      continue;
    }
    // An RDMA write failed somewhere: before re-executing, every rank re-probes its RoCE QPs'
    // paths and moves those whose probe is lost (a dead cable between switches) to new source
    // ports (route/route.cpp), so the re-execution does not fail on the same cable.
    std::string after_extra;
    if (c->roce_failed && c->ctx->retry_reroute && g_reroute_broken) {
      // The trigger names the fault as the error's text does: "RDMA write failed: ... (...)".
      const std::size_t at = c->error.text.find("RDMA write failed");
      std::string what = at == std::string::npos ? c->error.text : c->error.text.substr(at);
      if (const std::size_t close = what.find(')'); close != std::string::npos) what.resize(close + 1);
      char trig[192];
      std::snprintf(trig, sizeof trig, "op retry of %s seq %llu: %s", p->kind, static_cast<unsigned long long>(p->seq), what.c_str());
      const std::uint32_t moved = g_reroute_broken(c, trig);
      after_extra = "; RoCE re-routed: " + std::to_string(moved) + " QPs on new source ports";
    }
    // Re-execute from the inputs: with the dead HCCS pairs moved to a relay NPU or PCIe where
    // that is all that failed, else on a flat ring that avoids the dead links (coll/run.cpp).
    // Dead NICs only: each borrowed from a server peer's NIC (borrow_nics; it also ends an earlier
    // borrowing when there is nothing to borrow for now). The two are exclusive when they succeed.
    std::string relayed, borrowed;
    const bool by_relay = reroute_hccs(c, &relayed);
    const bool by_lender = borrow_nics(c, &borrowed);
    c->avoid = !by_relay && !by_lender;
    const std::string rerouted = by_relay ? relayed : borrowed;
    const std::string after = (c->avoid ? ring_text(c) : rerouted) + after_extra;
    const PendingOp op = *p;
    const std::uint64_t resumed = port::now_ns(ctx);
    const CommError err = c->error;
    c->error = CommError{};
    c->stale_attempt = c->stale_below == c->op_seq ? c->stale_attempt + 1 : 1;
    c->stale_below = c->op_seq;  // the other reports of this fault are stale from now on
    hcomm_result_t rc = g_rerun_op ? g_rerun_op(c, op) : HCOMM_E_NOT_SUPPORT;
    if (rc == HCOMM_SUCCESS) rc = sync_timeout(op.stream, c->cfg.timeout_ms);
    c->error = err;
    if (rc != HCOMM_SUCCESS) {
      logf(c->ctx, 0, "Rank%u comm %u: op retry of %s seq %llu failed: %s", c->rank, c->id, op.kind,
           static_cast<unsigned long long>(op.seq), hcomm_result_string(rc));
      report(c, "retry", before, after, op.in_bytes, 0, &op);
      if (out == HCOMM_E_AGAIN) out = c->error.code;
      continue;
    }
    {  // always logged (whatever HCOMM_DEBUG says): the run recovered from a fault
      const std::string line = "[HCOMM_WARN] Rank" + std::to_string(c->rank) + " comm " + std::to_string(c->id) + ": " + op.kind + " seq " +
                               std::to_string(op.seq) + " re-executed from its inputs " + (c->avoid ? "on a " : "") + after +
                               " (op retry, " + std::to_string(op.in_bytes) + " B)";
      port::log(ctx, 1, line.c_str());
    }
    report(c, "retry", before, after, op.in_bytes, resumed, &op);
    c->error = CommError{};  // recovered: the communicator is healthy again (on the avoiding paths)
    c->retry_wanted = false;
  }
  ctx->pending.clear();
  ctx->recovering = false;
  return out;
}

}  // namespace

hcomm_result_t check(hcomm_comm_t comm) {
  bool aborts = false;
  if (!comm->ctx->recovering && drain(comm->ctx, &aborts) && comm->error.code != HCOMM_SUCCESS) {
    if (!aborts && settle_without_work(comm->ctx)) return comm->error.code;
    const hcomm_result_t rc = recover(comm->ctx);
    if (rc == HCOMM_E_AGAIN) return HCOMM_SUCCESS;
  }
  return comm->error.code;
}

namespace {
// `s` has no communicator work left: each live communicator on it has one busy stream fewer.
void clear_used(hcomm_stream_t s) {
  for (hcomm_comm_t c : s->used_by)
    if (std::find(s->ctx->comms.begin(), s->ctx->comms.end(), c) != s->ctx->comms.end() && c->busy_streams) --c->busy_streams;
  s->used_by.clear();
}

// This context's NIC raised a port-error event (IBV_EVENT_PORT_ERR) that is news: its port went
// down after the last recovery agreement read it as down. Takes every delivered event.
bool fresh_port_event(hcomm_context_t ctx, std::string* text, std::uint64_t* since_ns) {
  bool fresh = false;
  take_events(ctx);
  const std::vector<DeviceEvent> stash = std::move(ctx->port_stash);
  ctx->port_stash.clear();
  for (const DeviceEvent& ev : stash) {
    if (ctx->nic_down_known_ns && ev.since_ns <= ctx->nic_down_known_ns) {
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
  if (ctx->recovering) {  // the re-execution's own synchronize: a new fault fails it, stale reports do not
    if (rc != HCOMM_E_REMOTE) {
      // A task of the re-execution failed: the other members wait in their own re-execution, so
      // they are told now (a report marked with this re-execution, news to them), not left to
      // their timeout. The recovery restores the communicator's error afterwards.
      for (const PendingOp& p : ctx->pending) {  // the operations being re-executed on this stream
        hcomm_comm_t c = p.comm;
        if (p.stream != s || c->nranks < 2) continue;
        set_error(c, HCOMM_E_RUNTIME, c->rank, "rank " + std::to_string(me_global(c)) + " (comm rank " + std::to_string(c->rank) + "): " + why);
        broadcast_abort(c, false);
      }
      return rc;
    }
    bool fresh = false;
    for (hcomm_comm_t c : ctx->comms) fresh = fresh || c->error.code != HCOMM_SUCCESS;
    if (fresh) return rc;
    drain(ctx);
    for (hcomm_comm_t c : ctx->comms) fresh = fresh || c->error.code != HCOMM_SUCCESS;
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
    for (hcomm_comm_t c : ctx->comms) {
      const bool here = std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end();
      if (port_event ? (here || c->busy_streams > 0) && spans_servers(c) : here) hit.push_back(c);
    }
    bool any_error = false;
    for (hcomm_comm_t c : ctx->comms) any_error = any_error || c->error.code != HCOMM_SUCCESS;
    if (port_event && hit.empty() && !any_error) {
      // No work crosses the NIC now: the event is owed to the next synchronize of such work.
      ctx->port_owed = why;
      ctx->port_owed_since_ns = port_since;
      logf(ctx, 1, "Device%u: no communicator work crosses the NIC now; the port event is taken at the next synchronize of such work",
           ctx->device_id);
      return HCOMM_E_AGAIN;
    }
    clear_used(s);
    if (hit.empty() && !any_error) return rc;
    for (hcomm_comm_t c : hit) {
      if (c->nranks < 2) continue;
      probe_dead_links(c);
      const bool fresh = c->error.code == HCOMM_SUCCESS;
      set_error(c, HCOMM_E_RUNTIME, c->rank, "rank " + std::to_string(me_global(c)) + " (comm rank " + std::to_string(c->rank) + "): " + why);
      if (!fresh) continue;
      const PendingOp* p = pending_of(c);
      c->retry_wanted = c->cfg.op_retry && p && p->retryable;
      broadcast_abort(c, c->retry_wanted);
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
  if (ctx->port_owed.empty() || ctx->recovering) return HCOMM_E_AGAIN;
  NicInfo n;
  if ((port::nic_info(ctx, &n) == HCOMM_SUCCESS && n.present && n.link_up) ||
      (ctx->nic_down_known_ns && ctx->port_owed_since_ns <= ctx->nic_down_known_ns)) {
    ctx->port_owed.clear();  // up again, or a recovery since knew the NIC down: nothing owed
    return HCOMM_E_AGAIN;
  }
  bool crosses = false;
  for (hcomm_comm_t c : ctx->comms)
    crosses = crosses || (std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end() && spans_servers(c));
  if (!crosses) return HCOMM_E_AGAIN;
  const std::string why = ctx->port_owed + " (taken at the next synchronize of work across servers)";
  ctx->port_owed.clear();
  logf(ctx, 0, "Device%u stream %u: %s", ctx->device_id, s->id, why.c_str());
  return handle(s, HCOMM_E_RUNTIME, why, true, ctx->port_owed_since_ns);
}

void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op) {
  if (!comm->cfg.op_retry || comm->ctx->recovering) return;
  PendingOp p = op;
  p.comm = comm;
  p.stream = s;
  comm->ctx->pending.push_back(p);
}

std::uint64_t heartbeat_ns(hcomm_stream_t s) {
  std::uint64_t hb = 0;
  for (hcomm_comm_t c : s->ctx->comms)  // live ones only
    if (std::find(s->used_by.begin(), s->used_by.end(), c) != s->used_by.end() && c->cfg.heartbeat_timeout_ms && (!hb || c->cfg.heartbeat_timeout_ms * 1000000ULL < hb)) hb = c->cfg.heartbeat_timeout_ms * 1000000ULL;
  return hb;
}

void uses(hcomm_comm_t comm, hcomm_stream_t s) {
  if (s && std::find(s->used_by.begin(), s->used_by.end(), comm) == s->used_by.end()) {
    s->used_by.push_back(comm);
    ++comm->busy_streams;
  }
}

void synced(hcomm_stream_t s) {
  clear_used(s);
  auto& v = s->ctx->pending;
  if (v.empty() || s->ctx->recovering) return;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const PendingOp& p) { return p.stream == s; }), v.end());
}

hcomm_result_t agree_ids(hcomm_comm_t c, const std::vector<std::uint32_t>& survivors, const std::uint32_t used[8],
                         std::uint32_t all[8]) {
  const std::uint64_t round = (1ULL << 40) + ++c->shrinks;  // apart from the recovery rounds
  const std::uint64_t deadline = port::now_ns(c->ctx) + c->cfg.timeout_ms * 1000000ULL;
  for (int i = 0; i < 8; ++i) all[i] = used[i];
  const std::uint32_t coord = survivors.front();
  Msg m;
  m.comm = c->id;
  m.origin = c->rank;
  m.seq = round;
  if (c->rank != coord) {
    m.kind = kShrink;
    m.list.assign(used, used + 8);
    send_ctrl(c, coord, m);
    Msg in;
    if (!recv_ctrl(c, coord, round, deadline, &in) || in.kind != kShrinkGo || in.list.size() != 8) return HCOMM_E_TIMEOUT;
    for (int i = 0; i < 8; ++i) all[i] = in.list[i];
    return HCOMM_SUCCESS;
  }
  for (std::uint32_t r : survivors) {
    if (r == c->rank) continue;
    Msg in;
    if (!recv_ctrl(c, r, round, deadline, &in) || in.kind != kShrink || in.list.size() != 8) {
      logf(c->ctx, 0, "Rank%u comm %u shrink: survivor rank %u did not answer", c->rank, c->id, r);
      return HCOMM_E_TIMEOUT;
    }
    for (int i = 0; i < 8; ++i) all[i] |= in.list[i];
  }
  m.kind = kShrinkGo;
  m.list.assign(all, all + 8);
  for (std::uint32_t r : survivors)
    if (r != c->rank) send_ctrl(c, r, m);
  return HCOMM_SUCCESS;
}

namespace {
// Register this rank's neighbours with the host's heartbeat agent (docs/failover.md#heartbeat-with-neighbours):
// the ring predecessor and successor in every communicator, deduplicated; on LOST the agent
// tells every member of the communicators (their global ranks as ranges).
void hb_update(hcomm_context_t ctx) {
  if (!ctx->hb_period_ns || ctx->grank < 0) return;
  HeartbeatSpec spec;
  spec.period_ns = ctx->hb_period_ns;
  spec.miss_limit = ctx->hb_misses;
  const std::uint32_t me = static_cast<std::uint32_t>(ctx->grank);
  std::vector<std::uint32_t> all;
  for (hcomm_comm_t c : ctx->comms) {
    if (c->nranks < 2) continue;
    spec.neighbours.push_back(global_rank(c, (c->rank + c->nranks - 1) % c->nranks));
    spec.neighbours.push_back(global_rank(c, (c->rank + 1) % c->nranks));
    if (c->members.empty()) spec.notify.emplace_back(0, c->nranks);
    else all.insert(all.end(), c->members.begin(), c->members.end());
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < all.size();) {  // members as runs of consecutive ranks
    std::size_t j = i + 1;
    while (j < all.size() && all[j] <= all[j - 1] + 1) ++j;
    spec.notify.emplace_back(all[i], all[j - 1] + 1);
    i = j;
  }
  std::sort(spec.notify.begin(), spec.notify.end());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
  for (const auto& r : spec.notify)
    if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  spec.notify = merged;
  std::sort(spec.neighbours.begin(), spec.neighbours.end());
  spec.neighbours.erase(std::unique(spec.neighbours.begin(), spec.neighbours.end()), spec.neighbours.end());
  spec.neighbours.erase(std::remove(spec.neighbours.begin(), spec.neighbours.end(), me), spec.neighbours.end());
  if (spec.neighbours == ctx->hb_neighbours && spec.neighbours.empty()) return;
  if (port::heartbeat_register(ctx, me, spec) != HCOMM_SUCCESS) {
    logf(ctx, 0, "Device%u: the driver has no heartbeat agent: HCOMM_HEARTBEAT_PERIOD_US ignored", ctx->device_id);
    ctx->hb_period_ns = 0;
    return;
  }
  ctx->hb_neighbours = spec.neighbours;
}
}  // namespace

void maybe_restore(hcomm_comm_t c) {
  hcomm_context_t ctx = c->ctx;
  if (!c->avoid || ctx->recovering || c->nranks < 2 || !c->lost.empty() || c->error.code != HCOMM_SUCCESS) return;
  // This rank's part: its NIC is up if it was dead, its HCCS links of the dead pairs are up.
  bool up = true;
  if (std::binary_search(c->dead_nics.begin(), c->dead_nics.end(), c->rank)) {
    NicInfo n;
    up = port::nic_info(ctx, &n) == HCOMM_SUCCESS && n.present && n.link_up;
  }
  if (up) {
    for (const auto& [a, b] : c->dead_pairs) {
      if (a != c->rank && b != c->rank) continue;
      const RankDesc* d = peer_desc(c, a == c->rank ? b : a);
      HccsPortInfo info;
      if (!d || d->device_id >= kHccsPortCount || port::hccs_port(ctx, d->device_id, &info) != HCOMM_SUCCESS || !info.up) up = false;
    }
  }
  const std::uint64_t round = (2ULL << 40) + ++c->restores;  // apart from the recovery and shrink rounds
  const std::uint64_t deadline = port::now_ns(ctx) + agree_timeout_ns(c);
  Msg m;
  m.comm = c->id;
  m.origin = c->rank;
  m.seq = round;
  bool go = up;
  if (c->rank != 0) {
    m.kind = kRestore;
    m.flag = up ? 1 : 0;
    send_ctrl(c, 0, m);
    Msg in;
    go = recv_ctrl(c, 0, round, deadline, &in) && in.kind == kRestoreGo && in.flag == 1;  // no answer: stay on the ring
  } else {
    for (std::uint32_t r = 1; r < c->nranks; ++r) {
      Msg in;
      if (!recv_ctrl(c, r, round, deadline, &in) || in.kind != kRestore || in.flag != 1) go = false;
    }
    m.kind = kRestoreGo;
    m.flag = go ? 1 : 0;
    for (std::uint32_t r = 1; r < c->nranks; ++r) send_ctrl(c, r, m);
  }
  if (!go) return;
  const std::string was = c->ring_desc.empty() ? "the op retry's ring" : c->ring_desc;
  c->avoid = false;
  c->ring_order.clear();
  c->ring_desc.clear();
  c->dead_nics.clear();
  c->dead_pairs.clear();
  port::log(ctx, 1, ("[HCOMM_WARN] Rank" + std::to_string(c->rank) + " comm " + std::to_string(c->id) +
                     ": every dead NIC and HCCS link is up again: back to the selected algorithms from seq " + std::to_string(c->op_seq) +
                     " (was " + was + ")").c_str());
}

void comm_created(hcomm_comm_t comm) {
  hcomm_context_t ctx = comm->ctx;
  if (ctx->grank < 0) ctx->grank = global_rank(comm, comm->rank);
  ctx->comms.push_back(comm);
  hb_update(ctx);
}

void comm_destroyed(hcomm_comm_t comm) {
  hcomm_context_t ctx = comm->ctx;
  if (!live(ctx, kCtx)) return;
  ctx->comms.erase(std::remove(ctx->comms.begin(), ctx->comms.end(), comm), ctx->comms.end());
  hb_update(ctx);
  auto& v = ctx->pending;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const PendingOp& p) { return p.comm == comm; }), v.end());
}

}  // namespace failover
}  // namespace hcomm::detail
