// Failover's agreements over the control channel (docs/failover.md): the op retry's recovery
// (READY, RESET, GO through the coordinator), the shrink's survivors, and the return from the op
// retry's ring to the selected algorithms.
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
#include "route/route.h"

namespace hcomm::detail::failover {

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

// The agreement (recovery/failover.h). True: every rank re-executes on the ring the coordinator
// chose (c->rec.ring_order) avoiding the merged dead pairs and dead NICs.
//
// GO's list: the lost ranks, the dead NICs, the ring order as the positions where it differs from
// comm-rank order (position, rank), then the dead pairs, each list with its count first but the
// pairs (to the end); its text: the order's description (GO) or why not (NO-GO).
bool agree(hcomm_comm_t c, bool can, std::uint64_t done, std::uint64_t op_seq) {
  // READY's code names the operation the rank would re-execute (its seq + 1, 31 bits; 0: none), so
  // that ranks holding different operations (one finished a re-execution another's later fault
  // then hit, and went on) are a NO-GO rather than two re-executions of different operations.
  const std::int32_t op_tag = can ? static_cast<std::int32_t>((op_seq + 1) & 0x7fffffff) : 0;
  const std::uint64_t round = ++c->rec.retries;
  std::uint32_t coord = 0;
  while (std::binary_search(c->rec.lost.begin(), c->rec.lost.end(), coord) && coord < c->nranks) ++coord;
  if (coord >= c->nranks) return false;
  // The coordinator gives the others one timeout to answer; they give it two (it may spend the
  // first waiting for a lost rank) plus the RESET round.
  const std::uint64_t deadline = port::now_ns(c->ctx) + agree_timeout_ns(c) * (c->rank == coord ? 1 : 3);
  auto pairs = [&] {
    std::vector<std::uint32_t> v;
    for (const auto& [a, b] : c->rec.dead_pairs) { v.push_back(a); v.push_back(b); }
    return v;
  };
  const bool my_nic_down = nic_down(c);
  if (my_nic_down) c->ctx->rec.nic_down_known_ns = port::now_ns(c->ctx);  // port events of this NIC until now are known
  const bool my_roce = roce_failure(c);
  c->rec.roce_failed = false;
  if (c->rank != coord) {
    Msg m;
    m.kind = kReady; m.comm = c->id; m.origin = c->rank; m.seq = round;
    m.flag = static_cast<std::uint8_t>((can ? 1 : 0) | (my_nic_down ? 2 : 0) | (my_roce ? 4 : 0));
    m.value = can ? done : 0;
    m.code = op_tag;
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
    c->rec.dead_nics.clear();
    for (std::uint32_t i = 0; i < nnic; ++i) c->rec.dead_nics.push_back(next());
    const std::uint32_t ndiff = next();
    c->rec.ring_order.clear();
    if (ndiff) {
      c->rec.ring_order.resize(c->nranks);
      for (std::uint32_t r = 0; r < c->nranks; ++r) c->rec.ring_order[r] = r;
      for (std::uint32_t i = 0; i < ndiff; ++i) {
        const std::uint32_t pos = next(), r = next();
        if (pos < c->nranks && r < c->nranks) c->rec.ring_order[pos] = r;
      }
    }
    for (; at + 1 < in.list.size(); at += 2) add_pair(c, in.list[at], in.list[at + 1]);
    if (in.flag) c->rec.ring_desc = in.text;
    else logf(c->ctx, 0, "Rank%u comm %u: the recovery coordinator says no re-execution: %s", c->rank, c->id, in.text.c_str());
    c->rec.roce_failed = (in.flag & 2) != 0;
    c->rec.resume_from = (in.flag & 1) ? in.value : 0;
    return (in.flag & 1) != 0;
  }
  // The coordinator: every other rank's READY, in rank order.
  bool go = can;
  std::string why = can ? "" : "the coordinator holds no re-executable operation";
  std::vector<std::uint32_t> dead_nics;
  if (my_nic_down) dead_nics.push_back(c->rank);
  bool roce = my_roce;
  std::uint64_t from = can ? done : 0;  // the slices delivered to every rank: the least any rank has done
  for (std::uint32_t r = 0; r < c->nranks; ++r) {
    if (r == c->rank || std::binary_search(c->rec.lost.begin(), c->rec.lost.end(), r)) continue;
    Msg in;
    if (!recv_ctrl(c, r, round, deadline, &in) || in.kind != kReady) {
      add_lost(c, r);
      logf(c->ctx, 0, "Rank%u comm %u: rank %u did not answer the recovery agreement: lost", c->rank, c->id, r);
      continue;
    }
    if (!(in.flag & 1) && go) { go = false; why = "comm rank " + std::to_string(r) + " holds no re-executable operation"; }
    if ((in.flag & 1) && can && in.code != op_tag && go) {
      go = false;
      why = "comm rank " + std::to_string(r) + " holds another operation than the coordinator's (seq " +
            std::to_string(static_cast<std::uint32_t>(in.code) - 1) + ", not " + std::to_string(op_seq) + ")";
    }
    if (in.flag & 2) dead_nics.push_back(r);
    if (in.flag & 4) roce = true;
    from = std::min(from, in.value);
    for (std::size_t i = 0; i + 1 < in.list.size(); i += 2) add_pair(c, in.list[i], in.list[i + 1]);
  }
  std::sort(dead_nics.begin(), dead_nics.end());
  c->rec.dead_nics = dead_nics;
  if (!c->rec.lost.empty() && go) { go = false; why = "comm rank " + std::to_string(c->rec.lost.front()) + " is lost"; }
  // The ring order (recovery/ring_order.h): servers contiguous, inside each a path over its live
  // links whose two ends (the RoCE edges) have live NICs.
  c->rec.ring_order.clear();
  c->rec.ring_desc.clear();
  if (go) {
    const RingOrderIn in = ring_input(c, dead_nics);
    std::string no;
    if (!ring_order(in, &c->rec.ring_order, &no)) {
      go = false;
      why = "no ring order avoids the dead links and NICs: " + no;
      c->rec.ring_order.clear();
    } else {
      c->rec.ring_desc = describe_order(in, c->rec.ring_order);
    }
  }
  if (!go) logf(c->ctx, 0, "Rank%u comm %u: no re-execution: %s", c->rank, c->id, why.c_str());
  auto members = [&](auto&& f) {
    for (std::uint32_t r = 0; r < c->nranks; ++r)
      if (r != c->rank && !std::binary_search(c->rec.lost.begin(), c->rec.lost.end(), r)) f(r);
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
  c->rec.roce_failed = go && roce;
  g.kind = kGo; g.comm = c->id; g.origin = c->rank; g.seq = round;
  g.flag = static_cast<std::uint8_t>((go ? 1 : 0) | (c->rec.roce_failed ? 2 : 0));  // 2: re-probe the RoCE paths
  c->rec.resume_from = go ? from : 0;
  g.value = c->rec.resume_from;
  g.list.push_back(static_cast<std::uint32_t>(c->rec.lost.size()));
  g.list.insert(g.list.end(), c->rec.lost.begin(), c->rec.lost.end());
  g.list.push_back(static_cast<std::uint32_t>(dead_nics.size()));
  g.list.insert(g.list.end(), dead_nics.begin(), dead_nics.end());
  std::vector<std::uint32_t> diff;
  for (std::uint32_t i = 0; go && i < c->rec.ring_order.size(); ++i)
    if (c->rec.ring_order[i] != i) { diff.push_back(i); diff.push_back(c->rec.ring_order[i]); }
  g.list.push_back(static_cast<std::uint32_t>(diff.size() / 2));
  g.list.insert(g.list.end(), diff.begin(), diff.end());
  for (std::uint32_t v : pairs()) g.list.push_back(v);
  g.text = go ? c->rec.ring_desc : why;
  members([&](std::uint32_t r) { send_ctrl(c, r, g); });
  if (diff.empty()) c->rec.ring_order.clear();  // comm-rank order
  return go;
}

hcomm_result_t agree_ids(hcomm_comm_t c, const std::vector<std::uint32_t>& survivors, const std::uint32_t used[8],
                         std::uint32_t all[8]) {
  const std::uint64_t round = (1ULL << 40) + ++c->rec.shrinks;  // apart from the recovery rounds
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


void maybe_restore(hcomm_comm_t c) {
  hcomm_context_t ctx = c->ctx;
  // Degraded: on the op retry's ring, borrowing NICs, or with HCCS pairs through a relay (the
  // same on every member: the GO's lists decided them).
  const bool degraded = c->rec.avoid || !c->rec.nic_lender.empty() || !c->rec.dead_pairs.empty();
  if (!degraded || ctx->rec.recovering || c->nranks < 2 || !c->rec.lost.empty() || c->rec.error.code != HCOMM_SUCCESS) return;
  // This rank's part: its NIC is up if it was dead, its HCCS links of the dead pairs are up.
  bool up = true;
  if (std::binary_search(c->rec.dead_nics.begin(), c->rec.dead_nics.end(), c->rank)) {
    NicInfo n;
    up = port::nic_info(ctx, &n) == HCOMM_SUCCESS && n.present && n.link_up;
  }
  if (up) {
    for (const auto& [a, b] : c->rec.dead_pairs) {
      if (a != c->rank && b != c->rank) continue;
      const RankDesc* d = peer_desc(c, a == c->rank ? b : a);
      HccsPortInfo info;
      if (!d || d->device_id >= kHccsPortCount || port::hccs_port(ctx, d->device_id, &info) != HCOMM_SUCCESS || !info.up) up = false;
    }
  }
  const std::uint64_t round = (2ULL << 40) + ++c->rec.restores;  // apart from the recovery and shrink rounds
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
  if (!c->rec.avoid) {
    // Borrowing or relaying ends: the routes that went through a lender's NIC or a relay NPU are
    // decided again from the ports as they are now (the NICs' own paths, the direct HCCS links).
    std::vector<std::uint32_t> peers;
    for (const auto& [rank, r] : c->route.peers)
      if (r.borrow || r.via_device != ~0u) peers.push_back(rank);
    std::string what;
    for (const auto& [a, b] : c->rec.dead_pairs) {
      if (a == c->rank) peers.push_back(b);
      if (b == c->rank) peers.push_back(a);
      what += (what.empty() ? "hccs " : ", ") + std::to_string(a) + "-" + std::to_string(b);
    }
    for (const auto& [x, l] : c->rec.nic_lender) what += (what.empty() ? "nic " : ", nic ") + std::to_string(x) + " (lender " + std::to_string(l) + ")";
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    c->rec.nic_lender.clear();
    c->rec.dead_nics.clear();
    c->rec.dead_pairs.clear();
    if (!peers.empty()) route::redecide(c, peers, "port up: " + what + " back");
    port::log(ctx, 1, ("[HCOMM_WARN] Rank" + std::to_string(c->rank) + " comm " + std::to_string(c->id) +
                       ": every dead NIC and HCCS link is up again: " + what + " back on their own paths from seq " + std::to_string(c->op_seq) +
                       " (borrowing and relays ended)").c_str());
    return;
  }
  const std::string was = c->rec.ring_desc.empty() ? "the op retry's ring" : c->rec.ring_desc;
  c->rec.avoid = false;
  c->rec.ring_order.clear();
  c->rec.ring_desc.clear();
  c->rec.dead_nics.clear();
  c->rec.dead_pairs.clear();
  port::log(ctx, 1, ("[HCOMM_WARN] Rank" + std::to_string(c->rank) + " comm " + std::to_string(c->id) +
                     ": every dead NIC and HCCS link is up again: back to the selected algorithms from seq " + std::to_string(c->op_seq) +
                     " (was " + was + ")").c_str());
}

}  // namespace hcomm::detail::failover
