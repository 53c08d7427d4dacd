// Failover's device events (docs/failover.md): the host's heartbeat agent (its registration and
// LOST), NIC port-active events and CRC storms, taken when the library reads the device's events.
#include "recovery/failover.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/stream.h"
#include "driver_port.h"
#include "recovery/failover_msg.h"
#include "recovery/failover_state.h"
#include "recovery/retry_path.h"
#include "recovery/ring_order.h"

namespace hcomm::detail::failover {

// ---- the host's device events: heartbeat LOST, port up, CRC storm (docs/failover.md) ----

namespace {

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
  if (ctx->rec.grank >= 0 && g == static_cast<std::uint32_t>(ctx->rec.grank)) return;
  auto it = std::lower_bound(ctx->rec.lost_global.begin(), ctx->rec.lost_global.end(), g);
  if (it != ctx->rec.lost_global.end() && *it == g) return;  // a second notice
  ctx->rec.lost_global.insert(it, g);
  for (hcomm_comm_t c : ctx->rec.comms) {
    const std::uint32_t cr = c->nranks >= 2 ? comm_rank_of(c, g) : ~0u;
    if (cr == ~0u) continue;
    add_lost(c, cr);
    if (c->rec.error.code != HCOMM_SUCCESS) {  // learned otherwise first: the error names the loss now
      if (!ctx->rec.recovering) mark_rank_lost(c);
      continue;
    }
    // reporter == the lost rank: its host connection closed (the process died), no agent involved.
    const bool closed = ev.reporter == g;
    const std::uint32_t by = closed || ev.reporter == static_cast<std::uint32_t>(ctx->rec.grank) ? ~0u : comm_rank_of(c, ev.reporter);
    const std::string who = closed ? "its host connection closing"
                            : ev.reporter == static_cast<std::uint32_t>(ctx->rec.grank) ? "this rank's heartbeat agent"
                                                                                     : "rank " + std::to_string(ev.reporter) + "'s heartbeat agent";
    set_error(c, HCOMM_E_RANK_LOST, by == ~0u ? -1 : static_cast<std::int64_t>(by),
              "comm rank " + std::to_string(cr) + " (rank " + std::to_string(g) + ") LOST, reported by " + who + ": " + ev.text);
    c->rec.error.at_ns = ev.at_ns;  // when the host learned it (the application may have been away)
    // With a collective in flight and op retry on, this rank joins the recovery agreement as the
    // members that saw the failure otherwise do (its NO-GO names the lost rank to all alike).
    const PendingOp* p = pending_of(c);
    c->rec.retry_wanted = c->cfg.op_retry && p && p->retryable;
    ctx->rec.lost_news = true;
  }
}

// IBV_EVENT_PORT_ACTIVE: this NIC has its link again. The context forgets what it owed or knew of
// the port being down; each communicator drops this rank from its dead NICs (routes to peers may
// probe through it again; the op retry's ring order, if one was adopted, stays: not re-scheduled).
void port_up(hcomm_context_t ctx, const DeviceEvent& ev) {
  // Always logged (whatever HCOMM_DEBUG says), as the recovery lines are.
  port::log(ctx, 1, ("[HCOMM_WARN] Device" + std::to_string(ctx->device_id) + ": NIC port event (IBV_EVENT_PORT_ACTIVE): " + ev.text +
                     "; NIC-down state cleared").c_str());
  ctx->rec.port_owed.clear();
  ctx->rec.port_owed_since_ns = 0;
  ctx->rec.nic_down_known_ns = 0;
  // A port-down event taken but not yet handled that the port-up follows is stale.
  ctx->rec.port_stash.erase(std::remove_if(ctx->rec.port_stash.begin(), ctx->rec.port_stash.end(),
                                       [&](const DeviceEvent& d) { return d.since_ns <= ev.since_ns; }),
                        ctx->rec.port_stash.end());
  for (hcomm_comm_t c : ctx->rec.comms) {
    auto it = std::lower_bound(c->rec.dead_nics.begin(), c->rec.dead_nics.end(), c->rank);
    if (it != c->rec.dead_nics.end() && *it == c->rank) c->rec.dead_nics.erase(it);
  }
  ++ctx->rec.nic_ups;
}

// A CRC storm on a link of this device: non-fatal (the link's replay keeps the data correct, only
// slower). Logged as a warning and recorded as a `failovers` row with action "warn", code 0, for
// each communicator of the context; no communicator is put in error.
void link_storm(hcomm_context_t ctx, const DeviceEvent& ev) {
  ++ctx->rec.link_storms;
  port::log(ctx, 1, ("[HCOMM_WARN] Device" + std::to_string(ctx->device_id) + ": " + ev.text + " (non-fatal: no abort)").c_str());
  for (hcomm_comm_t c : ctx->rec.comms) {
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
  // The application is told as of any survived fault: a notice, not an error.
  for (hcomm_comm_t c : ctx->rec.comms) {
    c->rec.notice = HCOMM_I_FAILOVER;
    c->rec.notice_text = "fault survived (non-fatal): " + ev.text;
    if (c->rec.error_cb) c->rec.error_cb(c, HCOMM_I_FAILOVER, c->rec.notice_text.c_str(), c->rec.error_cb_data);
  }
}

}  // namespace

// Take every delivered device event: port-down events are kept for fresh_port_event (they concern
// the synchronize that reads them), the others are handled here.
void take_events(hcomm_context_t ctx) {
  DeviceEvent ev;
  while (port::device_event_poll(ctx, &ev) == HCOMM_SUCCESS) {
    switch (ev.kind) {
      case DeviceEventKind::NicPortDown: ctx->rec.port_stash.push_back(ev); break;
      case DeviceEventKind::NicPortUp: port_up(ctx, ev); break;
      case DeviceEventKind::PeerLost: peer_lost(ctx, ev); break;
      case DeviceEventKind::LinkErrorStorm: link_storm(ctx, ev); break;
    }
  }
}

// Register this rank's neighbours with the host's heartbeat agent (docs/failover.md#heartbeat-with-neighbours):
// the ring predecessor and successor in every communicator, deduplicated; on LOST the agent
// tells every member of the communicators (their global ranks as ranges).
void hb_update(hcomm_context_t ctx) {
  if (!ctx->hb_period_ns || ctx->rec.hb_unavailable || ctx->rec.grank < 0) return;
  HeartbeatSpec spec;
  spec.period_ns = ctx->hb_period_ns;
  spec.miss_limit = ctx->hb_misses;
  const std::uint32_t me = static_cast<std::uint32_t>(ctx->rec.grank);
  std::vector<std::uint32_t> all;
  for (hcomm_comm_t c : ctx->rec.comms) {
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
  if (spec.neighbours == ctx->rec.hb_neighbours && spec.neighbours.empty()) return;
  if (port::heartbeat_register(ctx, me, spec) != HCOMM_SUCCESS) {
    logf(ctx, 0, "Device%u: the driver has no heartbeat agent: HCOMM_HEARTBEAT_PERIOD_US ignored", ctx->device_id);
    ctx->rec.hb_unavailable = true;
    return;
  }
  ctx->rec.hb_neighbours = spec.neighbours;
}

}  // namespace hcomm::detail::failover
