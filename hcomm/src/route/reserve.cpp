// Bandwidth reservation (docs/routing.md#reservation, hcomm_reserve_bandwidth in hcomm.h): a
// communicator reserves a guaranteed share of its NPU's RoCE NIC. The library enforces it on the
// writes it posts: every other communicator of the context has its RoCE writes capped at the
// line rate minus the shares reserved by the others (DrvTask::rate_cap_Bps, the cap the NIC's QPs
// apply), the reserving one at its own ceiling; route decisions record the share as the
// bandwidth term of their cost. State lives in the context (one NIC per NPU), released by
// hcomm_release_bandwidth or hcomm_comm_destroy.
#include <algorithm>
#include <cstdio>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "driver_port.h"
#include "route/route.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail::route {

// Reservations may take at most this share of the line rate together: the rest stays for
// unreserved traffic, ACKs and CNPs (an assumption, docs/routing.md#reservation).
constexpr double kReservable = 0.9;
namespace {

}  // namespace

void drop_reservation(hcomm_comm_t comm) { comm->ctx->reservations.erase(comm); }

std::uint64_t reserved_by_others_total(hcomm_comm_t comm) {
  std::uint64_t sum = 0;
  for (const auto& [c, r] : comm->ctx->reservations)
    if (c != comm) sum += r.min_Bps;
  return sum;
}

std::uint64_t share_Bps(hcomm_comm_t comm, std::uint64_t line_Bps) {
  if (comm->ctx->reservations.empty() || line_Bps == 0) return line_Bps;
  const std::uint64_t others = reserved_by_others_total(comm);
  std::uint64_t bw = others < line_Bps ? line_Bps - others : 1;
  auto it = comm->ctx->reservations.find(comm);
  if (it != comm->ctx->reservations.end() && it->second.max_Bps) bw = std::min(bw, it->second.max_Bps);
  return bw;
}

// A reserving communicator's own QPs: the first multiple of 32 (the largest num_qp) above the
// shared QPs 0..31 that no other reservation of the context holds.
std::uint32_t free_qp_base(hcomm_comm_t comm) {
  for (std::uint32_t base = 32;; base += 32) {
    bool used = false;
    for (const auto& [c, r] : comm->ctx->reservations) used = used || (c != comm && r.qp_base == base);
    if (!used) return base;
  }
}

RdmaPolicy rdma_policy(hcomm_comm_t comm) {
  RdmaPolicy p = comm->rdma;
  if (comm->ctx->reservations.empty()) return p;
  if (auto it = comm->ctx->reservations.find(comm); it != comm->ctx->reservations.end()) p.qp_base = it->second.qp_base;
  const std::uint64_t cap = share_Bps(comm, comm->ctx->nic_line_Bps);
  if (cap && cap < comm->ctx->nic_line_Bps) p.rate_cap_Bps = p.rate_cap_Bps ? std::min(p.rate_cap_Bps, cap) : cap;
  return p;
}

}  // namespace hcomm::detail::route

extern "C" {

hcomm_result_t hcomm_reserve_bandwidth(hcomm_comm_t comm, uint64_t min_Bps, uint64_t max_Bps, uint32_t timeout_ms) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  hcomm_context_t ctx = comm->ctx;
  if (min_Bps == 0 || (max_Bps != 0 && max_Bps < min_Bps) || timeout_ms > 300000) {
    logf(ctx, 0, "Rank%u hcomm_reserve_bandwidth: need min_Bps > 0, max_Bps 0 or >= min_Bps, timeout_ms <= 300000 "
         "(got %llu, %llu, %u)", comm->rank, (unsigned long long)min_Bps, (unsigned long long)max_Bps, timeout_ms);
    return HCOMM_E_PARA;
  }
  if (!ctx->nic_line_Bps) {
    NicInfo nic;
    if (port::nic_info(ctx, &nic) != HCOMM_SUCCESS || !nic.present || !nic.speed_bps) {
      logf(ctx, 0, "Rank%u hcomm_reserve_bandwidth: the NPU has no RoCE NIC to reserve on", comm->rank);
      return HCOMM_E_NOT_SUPPORT;
    }
    ctx->nic_line_Bps = nic.speed_bps / 8;
  }
  const auto limit = static_cast<std::uint64_t>(route::kReservable * static_cast<double>(ctx->nic_line_Bps));
  if (min_Bps > limit) {
    logf(ctx, 0, "Rank%u hcomm_reserve_bandwidth: %.3f GB/s exceeds what the NIC can reserve (%.3f GB/s: 90%% of its line rate)",
         comm->rank, static_cast<double>(min_Bps) / 1e9, static_cast<double>(limit) / 1e9);
    return HCOMM_E_PARA;
  }
  // Fits when the shares of this NIC's other communicators leave min_Bps. Nothing else on this
  // host thread can release one while it waits (each rank is one thread): after timeout_ms of
  // host time the answer is the same.
  auto fits = [&] { return route::reserved_by_others_total(comm) + min_Bps <= limit; };
  if (!fits()) {
    if (timeout_ms) port::host_delay(ctx, static_cast<std::uint64_t>(timeout_ms) * 1000000ULL);
    if (!fits()) {
      logf(ctx, 0, "Rank%u hcomm_reserve_bandwidth: %.3f GB/s does not fit: %.3f GB/s of %.3f GB/s reservable already reserved "
           "by other communicators (waited %u ms)", comm->rank, static_cast<double>(min_Bps) / 1e9,
           static_cast<double>(route::reserved_by_others_total(comm)) / 1e9, static_cast<double>(limit) / 1e9, timeout_ms);
      return HCOMM_E_AGAIN;
    }
  }
  ctx->reservations[comm] = {min_Bps, max_Bps, route::free_qp_base(comm)};
  logf(ctx, 2, "Rank%u reserved %.3f GB/s (ceiling %.3f GB/s) on its NIC", comm->rank, static_cast<double>(min_Bps) / 1e9,
       static_cast<double>(max_Bps ? max_Bps : ctx->nic_line_Bps) / 1e9);
  // Its RoCE peers move to its own QPs, decided again with the share as the bandwidth term.
  char trig[96];
  std::snprintf(trig, sizeof trig, "bandwidth reserved: %.3f GB/s", static_cast<double>(min_Bps) / 1e9);
  route::redecide_roce(comm, trig);
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_release_bandwidth(hcomm_comm_t comm) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!comm->ctx->reservations.erase(comm)) return HCOMM_E_NOT_FOUND;
  route::redecide_roce(comm, "bandwidth released");  // back on the shared QPs
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_get_reserved_bandwidth(hcomm_comm_t comm, uint64_t* min_Bps, uint64_t* share_Bps) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!min_Bps || !share_Bps) return HCOMM_E_PTR;
  auto it = comm->ctx->reservations.find(comm);
  *min_Bps = it == comm->ctx->reservations.end() ? 0 : it->second.min_Bps;
  *share_Bps = route::share_Bps(comm, comm->ctx->nic_line_Bps);
  return HCOMM_SUCCESS;
}

}  // extern "C"
