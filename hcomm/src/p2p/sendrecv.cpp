// Point-to-point send/receive (docs/architecture.md#hcomm, docs/algorithms/README.md).
// Protocol, per chunk of the receiver's p2p window (symmetric, ctx->p2p_bytes):
//   receiver: notify READY(tag) on the sender, wait DATA(tag), copy window -> user buffer
//   sender:   wait READY(tag), write user buffer -> receiver's window (SDMA over HCCS, or RDMA
//             write over RoCE), notify DATA(tag)
// Over RoCE the write's task ends at its doorbell, so after the last chunk the sender also waits
// for DONE(tag), which the receiver records once the data is in (as HCCL's send waits for the
// receiver's signal): the send ends when its buffer may be reused, and a write that fails fails
// the send. An SDMA copy ends when its bytes have landed: no DONE over HCCS or PCIe.
// All receives of a communicator run on its recv stream in posting order, so the one window is
// granted to one sender at a time; the user's stream is joined to it through events.
// A chunk is also at most min(send_buffer_size, recv_buffer_size) (docs/config.md).
// Protocol TCP, a peer on another server (docs/models/host-network.md): per chunk of at most
// min(send_buffer_size, recv_buffer_size) the sender copies it to its host staging buffer
// (DeviceToHost) and send()s it over the front-end network; the receiver recv()s it into its
// host staging buffer and copies it to the user buffer (HostToDevice). Sends of a communicator
// run in posting order on its TCP send stream, receives on its recv stream; TCP's own flow
// control stands for the READY handshake (the kernel keeps what arrives before the recv()).
#include <algorithm>
#include <memory>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/objects.h"
#include "core/profile.h"
#include "core/recovery.h"
#include "core/stream.h"
#include "core/types.h"
#include "discovery/topo.h"
#include "driver_port.h"
#include "p2p/request.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace {

const std::uint32_t kMaxTag = (1u << 26) - 1;

hcomm_result_t p2p_check(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t peer, uint32_t tag,
                         hcomm_comm_t comm, hcomm_stream_t stream) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (stream && !live(stream, kStream)) return HCOMM_E_UNAVAIL;
  if (!valid_dtype(dtype) || peer >= comm->nranks || peer == comm->rank || tag > kMaxTag) return HCOMM_E_PARA;
  if (!buf && count) return HCOMM_E_PTR;
  if (hcomm_result_t e = recovery::check(comm); e != HCOMM_SUCCESS) return e;  // in error: refuses new work (docs/failover.md)
  recovery::uses(comm, stream ? stream : comm->internal);
  recovery::uses(comm, comm->recv_stream);
  return HCOMM_SUCCESS;
}

// Point-to-point chunk: buffer_size (AUTO), at most 256 KiB (SMALL_MSG: earlier first bytes,
// more handshakes) or the whole receive window (LARGE_MSG: fewest handshakes).
std::uint64_t p2p_chunk(hcomm_comm_t comm) {
  const std::uint64_t window = std::min({comm->ctx->p2p_bytes, comm->cfg.send_buffer_size, comm->cfg.recv_buffer_size});
  switch (comm->cfg.mode) {
    case HCOMM_COMM_MODE_SMALL_MSG: return std::min<std::uint64_t>({window, comm->cfg.buffer_size, 256 * 1024});
    case HCOMM_COMM_MODE_LARGE_MSG: return window;
    default: return std::min(window, comm->cfg.buffer_size);
  }
}

// Protocol TCP: the peer is on the host network unless discovery found a direct HCCS link or PCIe
// peer-to-peer to it (those keep SDMA). Discovery's view, not a route: no RoCE routing or path
// probes for a peer the device never writes to.
bool over_tcp(hcomm_comm_t comm, const RankDesc& peer) {
  if (comm->cfg.protocol != HCOMM_PROTOCOL_TCP) return false;
  const PairLink l = discovered_link(comm, peer);
  return l != PairLink::Hccs && l != PairLink::Pcie;
}
std::uint64_t tcp_chunk(hcomm_comm_t comm) { return std::min(comm->cfg.send_buffer_size, comm->cfg.recv_buffer_size); }
std::uint64_t tcp_conn(hcomm_comm_t comm, std::uint32_t tag) { return static_cast<std::uint64_t>(comm->id) << 32 | tag; }

hcomm_result_t host_dma(hcomm_stream_t s, DrvTaskKind kind, std::uint64_t device, std::uint8_t* host, std::uint64_t n) {
  if (!n) return HCOMM_SUCCESS;
  DrvTask t;
  t.kind = kind;
  t.bytes = n;
  t.host = host;
  (kind == DrvTaskKind::HostToDevice ? t.dst : t.src) = device;
  return port::submit(s, t);
}

// One side of a message over TCP, chunk by chunk: the sender D2H then send(), on the
// communicator's TCP send stream; the receiver recv() then H2D, on its receive stream. Each side's
// stream is joined to and from the user's stream by events.
hcomm_result_t tcp_move(bool send, std::uint64_t buf, std::uint64_t bytes, hcomm_data_type_t dtype, std::uint32_t peer,
                        std::uint32_t tag, hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req) {
  hcomm_context_t ctx = comm->ctx;
  if (send && !comm->tcp_send && make_stream(ctx, &comm->tcp_send) != HCOMM_SUCCESS) return HCOMM_E_DRV;
  const std::uint64_t chunk = tcp_chunk(comm);
  auto& staging = send ? comm->tcp_tx : comm->tcp_rx;
  if (!staging) staging.reset(new std::uint8_t[chunk]);
  hcomm_stream_t ts = send ? comm->tcp_send : comm->recv_stream;
  hcomm_event_t before = nullptr, after = nullptr;
  hcomm_create_event(ctx, &before);
  hcomm_create_event(ctx, &after);
  hcomm_record_event(before, stream);
  hcomm_wait_event(before, ts);
  if (send) recovery::uses(comm, ts);
  OpInfo info{global_rank(comm, comm->rank), comm->nranks, send ? "send" : "recv", "p2p-tcp", bytes, dtype, 0,
              global_rank(comm, peer), comm->op_seq, {}, 0, {}, 0};
  std::uint64_t mk = op_begin(ts, info);
  hcomm_result_t rc = HCOMM_SUCCESS;
  std::uint64_t off = 0;
  do {
    const std::uint64_t n = std::min(chunk, bytes - off);
    HostSocketOp op;
    op.send = send;
    op.rank = global_rank(comm, comm->rank);
    op.peer = global_rank(comm, peer);
    op.conn = tcp_conn(comm, tag);
    op.host_addr = dev(staging.get());
    op.bytes = n;
    if (send) {
      rc = host_dma(ts, DrvTaskKind::DeviceToHost, buf + off, staging.get(), n);
      if (rc == HCOMM_SUCCESS) rc = port::host_socket(ts, op);
    } else {
      rc = port::host_socket(ts, op);
      if (rc == HCOMM_SUCCESS) rc = host_dma(ts, DrvTaskKind::HostToDevice, buf + off, staging.get(), n);
    }
    off += n;
  } while (rc == HCOMM_SUCCESS && off < bytes);
  op_end(ts, mk);
  hcomm_record_event(after, ts);
  hcomm_wait_event(after, stream);
  hcomm_destroy_event(before);
  hcomm_destroy_event(after);
  if (rc != HCOMM_SUCCESS) {
    if (rc == HCOMM_E_NOT_SUPPORT) logf(ctx, 0, "protocol TCP: the driver models no host network");
    return rc;
  }
  return make_request(comm, stream, req, peer, tag, bytes, send);
}

}  // namespace

extern "C" {

hcomm_result_t hcomm_isend(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst, uint32_t tag,
                           hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req) {
  hcomm_result_t rc = p2p_check(buf, count, dtype, dst, tag, comm, stream);
  if (rc != HCOMM_SUCCESS) return rc;
  if (!stream || !req) return HCOMM_E_PTR;
  const RankDesc* peer = peer_desc(comm, dst);
  if (!peer) return HCOMM_E_NOT_FOUND;
  if (over_tcp(comm, *peer)) return tcp_move(true, dev(buf), count * hcomm_data_type_size(dtype), dtype, dst, tag, comm, stream, req);
  hcomm_context_t ctx = comm->ctx;
  const std::uint64_t bytes = count * hcomm_data_type_size(dtype);
  const std::uint64_t window = peer->device_base_addr + (ctx->p2p_addr - ctx->base);
  OpInfo info{global_rank(comm, comm->rank), comm->nranks, "send", p2p_link_name(comm, *peer), bytes, dtype, 0, global_rank(comm, dst), comm->op_seq, {}, 0, {}, 0};
  std::uint64_t mk = op_begin(stream, info);
  std::uint64_t off = 0;
  do {
    std::uint64_t n = std::min(p2p_chunk(comm), bytes - off);
    notify_wait(stream, notify_key(comm->id, kP2pReady, dst, tag));
    const bool last = off + n >= bytes;
    put_notify(stream, comm, *peer, window, dev(buf) + off, n,
               last ? last_key(comm->id, comm->rank, tag, bytes) : notify_key(comm->id, kP2pData, comm->rank, tag), ctx->p2p_rkey);
    off += n;
  } while (off < bytes);
  if (!via_sdma(comm, *peer)) notify_wait(stream, notify_key(comm->id, kP2pDone, dst, tag));
  op_end(stream, mk);
  return make_request(comm, stream, req, dst, tag, bytes, true);
}

hcomm_result_t hcomm_irecv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src, uint32_t tag,
                           hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req) {
  hcomm_result_t rc = p2p_check(buf, count, dtype, src, tag, comm, stream);
  if (rc != HCOMM_SUCCESS) return rc;
  if (!stream || !req) return HCOMM_E_PTR;
  const RankDesc* peer = peer_desc(comm, src);
  if (!peer) return HCOMM_E_NOT_FOUND;
  if (over_tcp(comm, *peer)) return tcp_move(false, dev(buf), count * hcomm_data_type_size(dtype), dtype, src, tag, comm, stream, req);
  hcomm_context_t ctx = comm->ctx;
  const std::uint64_t bytes = count * hcomm_data_type_size(dtype);
  hcomm_stream_t rs = comm->recv_stream;
  hcomm_event_t before = nullptr, after = nullptr;
  hcomm_create_event(ctx, &before);
  hcomm_create_event(ctx, &after);
  hcomm_record_event(before, stream);   // the receive starts after earlier work on the user stream
  hcomm_wait_event(before, rs);
  OpInfo info{global_rank(comm, comm->rank), comm->nranks, "recv", p2p_link_name(comm, *peer), bytes, dtype, 0, global_rank(comm, src), comm->op_seq, {}, 0, {}, 0};
  std::uint64_t mk = op_begin(rs, info);
  std::uint64_t off = 0;
  do {
    std::uint64_t n = std::min(p2p_chunk(comm), bytes - off);
    remote_notify(rs, comm, *peer, notify_key(comm->id, kP2pReady, comm->rank, tag));
    const bool last = off + n >= bytes;
    notify_wait(rs, last ? last_key(comm->id, src, tag, bytes) : notify_key(comm->id, kP2pData, src, tag));
    if (last && !via_sdma(comm, *peer)) remote_notify(rs, comm, *peer, notify_key(comm->id, kP2pDone, comm->rank, tag));
    if (n) copy(rs, dev(buf) + off, ctx->p2p_addr, n);
    off += n;
  } while (off < bytes);
  op_end(rs, mk);
  hcomm_record_event(after, rs);
  hcomm_wait_event(after, stream);      // later work on the user stream sees the data
  hcomm_destroy_event(before);
  hcomm_destroy_event(after);
  return make_request(comm, stream, req, src, tag, bytes, false);
}

hcomm_result_t hcomm_send(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst, uint32_t tag,
                          hcomm_comm_t comm) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_request_t r = nullptr;
  hcomm_result_t rc = hcomm_isend(buf, count, dtype, dst, tag, comm, comm->internal, &r);
  return rc == HCOMM_SUCCESS ? hcomm_wait(r) : rc;
}

hcomm_result_t hcomm_recv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src, uint32_t tag,
                          hcomm_comm_t comm) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_request_t r = nullptr;
  hcomm_result_t rc = hcomm_irecv(buf, count, dtype, src, tag, comm, comm->internal, &r);
  return rc == HCOMM_SUCCESS ? hcomm_wait(r) : rc;
}

}  // extern "C"
