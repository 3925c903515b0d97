# SPDX-License-Identifier: Apache-2.0
"""The NumPy float64 reference of the attention semantics every backend
computes (BRIEF.md, "Attention semantics"), and the decoding of the raw
encodings NumPy lacks (bf16 bits, fp8 codes) into float64.

Private: the one Python reference, shared by the pytest suite
(tests/python), the toy engine (examples/python/toy_engine.py), the
`attnreg run` round trip (plugins/cpu-ref/npy_roundtrip.py) and the wheel's
smoke test. The C counterpart is the oracle in tools/oracle/. Needs numpy."""
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import from_bf16_bits

__all__ = ["FP8_VALUES", "decode", "attention"]


def _fp8_table(fnuz: bool) -> Any:
    """The float64 value of each of the 256 fp8 e4m3 codes (NaN codes NaN)."""
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


#: fp8 dtype name -> float64 array of the 256 codes' values.
FP8_VALUES: Dict[str, Any] = {"fp8_e4m3fn": _fp8_table(False),
                              "fp8_e4m3fnuz": _fp8_table(True)}


def decode(arr: Any, dtype: str) -> Any:
    """Stored values (NumPy raw encodings: bf16 as uint16 bits, fp8 as uint8
    codes) -> float64."""
    if dtype == "bf16":
        return from_bf16_bits(arr).astype(np.float64)
    if dtype in FP8_VALUES:
        return FP8_VALUES[dtype][np.asarray(arr)]
    return np.asarray(arr, dtype=np.float64)


def attention(q: Any, k: Any, v: Any, bt: Any, cu: Any, sk: Any, scale: float,
              causal: bool = True, window: Sequence[int] = (-1, -1), softcap: float = 0.0,
              sinks: Optional[Any] = None,
              return_lse: bool = False) -> Union[Any, Tuple[Any, Any]]:
    """q [T, Hq, D], k [blocks, page, Hkv, D], v [blocks, page, Hkv, Dv]
    float64; bt the block table, cu cu_seqlens_q, sk seqused_k. Query i of a
    sequence sits at key position seqused_k - q_len + i; window (L, R) as
    FlashAttention's window_size (-1 unbounded). With return_lse,
    (out, lse): lse [T, Hq] = ln of each row's softmax denominator (the sink
    included), -inf for an empty one."""
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
