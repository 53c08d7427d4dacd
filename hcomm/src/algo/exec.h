// The schedule executor (docs/architecture.md#hcomm, docs/algorithms/README.md): turns one member's
// Schedule (algo/schedule.h) into stream tasks. Flow control is the same for every algorithm: every
// write waits for a grant from its receiver, and the receiver grants its receives in order:
//   * at the start (W is free: the receiver has left its previous use of the buffer), or once
//     the receive the grant depends on is consumed: the previous receive on the same staging slot
//     (the slot is free again), and the previous receive from another sender (writers take turns,
//     so a member that runs ahead of a receiver never writes into it while another member still
//     does — no incast from schedule skew); one sender's own writes pipeline freely.
//   * Data: every write is followed (in order, on the same path) by a DATA notify at the receiver,
//     which its receive waits for.
//   * QPs: a step's writes to one receiver (block runs that wrap) share the QPs the multi-QP
//     threshold gives their total, in proportion to their bytes (share_qps in exec.cpp).
// Credits and data notifies are keyed by (communicator, purpose, peer rank, slot): no tables.
#pragma once
#include <cstdint>

#include "algo/family.h"
#include "algo/schedule.h"
#include "core/objects.h"

namespace hcomm::detail {

/// The communicator ranks that are a schedule's members: member m is rank base + m * stride.
struct Members {
  std::uint32_t base = 0, stride = 1, n = 1;
  const std::uint32_t* order = nullptr;  ///< when set: member m is comm rank order[m] (op retry's ring, recovery/ring_order.h)
  std::uint32_t rank(std::uint32_t m) const { return order ? order[m] : base + m * stride; }
};

/// Where a schedule's work area and staging slots are (local addresses in this rank's CCL, at the
/// same offsets on every member).
struct Area {
  std::uint64_t w = 0, stage = 0, slot_bytes = 0;
  std::uint32_t slots = 2;
};

/// Submit the schedule on `main` (and, for steps with several sends, on the communicator's schedule helper
/// streams). HCOMM_E_NOT_FOUND for a member without a descriptor, HCOMM_E_DRV when a stream
/// cannot be made, HCOMM_E_NOT_SUPPORT when a member is unreachable under the protocol. The schedule
/// is taken: its steps are copied into three flat arrays and released before the first task is
/// submitted (a rank's host thread waits inside with its schedule alive while its queue drains: at
/// 8192 ranks, O(steps) per rank, the schedules were gigabytes).
hcomm_result_t run_schedule(hcomm_comm_t comm, hcomm_stream_t main, const Members& mem, Schedule&& schedule, const Area& a,
                        int dtype, int op);

/// Steps per window of a windowed schedule (default 128, at least 1): a family with a step count
/// (Family::count) whose schedule is longer is built and submitted a window at a time, so a rank
/// keeps one window of steps and 16 bytes per receive (its grant) instead of its whole schedule —
/// the same tasks in the same order. Tests make it small to exercise the windows.
void set_schedule_window(std::uint64_t steps);

/// Build family `f`'s schedule for `pi` (op, n, me, root, esz, w and bytes or blocks filled by the
/// caller) among `mem` and run it on `main`, with the staging slots in the collective buffer from
/// `stage_off` to its end (f.slots slots of equal, whole-element size). HCOMM_E_NOT_SUPPORT when
/// the family does not build pi.op; otherwise as run_schedule (windowed: see set_schedule_window).
hcomm_result_t run_family(hcomm_comm_t comm, hcomm_stream_t main, const Family& f, const Members& mem, ScheduleIn pi,
                          std::uint64_t stage_off, int dtype, int op);

}  // namespace hcomm::detail
