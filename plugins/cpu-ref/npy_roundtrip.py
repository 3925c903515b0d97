#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Round trip through `attnreg run` with NumPy-made files.

Writes random paged-attention inputs with NumPy (bf16 as raw uint16 bits, as
`attnreg run` expects), runs `attnreg run`, reads the output back and compares
it with the NumPy float64 reference of the semantics in BRIEF.md
("Attention semantics") that the Python package carries (attnreg._reference,
shared with the pytest suite and the toy engine; the package is the one on
PYTHONPATH, else the one staged beside the CLI's build).

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


def import_attnreg(cli):
    """The attnreg Python package, for its bf16 helpers and its float64
    reference: the one on sys.path, else the one the CLI's build staged
    (<build>/python beside <build>/bin/attnreg)."""
    try:
        import attnreg  # noqa: F401
    except ImportError:
        staged = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(cli))), "python")
        if not os.path.isdir(os.path.join(staged, "attnreg")):
            raise SystemExit("npy_roundtrip.py needs the attnreg Python package: "
                             "PYTHONPATH=build/python, or pip install ./python")
        sys.path.insert(0, staged)
    from attnreg import from_bf16_bits, to_bf16_bits
    from attnreg._reference import attention
    return from_bf16_bits, to_bf16_bits, attention


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnreg", default="build/bin/attnreg")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from_bf16_bits, to_bf16_bits, attention = import_attnreg(args.attnreg)
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
    want = attention(*(from_bf16_bits(x).astype(np.float64) for x in (q_bits, k_bits, v_bits)),
                     bt, cu, sk, 1 / np.sqrt(d), window=window, sinks=sinks.astype(np.float64))
    err = np.abs(got - want)
    allowed = 2.0 ** -8 * np.abs(want) + 2.0 ** -16 * np.abs(from_bf16_bits(v_bits)).max()
    print("max abs error %.3e, elements beyond tolerance: %d of %d"
          % (err.max(), int((err > allowed).sum()), err.size))
    return 0 if (err <= allowed).all() else 1


if __name__ == "__main__":
    sys.exit(main())
