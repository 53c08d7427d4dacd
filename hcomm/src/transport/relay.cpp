// HCCS through a relay NPU (transport/relay.h, docs/routing.md#relay). Per transfer, on channel
// (origin stream S, peer b) through relay k with hop streams H1, H2 on k:
//   S   record GO(g) on k; wait BACK(g')             (S continues once the bytes have landed)
//   H1  wait GO(g); per slice i: [i >= 2: wait CREDIT(i-2)]; copy slice -> stage[i % 2];
//       record READY(i) (local on k); after the last slice: wait the outstanding CREDITs;
//       record BACK(g') on my device
//   H2  per slice i: wait READY(i); copy (or reduce-copy) stage[i % 2] -> destination; record CREDIT(i)
// A write's hop 1 reads my HBM and hop 2 writes the peer's; a read's hop 1 reads the peer's and
// hop 2 writes mine. Every key recorded is waited exactly once, so no notify register stays bound.
#include "transport/relay.h"

#include <algorithm>

#include "core/comm.h"
#include "core/log.h"
#include "driver_port.h"
#include "route/route.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"

namespace hcomm::detail::relay {

namespace {

// Keys of a channel: purpose, this rank's device, channel number and a sequence number.
std::uint64_t key(Purpose p, hcomm_context_t ctx, const RelayChan& ch, std::uint32_t seq) {
  return notify_key(0, p, ctx->device, ((ch.index & 0x3f) << 20) | (seq & 0xfffff));
}

hcomm_stream_t relay_stream(hcomm_context_t ctx, std::uint32_t device) {
  std::uint32_t id = 0;
  if (port::stream_create_on(ctx, device, &id) != HCOMM_SUCCESS) return nullptr;
  return new hcomm_stream_s{ctx, id, {}};
}

constexpr std::uint32_t kMaxChannels = 64;  // channel numbers fit the keys' 6 bits

// A new channel (its own hop streams on the relay): a retired channel's number when one is free
// (its key sequences go on, so no key of the old relay is reused), else the next number.
RelayChan* new_channel(hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer) {
  hcomm_context_t ctx = comm->ctx;
  RankDesc kd;
  if (port::rank_desc(ctx, r.relay_rank, &kd) != HCOMM_SUCCESS) return nullptr;
  hcomm_stream_t h1 = relay_stream(ctx, r.relay_device), h2 = h1 ? relay_stream(ctx, r.relay_device) : nullptr;
  if (!h1 || !h2) {
    for (hcomm_stream_t x : {h1, h2})
      if (x) { port::stream_destroy(x); delete x; }
    logf(ctx, 0, "Rank%u HCCS relay to rank %u: cannot create streams on relay rank %u", comm->rank, peer.rank, r.relay_rank);
    return nullptr;
  }
  RelayChan* ch = nullptr;
  for (RelayChan& c : ctx->relay_chan_list)
    if (!c.hop1) { ch = &c; break; }
  if (!ch) {
    ctx->relay_chan_list.emplace_back();
    ch = &ctx->relay_chan_list.back();
    ch->index = static_cast<std::uint32_t>(ctx->relay_chan_list.size() - 1);
  }
  ch->relay_device = r.relay_device;
  ch->relay_device_id = kd.device_id;
  ch->hop1 = h1;
  ch->hop2 = h2;
  ch->stage = -1;
  return ch;
}

// A channel no (origin stream, peer) maps to any more (its peer's route left that relay or lender,
// docs/failover.md#several-faults): its hop streams on the old relay are destroyed
// (idle: a route changes at a recovery, after every stream was aborted, or at a collective's start)
// and its staging area and number are free for the next channel.
void retire_if_unused(hcomm_context_t ctx, std::uint32_t index) {
  for (const auto& [k, i] : ctx->relay_chans)
    if (i == index) return;
  RelayChan& ch = ctx->relay_chan_list[index];
  for (hcomm_stream_t x : {ch.hop1, ch.hop2})
    if (x) { port::stream_destroy(x); delete x; }
  ch.hop1 = ch.hop2 = nullptr;
  ch.relay_device = ~0u;
  ch.stage = -1;
}

// The lowest staging area of mine on `relay_device` no live channel holds (-1: all bound).
int free_stage(hcomm_context_t ctx, std::uint32_t relay_device) {
  for (std::uint32_t n = 0; n < kRelayStages; ++n)
    if (std::none_of(ctx->relay_chan_list.begin(), ctx->relay_chan_list.end(), [&](const RelayChan& c) {
          return c.hop1 && c.relay_device == relay_device && c.stage == static_cast<int>(n);
        }))
      return static_cast<int>(n);
  return -1;
}

// The channel of (origin stream, peer). A transfer needs a channel with a staging area: when the
// rank has bound all kRelayStages of its areas on this relay, the stream shares (deterministically)
// the data channel of area (n mod kRelayStages) — its transfers then queue behind that channel's
// (still correct: a channel finishes one transfer before the next; a cycle of waits through a
// shared channel would end in a synchronize timeout, not in wrong bytes). Logged once per stream.
// A channel bound to another relay than the route's (the route was decided again since: a relay
// or lender replaced after a later fault, or borrowing ended) is let go and a new one made.
RelayChan* channel(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, bool data) {
  hcomm_context_t ctx = comm->ctx;
  if (r.relay_device == ~0u) return nullptr;
  const auto k = std::make_pair(s->id, peer.device);
  auto it = ctx->relay_chans.find(k);
  if (it != ctx->relay_chans.end() && ctx->relay_chan_list[it->second].relay_device != r.relay_device) {
    const std::uint32_t old = it->second;
    ctx->relay_chans.erase(it);
    retire_if_unused(ctx, old);
    it = ctx->relay_chans.end();
  }
  if (it != ctx->relay_chans.end()) {
    RelayChan& ch = ctx->relay_chan_list[it->second];
    if (!data || ch.stage >= 0) return &ch;
  }
  RelayChan* ch = it != ctx->relay_chans.end() ? &ctx->relay_chan_list[it->second] : nullptr;
  auto room = [&] {
    return ctx->relay_chan_list.size() < kMaxChannels ||
           std::any_of(ctx->relay_chan_list.begin(), ctx->relay_chan_list.end(), [](const RelayChan& c) { return !c.hop1; });
  };
  if (!data) {  // notifies only: a channel without staging
    if (!room()) {
      logf(ctx, 0, "Rank%u HCCS relay to rank %u: out of relay channels (%u)", comm->rank, peer.rank, kMaxChannels);
      return nullptr;
    }
    ch = new_channel(comm, r, peer);
    if (ch) ctx->relay_chans[k] = ch->index;
    return ch;
  }
  std::uint32_t& asked = ctx->relay_stages[r.relay_device];
  const std::uint32_t n = asked++;
  const int stage = free_stage(ctx, r.relay_device);
  if (stage >= 0 && (ch || room())) {
    if (!ch) ch = new_channel(comm, r, peer);
    if (!ch) return nullptr;
    ch->stage = stage;
    ctx->relay_chans[k] = ch->index;
    return ch;
  }
  for (RelayChan& c : ctx->relay_chan_list)
    if (c.hop1 && c.relay_device == r.relay_device && c.stage == static_cast<int>(n % kRelayStages)) {
      logf(ctx, 1, "Rank%u HCCS relay to rank %u: all %u staging areas on relay rank %u are bound; this stream shares channel %u",
           comm->rank, peer.rank, kRelayStages, r.relay_rank, c.index);
      ctx->relay_chans[k] = c.index;
      return &c;
    }
  logf(ctx, 0, "Rank%u HCCS relay to rank %u: out of relay channels (%u)", comm->rank, peer.rank, kMaxChannels);
  return nullptr;
}

// The staging slot `slot` (0, 1) of the channel in the relay's work area: my area, indexed by my
// device id (the area is symmetric: the relay reserved it at its own context creation).
std::uint64_t stage_addr(hcomm_comm_t comm, const RelayChan& ch, std::uint32_t relay_rank, std::uint32_t slot) {
  RankDesc kd;
  if (port::rank_desc(comm->ctx, relay_rank, &kd) != HCOMM_SUCCESS) return 0;
  const std::uint64_t area = (static_cast<std::uint64_t>(comm->ctx->device_id) * kRelayStages + static_cast<std::uint64_t>(ch.stage)) *
                             2 * kRelaySliceBytes;
  return kd.device_base_addr + (comm->ctx->relay_addr - comm->ctx->base) + area + slot * kRelaySliceBytes;
}

hcomm_result_t transfer(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t dst,
                        std::uint64_t src, std::uint64_t bytes, bool reduce, int dtype, int op, std::uint32_t rkey) {
  hcomm_context_t ctx = comm->ctx;
  if (bytes == 0) return HCOMM_SUCCESS;
  if (r.borrow && reduce) return HCOMM_E_NOT_SUPPORT;  // an RDMA write does not reduce
  if (ctx->relay_bytes == 0 || (comm->ctx->device_id + 1) * kRelayStages * 2 * kRelaySliceBytes > ctx->relay_bytes)
    return HCOMM_E_NOT_SUPPORT;
  RelayChan* ch = channel(s, comm, r, peer, true);
  if (!ch) return HCOMM_E_NOT_SUPPORT;
  const std::uint64_t st[2] = {stage_addr(comm, *ch, r.relay_rank, 0), stage_addr(comm, *ch, r.relay_rank, 1)};
  if (!st[0]) return HCOMM_E_NOT_FOUND;
  const std::uint32_t g = ch->go++, b = ch->back++;
  notify_record(s, ch->relay_device, key(kRelayGo, ctx, *ch, g));
  notify_wait(s, key(kRelayBack, ctx, *ch, b));
  notify_wait(ch->hop1, key(kRelayGo, ctx, *ch, g));
  const std::uint64_t n = (bytes + kRelaySliceBytes - 1) / kRelaySliceBytes;
  const std::uint32_t first = ch->slice;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint32_t sl = ch->slice++;
    const std::uint64_t off = i * kRelaySliceBytes, len = std::min<std::uint64_t>(kRelaySliceBytes, bytes - off);
    if (i >= 2) notify_wait(ch->hop1, key(kRelayCredit, ctx, *ch, sl - 2));
    copy(ch->hop1, st[i % 2], src + off, len);
    notify_record(ch->hop1, ch->relay_device, key(kRelayReady, ctx, *ch, sl));
    notify_wait(ch->hop2, key(kRelayReady, ctx, *ch, sl));
    // The slot is credited back once the NIC is done with it: the write waits for its acks.
    if (r.borrow) rdma_write(ch->hop2, peer.device, dst + off, st[i % 2], len, false, 0, rkey, route::rdma_policy(comm), r.via_device, true);
    else if (reduce) reduce_copy(ch->hop2, dst + off, st[i % 2], len, dtype, op);
    else copy(ch->hop2, dst + off, st[i % 2], len);
    notify_record(ch->hop2, ch->relay_device, key(kRelayCredit, ctx, *ch, sl));
  }
  for (std::uint64_t i = n > 2 ? n - 2 : 0; i < n; ++i) notify_wait(ch->hop1, key(kRelayCredit, ctx, *ch, first + static_cast<std::uint32_t>(i)));
  return notify_record(ch->hop1, ctx->device, key(kRelayBack, ctx, *ch, b));
}

}  // namespace

hcomm_result_t write(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t dst,
                     std::uint64_t src, std::uint64_t bytes, bool reduce, int dtype, int op, std::uint32_t rkey) {
  return transfer(s, comm, r, peer, dst, src, bytes, reduce, dtype, op, rkey);
}

hcomm_result_t read(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t dst,
                    std::uint64_t src, std::uint64_t bytes) {
  if (r.borrow) return HCOMM_E_NOT_SUPPORT;  // no RDMA read
  return transfer(s, comm, r, peer, dst, src, bytes, false, 0, 0, 0);
}

hcomm_result_t notify(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t k) {
  RelayChan* ch = channel(s, comm, r, peer, false);
  if (!ch) return HCOMM_E_NOT_SUPPORT;
  const std::uint32_t g = ch->go++;
  notify_record(s, ch->relay_device, key(kRelayGo, comm->ctx, *ch, g));
  notify_wait(ch->hop1, key(kRelayGo, comm->ctx, *ch, g));
  if (r.borrow)  // after the channel's earlier writes, acknowledged before their CREDITs: lands after the data
    return rdma_write(ch->hop1, peer.device, 0, 0, 0, true, k, 0, route::rdma_policy(comm), r.via_device);
  return notify_record(ch->hop1, peer.device, k);
}

// The relay channels this rank drives on other NPUs are let go — their hop
// streams destroyed, their numbers and staging areas free, their key sequences kept — and made
// anew at the next transfer, so nothing an interrupted re-execution left on a relay's streams
// holds the next one up.
void drop_channels(hcomm_context_t ctx) {
  for (RelayChan& ch : ctx->relay_chan_list) {
    for (hcomm_stream_t x : {ch.hop1, ch.hop2})
      if (x) { port::stream_destroy(x); delete x; }
    ch.hop1 = ch.hop2 = nullptr;
    ch.relay_device = ~0u;
    ch.stage = -1;
  }
  ctx->relay_chans.clear();
  ctx->relay_stages.clear();
}

}  // namespace hcomm::detail::relay
