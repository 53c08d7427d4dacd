#!/usr/bin/python3
"""One rank of a ring that can never complete under `hcsim exec` (irecv then isend on one stream on
every rank: each receive holds back its rank's send): awaiting must end with HcommError(E_TIMEOUT)
after the communicator's timeout_ms (1000, the smallest) of cluster time, not poll forever."""
import asyncio
import os
import sys

import numpy as np

import hcomm

R, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
hcomm.set_config(hcomm.CommConfig(timeout_ms=1000))
ctx = hcomm.create_context(int(os.environ["LOCAL_RANK"]))
s = hcomm.create_stream(ctx)


async def ring():
    a = hcomm.irecv(np.zeros(8, np.float32), src_rank=(R - 1) % N, stream=s)
    b = hcomm.isend(np.ones(8, np.float32), dest_rank=(R + 1) % N, stream=s)
    await asyncio.gather(a, b)


start = hcomm.wtime()
try:
    asyncio.run(ring())
except hcomm.HcommError as e:
    waited = hcomm.wtime() - start
    if e.code != hcomm.E_TIMEOUT or not 1.0 <= waited < 1.5:
        sys.exit(f"rank {R}: code {e.code} after {waited:.3f} s, expected E_TIMEOUT after 1 s: {e}")
    print(f"OK rank {R}: E_TIMEOUT after {waited:.3f} s simulated")
    sys.exit(0)  # hcomm_finalize (atexit) releases the ring still in flight
sys.exit(f"rank {R}: the impossible ring completed")
