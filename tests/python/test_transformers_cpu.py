# SPDX-License-Identifier: Apache-2.0
"""The transformers integration without transformers or torch: page packing,
the argument mapping (heads, windows, softcap, sinks, capacities) and whole
attention calls in transformers' layouts ([B, H, S, D], the output [B, Sq,
H, D]) through cpu-ref, against a NumPy float64 version of transformers'
eager attention (repeat_kv, the causal and sliding masks as transformers
builds them, softcap, gpt-oss's sinks). The model-level test that needs
transformers and a GPU is test_transformers_gpu.py."""
import types

import numpy as np
import pytest

import attnreg
from attnreg.integrations import transformers as hf


def eager_reference(q, k, v, scale, causal=True, sliding_window=None, softcap=None, sinks=None):
    """transformers' eager_attention_forward, in float64: q [B, Hq, Sq, D],
    k/v [B, Hkv, Sk, D]; query i sits at key position Sk - Sq + i."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, hq, sq, _ = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    k = np.repeat(k, hq // hkv, axis=1)
    v = np.repeat(v, hq // hkv, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if softcap:
        s = softcap * np.tanh(s / softcap)
    pos = sk - sq + np.arange(sq)[:, None]
    kv = np.arange(sk)[None, :]
    visible = np.ones((sq, sk), bool)
    if causal:
        visible &= kv <= pos
    if sliding_window:
        visible &= kv > pos - sliding_window
    s = np.where(visible, s, -np.inf)
    if sinks is not None:
        s = np.concatenate([s, np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None, None],
                                               (b, hq, sq, 1))], axis=-1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p = p[..., :sk]
    return np.einsum("bhqk,bhkd->bqhd", p, v)  # transformers returns [B, Sq, H, D]


def test_pack_pages_layout():
    rng = np.random.default_rng(1)
    key = rng.standard_normal((2, 3, 37, 8)).astype(np.float32)
    value = rng.standard_normal((2, 3, 37, 5)).astype(np.float32)
    kc, vc, table, seqused = hf.pack_pages(key, value, page_size=16)
    assert kc.shape == (6, 16, 3, 8) and vc.shape == (6, 16, 3, 5)
    assert table.dtype == np.int32 and table.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert seqused.tolist() == [37, 37]
    for b in range(2):
        for t in range(37):
            blk, slot = table[b, t // 16], t % 16
            assert np.array_equal(kc[blk, slot], key[b, :, t]), (b, t)
            assert np.array_equal(vc[blk, slot], value[b, :, t]), (b, t)
    assert not kc[2, 37 - 32:].any() and not vc[5, 37 - 32:].any()  # the last page's tail
    with pytest.raises(ValueError, match="expected \\[batch, kv_heads, keys, head_dim\\]"):
        hf.pack_pages(key[0], value[0])


def test_shape_mapping():
    q = np.zeros((1, 8, 5, 64), np.float32)
    k = np.zeros((1, 2, 40, 64), np.float32)
    s = hf.shape_for(q, k, k, sliding_window=32, softcap=50.0, has_sinks=True)
    assert (s.arch, s.q_heads, s.kv_heads, s.head_dim, s.head_dim_v) == ("cpu", 8, 2, 64, 0)
    assert s.q_dtype == s.kv_dtype == s.compute_dtype == s.out_dtype == "f32"
    assert s.window == (31, 0) and s.softcap == 50.0 and s.sinks and s.causal
    assert (s.max_q_len, s.max_kv_len) == (16, 64)  # capacities, powers of two
    assert hf.shape_for(q, k, k).window == (-1, -1)
    assert hf.shape_for(q, k, k, is_causal=False).causal is False
    assert [hf.capacity(n) for n in (1, 16, 17, 1000)] == [16, 16, 32, 1024]
    with pytest.raises(TypeError, match="unsupported dtype int64"):
        hf.shape_for(q.astype(np.int64), k, k)


CASES = [  # (name, B, Hq, Hkv, Sq, Sk, D, kwargs)
    ("prefill-gqa", 1, 8, 2, 29, 29, 64, {}),
    ("prefill-batch2", 2, 4, 4, 17, 17, 32, {}),
    ("decode-step", 2, 8, 2, 1, 45, 64, {}),
    ("chunk-over-cache", 1, 4, 1, 7, 40, 64, {}),
    ("sliding-softcap", 1, 4, 2, 40, 40, 64, {"sliding_window": 9, "softcap": 20.0}),
    ("sliding-decode", 1, 4, 2, 1, 50, 64, {"sliding_window": 9}),
    ("sinks", 1, 4, 2, 12, 30, 64, {"s_aux": True}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_attention_call_against_eager(case):
    name, b, hq, hkv, sq, sk, d, kwargs = case
    rng = np.random.default_rng(hash(name) % 2**32)
    q = rng.standard_normal((b, hq, sq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, sk, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, sk, d)).astype(np.float32)
    if kwargs.get("s_aux"):
        kwargs = dict(kwargs, s_aux=rng.standard_normal(hq).astype(np.float32))
    module = types.SimpleNamespace(is_causal=True, training=False, layer_idx=0)
    scale = 0.11
    with attnreg.Registry(use_env=False) as reg:
        adapter = hf.Adapter(reg)
        out, weights = adapter.attention(module, q, k, v, None, scaling=scale, **kwargs)
        adapter.close()
    assert weights is None and out.shape == (b, sq, hq, d)
    want = eager_reference(q, k, v, scale, sliding_window=kwargs.get("sliding_window"),
                           softcap=kwargs.get("softcap"), sinks=kwargs.get("s_aux"))
    err = np.abs(out - want).max()
    assert err < 1e-4, err
    assert list(adapter.decisions.values()) == ["cpu-ref"]


def test_one_backend_per_capacity():
    """A growing context makes a decision per capacity, not per token."""
    rng = np.random.default_rng(3)
    module = types.SimpleNamespace(is_causal=True, training=False)
    with attnreg.Registry(use_env=False) as reg:
        adapter = hf.Adapter(reg)
        for sk in range(17, 33):
            q = rng.standard_normal((1, 2, 1, 16)).astype(np.float32)
            k = rng.standard_normal((1, 2, sk, 16)).astype(np.float32)
            adapter.attention(module, q, k, k, None)
        assert len(adapter.decisions) == 1, adapter.decisions
        adapter.close()


def test_refusals_name_themselves():
    q = np.zeros((2, 2, 3, 16), np.float32)
    module = types.SimpleNamespace(is_causal=True, training=True)
    with attnreg.Registry(use_env=False) as reg:
        adapter = hf.Adapter(reg)
        with pytest.raises(NotImplementedError, match="padded batches"):
            adapter.attention(module, q, q, q, np.array([[1, 1, 1], [0, 1, 1]]))
        with pytest.raises(NotImplementedError, match="dropout in training"):
            adapter.attention(module, q, q, q, None, dropout=0.1)
        # an all-ones padding mask is no padding
        module.training = False
        out, _ = adapter.attention(module, q, q, q, np.ones((2, 3), np.int64))
        assert out.shape == (2, 3, 2, 16)
        adapter.close()


def test_register_needs_transformers():
    try:
        import transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs transformers >= 4.53"):
            hf.register()
    else:
        pytest.skip("transformers is installed: test_transformers_gpu.py registers it")
