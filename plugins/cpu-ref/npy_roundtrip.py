#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Round trip through `attnreg run` with NumPy-made files.

Writes random paged-attention inputs with NumPy (bf16 as raw uint16 bits, as
`attnreg run` expects), runs `attnreg run`, reads the output back and compares
it with an independent NumPy float64 implementation of the semantics in
BRIEF.md ("Attention semantics").

    python3 plugins/cpu-ref/npy_roundtrip.py --attnreg build/bin/attnreg [--dir DIR]

Exits 0 when every element is within bf16 rounding (2^-8 relative) plus a
float32 budget, 1 otherwise. Needs numpy (Debian: python3-numpy).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np


def to_bf16_bits(x):
    """float32 -> bf16 bits, round to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def reference(q, k, v, bt, cu, sk, scale, window, sinks, causal=True):
    """Float64 attention: gather pages, full scores, mask, softmax."""
    tokens, hq, d = q.shape
    page, hkv = k.shape[1], k.shape[2]
    out = np.zeros((tokens, hq, v.shape[3]))
    for s in range(len(sk)):
        qs = q[cu[s]:cu[s + 1]].astype(np.float64)
        n_q, n_k = qs.shape[0], sk[s]
        idx = np.arange(n_k)
        slots = bt[s][idx // page] * page + idx % page
        keys = k.reshape(-1, hkv, d)[slots].astype(np.float64)
        vals = v.reshape(-1, hkv, v.shape[3])[slots].astype(np.float64)
        for h in range(hq):
            g = h // (hq // hkv)
            scores = scale * qs[:, h, :] @ keys[:, g, :].T
            pos = n_k - n_q + np.arange(n_q)[:, None]
            j = np.arange(n_k)[None, :]
            visible = np.ones((n_q, n_k), dtype=bool)
            if causal:
                visible &= j <= pos
            if window[0] >= 0:
                visible &= j >= pos - window[0]
            if window[1] >= 0:
                visible &= j <= pos + window[1]
            scores = np.where(visible, scores, -np.inf)
            m = scores.max(axis=1, keepdims=True)
            if sinks is not None:
                m = np.maximum(m, sinks[h])
            m = np.where(np.isfinite(m), m, 0.0)
            p = np.exp(scores - m)
            denom = p.sum(axis=1, keepdims=True)
            if sinks is not None:
                denom = denom + np.exp(sinks[h] - m)
            o = np.where(denom > 0, (p @ vals[:, g, :]) / np.where(denom > 0, denom, 1), 0.0)
            out[cu[s]:cu[s + 1], h, :] = o
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnreg", default="build/bin/attnreg")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    hq, hkv, d, page = 8, 2, 64, 16
    q_lens, kv_lens = [3, 1, 7], [40, 100, 7]
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    sk = np.array(kv_lens, dtype=np.int32)
    pages = [(n + page - 1) // page for n in kv_lens]
    blocks = sum(pages) + 3
    perm = rng.permutation(blocks).astype(np.int32)
    bt = np.full((len(kv_lens), max(pages) + 2), -1, dtype=np.int32)
    at = 0
    for s, n in enumerate(pages):
        bt[s, :n] = perm[at:at + n]
        at += n
    q = rng.uniform(-1, 1, (cu[-1], hq, d)).astype(np.float32)
    k = rng.uniform(-1, 1, (blocks, page, hkv, d)).astype(np.float32)
    v = rng.uniform(-1, 1, (blocks, page, hkv, d)).astype(np.float32)
    sinks = rng.uniform(-1, 2, hq).astype(np.float32)
    window = (20, -1)
    q_bits, k_bits, v_bits = to_bf16_bits(q), to_bf16_bits(k), to_bf16_bits(v)

    work = args.dir or tempfile.mkdtemp(prefix="attnreg-run-")
    files = {}
    for name, arr in [("q", q_bits), ("k", k_bits), ("v", v_bits), ("bt", bt), ("cu", cu),
                      ("sk", sk), ("sinks", sinks)]:
        files[name] = os.path.join(work, name + ".npy")
        np.save(files[name], arr)
    out_path = os.path.join(work, "out.npy")
    cmd = [args.attnreg, "run", "--backend", "cpu-ref", "--q-heads", str(hq), "--kv-heads",
           str(hkv), "--head-dim", str(d), "--q-dtype", "bf16", "--window", "%d,%d" % window,
           "--q", files["q"], "--k-cache", files["k"], "--v-cache", files["v"],
           "--block-table", files["bt"], "--cu-seqlens-q", files["cu"], "--seqused-k",
           files["sk"], "--sinks-file", files["sinks"], "--out", out_path]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    got = from_bf16_bits(np.load(out_path)).astype(np.float64)
    want = reference(from_bf16_bits(q_bits), from_bf16_bits(k_bits), from_bf16_bits(v_bits),
                     bt, cu, sk, 1 / np.sqrt(d), window, sinks.astype(np.float64))
    err = np.abs(got - want)
    allowed = 2.0 ** -8 * np.abs(want) + 2.0 ** -16 * np.abs(from_bf16_bits(v_bits)).max()
    print("max abs error %.3e, elements beyond tolerance: %d of %d"
          % (err.max(), int((err > allowed).sum()), err.size))
    return 0 if (err <= allowed).all() else 1


if __name__ == "__main__":
    sys.exit(main())
