#!/usr/bin/python3
"""elastic.py: an elastic training loop that survives the loss of a rank (examples/c/elastic.c in Python).

Every iteration "computes" (hcomm.launch_compute, 50 us), copies in a gradient vector and
all-reduces it over the current communicator, then checks the sum on the host. When a rank is lost
(its process crashed or was killed), the survivors:
  1. notice it: a call raises HcommError (E_RANK_LOST, E_REMOTE or E_RUNTIME), and
     hcomm.get_async_error / get_async_error_string say what happened (an error callback registered
     with hcomm.set_error_callback prints it as it is learned);
  2. find who is gone: hcomm.lost_ranks (ranks of the communicator that failed);
  3. shrink: comm.shrink(lost) gives a healthy communicator of the survivors, ranked in their old
     order; the failed communicator is destroyed and a new stream is made;
  4. agree on the iteration to resume from (the smallest one that failed on any survivor: one may
     have finished the iteration another failed in), re-run it and continue on fewer ranks.
The gradient of world rank w in iteration k, element i, is (w + 1) * (k + 1) + i % 7 (small
integers in float32, so sums are exact), and the host checks every element of every sum against
the sum over the ranks that are still members.

Usage:  elastic.py [ITERS [COUNT [ABORT_RANK ABORT_ITER]]]   (defaults 10, 262144 float32 elements)
        ABORT_RANK / ABORT_ITER: that world rank calls os.abort() at the start of that iteration.
Run:    PYTHONPATH=build/python hcsim exec --topology a2-2node -n 8 --fault 'rank_crash rank=3 at=500us' \\
            -- /usr/bin/python3 examples/python/elastic.py
Prints the lines elastic.c prints: on each survivor "rank W: iteration K failed (...)", "rank W: lost
world rank(s) L; continued on N ranks from iteration K", and at the end "rank W: done: ITERS
iterations, the last ones on N ranks (S shrink), all sums correct, T us (simulated)". Exit code 0 on
the survivors, 2 on bad arguments, 3 when an error is not a rank loss."""
import os
import sys

import numpy as np

import hcomm

ME = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])


def say(line, err=False):
    """Prints one line with one write(2): all ranks share hcsim exec's stdout and stderr, and a
    line written in two pieces (print writes the text and the newline apart) can be cut by
    another rank's line."""
    out = sys.stderr if err else sys.stdout
    out.flush()
    os.write(out.fileno(), (line + "\n").encode())


def usage():
    say("usage: elastic.py [ITERS (> 0) [COUNT (> 0) [ABORT_RANK ABORT_ITER]]] on 2.. ranks", err=True)
    sys.exit(2)


args = sys.argv[1:]
try:
    iters = int(args[0]) if len(args) > 0 else 10
    count = int(args[1]) if len(args) > 1 else 262144
    abort_rank, abort_iter = (int(args[2]), int(args[3])) if len(args) > 3 else (-1, -1)
except ValueError:
    usage()
if iters <= 0 or count <= 0 or SIZE < 2 or len(args) == 3 or len(args) > 4:
    usage()

pattern = (np.arange(count) % 7).astype(np.float32)  # i % 7


def grad(w, k):
    return np.float32((w + 1) * (k + 1)) + pattern


def on_error(code, msg):
    say(f"rank {ME}: error callback: {hcomm.result_string(code)}: {msg}", err=True)


def iteration(comm, st, dev, k, members):
    """One training iteration on comm; the number of elements whose sum is not the host's."""
    host = grad(ME, k)
    hcomm.launch_compute(st, 50000)  # forward + backward
    hcomm.memcpy_host_to_device(dev, host, stream=st)
    hcomm.allreduce(dev, stream=st, comm=comm)  # in place
    out = np.empty(count, np.float32)
    hcomm.memcpy_device_to_host(out, dev, stream=st)
    hcomm.stream_synchronize(st)
    want = np.float32(sum(w + 1 for w in members) * (k + 1)) + np.float32(len(members)) * pattern
    return int(np.count_nonzero(out != want))


ctx = hcomm.create_context(int(os.environ["LOCAL_RANK"]))
comm = hcomm.world()
hcomm.set_error_callback(on_error, comm=comm)
st = hcomm.create_stream(ctx)
dev = hcomm.create_buffer(count * 4, ctx)
members = list(range(SIZE))  # members[j]: the world rank of comm rank j

t0 = hcomm.wtime()
shrinks = 0
k = 0
while k < iters:
    if ME == abort_rank and k == abort_iter:
        say(f"rank {ME}: aborting at iteration {k} as asked", err=True)
        os.abort()
    try:
        wrong = iteration(comm, st, dev, k, members)
    except hcomm.HcommError as e:
        # 1. What happened.
        err = hcomm.get_async_error(comm)
        why = hcomm.get_async_error_string(comm)
        say(f"rank {ME}: iteration {k} failed ({hcomm.result_string(e.code)}; async error {hcomm.result_string(err)}: {why})")
        # 2. Who is gone.
        lost = hcomm.lost_ranks(comm)
        if not lost:
            say(f"rank {ME}: no lost rank known: the error is not a rank loss, giving up", err=True)
            sys.exit(3)
        # 3. Shrink; the old communicator goes, a new stream is made.
        new = comm.shrink(lost)
        names = ",".join(str(members[j]) for j in lost)
        members = [w for j, w in enumerate(members) if j not in lost]
        try:
            comm.destroy()  # in error: its result does not matter
        except hcomm.HcommError:
            pass
        comm = new
        hcomm.set_error_callback(on_error, comm=comm)
        st = hcomm.create_stream(ctx)
        shrinks += 1
        # 4. Agree where to go on: all resume from the smallest failed iteration (an all-reduce MIN
        #    on the new communicator); re-running one is harmless.
        k = int(hcomm.allreduce(np.array([k], np.int32), op=hcomm.REDUCE_MIN, stream=st, comm=comm)[0])
        say(f"rank {ME}: lost world rank(s) {names}; continued on {len(members)} ranks from iteration {k}")
        continue
    if wrong:
        say(f"rank {ME}: iteration {k}: {wrong} wrong elements")
        sys.exit(1)
    k += 1
t1 = hcomm.wtime()
say(f"rank {ME}: done: {iters} iterations, the last ones on {len(members)} ranks ({shrinks} shrink{'' if shrinks == 1 else 's'}), "
    f"all sums correct, {(t1 - t0) * 1e6:.3f} us (simulated)")
