# SPDX-License-Identifier: Apache-2.0
"""NumPy float64 reference of the attention semantics (BRIEF.md), and the
raw-bit encodings of bf16 and fp8 that NumPy lacks. Used by the pytest suite."""
import numpy as np

from attnreg import from_bf16_bits


def _fp8_table(fnuz):
    vals = np.zeros(256)
    bias = 8 if fnuz else 7
    for code in range(256):
        s = -1.0 if code & 0x80 else 1.0
        e, m = (code >> 3) & 0xF, code & 7
        if fnuz and code == 0x80:
            vals[code] = np.nan
        elif not fnuz and e == 15 and m == 7:
            vals[code] = np.nan
        elif e == 0:
            vals[code] = s * (m / 8.0) * 2.0 ** (1 - bias)
        else:
            vals[code] = s * (1 + m / 8.0) * 2.0 ** (e - bias)
    return vals


FP8_VALUES = {"fp8_e4m3fn": _fp8_table(False), "fp8_e4m3fnuz": _fp8_table(True)}


def random_fp8_codes(rng, shape):
    """Codes of magnitude < 4 (never NaN), random sign."""
    codes = rng.integers(0, 0x48, size=shape).astype(np.uint8)
    sign = (rng.random(shape) < 0.5).astype(np.uint8) << 7
    codes = codes | sign
    codes[codes == 0x80] = 0  # fnuz NaN; also -0 in fn
    return codes


def decode(arr, dtype):
    """Stored values (numpy raw encodings) -> float64."""
    if dtype == "bf16":
        return from_bf16_bits(arr).astype(np.float64)
    if dtype in FP8_VALUES:
        return FP8_VALUES[dtype][np.asarray(arr)]
    return np.asarray(arr, dtype=np.float64)


def attention(q, k, v, bt, cu, sk, scale, causal=True, window=(-1, -1), softcap=0.0,
              sinks=None, return_lse=False):
    """q [T, Hq, D], k [blocks, page, Hkv, D], v [blocks, page, Hkv, Dv] float64.
    With return_lse, (out, lse): lse [T, Hq] = ln of each row's softmax
    denominator (the sink included), -inf for an empty one."""
    tokens, hq, d = q.shape
    page, hkv, dv = k.shape[1], k.shape[2], v.shape[3]
    out = np.zeros((tokens, hq, dv))
    lse = np.full((tokens, hq), -np.inf)
    for s in range(len(sk)):
        qs = q[cu[s]:cu[s + 1]]
        n_q, n_k = qs.shape[0], int(sk[s])
        if n_q == 0:
            continue
        idx = np.arange(n_k)
        slots = bt[s][idx // page] * page + idx % page
        keys = k.reshape(-1, hkv, d)[slots]
        vals = v.reshape(-1, hkv, dv)[slots]
        pos = n_k - n_q + np.arange(n_q)[:, None]
        j = np.arange(n_k)[None, :]
        visible = np.ones((n_q, n_k), dtype=bool)
        if causal:
            visible &= j <= pos
        if window[0] >= 0:
            visible &= j >= pos - window[0]
        if window[1] >= 0:
            visible &= j <= pos + window[1]
        for h in range(hq):
            g = h // (hq // hkv)
            scores = scale * qs[:, h, :] @ keys[:, g, :].T
            if softcap > 0:
                scores = softcap * np.tanh(scores / softcap)
            scores = np.where(visible, scores, -np.inf)
            m = scores.max(axis=1, keepdims=True) if n_k else np.full((n_q, 1), -np.inf)
            if sinks is not None:
                m = np.maximum(m, sinks[h])
            m = np.where(np.isfinite(m), m, 0.0)
            p = np.exp(scores - m)
            denom = p.sum(axis=1, keepdims=True)
            if sinks is not None:
                denom = denom + np.exp(sinks[h] - m)
            o = np.where(denom > 0, (p @ vals[:, g, :]) / np.where(denom > 0, denom, 1), 0.0)
            out[cu[s]:cu[s + 1], h, :] = o
            with np.errstate(divide="ignore"):
                lse[cu[s]:cu[s + 1], h] = np.where(denom[:, 0] > 0, m[:, 0] + np.log(denom[:, 0]),
                                                   -np.inf)
    return (out, lse) if return_lse else out
