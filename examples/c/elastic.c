/* elastic.c: an elastic training loop that survives the loss of a rank.
 *
 * Every iteration "computes" (hcomm_launch_compute, 50 us), copies in a gradient vector and
 * all-reduces it over the current communicator, then checks the sum on the host. When a rank is
 * lost (its process crashed or was killed), the survivors:
 *   1. notice it: a call returns an error (HCOMM_E_RANK_LOST, HCOMM_E_REMOTE or HCOMM_E_RUNTIME),
 *      and hcomm_get_async_error / hcomm_get_async_error_string say what happened (an error
 *      callback registered with hcomm_comm_set_error_callback prints it as it is learned);
 *   2. find who is gone: hcomm_comm_lost_ranks (ranks of the communicator that failed);
 *   3. shrink: hcomm_comm_shrink gives a healthy communicator of the survivors, ranked in their
 *      old order; the failed communicator and its stream are destroyed, a new stream is made;
 *   4. agree on the iteration to resume from (the smallest one that failed on any survivor: one
 *      may have finished the iteration another failed in), re-run it and continue with the
 *      remaining ones on fewer ranks.
 * The gradient of world rank w in iteration k, element i, is (w + 1) * (k + 1) + i % 7 (small
 * integers in fp32, so sums are exact), and the host checks every element of every sum against the
 * sum over the ranks that are still members.
 *
 * Usage:  elastic [ITERS [COUNT [ABORT_RANK ABORT_ITER]]]   (defaults 10, 262144 fp32 elements)
 *         ABORT_RANK / ABORT_ITER: that world rank calls abort() at the start of that iteration.
 * Build:  cc -std=c99 elastic.c $(pkg-config --cflags --libs hcomm) -o elastic
 * Run:    hcsim exec --topology a2-2node -n 8 --fault 'rank_crash rank=3 at=500us' -- ./elastic
 *         hcsim exec --topology a2-2node -n 8 -- ./elastic 10 262144 5 4
 * Prints, on each survivor, "rank W: iteration K failed (...)", "rank W: lost world rank(s) L;
 * continued on N ranks from iteration K", and at the end "rank W: done: ITERS iterations, the last
 * ones on N ranks, all sums correct, T us (simulated)". Exit code 0 on the survivors; the lost rank
 * dies (killed by the fault, or SIGABRT) and hcsim exec reports its status. */
#include <hcomm/hcomm.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_RANKS 64

static uint32_t me; /* world rank */

#define CHECK(call)                                                                     \
  do {                                                                                  \
    hcomm_result_t rc_ = (call);                                                        \
    if (rc_ != HCOMM_SUCCESS) {                                                         \
      fprintf(stderr, "rank %u: %s failed: %s\n", me, #call, hcomm_result_string(rc_)); \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

static float grad(uint32_t w, uint32_t k, uint64_t i) { return (float)((w + 1) * (k + 1) + (uint32_t)(i % 7)); }

static void on_error(hcomm_comm_t comm, hcomm_result_t error, const char* msg, void* user) {
  (void)comm;
  (void)user;
  fprintf(stderr, "rank %u: error callback: %s: %s\n", me, hcomm_result_string(error), msg ? msg : "");
}

/* One training iteration on `comm`; HCOMM_SUCCESS or the first error. *wrong: elements whose sum
 * is not the host's. */
static hcomm_result_t iteration(hcomm_comm_t comm, hcomm_stream_t st, void* dev, float* host, uint64_t count, uint32_t k,
                                const uint32_t* members, uint32_t n, uint64_t* wrong) {
  hcomm_result_t rc;
  for (uint64_t i = 0; i < count; ++i) host[i] = grad(me, k, i);
  if ((rc = hcomm_launch_compute(st, 50000)) != HCOMM_SUCCESS) return rc; /* forward + backward */
  if ((rc = hcomm_memcpy_host_to_device(dev, host, count * sizeof(float), st)) != HCOMM_SUCCESS) return rc;
  if ((rc = hcomm_allreduce(dev, dev, count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, st)) != HCOMM_SUCCESS) return rc;
  if ((rc = hcomm_memcpy_device_to_host(host, dev, count * sizeof(float), st)) != HCOMM_SUCCESS) return rc;
  if ((rc = hcomm_stream_synchronize(st)) != HCOMM_SUCCESS) return rc;
  *wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    float s = 0;
    for (uint32_t j = 0; j < n; ++j) s += grad(members[j], k, i);
    if (host[i] != s) ++*wrong;
  }
  return HCOMM_SUCCESS;
}

int main(int argc, char** argv) {
  me = (uint32_t)atoi(getenv("RANK"));
  const uint32_t size = (uint32_t)atoi(getenv("WORLD_SIZE")), device = (uint32_t)atoi(getenv("LOCAL_RANK"));
  const uint32_t iters = argc > 1 ? (uint32_t)atoi(argv[1]) : 10;
  const uint64_t count = argc > 2 ? (uint64_t)atoll(argv[2]) : 262144;
  const int abort_rank = argc > 4 ? atoi(argv[3]) : -1, abort_iter = argc > 4 ? atoi(argv[4]) : -1;
  if (iters == 0 || count == 0 || size > MAX_RANKS || size < 2 || argc == 4 || argc > 5) {
    fprintf(stderr, "usage: elastic [ITERS (> 0) [COUNT (> 0) [ABORT_RANK ABORT_ITER]]] on 2..%d ranks\n", MAX_RANKS);
    return 2;
  }
  hcomm_context_t ctx;
  hcomm_comm_t comm;
  hcomm_stream_t st;
  void *dev, *agree;
  CHECK(hcomm_create_context(device, &ctx));
  CHECK(hcomm_comm_init(ctx, size, me, &comm));
  CHECK(hcomm_comm_set_error_callback(comm, on_error, NULL));
  CHECK(hcomm_create_stream(ctx, &st));
  CHECK(hcomm_malloc(ctx, count * sizeof(float), &dev));
  CHECK(hcomm_malloc(ctx, sizeof(int32_t), &agree));
  float* host = malloc(count * sizeof(float));
  if (!host) return 1;
  uint32_t members[MAX_RANKS], n = size; /* members[j]: the world rank of comm rank j */
  for (uint32_t j = 0; j < size; ++j) members[j] = j;

  const double t0 = hcomm_wtime();
  uint32_t shrinks = 0;
  for (uint32_t k = 0; k < iters;) {
    if ((int)me == abort_rank && (int)k == abort_iter) {
      fprintf(stderr, "rank %u: aborting at iteration %u as asked\n", me, k);
      abort();
    }
    uint64_t wrong = 0;
    const hcomm_result_t rc = iteration(comm, st, dev, host, count, k, members, n, &wrong);
    if (rc == HCOMM_SUCCESS) {
      if (wrong) {
        printf("rank %u: iteration %u: %llu wrong elements\n", me, k, (unsigned long long)wrong);
        return 1;
      }
      ++k;
      continue;
    }
    /* 1. What happened. */
    hcomm_result_t async = HCOMM_SUCCESS;
    const char* why = "";
    hcomm_get_async_error(comm, &async);
    hcomm_get_async_error_string(comm, &why);
    printf("rank %u: iteration %u failed (%s; async error %s: %s)\n", me, k, hcomm_result_string(rc),
           hcomm_result_string(async), why);
    /* 2. Who is gone. */
    uint32_t lost[MAX_RANKS], nl = 0;
    CHECK(hcomm_comm_lost_ranks(comm, MAX_RANKS, lost, &nl));
    if (nl == 0) {
      fprintf(stderr, "rank %u: no lost rank known: the error is not a rank loss, giving up\n", me);
      return 3;
    }
    /* 3. Shrink; the old communicator and stream go. */
    hcomm_comm_t next;
    CHECK(hcomm_comm_shrink(comm, nl, lost, &next));
    char names[256];
    size_t at = 0;
    uint32_t keep = 0;
    names[0] = '\0';
    for (uint32_t j = 0, l = 0; j < n; ++j) {
      if (l < nl && lost[l] == j) {
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%u", l ? "," : "", members[j]);
        ++l;
      } else {
        members[keep++] = members[j];
      }
    }
    n = keep;
    hcomm_comm_destroy(comm); /* in error: its result does not matter */
    hcomm_destroy_stream(st);
    comm = next;
    CHECK(hcomm_comm_set_error_callback(comm, on_error, NULL));
    CHECK(hcomm_create_stream(ctx, &st));
    ++shrinks;
    /* 4. Agree where to go on: a survivor may have finished the iteration another one failed in
     *    (its all-reduce completed before the loss was known), so all resume from the smallest
     *    failed iteration (an all-reduce MIN on the new communicator); re-running one is harmless. */
    int32_t at_k = (int32_t)k;
    CHECK(hcomm_memcpy_host_to_device(agree, &at_k, sizeof at_k, st));
    CHECK(hcomm_allreduce(agree, agree, 1, HCOMM_DATA_TYPE_INT32, HCOMM_REDUCE_MIN, comm, st));
    CHECK(hcomm_memcpy_device_to_host(&at_k, agree, sizeof at_k, st));
    CHECK(hcomm_stream_synchronize(st));
    k = (uint32_t)at_k;
    printf("rank %u: lost world rank(s) %s; continued on %u ranks from iteration %u\n", me, names, n, k);
  }
  const double t1 = hcomm_wtime();
  printf("rank %u: done: %u iterations, the last ones on %u ranks (%u shrink%s), all sums correct, %.3f us (simulated)\n", me,
         iters, n, shrinks, shrinks == 1 ? "" : "s", (t1 - t0) * 1e6);
  free(host);
  CHECK(hcomm_free(ctx, dev));
  CHECK(hcomm_free(ctx, agree));
  CHECK(hcomm_destroy_stream(st));
  CHECK(hcomm_comm_destroy(comm));
  CHECK(hcomm_destroy_context(ctx));
  return 0;
}
