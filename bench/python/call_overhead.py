# SPDX-License-Identifier: Apache-2.0
"""Host time of one per-layer attention call through the Python package
the median of N calls (default 10000) of

  forward    Backend.forward(q, k, v, block_table, cu, seqused_k, out): every
             argument checked on every call (the path engines used before);
  prepared   Backend.prepare(block_table, cu, seqused_k) once, then
             PreparedBatch.forward(q, k, v, out) per layer: metadata checked
             and ctypes arguments built once, per call only which arrays and
             that their layout and place are the first call's;
  C          attn_backend_forward on the prepared arguments, from Python: the
             backend's own time plus one ctypes call, the floor of the two;
  op         --op (torch >= 2.4): attnreg.torch_ops.forward on the prepared
             batch in eager mode (the wrapper calls the op's implementation,
             no dispatcher): the wrapper's cost on top of "prepared";
  op-dispatch  --op: the same with torch_ops.DISPATCH_EAGER, i.e. through
             torch.ops.attnreg.forward (the torch.library custom op), what
             a torch.compile graph pays per call outside a CUDA graph;
  op-backend --op: the op on the Backend (metadata as op inputs, checked on
             every call, as a compiled graph over a Backend does), through
             the dispatcher.

With --op on the CPU every row runs on CPU torch tensors (the ops take
torch tensors only), not NumPy arrays: compare op with that run's prepared.

On cpu-ref (NumPy, a one-token decode of two sequences) and, with torch and a
GPU visible, on the GPU backend (CUDA tensors; the kernel launch is
asynchronous, so the host time is what is measured; synchronised every 1000
calls so the queue stays short). Prints one table row per path.

    python3 bench/python/call_overhead.py [--calls N] [--device cpu|cuda] [--op]
"""
import argparse
import ctypes
import statistics
import sys
import time

import attnreg


def median_us(fn, calls, sync=None):
    for _ in range(min(500, calls)):
        fn()
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if sync and i % 1000 == 999:
            sync()
    return statistics.median(times) * 1e6


def batch(device, torch):
    import numpy as np
    rng = np.random.default_rng(0)
    hq, hkv, d, page = (32, 8, 128, 16) if device == "cuda" else (8, 2, 64, 16)
    seqs, blocks = 2, 16
    q = rng.uniform(-1, 1, (seqs, hq, d)).astype(np.float32)
    k = rng.uniform(-1, 1, (blocks, page, hkv, d)).astype(np.float32)
    bt = np.arange(seqs * 4, dtype=np.int32).reshape(seqs, 4)
    cu = np.arange(seqs + 1, dtype=np.int32)
    sk = np.array([40, 64], dtype=np.int32)
    arch = "cpu"
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm_{major}{minor}"
        cast = dict(dtype=torch.bfloat16, device="cuda")
        q, k = torch.from_numpy(q).to(**cast), torch.from_numpy(k).to(**cast)
        bt, cu, sk = (torch.from_numpy(x).cuda() for x in (bt, cu, sk))
        out = torch.empty_like(q)
        dtype = "bf16"
    else:
        out = np.empty_like(q)
        dtype = "f32"
    shape = attnreg.Shape(arch=arch, q_heads=hq, kv_heads=hkv, head_dim=d, q_dtype=dtype,
                          page_size=page, max_q_len=1, max_kv_len=64)
    return shape, q, k, k.clone() if device == "cuda" else k.copy(), bt, cu, sk, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--op", action="store_true",
                    help="also time the torch.library custom op (attnreg.torch_ops)")
    args = ap.parse_args()
    torch = None
    if args.device == "cuda" or args.op:
        import torch
    shape, q, k, v, bt, cu, sk, out = batch(args.device, torch if args.device == "cuda" else None)
    if args.op:
        from attnreg import torch_ops
        if not torch_ops.HAS_CUSTOM_OP:
            print(f"--op: torch {torch.__version__} has no torch.library.custom_op (>= 2.4)",
                  file=sys.stderr)
            return 2
        if args.device == "cpu":  # the ops take torch tensors
            q, k, v, bt, cu, sk, out = (torch.from_numpy(x) for x in (q, k, v, bt, cu, sk, out))
    sync = torch.cuda.synchronize if args.device == "cuda" else None
    with attnreg.Registry() as reg:
        sel = reg.select(shape)
        with reg.create(sel) as be:
            be.reserve_workspace(2, 2)
            prepared = be.prepare(bt, cu, sk)
            prepared.forward(q, k, v, out)
            rows = [("forward", median_us(lambda: be.forward(q, k, v, bt, cu, sk, out),
                                          args.calls, sync)),
                    ("prepared", median_us(lambda: prepared.forward(q, k, v, out), args.calls,
                                           sync))]
            handle, c_args = be._handle(), prepared._args
            fwd = attnreg._lib.attn_backend_forward
            rows.append(("C", median_us(lambda: fwd(handle, ctypes.byref(c_args)), args.calls,
                                        sync)))
            if args.op:
                torch_ops.register(prepared)
                torch_ops.register(be)
                rows.append(("op", median_us(lambda: torch_ops.forward(prepared, q, k, v, out=out),
                                             args.calls, sync)))
                torch_ops.DISPATCH_EAGER = True
                rows.append(("op-dispatch", median_us(
                    lambda: torch_ops.forward(prepared, q, k, v, out=out), args.calls, sync)))
                rows.append(("op-backend", median_us(
                    lambda: torch_ops.forward(be, q, k, v, bt, cu, sk, out=out), args.calls,
                    sync)))
                torch_ops.DISPATCH_EAGER = False
    kind = "torch CUDA tensors" if args.device == "cuda" else (
        "torch CPU tensors" if args.op else "NumPy arrays")
    print(f"backend {sel.backend} on {shape.arch} ({kind}), {args.calls} calls, median host "
          f"time per call")
    print("| path | us |")
    print("| --- | --- |")
    for name, us in rows:
        print(f"| {name} | {us:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
