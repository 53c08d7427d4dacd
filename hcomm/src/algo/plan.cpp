// Collective plans (docs/architecture.md#hcomm): the helpers builders share.
#include "algo/plan.h"

#include <algorithm>

namespace hcomm::detail {

const char* coll_op_name(CollOp op) {
  switch (op) {
    case CollOp::AllReduce: return "allreduce";
    case CollOp::ReduceScatter: return "reducescatter";
    case CollOp::AllGather: return "allgather";
    case CollOp::Broadcast: return "broadcast";
    case CollOp::Reduce: return "reduce";
    case CollOp::Scatter: return "scatter";
    case CollOp::Gather: return "gather";
    case CollOp::AllToAll: return "alltoall";
  }
  return "?";
}

void staged(const PlanIn& in, std::vector<Send>* snd, std::uint32_t to, std::uint64_t src, std::vector<Recv>* rcv,
            std::uint32_t from, std::uint64_t dst, std::uint64_t bytes, Mode mode, std::uint32_t first, std::uint32_t base,
            std::uint32_t span) {
  const std::uint64_t piece = std::max<std::uint64_t>(in.esz, in.slot_bytes / in.esz * in.esz);
  std::uint32_t k = first;
  for (std::uint64_t o = 0; o < bytes || (o == 0 && bytes == 0); o += piece, ++k) {
    const std::uint64_t b = std::min(piece, bytes - o);
    const std::uint32_t slot = base + k % span;
    if (snd) snd->push_back(Send{to, src + o, b, mode, 0, slot});
    if (rcv) rcv->push_back(Recv{from, dst + o, b, mode, slot});
    if (bytes == 0) break;
  }
}

}  // namespace hcomm::detail
