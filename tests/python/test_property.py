# SPDX-License-Identifier: Apache-2.0
"""A property test of the binding's validation. Random shapes
(integers in and far out of int32, unknown dtypes), then random tensors for
the backend selected (dtypes of any byte order and size, views with odd
strides, wrong dimensions) and random metadata (cu_seqlens_q, seqused_k,
block tables: decreasing, negative, huge, out of range, narrower views) go
into select/create/forward. Every call must raise (ValueError, TypeError or
attnreg.Error) or give the reference's answer on the same inputs; a crash
kills the run. hypothesis is not installed here: a seeded generator, run
for ATTNREG_PROPERTY_SECONDS (default 3; .ci/run gives it 45), from the seed
ATTNREG_PROPERTY_SEED (default: the time), printed for replay."""
import os
import time

import numpy as np
import pytest

import attnreg
from attnreg._reference import attention, decode
from test_forward_cpu import paged_batch

EXPECTED = (ValueError, TypeError, attnreg.Error)
DTYPES = ["f32", "f16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"]
NUMPY_DTYPES = ["<f4", ">f4", "<f2", ">f2", "<u2", ">u2", "|u1", "<i4", ">i4", "<f8", "<i2",
                "<u4", "<i8"]


def any_int(rng, small):
    """Mostly a plausible value, sometimes an edge or a value outside int32."""
    r = rng.random()
    if r < 0.95:
        return int(small)
    return int(rng.choice([0, -1, -2**31, 2**31 - 1, 2**31, 2**32 + int(small), -2**33,
                           np.int64(small), np.int32(small)]))


def random_shape_kwargs(rng):
    hkv = int(rng.choice([1, 2, 4]))
    kw = dict(q_heads=any_int(rng, hkv * int(rng.choice([1, 2, 4]))), kv_heads=any_int(rng, hkv),
              head_dim=any_int(rng, int(rng.choice([8, 16, 32]))),
              page_size=any_int(rng, int(rng.choice([1, 4, 16]))),
              max_q_len=any_int(rng, int(rng.integers(1, 9))),
              max_kv_len=any_int(rng, int(rng.integers(8, 65))),
              q_dtype=str(rng.choice(DTYPES + ["f64"] if rng.random() < 0.05 else DTYPES)),
              causal=bool(rng.random() < 0.7),
              window=(any_int(rng, int(rng.choice([-1, 4, 16]))),
                      any_int(rng, int(rng.choice([-1, 2])))),
              softcap=float(rng.choice([0.0, 0.0, 20.0])), sinks=bool(rng.random() < 0.2))
    if kw["q_dtype"] in DTYPES and rng.random() < 0.5:
        kw["kv_dtype"] = str(rng.choice(DTYPES))
    if rng.random() < 0.3:
        kw["head_dim_v"] = any_int(rng, int(rng.choice([8, 16])))
    return kw


def mutate_array(rng, a):
    """A random way to make an array wrong, or merely unusual."""
    r = rng.integers(0, 7)
    if r == 0:
        return a.astype(str(rng.choice(NUMPY_DTYPES)))
    if r == 1 and a.ndim >= 1 and a.shape[-1] > 1:
        return a[..., ::2]  # the last dimension not contiguous
    if r == 2 and a.ndim >= 1:
        return a[::-1]  # negative strides
    if r == 3:
        return a.reshape(-1)  # a dimension lost
    if r == 4:
        return a[None]  # one too many
    if r == 5 and a.ndim >= 1 and a.shape[0] > 1:
        return a[1:]  # one row short
    return np.ascontiguousarray(a)


def mutate_metadata(rng, b):
    r = rng.integers(0, 6)
    cu, sk, bt = b["cu"].copy(), b["sk"].copy(), b["bt"].copy()
    if r == 0:
        i = rng.integers(0, len(cu))
        cu[i] = rng.choice([-1, 2**31 - 1, -2**31, cu[i] + 1, cu[i] - 1])
    elif r == 1:
        # the wrapping pattern of the issue, at a random place
        if len(cu) >= 3:
            i = rng.integers(1, len(cu) - 1)
            cu[i] = 2147483584
            cu[i + 1:-1] = -2**31
    elif r == 2:
        i = rng.integers(0, len(sk))
        sk[i] = rng.choice([-1, 0, 2**31 - 1, sk[i] + 1, sk[i] * 4])
    elif r == 3 and bt.size:
        bt[rng.integers(0, bt.shape[0]), rng.integers(0, bt.shape[1])] = rng.choice(
            [-1, 2**31 - 1, b["k"].shape[0], 0])
    elif r == 4:
        b["bt"] = b["bt"][:, :rng.integers(0, bt.shape[1] + 1)]  # a narrower view
        return
    else:
        b["bt"] = np.ascontiguousarray(b["bt"]).astype(str(rng.choice(["<i4", ">i4", "<i8"])))
        return
    b["cu"], b["sk"], b["bt"] = cu, sk, bt


def reference(es, b, dv):
    q = decode(b["q"], es.q_dtype)
    k = decode(b["k"], es.kv_dtype)
    v = decode(b["v"], es.kv_dtype)
    return attention(q, k, v, b["bt"], b["cu"], b["sk"], 1 / np.sqrt(es.head_dim),
                     causal=es.causal, window=es.window, softcap=es.softcap,
                     sinks=None if b["sinks"] is None else b["sinks"].astype(np.float64))


def one_case(rng, reg, counts):
    try:
        shape = attnreg.Shape(**random_shape_kwargs(rng))
        sel = reg.select(shape)
        be = reg.create(sel)
    except EXPECTED:
        counts["refused shape"] += 1
        return
    with be:
        es = be.shape
        hq, hkv, d, dv = es.q_heads, es.kv_heads_effective, es.head_dim, es.head_dim_v_effective
        if max(hq, d, dv, es.page_size) > 64:
            counts["selected only (too big to fill)"] += 1  # a valid capacity, no tensors
            return
        n = int(rng.integers(1, 4))
        q_lens = [int(rng.integers(0, min(es.max_q_len, 8) + 1)) for _ in range(n)]
        kv_lens = [max(q, int(rng.integers(0, min(es.max_kv_len, 64) + 1))) for q in q_lens]
        if max(kv_lens) == 0:
            kv_lens[0] = 1
        b = paged_batch(rng, q_lens, kv_lens, hq, hkv, d, dv, es.page_size, es.q_dtype,
                        es.kv_dtype, es.sinks)
        out = None
        for _ in range(int(rng.integers(0, 3))):
            what = rng.integers(0, 6)
            if what < 3:
                key = ["q", "k", "v"][what]
                b[key] = mutate_array(rng, b[key])
            elif what < 5:
                mutate_metadata(rng, b)
            else:
                rows = int(b["cu"][-1]) if 0 <= int(b["cu"][-1]) <= 4096 else 1
                out = mutate_array(rng, np.zeros((rows, hq, dv),
                                                 dtype=b["q"].dtype if es.q_dtype == es.out_dtype
                                                 else np.float32))
        try:
            got = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"], out=out,
                             sinks=b["sinks"])
        except EXPECTED:
            counts["refused forward"] += 1
            return
        counts["ran"] += 1
        want = reference(es, b, dv)
        vals = np.abs(decode(b["v"], es.kv_dtype)).max() if b["v"].size else 0.0
        rel = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -20,
               "fp8_e4m3fn": 2.0 ** -3, "fp8_e4m3fnuz": 2.0 ** -3}[es.out_dtype]
        res = decode(got, es.out_dtype)
        # the compute dtype may be fp8 (q quantised): a looser budget there
        slack = 2.0 ** -3 if es.compute_dtype.startswith("fp8") else 2.0 ** -10
        assert np.isfinite(res).all()
        assert np.allclose(res, want, rtol=rel, atol=slack * max(vals, 1.0)), (
            f"{es}: accepted inputs gave a wrong result (max error "
            f"{np.abs(res - want).max():.3e})")


def test_random_inputs_raise_or_give_the_reference():
    seconds = float(os.environ.get("ATTNREG_PROPERTY_SECONDS", "3"))
    seed = int(os.environ.get("ATTNREG_PROPERTY_SEED", str(int(time.time()))))
    rng = np.random.default_rng(seed)
    counts = {"refused shape": 0, "selected only (too big to fill)": 0, "refused forward": 0,
              "ran": 0}
    reg = attnreg.Registry(use_env=False)
    end = time.monotonic() + seconds
    cases = 0
    try:
        while time.monotonic() < end:
            one_case(rng, reg, counts)
            cases += 1
    except AssertionError as e:
        pytest.fail(f"seed {seed}, case {cases}: {e}")
    finally:
        reg.close()
    print(f"property test: seed {seed}, {cases} cases in {seconds:g} s: {counts}")
    assert counts["ran"] > 0 and counts["refused forward"] > 0 and counts["refused shape"] > 0
