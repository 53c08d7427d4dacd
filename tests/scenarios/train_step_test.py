#!/usr/bin/env python3
"""train_step workloads against closed forms (docs/training-steps.md#checks).

1. compute: a step's compute time on a rank is the transformer FLOPs (Narayanan et al. 2021:
   24bsh^2 + 4bs^2h per layer forward, backward twice that) over the documented BF16 peak
   (280 TFLOPS, docs/models/npu.md#compute) times the efficiency, to 1 ns per compute task.
2. DP only (16 ranks on a2-2node, one bucket per layer, compute long enough to hide every bucket
   but the last): the exposed communication is the all-reduce of the last bucket, timed by a plain
   all-reduce run of the same size on the same ranks, within 3 % (what else is exposed: the
   stream engine's 100 ns dispatch per compute task and the event record / wait).
3. TP only (8 ranks on one server, no data parallelism): nothing overlaps, so the iteration is
   the compute plus 4 x layers x micro-batches all-reduces of b x s x h elements, each timed by a
   plain all-reduce run, within 3 %.
4. PP x TP (GPipe, a stage per server): iteration = (M + 1)(F + B) + 2M x T with F + B a
   micro-batch's compute and all-reduces on a stage and T a plain sendrecv between the servers,
   within 3 %.
5. EP (MoE, dp = ep = 8 on one server): iteration = compute + the all-to-alls + the dense
   gradients' all-reduce, each timed by a plain run, within 3 %.
6. Bad input: tp x pp x dp != ranks, an unknown key, efficiency 0: hcsim validate exits 2 naming
   the JSON pointer.
Usage: train_step_test.py HCSIM SOURCE_DIR
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HCSIM, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PEAK_BF16 = 280e12
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def scenario(tmp, name, topo, workload):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump({"format": "hcsim-scenario", "version": 1, "name": name, "payload": "timing",
                   "topology": os.path.join(SRC, "topologies", topo), "workload": workload}, f)
    return path


def run(tmp, path):
    db = path[:-5] + ".db"
    p = subprocess.run([HCSIM, "run", path, "--db", db, "--force", "-q"], cwd=tmp, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        raise SystemExit("hcsim run %s failed (%d)" % (path, p.returncode))
    return sqlite3.connect(db)


def fwd_flops(m, tp):
    b, s, h = m["micro_batch"], m["seq_len"], m["hidden"]
    return (24 * b * s * h * h + 4 * b * s * s * h) / tp  # ffn = 4h


def plain_allreduce_us(tmp, name, topo, nbytes):
    """The all-reduce alone: the median of its repetitions after the first (first use sets up routes)."""
    con = run(tmp, scenario(tmp, name, topo, [{"op": "allreduce", "bytes": "%dB" % nbytes, "dtype": "bf16", "repeat": 3}]))
    t = sorted(r[0] for r in con.execute("SELECT time_us FROM summary WHERE rep > 0"))
    return t[len(t) // 2]


with tempfile.TemporaryDirectory() as tmp:
    # ---- DP only ----
    model = {"layers": 4, "hidden": 1024, "seq_len": 1024, "micro_batch": 1, "dtype": "bf16"}
    eff, M = 0.1, 2
    con = run(tmp, scenario(tmp, "dp", "a2-2node.json", [{"op": "train_step", "model": model, "parallel": {"dp": 16},
                                                          "micro_batches": M, "bucket": "16MiB", "efficiency": eff}]))
    it, comp, comm, exp, ov, grad = con.execute(
        "SELECT iteration_us, compute_us, comm_us, exposed_comm_us, overlap, grad_bytes FROM train_steps").fetchone()
    tasks = 2 * 2 * model["layers"] * M  # attention and MLP, forward and backward
    want = 3 * fwd_flops(model, 1) * model["layers"] * M / (PEAK_BF16 * eff) * 1e6
    check(abs(comp - want) <= tasks * 1e-3, "DP: compute %.3f us = FLOPs / (peak x eff) %.3f us (to 1 ns per task)" % (comp, want))
    layer_grad = 12 * model["hidden"] ** 2 * 2  # 4h^2 + 2h(4h) parameters, bf16
    check(grad == model["layers"] * layer_grad, "DP: gradient bytes %d = layers x 12h^2 x 2 B" % grad)
    ar = plain_allreduce_us(tmp, "ar_dp", "a2-2node.json", layer_grad)
    check(abs(exp - ar) <= 0.03 * ar, "DP: exposed %.3f us = the last bucket's all-reduce alone %.3f us (3 %%)" % (exp, ar))
    check(abs(it - (comp + ar)) <= 0.03 * ar, "DP: iteration %.3f us = compute + last bucket %.3f us" % (it, comp + ar))
    check(0.5 < ov < 1, "DP: the other buckets overlap backward (overlap %.3f)" % ov)

    # ---- TP only ----
    model = {"layers": 2, "hidden": 2048, "seq_len": 1024, "micro_batch": 1, "dtype": "bf16"}
    eff, M = 0.5, 2
    con = run(tmp, scenario(tmp, "tp", "atlas800t-a2.json", [{"op": "train_step", "model": model, "parallel": {"tp": 8},
                                                              "micro_batches": M, "efficiency": eff}]))
    it, comp, comm, exp = con.execute("SELECT iteration_us, compute_us, comm_us, exposed_comm_us FROM train_steps").fetchone()
    want = 3 * fwd_flops(model, 8) * model["layers"] * M / (PEAK_BF16 * eff) * 1e6
    check(abs(comp - want) <= 4 * model["layers"] * M * 1e-3, "TP: compute %.3f us = FLOPs / 8 / (peak x eff) %.3f us" % (comp, want))
    act = model["micro_batch"] * model["seq_len"] * model["hidden"] * 2
    ar = plain_allreduce_us(tmp, "ar_tp", "atlas800t-a2.json", act)
    n_ar = 4 * model["layers"] * M
    check(abs(it - (comp + n_ar * ar)) <= 0.03 * n_ar * ar,
          "TP: iteration %.3f us = compute + %d all-reduces of %d B (%.3f us each) = %.3f us (3 %% of the all-reduces)" %
          (it, n_ar, act, ar, comp + n_ar * ar))

    # ---- PP x TP: GPipe over two servers ----
    # Stage = server (tp 8 inside, pp 2 across). A receive is posted when the compute stream reaches
    # it, so each of the M forward and M backward messages of the critical chain is on the path:
    # iteration = (M + 1)(F + B) + 2M x T, with F + B a micro-batch's compute plus its 4 x L/P
    # tensor-parallel all-reduces on one stage, and T one message timed by a plain sendrecv between
    # the servers' counterpart ranks (pattern halves: rank r <-> r + 8, all 8 pairs at once).
    model = {"layers": 4, "hidden": 2048, "seq_len": 1024, "micro_batch": 1, "dtype": "bf16"}
    eff, M, P = 0.5, 4, 2
    con = run(tmp, scenario(tmp, "pp", "a2-2node.json", [{"op": "train_step", "model": model, "parallel": {"tp": 8, "pp": P},
                                                          "micro_batches": M, "efficiency": eff}]))
    it, comp, crit = con.execute("SELECT iteration_us, compute_us, critical_rank FROM train_steps").fetchone()
    lp = model["layers"] // P
    want = 3 * fwd_flops(model, 8) * lp * M / (PEAK_BF16 * eff) * 1e6
    check(abs(comp - want) <= 4 * lp * M * 1e-3, "PP: compute per stage %.3f us = %.3f us" % (comp, want))
    check(crit < 8, "PP: the first stage finishes last (critical rank %d)" % crit)
    act = model["micro_batch"] * model["seq_len"] * model["hidden"] * 2
    con = run(tmp, scenario(tmp, "sr_pp", "a2-2node.json", [{"op": "sendrecv", "bytes": "%dB" % act, "dtype": "bf16",
                                                              "pattern": "halves", "repeat": 3}]))
    msg = sorted(r[0] for r in con.execute("SELECT time_us FROM summary WHERE rep > 0"))[0]
    fb = comp / M + 4 * lp * ar  # ar: the 8-rank all-reduce of b x s x h elements timed above
    closed = (M + 1) * fb + 2 * M * msg
    check(abs(it - closed) <= 0.03 * closed,
          "PP: iteration %.3f us = (M+1)(F+B) + 2M x T = %d x %.3f + %d x %.3f = %.3f us (3 %%)" % (it, M + 1, fb, 2 * M, msg, closed))

    # ---- EP (MoE) on one server ----
    # dp 8 = ep 8, 8 experts, top-2: per layer and micro-batch 4 all-to-alls of b s k h elements
    # (dispatch and combine, forward and backward) on the critical path; the dense (attention)
    # gradients in one bucket, reduced over the 8 ranks at the end; no expert gradients to reduce
    # (dp / ep = 1). iteration = compute + 4 L M all-to-alls + the bucket's all-reduce, each timed
    # by a plain run, within 3 %.
    model = {"layers": 2, "hidden": 1024, "seq_len": 1024, "micro_batch": 1, "dtype": "bf16", "experts": 8, "top_k": 2}
    eff, M = 0.5, 2
    con = run(tmp, scenario(tmp, "ep", "atlas800t-a2.json", [{"op": "train_step", "model": model, "parallel": {"dp": 8, "ep": 8},
                                                              "micro_batches": M, "bucket": "1GiB", "efficiency": eff}]))
    it, comp, grad = con.execute("SELECT iteration_us, compute_us, grad_bytes FROM train_steps").fetchone()
    b, sq, h, k = model["micro_batch"], model["seq_len"], model["hidden"], model["top_k"]
    want = 3 * (8 * b * sq * h * h + 4 * b * sq * sq * h + k * 4 * b * sq * h * 4 * h) * model["layers"] * M / (PEAK_BF16 * eff) * 1e6
    check(abs(comp - want) <= 6 * model["layers"] * M * 1e-3, "EP: compute %.3f us = attention + top_k x MLP FLOPs %.3f us" % (comp, want))
    dense = 4 * h * h * 2 * model["layers"]
    check(grad == dense, "EP: gradient bytes %d = the attention's 4h^2 x 2 B per layer" % grad)
    tokens = b * sq * k * h * 2
    con = run(tmp, scenario(tmp, "a2a_ep", "atlas800t-a2.json", [{"op": "alltoall", "bytes": "%dB" % tokens, "dtype": "bf16", "repeat": 3},
                                                                  {"op": "allreduce", "bytes": "%dB" % dense, "dtype": "bf16", "repeat": 3}]))
    a2a = sorted(r[0] for r in con.execute("SELECT time_us FROM summary WHERE step = 0 AND rep > 0"))[0]
    ar_dense = sorted(r[0] for r in con.execute("SELECT time_us FROM summary WHERE step = 1 AND rep > 0"))[0]
    closed = comp + 4 * model["layers"] * M * a2a + ar_dense
    check(abs(it - closed) <= 0.03 * (closed - comp),
          "EP: iteration %.3f us = compute + %d all-to-alls of %d B (%.3f us) + all-reduce %.3f us = %.3f us" %
          (it, 4 * model["layers"] * M, tokens, a2a, ar_dense, closed))

    # ---- bad input ----
    good = {"op": "train_step", "model": {"layers": 2, "hidden": 1024, "seq_len": 128, "micro_batch": 1},
            "parallel": {"tp": 8, "dp": 2}}
    cases = [
        ("parallel", {"parallel": {"tp": 8, "dp": 4}}, "/workload/0/parallel: tp x pp x dp = 8 x 1 x 4 = 32 ranks, the topology has 16"),
        ("unknown", {"model": dict(good["model"], heads=16)}, "/workload/0/model/heads: unknown key"),
        ("efficiency", {"efficiency": 0}, "/workload/0/efficiency: must be in (0, 1]"),
        ("layers", {"parallel": {"tp": 4, "pp": 4}, "model": dict(good["model"], layers=6)},
         "/workload/0/model/layers: 6 layers do not divide into 4 pipeline stages"),
        ("ep", {"parallel": {"tp": 4, "dp": 4, "ep": 3}, "model": dict(good["model"], experts=6)}, "/workload/0/parallel/ep: ep 3 must divide dp 4"),
    ]
    for name, change, want in cases:
        p = scenario(tmp, "bad_" + name, "a2-2node.json", [dict(good, **change)])
        r = subprocess.run([HCSIM, "validate", p], capture_output=True, text=True)
        check(r.returncode == 2 and want in r.stderr + r.stdout, "bad input (%s): exit %d, %s" % (name, r.returncode, want))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
