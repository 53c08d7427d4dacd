// Collective schedules (docs/architecture.md#hcomm): the helpers builders share.
#include "algo/schedule.h"

#include <algorithm>
#include <cstdint>

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

void staged(const ScheduleIn& in, std::vector<Send>* snd, std::uint32_t to, std::uint64_t src, std::vector<Recv>* rcv,
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

bool rows_fit_slot(const ScheduleIn& in, std::uint64_t width, std::uint64_t pitch) {
  return width > 0 && pitch <= UINT32_MAX && width <= std::max<std::uint64_t>(in.esz, in.slot_bytes / in.esz * in.esz);
}

void staged_rows(const ScheduleIn& in, std::vector<Send>* snd, std::uint32_t to, std::uint64_t src, std::vector<Recv>* rcv,
                 std::uint32_t from, std::uint64_t dst, std::uint64_t bytes, std::uint64_t width, std::uint64_t dpitch,
                 std::uint32_t first, std::uint32_t base, std::uint32_t span) {
  const std::uint64_t slot = std::max<std::uint64_t>(in.esz, in.slot_bytes / in.esz * in.esz);
  const std::uint64_t rows_per_piece = std::max<std::uint64_t>(1, slot / width), piece = rows_per_piece * width;
  std::uint32_t k = first;
  for (std::uint64_t o = 0; o < bytes; o += piece, ++k) {
    const std::uint64_t b = std::min(piece, bytes - o);
    const std::uint32_t sl = base + k % span;
    if (snd) snd->push_back(Send{to, src + o, b, Mode::StagedCopy, 0, sl});
    if (rcv) rcv->push_back(Recv{from, dst + o / width * dpitch, b, Mode::StagedCopy, sl, static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(dpitch)});
  }
}

}  // namespace hcomm::detail
