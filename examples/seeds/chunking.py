# Seed sample 2 of /work/shared/seeds/000_74db84cc06cc32e0.txt (4.1 "分块(Chunking)"): the chunk size and
# chunk count of a transfer.
# Run (docs/python.md): PYTHONPATH=build/python build/tools/hcsim exec --topology a2-2node -n 4 -- /usr/bin/python3 examples/seeds/chunking.py
# Changes from the seeds' text (a fragment, not a program):
#  1. The undefined names are defined: link_mtu = 256 KiB (the seeds' HCCS MTU), buffer_slot_size = 256 MiB
#     (the seeds' slot size), total_size = 1 MiB (the seeds' example is 1 GB: run time).
#  2. Added: ranks pair up (0,1), (2,3), ... and the even rank sends the 1 MiB message in num_chunks
#     isends of chunk_size bytes (tag = chunk index), the odd rank receives them with irecv; the receiver
#     checks the reassembled message, every rank that num_chunks == ceil(total_size / chunk_size) == 4;
#     an odd last rank idles (it only joins the world communicator's creation); exit 1 on mismatch.
import asyncio
import os
import sys

import hcomm
import numpy as np

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
PEER = RANK ^ 1
ctx = hcomm.create_context(device_id=int(os.environ.get("LOCAL_RANK", 0)))

link_mtu = 256 * 1024
buffer_slot_size = 256 * 1024 * 1024
total_size = 1024 * 1024

chunk_size = min(link_mtu, buffer_slot_size)
num_chunks = (total_size + chunk_size - 1) // chunk_size


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}", file=sys.stderr)
    sys.exit(1)


async def transfer():
    message = np.arange(total_size // 4, dtype=np.int32)
    per = chunk_size // 4
    if RANK % 2 == 0:
        reqs = [hcomm.isend(message[i * per:(i + 1) * per], dest_rank=PEER, tag=i) for i in range(num_chunks)]
        await asyncio.gather(*reqs)
        return None
    got = np.zeros_like(message)
    parts = [np.zeros(per, np.int32) for _ in range(num_chunks)]
    reqs = [hcomm.irecv(parts[i], src_rank=PEER, tag=i) for i in range(num_chunks)]
    for i, part in enumerate(await asyncio.gather(*reqs)):
        got[i * per:(i + 1) * per] = part
    if not np.array_equal(got, message):
        fail("reassembled message differs")
    return got


if __name__ == "__main__":
    if (chunk_size, num_chunks) != (256 * 1024, 4):
        fail(f"chunk_size {chunk_size}, num_chunks {num_chunks}; expected 262144, 4")
    if WORLD_SIZE < 2:
        fail("needs at least 2 ranks")
    if PEER >= WORLD_SIZE:
        hcomm.world()
        print(f"rank {RANK}: no peer, idle")
        sys.exit(0)
    asyncio.run(transfer())
    print(f"OK rank {RANK}: {num_chunks} chunks of {chunk_size} bytes")
