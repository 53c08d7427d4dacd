// libhcomm internals. Per-rank state lives in these objects, never in statics or thread_locals:
// every simulated rank shares one OS thread.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hcomm/driver.h"
#include "hcomm/hcomm.h"

struct hcomm_stream_s;

struct hcomm_context_s {
  hcomm::Driver* drv = nullptr;
  std::uint32_t device_id = 0;     // id inside the server
  std::uint32_t device = 0;        // global device handle
  std::uint64_t base = 0;          // HBM base address of this device
  std::uint64_t ccl_addr = 0, ccl_bytes = 0;     // collective buffer (symmetric)
  std::uint64_t p2p_addr = 0, p2p_bytes = 0;     // point-to-point receive window (symmetric)
  std::uint64_t timeout_ns = 30000ULL * 1000 * 1000;
  int debug = 0;
  std::uint64_t next_event = 1, next_marker = 1;
  std::uint32_t next_comm_id = 1;
  std::map<std::uint64_t, std::uint64_t> allocs;  // addr -> bytes
  std::uint32_t ccl_rkey = 0, p2p_rkey = 0;       // pre-registered communication buffers (same on all ranks)
  std::uint64_t sym_addr = 0, slot_bytes = 0;     // symmetric region of fixed-size slots
  std::vector<std::uint32_t> slot_used;           // per slot: 0 free, else number of slots of the buffer starting here
  std::map<std::uint32_t, std::uint64_t> mrs;     // key -> addr
};

struct hcomm_stream_s {
  hcomm_context_t ctx = nullptr;
  std::uint32_t id = 0;
};

struct hcomm_event_s {
  hcomm_context_t ctx = nullptr;
  std::uint64_t id = 0;
  std::uint64_t recorded = 0;  // host-side count of records
};

struct hcomm_comm_s {
  hcomm_context_t ctx = nullptr;
  hcomm_config_t cfg{};                  // resolved configuration
  std::uint32_t id = 0, rank = 0, nranks = 0;
  std::uint64_t op_seq = 0;
  hcomm_stream_t internal = nullptr;     // blocking p2p and the serialized receive path
  hcomm_stream_t recv_stream = nullptr;  // all receives of this communicator, in posting order
  std::vector<hcomm_stream_t> slaves;    // mesh collectives: one per peer
  bool pulled_pending = false;           // peers still owe PULLED notifies from the last mesh all-reduce
  bool ring_primed = false;              // the ring's staging credit to the previous rank has been given
  std::map<std::uint32_t, hcomm::RankDesc> peers;  // descriptors of peers actually used
  std::map<std::uint32_t, hcomm::PairLink> links;  // transport to peers actually used
};

struct hcomm_buffer_pool_s {
  hcomm_context_t ctx = nullptr;
  hcomm_memory_type_t type = HCOMM_MEMORY_TYPE_DEVICE;
  std::uint64_t size = 0;
  std::vector<void*> addr;
  enum State : std::uint8_t { kFree, kOut, kPending };
  std::vector<State> state;
  std::vector<hcomm_event_t> ev;      // pending: completes when the transfer using it is done
  std::vector<hcomm_stream_t> stream; // pending: the stream to wait on
  std::vector<std::uint64_t> order;   // pending: release sequence (oldest first)
  std::uint64_t seq = 0;
};

struct hcomm_request_s {
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t stream = nullptr;
  hcomm_event_t done = nullptr;
  std::int64_t peer = -1;  // p2p: for error messages
  std::uint32_t tag = 0;
  std::uint64_t bytes = 0;
  bool is_send = false;
};

namespace hcomm::detail {

enum Purpose : std::uint64_t {
  kArReady = 1, kArDone, kArReduced, kArPulled, kFork, kJoin, kP2pReady, kP2pData, kRingData, kRingCredit, kBarrier, kP2pLast
};
/// Notify key: communicator, purpose, peer rank and a sub-index (tag or slave index).
inline std::uint64_t notify_key(std::uint32_t comm, Purpose p, std::uint32_t peer, std::uint32_t sub = 0) {
  return (static_cast<std::uint64_t>(comm & 0xff) << 56) | (static_cast<std::uint64_t>(p) << 50) |
         (static_cast<std::uint64_t>(peer & 0xffffff) << 26) | (sub & 0x3ffffff);
}

/// Key of a message's last DATA notify: it also encodes the message size, so that a receiver
/// expecting another size never matches it (it times out instead of taking wrong bytes).
inline std::uint64_t last_key(std::uint32_t comm, std::uint32_t src, std::uint32_t tag, std::uint64_t bytes) {
  std::uint64_t h = bytes * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 29;
  return notify_key(comm, kP2pLast, src, static_cast<std::uint32_t>((tag ^ h) & 0x3ffffff));
}

bool live(const void* handle, int type);
void track(const void* handle, int type);
void untrack(const void* handle);
enum HandleType { kCtx = 1, kStream, kEvent, kComm, kReq, kPool };

const RankDesc* peer_desc(hcomm_comm_t comm, std::uint32_t rank);
hcomm_result_t submit(hcomm_stream_t s, const DrvTask& t);
hcomm_result_t notify_record(hcomm_stream_t s, std::uint32_t target_device, std::uint64_t key);
hcomm_result_t notify_wait(hcomm_stream_t s, std::uint64_t key);
hcomm_result_t copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes);
hcomm_result_t reduce_copy(hcomm_stream_t s, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, int dtype, int op);
hcomm_result_t make_stream(hcomm_context_t ctx, hcomm_stream_t* out);
/// RoCE write src -> dst on `device`, then notify `key` there (notify = true). bytes may be 0.
hcomm_result_t rdma_write(hcomm_stream_t s, std::uint32_t device, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                          bool notify, std::uint64_t key, std::uint32_t rkey, hcomm_comm_t comm = nullptr);
/// Synchronize a stream with a timeout (ms), mapping driver status to result codes.
hcomm_result_t sync_timeout(hcomm_stream_t s, std::uint64_t timeout_ms);
/// Transport to a peer: SDMA when the driver reports an HCCS link or a PCIe peer-to-peer path,
/// else RoCE (RDMA writes through the NPU's NIC).
bool via_sdma(hcomm_comm_t comm, const RankDesc& peer);
/// Notify `key` on the peer's device over whichever transport reaches it.
hcomm_result_t remote_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t key);
/// Write bytes to the peer (dst is an address in its HBM, in the region of `rkey`), then notify `key` there.
hcomm_result_t put_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, std::uint64_t key, std::uint32_t rkey);
void logf(hcomm_context_t ctx, int level, const char* fmt, ...);
/// Announce an operation and submit its begin marker; op_end submits the end marker.
std::uint64_t op_begin(hcomm_stream_t s, const OpInfo& info);
void op_end(hcomm_stream_t s, std::uint64_t begin_key);

hcomm_result_t allreduce_mesh(hcomm_comm_t comm, std::uint64_t in, std::uint64_t out, std::uint64_t count,
                              int dtype, int op, hcomm_stream_t stream);

}  // namespace hcomm::detail
