/* HCOMM: communication library for Ascend NPUs (hcsim's implementation).
 * C API. Result codes, data types and reduce ops follow HCCL's numbering so HCCL users feel at home.
 * Device pointers are opaque addresses in the device address space (void*), as in CANN. */
#ifndef HCOMM_HCOMM_H
#define HCOMM_HCOMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HCOMM_SUCCESS = 0,
  HCOMM_E_PARA = 1,          /* parameter error */
  HCOMM_E_PTR = 2,           /* null or invalid pointer */
  HCOMM_E_MEMORY = 3,        /* out of memory */
  HCOMM_E_INTERNAL = 4,
  HCOMM_E_NOT_SUPPORT = 5,
  HCOMM_E_NOT_FOUND = 6,
  HCOMM_E_UNAVAIL = 7,       /* resource unavailable (e.g. destroyed handle) */
  HCOMM_E_SYSCALL = 8,
  HCOMM_E_TIMEOUT = 9,
  HCOMM_E_OPEN_FILE_FAILURE = 10,
  HCOMM_E_TCP_CONNECT = 11,
  HCOMM_E_ROCE_CONNECT = 12,
  HCOMM_E_TCP_TRANSFER = 13,
  HCOMM_E_ROCE_TRANSFER = 14,
  HCOMM_E_RUNTIME = 15,      /* a device task failed */
  HCOMM_E_DRV = 16,
  HCOMM_E_NETWORK = 19,
  HCOMM_E_AGAIN = 20,
  HCOMM_E_REMOTE = 21,       /* the peer reported an error */
  E_HCOMM_ADDR_MISMATCH = 64, /* rank descriptor disagrees with the device (host_ip / base address) */
  HCOMM_E_RANK_LOST = 65,    /* a member was lost: its process crashed (its host connections closed) or the heartbeat
                                found it LOST (hcomm's own code, outside HCCL's numbering) */
  HCOMM_I_FAILOVER = 66      /* informational, not an error: a fault was survived (op retry re-executed the operation
                                around it); only from hcomm_get_async_error and the error callback (docs/failover.md) */
} hcomm_result_t;

typedef enum {
  HCOMM_DATA_TYPE_INT8 = 0,
  HCOMM_DATA_TYPE_INT16 = 1,
  HCOMM_DATA_TYPE_INT32 = 2,
  HCOMM_DATA_TYPE_FP16 = 3,
  HCOMM_DATA_TYPE_FP32 = 4,
  HCOMM_DATA_TYPE_INT64 = 5,
  HCOMM_DATA_TYPE_FP64 = 10,
  HCOMM_DATA_TYPE_BFP16 = 11
} hcomm_data_type_t;

typedef enum { HCOMM_REDUCE_SUM = 0, HCOMM_REDUCE_PROD = 1, HCOMM_REDUCE_MAX = 2, HCOMM_REDUCE_MIN = 3 } hcomm_reduce_op_t;

typedef struct hcomm_context_s* hcomm_context_t;
typedef struct hcomm_stream_s* hcomm_stream_t;
typedef struct hcomm_event_s* hcomm_event_t;
typedef struct hcomm_comm_s* hcomm_comm_t;
typedef struct hcomm_request_s* hcomm_request_t;

/* ---- context ---- */
/* One context per NPU process. device_id is the NPU's id inside its server (0..7). */
hcomm_result_t hcomm_create_context(uint32_t device_id, hcomm_context_t* ctx);
hcomm_result_t hcomm_destroy_context(hcomm_context_t ctx);
hcomm_result_t hcomm_context_device_id(hcomm_context_t ctx, uint32_t* device_id);
/* Size and base of the device communication buffer (symmetric on every rank). */
hcomm_result_t hcomm_context_max_buffer_size(hcomm_context_t ctx, uint64_t* bytes);
hcomm_result_t hcomm_context_device_buffer(hcomm_context_t ctx, void** dev_ptr);

/* ---- streams ---- */
hcomm_result_t hcomm_create_stream(hcomm_context_t ctx, hcomm_stream_t* stream);
hcomm_result_t hcomm_destroy_stream(hcomm_stream_t stream);
/* Blocks the caller until every task on the stream finished (or the context timeout passed). */
hcomm_result_t hcomm_stream_synchronize(hcomm_stream_t stream);

/* ---- compute ---- */
/* Enqueue AI-core work on the stream (as a kernel launch does): the stream is busy for
 * duration_ns, or for `flops` operations of `dtype` at the device's peak rate for that dtype times
 * `efficiency` (in (0, 1]; the peaks: docs/models/npu.md#compute). Streams order it as any task;
 * events order it against other streams. Invalid arguments (duration 0, flops <= 0 or not finite,
 * efficiency outside (0, 1]): HCOMM_E_PARA; a dtype the device has no peak for: HCOMM_E_NOT_SUPPORT. */
hcomm_result_t hcomm_launch_compute(hcomm_stream_t stream, uint64_t duration_ns);
hcomm_result_t hcomm_launch_compute_flops(hcomm_stream_t stream, double flops, hcomm_data_type_t dtype, double efficiency);

/* ---- events ---- */
hcomm_result_t hcomm_create_event(hcomm_context_t ctx, hcomm_event_t* ev);
hcomm_result_t hcomm_destroy_event(hcomm_event_t ev);
hcomm_result_t hcomm_record_event(hcomm_event_t ev, hcomm_stream_t stream);
/* The stream waits (on the device) until the event's most recent record has completed. */
hcomm_result_t hcomm_wait_event(hcomm_event_t ev, hcomm_stream_t stream);
/* HCOMM_SUCCESS when complete, HCOMM_E_AGAIN when not yet. */
hcomm_result_t hcomm_query_event(hcomm_event_t ev);
hcomm_result_t hcomm_event_elapsed_time(hcomm_event_t start, hcomm_event_t end, float* ms);

/* ---- memory ---- */
hcomm_result_t hcomm_malloc(hcomm_context_t ctx, uint64_t bytes, void** dev_ptr);
hcomm_result_t hcomm_free(hcomm_context_t ctx, void* dev_ptr);
/* create_buffer in the HCOMM documentation: device memory of `bytes` (same as hcomm_malloc). */
hcomm_result_t hcomm_create_buffer(hcomm_context_t ctx, uint64_t bytes, void** dev_ptr);
hcomm_result_t hcomm_memcpy_host_to_device(void* dst, const void* src, uint64_t bytes, hcomm_stream_t stream);
hcomm_result_t hcomm_memcpy_device_to_host(void* dst, const void* src, uint64_t bytes, hcomm_stream_t stream);
hcomm_result_t hcomm_memcpy_device_to_device(void* dst, const void* src, uint64_t bytes, hcomm_stream_t stream);

/* ---- buffer pools ----
 * Fixed-size buffers in device or host memory, handed out and taken back without allocation.
 * acquire: a free buffer at once; else, if some released buffer is still waiting for its transfer,
 * wait (up to timeout_ms of simulated time) for the oldest such transfer and take that buffer
 * (HCOMM_E_TIMEOUT if it does not finish in time); if every buffer is acquired and none released,
 * HCOMM_E_UNAVAIL at once ("pool empty").
 * release with a stream: the buffer returns to the pool only when the work queued on that stream so
 * far (e.g. an isend from it) has finished; with NULL: at once.
 * num_buffers 0: the context's default, buffer_pool_size (HCOMM_BUFFER_POOL_SIZE when the context
 * was made, default 8; a communicator config that sets buffer_pool_size makes it the default of its
 * context from then on).
 * destroy: HCOMM_E_AGAIN while buffers are acquired; waits for pending releases. */
typedef enum { HCOMM_MEMORY_TYPE_DEVICE = 0, HCOMM_MEMORY_TYPE_HOST = 1 } hcomm_memory_type_t;
typedef struct hcomm_buffer_pool_s* hcomm_buffer_pool_t;
typedef struct {
  void* addr;
  uint64_t size;
  uint32_t index;
} hcomm_buffer_t;
hcomm_result_t hcomm_create_buffer_pool(hcomm_context_t ctx, uint32_t num_buffers, uint64_t buffer_size,
                                        hcomm_memory_type_t memory_type, hcomm_buffer_pool_t* pool);
hcomm_result_t hcomm_buffer_pool_acquire(hcomm_buffer_pool_t pool, uint32_t timeout_ms, hcomm_buffer_t* buf);
hcomm_result_t hcomm_buffer_pool_release(hcomm_buffer_pool_t pool, const hcomm_buffer_t* buf, hcomm_stream_t stream);
hcomm_result_t hcomm_buffer_pool_available(hcomm_buffer_pool_t pool, uint32_t* free_buffers);
hcomm_result_t hcomm_destroy_buffer_pool(hcomm_buffer_pool_t pool);

/* ---- host cache maintenance ----
 * Write back (TO_DEVICE) or invalidate (FROM_DEVICE) the host cache lines of [host_ptr, +size)
 * before / after a transfer. Costs the calling host thread 0.5 us + size rounded up to 64-byte lines
 * at 25 GB/s of simulated time (an assumption; the simulated host is coherent). */
typedef enum { HCOMM_FLUSH_TO_DEVICE = 0, HCOMM_FLUSH_FROM_DEVICE = 1 } hcomm_flush_dir_t;
hcomm_result_t hcomm_flush_cache(hcomm_context_t ctx, const void* host_ptr, uint64_t size, hcomm_flush_dir_t direction);

/* ---- symmetric buffers and RDMA memory registration ----
 * hcomm_buffer_alloc hands out whole slots (HCOMM_SLOT_SIZE_MB, default 256 MB) of a region that
 * sits at the same offset on every rank, so a peer's copy of a buffer is at
 * peer base + (ptr - own base); ranks that allocate in the same order get the same offsets. */
hcomm_result_t hcomm_buffer_alloc(hcomm_context_t ctx, uint64_t bytes, void** dev_ptr);
hcomm_result_t hcomm_buffer_free(hcomm_context_t ctx, void* dev_ptr);

typedef enum { HCOMM_ACCESS_LOCAL_WRITE = 1, HCOMM_ACCESS_REMOTE_READ = 2, HCOMM_ACCESS_REMOTE_WRITE = 4 } hcomm_access_t;
typedef struct {
  uint64_t addr;   /* start of the region (device address) */
  uint64_t size;
  uint32_t lkey, rkey;
  uint32_t access;
} hcomm_mr_t;
/* Keys follow registration order: ranks registering the same buffers in the same order get the
 * same keys (as they get the same symmetric offsets). */
hcomm_result_t hcomm_reg_mr(hcomm_context_t ctx, void* dev_ptr, uint64_t bytes, uint32_t access, hcomm_mr_t* mr);
hcomm_result_t hcomm_dereg_mr(hcomm_context_t ctx, const hcomm_mr_t* mr);
/* The peer's address of one of my symmetric buffers. */
hcomm_result_t hcomm_remote_addr(hcomm_comm_t comm, uint32_t peer, const void* my_ptr, uint64_t* remote_addr);

/* ---- configuration ----
 * Per-communicator configuration beats the HCOMM_* environment variable, which beats the
 * default. Fields left at HCOMM_CONFIG_UNSET take the environment or the default; an out-of-range
 * value makes hcomm_comm_init_config fail with HCOMM_E_PARA and an [HCOMM_ERR] line naming it.
 * docs/config.md lists every knob with default, range and effect. */
#define HCOMM_CONFIG_UNSET 0xffffffffffffffffULL
typedef enum { HCOMM_COMM_MODE_AUTO = 0, HCOMM_COMM_MODE_SMALL_MSG = 1, HCOMM_COMM_MODE_LARGE_MSG = 2 } hcomm_comm_mode_t;
typedef enum { HCOMM_PROTOCOL_TCP = 0, HCOMM_PROTOCOL_RDMA = 1, HCOMM_PROTOCOL_SHM = 2 } hcomm_protocol_t;
typedef struct {
  uint64_t mode;             /* hcomm_comm_mode_t */
  uint64_t send_buffer_size; /* bytes: a point-to-point message moves in chunks of at most
                                min(send_buffer_size, recv_buffer_size); under TCP the host staging
                                buffers of a communicator's sends and receives (docs/config.md) */
  uint64_t recv_buffer_size; /* bytes */
  uint64_t buffer_pool_size; /* buffers: default of hcomm_create_buffer_pool(num_buffers 0) */
  uint64_t timeout_ms;
  uint64_t retry_count;      /* also HCOMM_MAX_RETRIES (the product docs' max_retries) */
  uint64_t protocol;         /* hcomm_protocol_t; default RDMA. TCP: point-to-point to peers on other
                                servers over the hosts' front-end network (docs/models/host-network.md) */
  uint64_t bandwidth_limit;  /* MB/s, 0 = none */
  uint64_t num_qp;
  uint64_t buffer_size;      /* bytes */
  const char* algo;          /* HCOMM_ALGO syntax ("level0:NA;level1:NHR", or per operation
                                "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:NB");
                                NULL = the environment (HCOMM_ALGO, HCCL_ALGO, HCOMM_ALLREDUCE_ALGO) */
  uint64_t op_retry;         /* 1 (default): a collective that fails mid-operation is re-executed from
                                its inputs on paths avoiding the fault (HCCL's op retry; docs/failover.md);
                                0: the error is returned (HCCL's default) */
  uint64_t heartbeat_timeout_ms; /* 0 = no heartbeat; else silence / no progress for this long
                                    makes a rank LOST / STUCK (docs/failover.md) */
  uint64_t multi_qp_threshold;   /* KiB: an RDMA write uses at most bytes / (this * 1024) of its
                                    num_qp QPs, at least one (HCCL_MULTI_QP_THRESHOLD) */
} hcomm_config_t;
void hcomm_config_init(hcomm_config_t* cfg); /* every number HCOMM_CONFIG_UNSET, algo NULL */
/* Check one HCOMM_* environment value as the library would read it: HCOMM_SUCCESS, HCOMM_E_PARA
 * (malformed or out of range; errbuf says why), HCOMM_E_NOT_FOUND (not a knob hcomm reads). */
hcomm_result_t hcomm_config_check(const char* name, const char* value, char* errbuf, size_t len);

/* ---- communicators ---- */
/* The world communicator over all ranks of the cluster; `rank` must be the caller's rank. */
hcomm_result_t hcomm_comm_init(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, hcomm_comm_t* comm);
hcomm_result_t hcomm_comm_init_config(hcomm_context_t ctx, uint32_t nranks, uint32_t rank, const hcomm_config_t* cfg,
                                      hcomm_comm_t* comm);
/* The configuration in effect (every field resolved). */
hcomm_result_t hcomm_comm_get_config(hcomm_comm_t comm, hcomm_config_t* cfg);
hcomm_result_t hcomm_comm_destroy(hcomm_comm_t comm);
hcomm_result_t hcomm_comm_rank(hcomm_comm_t comm, uint32_t* rank);
hcomm_result_t hcomm_comm_size(hcomm_comm_t comm, uint32_t* size);

/* ---- sub-communicators ----
 * hcomm_comm_split (MPI_Comm_split / HcclCommSplit semantics; hcomm_group_split is the same call
 * under the product documentation's name): collective over `comm` — every member must call it, in
 * the same order relative to other splits of `comm`. Members passing the same color form one new
 * communicator, ranked by (key, rank in `comm`); color HCOMM_SPLIT_NOCOLOR gives *out = NULL and
 * HCOMM_SUCCESS. The (color, key) records are exchanged by point-to-point messages over `comm`
 * (real device traffic: the split costs time, in four phases of O(log2 size) message latencies): gathered to
 * rank 0 of `comm` up a binomial tree, which derives every new communicator and sends each rank
 * its answer, and each new communicator's rank list, back down it; the lists then go down a
 * binomial tree inside each new communicator. Rank 0 holds every record; another rank holds those
 * of its tree subtree and its own new communicator's list. It blocks the caller like a synchronize
 * and uses p2p tags 2^26-6 .. 2^26-3 of `comm` (reserved, as is 2^26-2 for batch send/recv).
 * hcomm_comm_create_group: the same, with membership from a list of `n` ranks of `parent` (the
 * new rank is the position in the list; every rank of `parent` calls it with the same list; a
 * caller not in the list gets NULL). A list with an out-of-range or repeated rank, or n == 0 or
 * n > size, is HCOMM_E_PARA on the caller (logged, no exchange); lists or call sequences that
 * differ between ranks are HCOMM_E_PARA on every rank after the exchange (logged: the first rank
 * whose call differs from rank 0's); a member that does not call makes the others' exchange time
 * out (HCOMM_E_TIMEOUT); no id free: HCOMM_E_UNAVAIL.
 * A new communicator runs every operation (p2p, collectives, barrier, RDMA) with its own ranks,
 * its own notify keys (the highest of the 255 ids free on all its members' contexts; world
 * communicators count up from 1) and the parent's configuration; it shares
 * its context's collective buffer and p2p window with the parent and every other communicator of
 * that context, so operations of different communicators on one device must not overlap in time:
 * issue them on one stream, or order their streams with events. It may outlive its parent. */
#define HCOMM_SPLIT_NOCOLOR 0xffffffffu
hcomm_result_t hcomm_comm_split(hcomm_comm_t comm, uint32_t color, uint32_t key, hcomm_comm_t* out);
hcomm_result_t hcomm_group_split(hcomm_comm_t comm, uint32_t color, uint32_t key, hcomm_comm_t* out);
hcomm_result_t hcomm_comm_create_group(hcomm_comm_t parent, uint32_t n, const uint32_t* parent_ranks, hcomm_comm_t* out);

/* ---- topology discovery (docs/discovery.md) ----
 * Communicator init discovers the topology (the seeds' hcomm_topology_probe): each rank probes its
 * HCCS ports, PCIe peers and NIC, the ranks exchange what they found (a root per server, a global
 * root) and every rank keeps the shared table. Queries are sparse: one pair or one rank at a time. */
typedef enum {
  HCOMM_LINK_NONE = 0, HCOMM_LINK_LOCAL = 1, HCOMM_LINK_HCCS = 2, HCOMM_LINK_PCIE = 4, HCOMM_LINK_ROCE = 8
} hcomm_link_type_t;
typedef struct {
  uint32_t link_types;     /* bitwise OR of every hcomm_link_type_t available between the two ranks */
  uint32_t link_type;      /* the one the library uses (HCCS > PCIe > RoCE) */
  uint64_t bandwidth_Bps;  /* of link_type: HCCS from the port's rate register, PCIe / RoCE nominal or the NIC's speed */
  uint64_t latency_ns;     /* of link_type, one way: nominal figures (docs/discovery.md#costs) */
} hcomm_topo_link_t;
/* What discovery found between comm ranks a and b. */
hcomm_result_t hcomm_get_topology(hcomm_comm_t comm, uint32_t a, uint32_t b, hcomm_topo_link_t* out);
typedef struct {
  uint8_t port;                /* HCCS port number */
  uint8_t up;                  /* 1 when trained */
  uint8_t lanes;
  uint32_t partner_device_id;  /* link partner (when up) */
  uint32_t partner_server;
  uint64_t bandwidth_Bps;
} hcomm_topo_port_t;
typedef struct {
  uint32_t rank, server, device_id, host_ip;
  uint32_t pcie_peers;         /* bit i: PCIe peer-to-peer to device id i of the same server */
  uint8_t nic_present, nic_up; /* NIC state as probed (nic_known 0: the driver does not say) */
  uint8_t nic_known;
  uint32_t nic_ip;
  uint64_t nic_speed_bps;
  uint32_t nports;             /* cabled HCCS ports (at most 8 are kept) */
  hcomm_topo_port_t ports[8];
  char nic_neighbor[64];       /* LLDP: the switch the NIC is cabled to; the caller's own rank only ("" otherwise) */
  uint32_t nic_neighbor_port;  /* LLDP: that switch's port */
} hcomm_topo_rank_t;
/* The record comm rank `rank` contributed to discovery. */
hcomm_result_t hcomm_get_topology_rank(hcomm_comm_t comm, uint32_t rank, hcomm_topo_rank_t* out);
/* Why the context's discovery failed (communicator init returned its error), naming the rank;
 * "" when it did not. The string lives as long as the context. */
hcomm_result_t hcomm_get_discovery_error(hcomm_context_t ctx, const char** msg);

/* ---- point-to-point ----
 * Ordering: messages between one (source, destination, tag) are matched in posting order.
 * A send's tasks wait on the device until the matching recv has been posted. */
hcomm_result_t hcomm_isend(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst_rank,
                           uint32_t tag, hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req);
hcomm_result_t hcomm_irecv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src_rank,
                           uint32_t tag, hcomm_comm_t comm, hcomm_stream_t stream, hcomm_request_t* req);
hcomm_result_t hcomm_send(const void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t dst_rank,
                          uint32_t tag, hcomm_comm_t comm);
hcomm_result_t hcomm_recv(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t src_rank,
                          uint32_t tag, hcomm_comm_t comm);
/* HCOMM_SUCCESS when done, HCOMM_E_AGAIN when still in flight. Completing releases the request. */
hcomm_result_t hcomm_test(hcomm_request_t req);
hcomm_result_t hcomm_wait(hcomm_request_t req);
hcomm_result_t hcomm_waitall(uint32_t n, hcomm_request_t* reqs);

/* One-sided RDMA write of `bytes` from local device memory to `remote_addr` on rank `dst_rank`,
 * inside a region the target registered with REMOTE_WRITE under `rkey`. A write outside the
 * region or with a wrong key fails (HCOMM_E_RUNTIME at synchronize) and is counted by the NIC. */
hcomm_result_t hcomm_rdma_write(const void* local, uint64_t bytes, uint32_t dst_rank, uint64_t remote_addr, uint32_t rkey,
                                hcomm_comm_t comm, hcomm_stream_t stream);

/* ---- bandwidth reservation (docs/routing.md#reservation; the product's hcomm_reserve_bandwidth) ----
 * Reserve min_Bps (bytes per second) of this rank's RoCE NIC for `comm`: from then on every other
 * communicator of the same context has its RoCE writes capped at the line rate minus the shares
 * the others reserved, so this one keeps at least min_Bps against them; max_Bps (0: the line rate)
 * caps this communicator's own writes. Route decisions taken afterwards record the share as their
 * bandwidth term. Per rank: every rank whose NIC should carry the share calls it. Reserving again
 * replaces the communicator's reservation. The shares of one NIC may take at most 90 % of its line
 * rate together. HCOMM_E_PARA: min_Bps 0, max_Bps below min_Bps, timeout_ms above 300000, or
 * min_Bps above 90 % of the line rate; HCOMM_E_NOT_SUPPORT: the NPU has no RoCE NIC;
 * HCOMM_E_AGAIN: it does not fit beside the other communicators' shares, after waiting timeout_ms
 * of host time for a release. Released by hcomm_release_bandwidth (HCOMM_E_NOT_FOUND when there is
 * none) and by hcomm_comm_destroy. Scope: the cap acts on the writes this library posts on this
 * NIC (other processes' traffic and the switches' ports are not controlled), per write (all its
 * QP stripes together). */
hcomm_result_t hcomm_reserve_bandwidth(hcomm_comm_t comm, uint64_t min_Bps, uint64_t max_Bps, uint32_t timeout_ms);
hcomm_result_t hcomm_release_bandwidth(hcomm_comm_t comm);
/* The communicator's reserved share (0: none) and the NIC rate its writes may use now. */
hcomm_result_t hcomm_get_reserved_bandwidth(hcomm_comm_t comm, uint64_t* min_Bps, uint64_t* share_Bps);

/* Barrier over the communicator: dissemination over ceil(log2 n) rounds of notifies. With a
 * stream, stream-ordered; with NULL, blocks the caller until every rank has arrived. */
hcomm_result_t hcomm_barrier(hcomm_comm_t comm, hcomm_stream_t stream);

/* ---- collectives (stream-ordered: the host blocks only in stream synchronize) ----
 * Every collective runs on any communicator, chooses its algorithm per call (by cost, or as
 * HCOMM_ALGO / HCCL_ALGO / HCOMM_ALLREDUCE_ALGO / config.algo force it; docs/algorithms/README.md)
 * and records the choice in the trace. Counts are elements; count 0 is a no-op that still
 * synchronises nothing. In place (send_buf == recv_buf) is allowed for all-reduce, reduce and
 * broadcast (one buffer); for all-gather when send_buf is recv_buf's block `rank`; for
 * reduce-scatter when recv_buf is send_buf's block `rank`. A root outside [0, nranks) is
 * HCOMM_E_PARA, a null buffer with a nonzero count HCOMM_E_PTR. */
hcomm_result_t hcomm_allreduce(const void* send_buf, void* recv_buf, uint64_t count, hcomm_data_type_t dtype,
                               hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream);
/* All-gather: every rank contributes `count` elements (send_buf); recv_buf holds nranks * count,
 * rank r's block at element r * count. */
hcomm_result_t hcomm_allgather(const void* send_buf, void* recv_buf, uint64_t count, hcomm_data_type_t dtype,
                               hcomm_comm_t comm, hcomm_stream_t stream);
/* All-gather-v: rank r contributes recv_counts[r] elements (send_count must equal
 * recv_counts[rank]), placed at element recv_displs[r] of every rank's recv_buf. */
hcomm_result_t hcomm_allgatherv(const void* send_buf, uint64_t send_count, void* recv_buf, const uint64_t* recv_counts,
                                const uint64_t* recv_displs, hcomm_data_type_t dtype, hcomm_comm_t comm, hcomm_stream_t stream);
/* Reduce-scatter: send_buf holds nranks * count elements; rank r receives in recv_buf (`count`
 * elements) the reduction over all ranks of block r (elements r * count ...). */
hcomm_result_t hcomm_reduce_scatter(const void* send_buf, void* recv_buf, uint64_t count, hcomm_data_type_t dtype,
                                    hcomm_reduce_op_t op, hcomm_comm_t comm, hcomm_stream_t stream);
/* Reduce-scatter-v: block r is send_counts[r] elements at send_displs[r] of send_buf (the same
 * counts on every rank); rank r receives its reduction (recv_count == send_counts[rank]). */
hcomm_result_t hcomm_reduce_scatterv(const void* send_buf, const uint64_t* send_counts, const uint64_t* send_displs,
                                     void* recv_buf, uint64_t recv_count, hcomm_data_type_t dtype, hcomm_reduce_op_t op,
                                     hcomm_comm_t comm, hcomm_stream_t stream);
/* Broadcast `count` elements of buf from `root` to every rank's buf. */
hcomm_result_t hcomm_broadcast(void* buf, uint64_t count, hcomm_data_type_t dtype, uint32_t root, hcomm_comm_t comm,
                               hcomm_stream_t stream);
/* Reduce to `root`: recv_buf (significant at the root only) gets the reduction of every rank's send_buf. */
hcomm_result_t hcomm_reduce(const void* send_buf, void* recv_buf, uint64_t count, hcomm_data_type_t dtype,
                            hcomm_reduce_op_t op, uint32_t root, hcomm_comm_t comm, hcomm_stream_t stream);
/* Scatter from `root`: the root's send_buf holds nranks * recv_count elements; rank r receives
 * block r in recv_buf. send_buf is read at the root only. */
hcomm_result_t hcomm_scatter(const void* send_buf, void* recv_buf, uint64_t recv_count, hcomm_data_type_t dtype,
                             uint32_t root, hcomm_comm_t comm, hcomm_stream_t stream);
/* All-to-all: block j (count elements at element j * count) of send_buf goes to rank j, where it
 * lands as block `rank` of recv_buf. */
hcomm_result_t hcomm_alltoall(const void* send_buf, void* recv_buf, uint64_t count, hcomm_data_type_t dtype,
                              hcomm_comm_t comm, hcomm_stream_t stream);
/* All-to-all-v: send_counts[j] elements at send_displs[j] go to rank j; recv_counts[j] elements
 * from rank j land at recv_displs[j]. send_counts[j] on rank i must equal recv_counts[i] on rank j. */
hcomm_result_t hcomm_alltoallv(const void* send_buf, const uint64_t* send_counts, const uint64_t* send_displs,
                               void* recv_buf, const uint64_t* recv_counts, const uint64_t* recv_displs,
                               hcomm_data_type_t dtype, hcomm_comm_t comm, hcomm_stream_t stream);
/* Batch send/receive (HCCL's HcclBatchSendRecv): every item is a send to or a receive from
 * remote_rank, all stream-ordered on `stream`. Sends are issued in increasing (peer - rank) mod n
 * and receives in increasing (rank - peer) mod n, so crossing batches cannot deadlock; items
 * between one pair keep their order. */
typedef enum { HCOMM_SEND = 0, HCOMM_RECV = 1 } hcomm_send_recv_type_t;
typedef struct {
  hcomm_send_recv_type_t type;
  void* buf;
  uint64_t count;
  hcomm_data_type_t dtype;
  uint32_t remote_rank;
} hcomm_send_recv_item_t;
hcomm_result_t hcomm_batch_send_recv(const hcomm_send_recv_item_t* items, uint32_t n_items, hcomm_comm_t comm,
                                     hcomm_stream_t stream);

/* Release every handle still alive in this process (requests, pools, events, communicators,
 * streams, contexts) without waiting for device work: for process teardown, e.g. after a rank
 * died holding resources. */
hcomm_result_t hcomm_finalize(void);

/* ---- failover (docs/failover.md) ----
 * A device task that fails (a link down under a transfer, a crashed peer) makes the rank that saw
 * it return HCOMM_E_RUNTIME and tell every other rank of each of its communicators over the host
 * control channel; a rank blocked in a synchronize or wait is woken by that message and gets
 * HCOMM_E_REMOTE, a rank not blocked gets it from its next call on the communicator. The error is
 * sticky: every later operation on the communicator returns it, until it is destroyed (or shrunk).
 * With op_retry (on by default; HCOMM_OP_RETRY=0 turns it off, HCCL's default) the ranks first
 * agree, through a coordinator, to re-execute the failed collective from its inputs on a path that
 * avoids the dead link; when that works no error is returned, and the application is told through
 * the informational HCOMM_I_FAILOVER (callback, hcomm_get_async_error). A rank whose process died
 * is reported to every member as HCOMM_E_RANK_LOST when its host connections close. With HCOMM_HEARTBEAT_PERIOD_US set, the host's heartbeat agent finds a
 * silent ring neighbour LOST and tells every member, even while no call is in progress: every
 * communicator holding the lost rank gets HCOMM_E_RANK_LOST (docs/failover.md#heartbeat-with-neighbours). */
/* The communicator's asynchronous error (HCCL's HcclGetCommAsyncError): HCOMM_SUCCESS into *error
 * while healthy, else the first error it learned (HCOMM_E_RUNTIME on the rank that saw the fault,
 * HCOMM_E_REMOTE on the others, HCOMM_E_RANK_LOST once a member is known lost); HCOMM_I_FAILOVER,
 * once, after a fault was survived (not an error). Reads the
 * abort messages and device events that have arrived without blocking. */
hcomm_result_t hcomm_get_async_error(hcomm_comm_t comm, hcomm_result_t* error);
/* The same as text ("rank 2 (comm rank 2): link ... went down during a transfer"); "" while
 * healthy. The string lives until the next failover call on the communicator or its destruction. */
hcomm_result_t hcomm_get_async_error_string(hcomm_comm_t comm, const char** msg);
/* Called once per fault, on the rank's own thread, from inside the call that learned it: with the
 * error, or HCOMM_I_FAILOVER when the fault was survived (with op retry on, once the recovery's
 * outcome is known); NULL unregisters. */
typedef void (*hcomm_error_callback_t)(hcomm_comm_t comm, hcomm_result_t error, const char* msg, void* user_data);
hcomm_result_t hcomm_comm_set_error_callback(hcomm_comm_t comm, hcomm_error_callback_t cb, void* user_data);
/* Comm ranks the library found lost (they did not answer a recovery agreement), ascending: up to
 * `cap` go to ranks, their number to *n. */
hcomm_result_t hcomm_comm_lost_ranks(hcomm_comm_t comm, uint32_t cap, uint32_t* ranks, uint32_t* n);
/* Shrink (ULFM's MPI_Comm_shrink): every surviving rank of `comm` calls it with the same list of
 * `n_lost` lost comm ranks; *new_comm is a communicator of the survivors, ranked in their order
 * in `comm`, healthy, with the parent's configuration. The survivors agree over the host control
 * channel only (no device traffic: the parent may be in error). A list with an out-of-range or
 * repeated rank, the caller itself, or nobody left is HCOMM_E_PARA; a survivor that does not
 * call makes the others' HCOMM_E_TIMEOUT (after timeout_ms). */
hcomm_result_t hcomm_comm_shrink(hcomm_comm_t comm, uint32_t n_lost, const uint32_t* lost_ranks, hcomm_comm_t* new_comm);

const char* hcomm_result_string(hcomm_result_t r);
/* The cluster's clock in seconds (MPI_Wtime's role): the driver's device time, under hcsim exec
 * the simulated time (docs/exec.md#time); 0 when no driver can be opened. */
double hcomm_wtime(void);
uint32_t hcomm_data_type_size(hcomm_data_type_t t);

#ifdef __cplusplus
}
#endif
#endif /* HCOMM_HCOMM_H */
