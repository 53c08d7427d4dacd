// Collective schedules (docs/architecture.md#hcomm, docs/algorithms/README.md): every algorithm family
// is a builder that writes ONE member's program for one chunk — a list of steps, each with the
// transfers this member sends and receives and the local copies/reductions that follow — and one
// executor (algo/exec.h) turns any program into stream tasks with the same flow control. A
// builder sees only its own member index, the member count and the sizes: no N x N tables.
//
// Memory model. Every member has a work area W inside its collective buffer (CCL) at the same
// offset on every member, and `slots` staging slots of `slot_bytes` after it (also symmetric).
//   Direct        the sender writes into the receiver's W at `dst_off` (the final place); the
//                 receiver only waits for it.
//   StagedCopy    the sender writes into the receiver's staging slot `slot`; the receiver copies
//                 the slot to `dst` (an address of its own: W, or a user buffer).
//   StagedReduce  as StagedCopy, but the receiver reduces the slot into `dst` (dst = dst op slot).
// Rules a builder keeps (tests/hcomm/family_schedules_test.cpp checks them on every family):
//   * A member's sends and receives pair up: for every Send(to = p, ...) of member m at step k,
//     member p has a Recv(from = m) with the same bytes, mode and slot, at the same position among
//     its receives from m (members may be at different step indexes for them).
//   * Staged transfers are at most slot_bytes. A receiver's slot is shared by all its senders: the
//     executor grants it to one sender at a time, in the order of the receiver's receives, so a
//     builder never needs to wait for a slot itself — but two receives of one step on one slot
//     serialise, so a builder gives concurrent senders distinct slots.
//   * Direct writes land where nothing else is read or written until the receiver has waited.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace hcomm::detail {

enum class Mode : std::uint8_t { Direct, StagedCopy, StagedReduce };

struct Send {
  std::uint32_t to = 0;      ///< member index
  std::uint64_t src = 0;     ///< local address
  std::uint64_t bytes = 0;
  Mode mode = Mode::Direct;
  std::uint64_t dst_off = 0; ///< Direct: offset in the receiver's W
  std::uint32_t slot = 0;    ///< Staged*: receiver's staging slot
};

struct Recv {
  std::uint32_t from = 0;    ///< member index
  std::uint64_t dst = 0;     ///< Staged*: local address the slot is copied/reduced into
  std::uint64_t bytes = 0;
  Mode mode = Mode::Direct;
  std::uint32_t slot = 0;
  /// StagedCopy: when width != 0 the slot holds rows of `width` bytes, row i copied to
  /// dst + i * dpitch (one 2-D copy; 32 bits keep a one-element receive vector in one 48-byte
  /// heap chunk: rows_fit_slot checks the sizes).
  std::uint32_t width = 0, dpitch = 0;
};

/// A local copy (or reduction, dst = dst op src) on the member's main stream; a copy with
/// width != 0 is 2-D: bytes / width rows, row i from src + i * spitch to dst + i * dpitch.
struct Local {
  std::uint64_t dst = 0, src = 0, bytes = 0;
  bool reduce = false;
  std::uint32_t width = 0, spitch = 0, dpitch = 0;
};

/// One step: sends are issued first (several sends run on parallel helper streams), then the
/// receives are consumed in order, then the local operations run.
struct Step {
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  std::vector<Local> locals;
};

/// A member's program, or a window of it. By default a builder writes the whole schedule. A family
/// with a step count (Family::count) also builds windows: given first and end, it writes only
/// steps [first, end) of the whole schedule, step k to steps[k - first], exactly as the whole schedule
/// has them (the executor keeps a window at a time of a long schedule: algo/exec.h).
struct Schedule {
  std::vector<Step> steps;
  std::uint64_t first = 0, end = UINT64_MAX;  ///< the window asked for (whole schedule: 0, max)
  /// Make room for a schedule of `total` steps: the whole schedule, or the window's part of it.
  void size_to(std::uint64_t total) {
    if (end > total) end = total;
    steps.resize(end > first ? end - first : 0);
  }
  /// Step k of the whole schedule when it is in the window, else null (after size_to).
  Step* at(std::uint64_t k) { return k >= first && k < end ? &steps[k - first] : nullptr; }
  /// Of the `count` steps from `start`, the offsets [lo, hi) in the window (lo >= hi: none).
  std::uint64_t lo(std::uint64_t start) const { return first > start ? first - start : 0; }
  std::uint64_t hi(std::uint64_t start, std::uint64_t count) const {
    return end < start ? 0 : std::min(count, end - start);
  }
};

/// n blocks back to back: uniform (`elems` each) or, for the -v operations, per-block counts.
struct Blocks {
  std::uint32_t n = 0;
  std::uint64_t esz = 1;
  std::uint64_t elems = 0;                          ///< uniform block size in elements
  const std::vector<std::uint64_t>* counts = nullptr;  ///< per block elements (v); null = uniform
  const std::vector<std::uint64_t>* prefix = nullptr;  ///< v: element prefix sums, n + 1 entries
  std::uint64_t len(std::uint32_t j) const { return (counts ? (*counts)[j] : elems) * esz; }
  std::uint64_t off(std::uint32_t j) const { return (prefix ? (*prefix)[j] : j * elems) * esz; }
  std::uint64_t total() const { return off(n); }
};

enum class CollOp : std::uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Scatter, Gather, AllToAll };
const char* coll_op_name(CollOp op);

/// What a builder is asked to schedule: member `me` of `n`, one chunk.
///   AllReduce / Broadcast / Reduce: W holds `bytes` of data (multiple of esz); the result is W
///     on every member (AllReduce), on every member (Broadcast, input at the root), at the root (Reduce).
///   ReduceScatter / AllGather / Scatter / Gather: W holds `blocks` (block j belongs to member j);
///     RS: all blocks are inputs, block `me` the result; AG: block `me` is the input, all blocks
///     the result; Scatter: the root holds all blocks, block `me` the result; Gather: reverse.
///   AllToAll: `send` blocks (block j for member j, at `in`) and `recv` blocks (block j from
///     member j, at `out`): local addresses outside W; the transfers are staged.
struct ScheduleIn {
  CollOp op = CollOp::AllReduce;
  std::uint32_t n = 1, me = 0, root = 0;
  std::uint64_t esz = 1;
  std::uint64_t w = 0;          ///< local address of W
  std::uint64_t bytes = 0;      ///< AllReduce / Broadcast / Reduce
  Blocks blocks;                ///< RS / AG / Scatter / Gather; AllToAll: recv blocks
  Blocks send_blocks;           ///< AllToAll: send blocks
  std::uint64_t in = 0, out = 0;  ///< AllToAll: local send and receive buffers
  std::uint64_t slot_bytes = 0; ///< staging slot size
  std::uint32_t slots = 2;      ///< staging slots available
  std::uint32_t local = 1;      ///< ranks per server, members numbered server-major (the pipeline)
};

/// A staged transfer of `bytes` in pieces of at most in.slot_bytes on slots first, first+1, ...
/// (mod `span`, offset by `base`): appends to `snd` (sender side: to member `to`, from `src`) or to
/// `rcv` (receiver side: from member `from`, into `dst`); pass null for the side not scheduled.
/// Both sides must call it with the same bytes, first, base and span.
void staged(const ScheduleIn& in, std::vector<Send>* snd, std::uint32_t to, std::uint64_t src, std::vector<Recv>* rcv,
            std::uint32_t from, std::uint64_t dst, std::uint64_t bytes, Mode mode, std::uint32_t first,
            std::uint32_t base = 0, std::uint32_t span = 2);
/// As staged(), for data that the receiver places as rows of `width` bytes at dst + i * dpitch
/// (StagedCopy): pieces hold whole rows, so `width` must be at most the slot (rows_fit_slot).
/// The sender side passes the same width (its source is contiguous; dpitch is not used there).
void staged_rows(const ScheduleIn& in, std::vector<Send>* snd, std::uint32_t to, std::uint64_t src, std::vector<Recv>* rcv,
                 std::uint32_t from, std::uint64_t dst, std::uint64_t bytes, std::uint64_t width, std::uint64_t dpitch,
                 std::uint32_t first, std::uint32_t base, std::uint32_t span);
/// Whether rows of `width` bytes fit one staging piece of `in` and `pitch` fits a Recv's 32 bits.
bool rows_fit_slot(const ScheduleIn& in, std::uint64_t width, std::uint64_t pitch);

}  // namespace hcomm::detail
