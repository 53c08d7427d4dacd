/* hier_allreduce.c: a hierarchical all-reduce built by hand from point-to-point messages, checked
 * against a sum the host computes and against the library's own hcomm_allreduce.
 *
 * What it shows:
 *   - finding the servers from topology discovery (hcomm_get_topology_rank: each rank's server);
 *     the leader of a server is its lowest rank;
 *   - three phases, all with hcomm_isend / hcomm_irecv (a receive stream and a send stream per
 *     peer, so that the messages of a phase move at the same time instead of one after the other):
 *       1. inside each server, every member sends its vector to the leader over HCCS;
 *       2. the leaders exchange their servers' partial sums over RoCE (each sends to every other);
 *       3. each leader sends the total back to its members over HCCS;
 *   - the reduction itself: the C API has no local reduce kernel (device memory is summed only by
 *     the collectives), so the leader copies what it received to the host
 *     (hcomm_memcpy_device_to_host), adds on the host and copies the sum back. That keeps the
 *     example to p2p primitives; the price is the PCIe copies, which the simulator times (the host
 *     additions cost no simulated time under hcsim exec's default --host-time zero). The other way
 *     would be hcomm_reduce on a per-server communicator from hcomm_comm_split, which sums on the
 *     device but is a collective again;
 *   - the times of both (hcomm_wtime, from a blocking barrier to the end of the last stream).
 * The inputs are small integers in fp32 (rank r, element i: (r + 1) * (i % 251 + 1)), so every sum
 * is exact whatever the order of the additions: both results must equal the host's sum bit for bit.
 *
 * Usage:  hier_allreduce [COUNT]   (fp32 elements, default 1048576)
 * Build:  cc -std=c99 hier_allreduce.c $(pkg-config --cflags --libs hcomm) -o hier_allreduce
 * Run:    hcsim exec --topology a2-2node -n 8 --ranks-per-server 4 -- ./hier_allreduce
 * Prints the servers and leaders (rank 0), then one line per rank with both times and
 * "0 wrong vs host sum, 0 differ from hcomm_allreduce". Exit code 0 when both are right. */
#include <hcomm/hcomm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 64

#define CHECK(call)                                                                       \
  do {                                                                                    \
    hcomm_result_t rc_ = (call);                                                          \
    if (rc_ != HCOMM_SUCCESS) {                                                           \
      fprintf(stderr, "rank %u: %s failed: %s\n", rank, #call, hcomm_result_string(rc_)); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

static float input(uint32_t r, uint64_t i) { return (float)((r + 1) * (uint32_t)(i % 251 + 1)); }

static uint32_t rank, size;
/* streams[p]: the receives from rank p, sends[p]: the sends to it. A send waits (on the device)
 * until its receive is posted, and a stream runs its tasks in order: with a send and a receive of
 * an exchange on one stream both leaders would wait for each other's receive. */
static hcomm_stream_t streams[MAX_RANKS], sends[MAX_RANKS];

static int sync_all(void) {
  for (uint32_t p = 0; p < size; ++p) {
    CHECK(hcomm_stream_synchronize(streams[p]));
    CHECK(hcomm_stream_synchronize(sends[p]));
  }
  return 0;
}

int main(int argc, char** argv) {
  rank = (uint32_t)atoi(getenv("RANK"));
  size = (uint32_t)atoi(getenv("WORLD_SIZE"));
  const uint32_t device = (uint32_t)atoi(getenv("LOCAL_RANK"));
  const uint64_t count = argc > 1 ? (uint64_t)atoll(argv[1]) : 1u << 20;
  if (count == 0 || size > MAX_RANKS) {
    fprintf(stderr, "usage: hier_allreduce [COUNT (> 0)] on at most %d ranks\n", MAX_RANKS);
    return 2;
  }
  const uint64_t bytes = count * sizeof(float);
  hcomm_context_t ctx;
  hcomm_comm_t comm;
  CHECK(hcomm_create_context(device, &ctx));
  CHECK(hcomm_comm_init(ctx, size, rank, &comm));
  for (uint32_t p = 0; p < size; ++p) {
    CHECK(hcomm_create_stream(ctx, &streams[p]));
    CHECK(hcomm_create_stream(ctx, &sends[p]));
  }
  hcomm_stream_t st = streams[rank]; /* copies and the library's all-reduce */

  /* Servers and leaders from discovery. */
  uint32_t server[MAX_RANKS], leader_of[MAX_RANKS];
  for (uint32_t r = 0; r < size; ++r) {
    hcomm_topo_rank_t rec;
    CHECK(hcomm_get_topology_rank(comm, r, &rec));
    server[r] = rec.server;
    leader_of[r] = r;
    for (uint32_t q = 0; q < r; ++q)
      if (server[q] == server[r]) { leader_of[r] = q; break; }
  }
  const uint32_t leader = leader_of[rank];
  const int is_leader = leader == rank;
  if (rank == 0) {
    printf("leaders:");
    for (uint32_t r = 0; r < size; ++r)
      if (leader_of[r] == r) printf(" %u (server %u)", r, server[r]);
    printf("\n");
  }

  /* Buffers: my input, the result, one receive buffer per peer (used on the leaders). */
  float* host = malloc(bytes);
  float* sum = malloc(bytes);
  float* expect = malloc(bytes);
  void *in, *out, *recvd[MAX_RANKS];
  if (!host || !sum || !expect) return 1;
  CHECK(hcomm_malloc(ctx, bytes, &in));
  CHECK(hcomm_malloc(ctx, bytes, &out));
  for (uint32_t p = 0; p < size; ++p) {
    recvd[p] = NULL;
    if (is_leader && p != rank && (leader_of[p] == rank || leader_of[p] == p)) CHECK(hcomm_malloc(ctx, bytes, &recvd[p]));
  }
  for (uint64_t i = 0; i < count; ++i) {
    host[i] = input(rank, i);
    float s = 0;
    for (uint32_t r = 0; r < size; ++r) s += input(r, i);
    expect[i] = s;
  }
  CHECK(hcomm_memcpy_host_to_device(in, host, bytes, st));
  CHECK(hcomm_stream_synchronize(st));

  /* Every request is kept and released by hcomm_waitall after the timed part (a request is freed
   * only by hcomm_test / hcomm_wait; synchronizing its stream completes it but does not free it). */
  hcomm_request_t* reqs = malloc(sizeof(hcomm_request_t) * 4 * size);
  uint32_t nreq = 0;
  CHECK(hcomm_barrier(comm, NULL));
  const double t0 = hcomm_wtime();
  if (!is_leader) {
    /* 1. to the leader; 3. the total back from it. */
    CHECK(hcomm_isend(in, count, HCOMM_DATA_TYPE_FP32, leader, 1, comm, sends[leader], &reqs[nreq++]));
    CHECK(hcomm_irecv(out, count, HCOMM_DATA_TYPE_FP32, leader, 3, comm, streams[leader], &reqs[nreq++]));
    if (sync_all()) return 1;
  } else {
    /* 1. the members' vectors, summed on the host with my own. */
    for (uint32_t p = 0; p < size; ++p)
      if (p != rank && leader_of[p] == rank) CHECK(hcomm_irecv(recvd[p], count, HCOMM_DATA_TYPE_FP32, p, 1, comm, streams[p], &reqs[nreq++]));
    if (sync_all()) return 1;
    memcpy(sum, host, bytes);
    for (uint32_t p = 0; p < size; ++p)
      if (p != rank && leader_of[p] == rank) {
        CHECK(hcomm_memcpy_device_to_host(host, recvd[p], bytes, st));
        CHECK(hcomm_stream_synchronize(st));
        for (uint64_t i = 0; i < count; ++i) sum[i] += host[i];
      }
    /* 2. partial sums between the leaders. */
    CHECK(hcomm_memcpy_host_to_device(out, sum, bytes, st));
    CHECK(hcomm_stream_synchronize(st));
    for (uint32_t p = 0; p < size; ++p)
      if (p != rank && leader_of[p] == p) {
        CHECK(hcomm_isend(out, count, HCOMM_DATA_TYPE_FP32, p, 2, comm, sends[p], &reqs[nreq++]));
        CHECK(hcomm_irecv(recvd[p], count, HCOMM_DATA_TYPE_FP32, p, 2, comm, streams[p], &reqs[nreq++]));
      }
    if (sync_all()) return 1;
    for (uint32_t p = 0; p < size; ++p)
      if (p != rank && leader_of[p] == p) {
        CHECK(hcomm_memcpy_device_to_host(host, recvd[p], bytes, st));
        CHECK(hcomm_stream_synchronize(st));
        for (uint64_t i = 0; i < count; ++i) sum[i] += host[i];
      }
    /* 3. the total to the members. */
    CHECK(hcomm_memcpy_host_to_device(out, sum, bytes, st));
    CHECK(hcomm_stream_synchronize(st));
    for (uint32_t p = 0; p < size; ++p)
      if (p != rank && leader_of[p] == rank) CHECK(hcomm_isend(out, count, HCOMM_DATA_TYPE_FP32, p, 3, comm, sends[p], &reqs[nreq++]));
    if (sync_all()) return 1;
  }
  const double t1 = hcomm_wtime();
  CHECK(hcomm_waitall(nreq, reqs)); /* all complete already: this releases them */
  free(reqs);

  /* The library's all-reduce of the same input. */
  void* lib;
  CHECK(hcomm_malloc(ctx, bytes, &lib));
  CHECK(hcomm_barrier(comm, NULL));
  const double t2 = hcomm_wtime();
  CHECK(hcomm_allreduce(in, lib, count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, st));
  CHECK(hcomm_stream_synchronize(st));
  const double t3 = hcomm_wtime();

  uint64_t wrong = 0, differ = 0;
  CHECK(hcomm_memcpy_device_to_host(sum, out, bytes, st));
  CHECK(hcomm_memcpy_device_to_host(host, lib, bytes, st));
  CHECK(hcomm_stream_synchronize(st));
  for (uint64_t i = 0; i < count; ++i) {
    if (sum[i] != expect[i]) ++wrong;
    if (memcmp(&sum[i], &host[i], sizeof(float)) != 0) ++differ;
  }
  printf("rank %u: hierarchical (p2p, host sums) %.3f us, hcomm_allreduce %.3f us (simulated); %llu wrong vs host sum, "
         "%llu differ from hcomm_allreduce\n",
         rank, (t1 - t0) * 1e6, (t3 - t2) * 1e6, (unsigned long long)wrong, (unsigned long long)differ);

  CHECK(hcomm_free(ctx, lib));
  CHECK(hcomm_free(ctx, in));
  CHECK(hcomm_free(ctx, out));
  for (uint32_t p = 0; p < size; ++p) {
    if (recvd[p]) CHECK(hcomm_free(ctx, recvd[p]));
    CHECK(hcomm_destroy_stream(streams[p]));
    CHECK(hcomm_destroy_stream(sends[p]));
  }
  free(host);
  free(sum);
  free(expect);
  CHECK(hcomm_comm_destroy(comm));
  CHECK(hcomm_destroy_context(ctx));
  return wrong || differ ? 1 : 0;
}
