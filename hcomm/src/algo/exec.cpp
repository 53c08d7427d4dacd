// The plan executor (docs/architecture.md#hcomm, docs/algorithms/README.md).
#include "algo/exec.h"

#include <algorithm>
#include <vector>

#include "algo/mesh.h"
#include "core/comm.h"
#include "core/stream.h"
#include "transport/notify_keys.h"
#include "transport/tasks.h"
#include "transport/transport.h"

namespace hcomm::detail {

namespace {

constexpr std::uint32_t kDirectSlot = 0x3ffffff;
constexpr std::uint32_t kMaxPlanSlaves = 7;

std::uint32_t slot_of(Mode m, std::uint32_t slot) { return m == Mode::Direct ? kDirectSlot : slot; }

struct Exec {
  hcomm_comm_t comm;
  hcomm_stream_t main;
  const Members& mem;
  const Area& a;
  int dtype, op;
  std::uint64_t ccl_off(std::uint64_t local) const { return local - comm->ctx->base; }

  const RankDesc* desc(std::uint32_t m) const { return peer_desc(comm, mem.rank(m)); }

  // Grant `to` (a member) the right to write my slot (Direct: my W).
  hcomm_result_t grant(std::uint32_t to, std::uint32_t slot) const {
    const RankDesc* d = desc(to);
    if (!d) return HCOMM_E_NOT_FOUND;
    return remote_notify(main, comm, *d, notify_key(comm->id, kPlanCredit, comm->rank, slot));
  }

  hcomm_result_t send(hcomm_stream_t s, const Send& x, bool wait_credit) const {
    const RankDesc* d = desc(x.to);
    if (!d) return HCOMM_E_NOT_FOUND;
    const std::uint32_t slot = slot_of(x.mode, x.slot);
    if (wait_credit) notify_wait(s, notify_key(comm->id, kPlanCredit, d->rank, slot));
    const std::uint64_t dst = d->device_base_addr +
                              (x.mode == Mode::Direct ? ccl_off(a.w) + x.dst_off : ccl_off(a.stage) + x.slot * a.slot_bytes);
    return put_notify(s, comm, *d, dst, x.src, x.bytes, notify_key(comm->id, kPlanData, comm->rank, slot),
                      comm->ctx->ccl_rkey);
  }
};

}  // namespace

hcomm_result_t run_plan(hcomm_comm_t comm, hcomm_stream_t main, const Members& mem, const Plan& plan, const Area& a,
                        int dtype, int op) {
  Exec ex{comm, main, mem, a, dtype, op};
  settle_mesh(comm, main);

  // Receiver side: who uses each slot next after each receive, and who writes Direct into W.
  std::vector<const Recv*> recvs;
  for (const Step& st : plan.steps)
    for (const Recv& r : st.recvs) recvs.push_back(&r);
  std::vector<std::int64_t> next_user(recvs.size(), -1);  // member granted the slot after recv i
  std::vector<std::uint32_t> first_users_slot, first_users_from, direct_from;
  {
    std::vector<std::int64_t> later(a.slots, -1);  // backward pass: the next user of each slot
    for (std::size_t i = recvs.size(); i-- > 0;) {
      const Recv& r = *recvs[i];
      if (r.mode == Mode::Direct) continue;
      if (r.slot >= a.slots) return HCOMM_E_INTERNAL;
      next_user[i] = later[r.slot];
      later[r.slot] = r.from;
    }
    for (std::uint32_t s = 0; s < a.slots; ++s)
      if (later[s] >= 0) {
        first_users_slot.push_back(s);
        first_users_from.push_back(static_cast<std::uint32_t>(later[s]));
      }
    for (const Recv* r : recvs)
      if (r->mode == Mode::Direct) direct_from.push_back(r->from);
    std::sort(direct_from.begin(), direct_from.end());
    direct_from.erase(std::unique(direct_from.begin(), direct_from.end()), direct_from.end());
  }
  for (std::size_t i = 0; i < first_users_slot.size(); ++i)
    if (hcomm_result_t rc = ex.grant(first_users_from[i], first_users_slot[i]); rc != HCOMM_SUCCESS) return rc;
  for (std::uint32_t f : direct_from)
    if (hcomm_result_t rc = ex.grant(f, kDirectSlot); rc != HCOMM_SUCCESS) return rc;

  // Sender side: the first Direct write to each member waits for its grant.
  std::vector<std::uint32_t> direct_to;  // members already granted (sorted)
  auto first_direct = [&](std::uint32_t to) {
    auto it = std::lower_bound(direct_to.begin(), direct_to.end(), to);
    if (it != direct_to.end() && *it == to) return false;
    direct_to.insert(it, to);
    return true;
  };

  std::size_t ri = 0;
  for (const Step& st : plan.steps) {
    const std::size_t ns = st.sends.size();
    if (ns == 1) {
      const Send& x = st.sends[0];
      if (hcomm_result_t rc = ex.send(main, x, x.mode != Mode::Direct || first_direct(x.to)); rc != HCOMM_SUCCESS) return rc;
    } else if (ns > 1) {
      const auto lanes = static_cast<std::uint32_t>(std::min<std::size_t>(ns, kMaxPlanSlaves));
      while (comm->plan_slaves.size() < lanes) {
        hcomm_stream_t s = nullptr;
        if (make_stream(comm->ctx, &s) != HCOMM_SUCCESS) return HCOMM_E_DRV;
        comm->plan_slaves.push_back(s);
      }
      for (std::uint32_t k = 0; k < lanes; ++k) {
        notify_record(main, comm->ctx->device, notify_key(comm->id, kPlanFork, comm->rank, k));
        notify_wait(comm->plan_slaves[k], notify_key(comm->id, kPlanFork, comm->rank, k));
      }
      // Sends that share a receiver's slot stay on one lane, in plan order: a credit is a count,
      // so two lanes waiting for the same slot could take each other's grant.
      std::vector<std::pair<std::uint64_t, std::uint32_t>> lane_of;  // (to, slot) -> lane
      std::uint32_t next_lane = 0;
      for (std::size_t j = 0; j < ns; ++j) {
        const Send& x = st.sends[j];
        const std::uint64_t k = (static_cast<std::uint64_t>(x.to) << 32) | slot_of(x.mode, x.slot);
        std::uint32_t lane = next_lane;
        auto it = std::find_if(lane_of.begin(), lane_of.end(), [&](const auto& e) { return e.first == k; });
        if (it != lane_of.end()) lane = it->second;
        else { lane_of.emplace_back(k, lane); next_lane = (next_lane + 1) % lanes; }
        const bool wait = x.mode != Mode::Direct || first_direct(x.to);
        if (hcomm_result_t rc = ex.send(comm->plan_slaves[lane], x, wait); rc != HCOMM_SUCCESS) return rc;
      }
      for (std::uint32_t k = 0; k < lanes; ++k)
        notify_record(comm->plan_slaves[k], comm->ctx->device, notify_key(comm->id, kPlanJoin, comm->rank, k));
    }
    for (const Recv& r : st.recvs) {
      const RankDesc* d = ex.desc(r.from);
      if (!d) return HCOMM_E_NOT_FOUND;
      notify_wait(main, notify_key(comm->id, kPlanData, d->rank, slot_of(r.mode, r.slot)));
      if (r.mode != Mode::Direct && r.bytes) {
        const std::uint64_t slot = a.stage + r.slot * a.slot_bytes;
        if (r.mode == Mode::StagedReduce) reduce_copy(main, r.dst, slot, r.bytes, dtype, op);
        else copy(main, r.dst, slot, r.bytes);
      }
      if (next_user[ri] >= 0)
        if (hcomm_result_t rc = ex.grant(static_cast<std::uint32_t>(next_user[ri]), r.slot); rc != HCOMM_SUCCESS) return rc;
      ++ri;
    }
    if (ns > 1)
      for (std::uint32_t k = 0; k < std::min<std::size_t>(ns, kMaxPlanSlaves); ++k)
        notify_wait(main, notify_key(comm->id, kPlanJoin, comm->rank, k));
    for (const Local& l : st.locals) {
      if (!l.bytes) continue;
      if (l.reduce) reduce_copy(main, l.dst, l.src, l.bytes, dtype, op);
      else copy(main, l.dst, l.src, l.bytes);
    }
  }
  return HCOMM_SUCCESS;
}

}  // namespace hcomm::detail
