/* exec_cases_program: what a user's program can do wrong, one case per argv[1], for
 * tests/cli/exec_cli_test.sh (docs/exec.md#when-a-rank-fails).
 *   crash     rank 1 aborts after init; the others' all-reduce must fail (their peer is lost)
 *   hang      rank 0 sleeps before its all-reduce (the watchdog ends the run)
 *   badptr    a host-to-device copy from an unmapped address must fail at synchronize
 *   nofinal   init, then return without destroying anything
 *   spin      rank 0 polls hcomm_test on a receive its peer sends 2 ms later (simulated time must advance)
 *   clock     time() / gettimeofday / CLOCK_REALTIME report the simulated clock under exec
 *   busy      about 50 ms of CPU between two hcomm_wtime() calls (--host-time measured charges it)
 *   p2p       rank r and r + size/2 (the other server) swap 1 MiB by send/recv, checked; the time printed */
#include <hcomm/hcomm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static uint32_t env_u32(const char* n) { return (uint32_t)atoi(getenv(n)); }

int main(int argc, char** argv) {
  const char* c = argc > 1 ? argv[1] : "";
  const uint32_t rank = env_u32("RANK"), size = env_u32("WORLD_SIZE"), dev = env_u32("LOCAL_RANK");
  hcomm_context_t ctx;
  hcomm_comm_t comm;
  hcomm_stream_t st;
  void* buf;
  if (hcomm_create_context(dev, &ctx) || hcomm_comm_init(ctx, size, rank, &comm) || hcomm_create_stream(ctx, &st) ||
      hcomm_malloc(ctx, 1 << 20, &buf)) {
    fprintf(stderr, "rank %u: init failed\n", rank);
    return 10;
  }
  if (!strcmp(c, "nofinal")) return 0;
  if (!strcmp(c, "crash") || !strcmp(c, "hang")) {
    if (!strcmp(c, "crash") && rank == 1) abort();
    if (!strcmp(c, "hang") && rank == 0) sleep(30);
    hcomm_result_t rc = hcomm_allreduce(buf, buf, 1 << 18, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, st);
    if (rc == HCOMM_SUCCESS) rc = hcomm_stream_synchronize(st);
    printf("rank %u: allreduce: %s\n", rank, hcomm_result_string(rc));
    return rc == HCOMM_SUCCESS ? 3 : 0;
  }
  if (!strcmp(c, "badptr")) {
    hcomm_result_t rc = hcomm_memcpy_host_to_device(buf, (const void*)16, 4096, st);
    if (rc == HCOMM_SUCCESS) rc = hcomm_stream_synchronize(st);
    printf("rank %u: copy from a bad pointer: %s\n", rank, hcomm_result_string(rc));
    return rc == HCOMM_SUCCESS ? 3 : 0;
  }
  if (!strcmp(c, "spin")) {
    if (size < 2) return 4;
    if (rank == 1) {
      hcomm_stream_t s2;
      hcomm_create_stream(ctx, &s2);
      hcomm_launch_compute(s2, 2000000); /* 2 ms of compute, then the send */
      hcomm_request_t rq;
      if (hcomm_isend(buf, 1024, HCOMM_DATA_TYPE_FP32, 0, 1, comm, s2, &rq) || hcomm_wait(rq)) return 5;
    } else if (rank == 0) {
      hcomm_request_t rq;
      const double t0 = hcomm_wtime();
      if (hcomm_irecv(buf, 1024, HCOMM_DATA_TYPE_FP32, 1, 1, comm, st, &rq)) return 5;
      unsigned long polls = 0;
      hcomm_result_t rc;
      while ((rc = hcomm_test(rq)) == HCOMM_E_AGAIN) ++polls;
      const double t1 = hcomm_wtime();
      printf("rank 0: received after %.1f us of simulated time and %lu polls: %s\n", (t1 - t0) * 1e6, polls, hcomm_result_string(rc));
      if (rc != HCOMM_SUCCESS || t1 - t0 < 2e-3) return 6;
    }
    return hcomm_barrier(comm, NULL) == HCOMM_SUCCESS ? 0 : 7;
  }
  if (!strcmp(c, "clock")) {
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    const double w0 = hcomm_wtime();
    hcomm_launch_compute(st, 5000000); /* 5 ms */
    hcomm_stream_synchronize(st);
    const double w1 = hcomm_wtime();
    clock_gettime(CLOCK_REALTIME, &b);
    const double d = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("rank %u: wtime advanced %.6f s, CLOCK_REALTIME %.6f s\n", rank, w1 - w0, d);
    return (w1 - w0 > 0.0049 && w1 - w0 < 0.0051 && d > 0.0049 && d < 0.0051) ? 0 : 8;
  }
  if (!strcmp(c, "p2p")) {
    const uint32_t half = size / 2, peer = rank < half ? rank + half : rank - half;
    const uint64_t n = 1u << 18; /* 1 MiB of int32 */
    int32_t* h = malloc(n * 4);
    void* rx;
    if (hcomm_malloc(ctx, n * 4, &rx)) return 11;
    for (uint64_t i = 0; i < n; ++i) h[i] = (int32_t)(rank * 1000003u + i);
    hcomm_memcpy_host_to_device(buf, h, n * 4, st);
    hcomm_stream_synchronize(st);
    const double t0 = hcomm_wtime();
    hcomm_result_t rc = rank < half ? hcomm_send(buf, n, HCOMM_DATA_TYPE_INT32, peer, 3, comm) : hcomm_recv(rx, n, HCOMM_DATA_TYPE_INT32, peer, 3, comm);
    if (rc == HCOMM_SUCCESS)
      rc = rank < half ? hcomm_recv(rx, n, HCOMM_DATA_TYPE_INT32, peer, 3, comm) : hcomm_send(buf, n, HCOMM_DATA_TYPE_INT32, peer, 3, comm);
    const double t1 = hcomm_wtime();
    hcomm_memcpy_device_to_host(h, rx, n * 4, st);
    hcomm_stream_synchronize(st);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) bad += h[i] != (int32_t)(peer * 1000003u + i);
    printf("rank %u: swapped 1 MiB with rank %u in %.1f us: %s, %llu wrong\n", rank, peer, (t1 - t0) * 1e6, hcomm_result_string(rc),
           (unsigned long long)bad);
    free(h);
    return rc == HCOMM_SUCCESS && bad == 0 ? 0 : 12;
  }
  if (!strcmp(c, "busy")) {
    const double w0 = hcomm_wtime();
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile double x = 0;
    do {
      for (int i = 0; i < 100000; ++i) x += i * 0.5;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9 < 0.05);
    const double w1 = hcomm_wtime();
    printf("rank %u: 50 ms of CPU cost %.3f ms of simulated time\n", rank, (w1 - w0) * 1e3);
    return 0;
  }
  fprintf(stderr, "unknown case '%s'\n", c);
  return 9;
}
