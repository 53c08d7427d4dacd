// Communicators (docs/architecture.md#hcomm): init/destroy/rank/size and the per-peer caches.
#include "core/comm.h"

#include <algorithm>

#include "core/algo_knob.h"
#include "core/config.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/recovery.h"
#include "core/stream.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail {

const RankDesc* peer_desc(hcomm_comm_t comm, std::uint32_t rank) {
  auto it = comm->peers.find(rank);
  if (it != comm->peers.end()) return &it->second;
  if (rank >= comm->nranks) return nullptr;
  RankDesc d;
  if (port::rank_desc(comm->ctx, global_rank(comm, rank), &d) != HCOMM_SUCCESS) return nullptr;
  d.rank = rank;  // the library speaks comm ranks (notify keys, links); the device handle is global
  return &comm->peers.emplace(rank, d).first->second;
}

void hold_comm_id(hcomm_comm_t comm) { ++comm->ctx->comm_id_use[comm->id & 0xff]; }
void release_comm_id(hcomm_comm_t comm) {
  std::uint16_t& n = comm->ctx->comm_id_use[comm->id & 0xff];
  if (n) --n;
}

hcomm_result_t comm_init_check(hcomm_context_t ctx, std::uint32_t nranks, std::uint32_t rank, const hcomm_config_t* user,
                               hcomm_comm_t* out, CommInit* in) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  if (hcomm_result_t rc = resolve_comm_config(ctx, user, &in->cfg); rc != HCOMM_SUCCESS) return rc;
  if (hcomm_result_t rc = parse_algo_override(ctx, in->cfg.algo, &in->algo); rc != HCOMM_SUCCESS) return rc;
  if (nranks == 0 || nranks != port::rank_count(ctx) || rank >= nranks) {
    logf(ctx, 0, "comm init: nranks %u / rank %u do not match the cluster's %u ranks", nranks, rank, port::rank_count(ctx));
    return HCOMM_E_PARA;
  }
  RankDesc& me = in->me;
  if (port::rank_desc(ctx, rank, &me) != HCOMM_SUCCESS) return HCOMM_E_NOT_FOUND;
  if (me.device != ctx->device || me.device_base_addr != ctx->base) {
    logf(ctx, 0, "Rank%u descriptor does not match device %u (base 0x%llx vs 0x%llx)", rank, ctx->device_id,
         (unsigned long long)me.device_base_addr, (unsigned long long)ctx->base);
    return E_HCOMM_ADDR_MISMATCH;
  }
  // A config that sets buffer_pool_size makes it the context's default pool size from now on
  // (hcomm_create_buffer_pool with 0 buffers, docs/config.md).
  if (user && user->buffer_pool_size != HCOMM_CONFIG_UNSET) ctx->pool_buffers = in->cfg.buffer_pool_size;
  return HCOMM_SUCCESS;
}

hcomm_result_t comm_init_make(hcomm_context_t ctx, std::uint32_t nranks, std::uint32_t rank, const CommInit& in,
                              hcomm_comm_t* out) {
  const hcomm_config_t& cfg = in.cfg;
  auto* c = new hcomm_comm_s;
  c->ctx = ctx;
  c->cfg = cfg;
  c->rdma = rdma_policy(cfg);  // the connection policy is set once, here (docs/config.md)
  c->algo = in.algo;
  if (cfg.algo) c->algo_spec = cfg.algo;
  c->cfg.algo = cfg.algo ? c->algo_spec.c_str() : nullptr;
  c->id = ctx->next_comm_id++;
  c->rank = rank;
  c->nranks = nranks;
  c->peers.emplace(rank, in.me);
  hcomm_result_t r = make_stream(ctx, &c->internal);
  if (r == HCOMM_SUCCESS) r = make_stream(ctx, &c->recv_stream);
  if (r != HCOMM_SUCCESS) { delete c; return r; }
  hold_comm_id(c);
  track(c, kComm);
  recovery::comm_created(c);
  *out = c;
  return HCOMM_SUCCESS;
}

hcomm_result_t comm_make_child(hcomm_comm_t parent, std::uint32_t id, std::vector<std::uint32_t> members, std::uint32_t rank,
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

}  // namespace hcomm::detail

extern "C" {

hcomm_result_t hcomm_comm_get_config(hcomm_comm_t comm, hcomm_config_t* cfg) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!cfg) return HCOMM_E_PTR;
  *cfg = comm->cfg;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_rank(hcomm_comm_t c, uint32_t* r) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  if (!r) return HCOMM_E_PTR;
  *r = c->rank;
  return HCOMM_SUCCESS;
}
hcomm_result_t hcomm_comm_size(hcomm_comm_t c, uint32_t* n) {
  if (!live(c, kComm)) return HCOMM_E_UNAVAIL;
  if (!n) return HCOMM_E_PTR;
  *n = c->nranks;
  return HCOMM_SUCCESS;
}

}  // extern "C"

