# SPDX-License-Identifier: Apache-2.0
"""Backend.forward on cpu-ref against the NumPy float64 reference, on random
paged batches (shuffled blocks, partial pages, unused blocks)."""
import numpy as np
import pytest

import attnreg
from attnreg import to_bf16_bits
from attnreg._reference import FP8_VALUES, attention, decode

NP_DTYPE = {"f32": np.float32, "f16": np.float16}


def random_fp8_codes(rng, shape):
    """Codes of magnitude < 4 (never NaN), random sign."""
    codes = rng.integers(0, 0x48, size=shape).astype(np.uint8)
    sign = (rng.random(shape) < 0.5).astype(np.uint8) << 7
    codes = codes | sign
    codes[codes == 0x80] = 0  # fnuz NaN; also -0 in fn
    return codes


def encode(x, dtype):
    if dtype == "bf16":
        return to_bf16_bits(x)
    return x.astype(NP_DTYPE[dtype])


def paged_batch(rng, q_lens, kv_lens, hq, hkv, d, dv, page, q_dtype, kv_dtype, sinks,
                extra_blocks=3, strided=False):
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    sk = np.array(kv_lens, dtype=np.int32)
    pages = [(n + page - 1) // page for n in kv_lens]
    blocks = sum(pages) + extra_blocks
    perm = rng.permutation(blocks).astype(np.int32)
    bt = np.full((len(kv_lens), max(pages) + 2), -1, dtype=np.int32)
    at = 0
    for s, n in enumerate(pages):
        bt[s, :n] = perm[at:at + n]
        at += n
    T = int(cu[-1])
    qf = rng.uniform(-1, 1, (T, hq, d)).astype(np.float32)
    if strided:  # q as a view of a fused [T, Hq + extra, D] projection
        fused = np.zeros((T, hq + 3, d), dtype=np.float32)
        fused[:, 1:hq + 1] = qf
        q = encode(fused, q_dtype)[:, 1:hq + 1]
    else:
        q = encode(qf, q_dtype)
    if kv_dtype.startswith("fp8"):
        k = random_fp8_codes(rng, (blocks, page, hkv, d))
        v = random_fp8_codes(rng, (blocks, page, hkv, dv))
    else:
        k = encode(rng.uniform(-1, 1, (blocks, page, hkv, d)).astype(np.float32), kv_dtype)
        v = encode(rng.uniform(-1, 1, (blocks, page, hkv, dv)).astype(np.float32), kv_dtype)
    s = rng.uniform(-1, 2, hq).astype(np.float32) if sinks else None
    return dict(q=q, k=k, v=v, bt=bt, cu=cu, sk=sk, sinks=s)


CASES = [
    # name, shape kwargs, q_lens, kv_lens, descales (k, v), strided
    ("gqa decode+prefill mix", dict(q_heads=8, kv_heads=2, head_dim=64), [3, 1, 7], [40, 100, 7],
     (1.0, 1.0), False),
    ("mqa mtp fp8_e4m3fn", dict(q_heads=16, kv_heads=1, head_dim=64, kv_dtype="fp8_e4m3fn"),
     [2, 4, 3], [33, 70, 16], (0.5, 0.25), False),
    ("fp8_e4m3fnuz kv", dict(q_heads=4, kv_heads=2, head_dim=32, kv_dtype="fp8_e4m3fnuz"),
     [1, 5], [17, 64], (0.75, 1.5), False),
    ("window + sinks", dict(q_heads=4, kv_heads=4, head_dim=32, window=(20, -1), sinks=True),
     [6, 1], [50, 33], (1.0, 1.0), False),
    ("softcap, no causal, two-sided window, page 8",
     dict(q_heads=6, kv_heads=3, head_dim=48, page_size=8, causal=False, window=(8, 4),
          softcap=30.0), [5, 9], [29, 9], (1.0, 1.0), False),
    ("f16 q, f32 out, head_dim_v 32, strided q",
     dict(q_heads=4, kv_heads=1, head_dim=64, head_dim_v=32, q_dtype="f16", kv_dtype="f16",
          out_dtype="f32"), [4, 2, 1], [4, 30, 61], (1.0, 1.0), True),
    ("causal offsets: chunked prefill", dict(q_heads=2, kv_heads=1, head_dim=16, page_size=4),
     [16, 3], [40, 3], (1.0, 1.0), False),
]


@pytest.mark.parametrize("name,kw,q_lens,kv_lens,descales,strided", CASES,
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [1, 2])
def test_forward_matches_reference(reg, name, kw, q_lens, kv_lens, descales, strided, seed):
    rng = np.random.default_rng(seed * 1000 + len(name))
    shape = attnreg.Shape(max_q_len=max(q_lens), max_kv_len=max(kv_lens), **kw)
    sel = reg.select(shape)
    assert sel.backend == "cpu-ref"
    es = sel.effective_shape
    dv = es.head_dim_v_effective
    b = paged_batch(rng, q_lens, kv_lens, es.q_heads, es.kv_heads_effective, es.head_dim, dv,
                    es.page_size, es.q_dtype, es.kv_dtype, es.sinks, strided=strided)
    kd, vd = descales
    with reg.create(sel) as be:
        out = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"], sinks=b["sinks"],
                         k_descale=kd, v_descale=vd)
    assert out.shape == (int(b["cu"][-1]), es.q_heads, dv)
    got = decode(out, es.out_dtype)
    kscale = kd if es.kv_dtype.startswith("fp8") else 1.0
    vscale = vd if es.kv_dtype.startswith("fp8") else 1.0
    vals = decode(b["v"], es.kv_dtype) * vscale
    want = attention(decode(b["q"], es.q_dtype), decode(b["k"], es.kv_dtype) * kscale, vals,
                     b["bt"], b["cu"], b["sk"], 1 / np.sqrt(es.head_dim), causal=es.causal,
                     window=es.window, softcap=es.softcap,
                     sinks=None if b["sinks"] is None else b["sinks"].astype(np.float64))
    assert np.isfinite(got).all()
    # the output's rounding (bf16: 2^-8 relative) plus a float32 budget on the
    # largest value the row averages (docs/TOLERANCES.md)
    rel = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -20}[es.out_dtype]
    allowed = rel * np.abs(want) + 2.0 ** -14 * np.abs(vals).max()
    bad = np.abs(got - want) > allowed
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements beyond tolerance; max abs "
                           f"error {np.abs(got - want).max():.3e}")


def test_out_given_and_strided(reg):
    """A caller's out (a strided view) is written in place and returned."""
    rng = np.random.default_rng(5)
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=32, max_q_len=3, max_kv_len=40)
    b = paged_batch(rng, [3, 2], [40, 20], 4, 2, 32, 32, 16, "bf16", "bf16", False)
    big = np.zeros((5, 6, 32), dtype=np.uint16)
    out = big[:, 1:5]
    with reg.create(reg.select(shape)) as be:
        ret = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"], out=out)
        ref = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
    assert ret is out
    assert (big[:, 0] == 0).all() and (big[:, 5] == 0).all()
    assert np.array_equal(out, ref)


def test_workspace_is_cached_and_can_be_given(reg):
    rng = np.random.default_rng(6)
    shape = attnreg.Shape(q_heads=2, head_dim=16, max_q_len=4, max_kv_len=64)
    b = paged_batch(rng, [4, 1], [64, 9], 2, 2, 16, 16, 16, "bf16", "bf16", False)
    with reg.create(reg.select(shape)) as be:
        be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        first = be._ws["cpu"][0]
        be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        assert be._ws["cpu"][0] is first
        n = be.workspace_size(2, 5)
        ws = np.empty(max(n, 1), dtype=np.uint8)
        a = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"], workspace=ws)
        c = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        assert np.array_equal(a, c)


def test_reserve_workspace_ahead_and_growth(reg):
    """reserve_workspace sizes the cache for capacities; a bigger batch later
    gets a new buffer and the old one stays allocated (a captured graph may
    hold its address)."""
    rng = np.random.default_rng(8)
    shape = attnreg.Shape(q_heads=2, head_dim=16, max_q_len=4, max_kv_len=64)
    small = paged_batch(rng, [1], [9], 2, 2, 16, 16, 16, "bf16", "bf16", False)
    big = paged_batch(rng, [4, 4, 4], [64, 64, 30], 2, 2, 16, 16, 16, "bf16", "bf16", False)
    with reg.create(reg.select(shape)) as be:
        n = be.reserve_workspace(1, 1)
        assert n == be.workspace_size(1, 1) and be._ws["cpu"][2] == n
        first = be._ws["cpu"][0]
        be.forward(small["q"], small["k"], small["v"], small["bt"], small["cu"], small["sk"])
        assert be._ws["cpu"][0] is first
        be.forward(big["q"], big["k"], big["v"], big["bt"], big["cu"], big["sk"])
        if be.workspace_size(3, 12) > n:
            assert be._ws["cpu"][0] is not first and first in be._ws_retired


def test_torch_cpu_tensors(reg):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=32, max_q_len=3, max_kv_len=40)
    b = paged_batch(rng, [3, 2], [40, 20], 4, 2, 32, 32, 16, "bf16", "bf16", False)
    with reg.create(reg.select(shape)) as be:
        ref = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        t = {k: torch.from_numpy(b[k].astype(np.int16)).view(torch.bfloat16)
             for k in ("q", "k", "v")}
        out = be.forward(t["q"], t["k"], t["v"], torch.from_numpy(b["bt"]),
                         torch.from_numpy(b["cu"]), torch.from_numpy(b["sk"]))
    assert out.dtype == torch.bfloat16
    assert np.array_equal(out.view(torch.int16).numpy().view(np.uint16), ref)


def test_torch_argument_checks(reg):
    torch = pytest.importorskip("torch")
    shape = attnreg.Shape(q_heads=2, head_dim=16, max_kv_len=16)
    q = torch.zeros(1, 2, 16, dtype=torch.bfloat16)
    kv = torch.zeros(1, 16, 2, 16, dtype=torch.bfloat16)
    bt = torch.zeros(1, 1, dtype=torch.int32)
    cu = torch.tensor([0, 1], dtype=torch.int32)
    sk = torch.tensor([16], dtype=torch.int32)
    with reg.create(reg.select(shape)) as be:
        assert be.forward(q, kv, kv, bt, cu, sk).dtype == torch.bfloat16
        with pytest.raises(ValueError, match=r"q: expected dtype bfloat16 \(q_dtype bf16\), got float16"):
            be.forward(q.half(), kv, kv, bt, cu, sk)
        with pytest.raises(ValueError, match="block_table: a numpy array among torch arrays"):
            be.forward(q, kv, kv, bt.numpy(), cu, sk)
        with pytest.raises(ValueError, match="k_cache: the last dimension must be contiguous"):
            be.forward(q, torch.zeros(1, 16, 2, 32, dtype=torch.bfloat16)[..., ::2], kv, bt, cu,
                       sk)
        with pytest.raises(ValueError, match="cu_seqlens_q: the last entry is 2"):
            be.forward(q, kv, kv, bt, torch.tensor([0, 2], dtype=torch.int32), sk)


def test_metadata_inconsistencies_are_errors(reg):
    """More query tokens than keys (the keys include the new
    tokens), a negative key count and a decreasing cu_seqlens_q are errors
    naming the sequence and the array, never rows of zeros."""
    rng = np.random.default_rng(20)
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=32, max_q_len=8, max_kv_len=64)
    b = paged_batch(rng, [2, 8], [30, 8], 4, 2, 32, 32, 16, "bf16", "bf16", False)
    with reg.create(reg.select(shape)) as be:
        def run(cu, sk):
            return be.forward(b["q"], b["k"], b["v"], b["bt"], np.array(cu, dtype=np.int32),
                              np.array(sk, dtype=np.int32))
        good = run(b["cu"], b["sk"])
        want = attention(decode(b["q"], "bf16"), decode(b["k"], "bf16"), decode(b["v"], "bf16"),
                         b["bt"], b["cu"], b["sk"], 1 / np.sqrt(32))
        assert np.abs(decode(good, "bf16") - want).max() < 2e-2
        with pytest.raises(ValueError, match=r"sequence 1 has 8 query tokens "
                                             r"\(cu_seqlens_q\[1\.\.2\]\) but seqused_k\[1\] is 2"):
            run(b["cu"], [30, 2])
        with pytest.raises(ValueError, match=r"seqused_k\[0\] is -1: sequence 0"):
            run(b["cu"], [-1, 8])
        with pytest.raises(ValueError, match="cu_seqlens_q: decreases at sequence 1"):
            run([0, 11, 10], b["sk"])
        with pytest.raises(ValueError, match=r"cu_seqlens_q\[0\] is 1"):
            run([1, 2, 10], b["sk"])


def _engine_caches(rng, b, layout, np_or_torch):
    """The batch's contiguous K/V caches re-laid in an engine's layout (the
    unused elements NaN, so a read off the strides shows), and the views
    forward gets of them."""
    k, v = b["k"], b["v"]
    blocks, page, h, d = k.shape
    dv = v.shape[3]
    nan = np.uint16(0x7FC0)
    if layout == "combined":
        cache = np.full((blocks, page, h, d + dv), nan, dtype=np.uint16)
        cache[..., :d], cache[..., d:] = k, v
        cache = np_or_torch(cache)
        return cache[..., :d], cache[..., d:]
    if layout == "vllm":
        cache = np.stack([k, v])
    elif layout == "nhd":
        cache = np.stack([k, v], axis=1)
    else:  # hnd: [blocks, 2, H, page, D]
        cache = np.stack([k.swapaxes(1, 2), v.swapaxes(1, 2)], axis=1)
    return attnreg.kv_views(np_or_torch(np.ascontiguousarray(cache)), layout)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("layout", ["vllm", "nhd", "hnd", "combined"])
def test_engine_kv_layouts_in_place(reg, kind, layout):
    """vLLM's [2, blocks, page, H, D], FlashInfer's NHD and HND and
    a combined K/V tensor are taken as strided views (no copy) and give the
    bits of the contiguous caches; against the float64 reference too."""
    if kind == "torch":
        torch = pytest.importorskip("torch")

        def np_or_torch(a):
            return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)
    else:
        def np_or_torch(a):
            return a
    rng = np.random.default_rng(31)
    dv = 16 if layout == "combined" else 32
    shape = attnreg.Shape(q_heads=8, kv_heads=2, head_dim=32, head_dim_v=dv, max_q_len=4,
                          max_kv_len=90)
    b = paged_batch(rng, [4, 1, 3], [90, 41, 3], 8, 2, 32, dv, 16, "bf16", "bf16", False)
    with reg.create(reg.select(shape)) as be:
        want = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        k, v = _engine_caches(rng, b, layout, np_or_torch)
        if layout != "vllm":
            assert not attnreg._arrays.View("k", k).contiguous()
        args = [np_or_torch(b["q"]), k, v] + [
            (torch.from_numpy(b[n]) if kind == "torch" else b[n]) for n in ("bt", "cu", "sk")]
        got = be.forward(*args)
        if kind == "torch":
            got = got.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got, want), layout
    ref = attention(decode(b["q"], "bf16"), decode(b["k"], "bf16"), decode(b["v"], "bf16"),
                    b["bt"], b["cu"], b["sk"], 1 / np.sqrt(32))
    assert np.abs(decode(got, "bf16") - ref).max() < 2e-2


def test_kv_views_shapes():
    cache = np.zeros((2, 5, 16, 4, 8), dtype=np.uint16)
    k, v = attnreg.kv_views(cache, "vllm")
    assert k.shape == (5, 16, 4, 8) and np.shares_memory(k, cache)
    k, v = attnreg.kv_views(np.zeros((5, 2, 4, 16, 8), dtype=np.uint16), "hnd")
    assert k.shape == (5, 16, 4, 8) and k.strides[1:3] == (16, 16 * 8 * 2)
    with pytest.raises(ValueError, match=r"a nhd cache is \[blocks, 2, page, H, D\]"):
        attnreg.kv_views(cache, "nhd")
    with pytest.raises(ValueError, match="not one of vllm, nhd, hnd"):
        attnreg.kv_views(cache, "paged")


def test_lse_against_reference_and_split_then_merge(reg):
    """Shape(lse=True) returns the float32 log-sum-exp (here into a
    vLLM-style [Hq, T] buffer, transposed) against the float64 reference, with
    sinks; and cascade attention: a non-causal prefix of whole pages and the
    causal rest, merged by merge_states, equal attention over all keys."""
    rng = np.random.default_rng(41)
    q_lens, kv_lens, page = [3, 1, 5], [70, 33, 48], 16
    kw = dict(q_heads=4, kv_heads=2, head_dim=32, q_dtype="f32", max_q_len=5, max_kv_len=70)
    b = paged_batch(rng, q_lens, kv_lens, 4, 2, 32, 32, page, "f32", "f32", True)
    scale = 1 / np.sqrt(32)
    with reg.create(reg.select(attnreg.Shape(sinks=True, lse=True, **kw))) as be:
        hq_major = np.empty((4, int(b["cu"][-1])), dtype=np.float32)
        out, lse = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"], sinks=b["sinks"],
                              lse=hq_major.T)
        assert lse.base is hq_major
    want, want_lse = attention(b["q"].astype(np.float64), b["k"].astype(np.float64),
                               b["v"].astype(np.float64), b["bt"], b["cu"], b["sk"], scale,
                               sinks=b["sinks"].astype(np.float64), return_lse=True)
    assert np.abs(out - want).max() < 1e-5
    assert np.abs(lse - want_lse).max() < 1e-4

    with reg.create(reg.select(attnreg.Shape(lse=True, **kw))) as whole_be:
        whole, whole_lse = whole_be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
    cut = [(k - q) // page * page for q, k in zip(q_lens, kv_lens)]
    cut[1] = 0  # an empty prefix: lse -inf, contributes nothing
    with reg.create(reg.select(attnreg.Shape(lse=True, causal=False, **kw))) as prefix_be:
        pre, pre_lse = prefix_be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"],
                                         np.array(cut, dtype=np.int32))
    assert np.isneginf(pre_lse[3]).all()  # sequence 1's token
    bt_suffix = np.zeros_like(b["bt"])
    for i, c in enumerate(cut):
        rest = b["bt"][i, c // page:]
        bt_suffix[i, :len(rest)] = rest
    with reg.create(reg.select(attnreg.Shape(lse=True, **kw))) as suffix_be:
        suf, suf_lse = suffix_be.forward(b["q"], b["k"], b["v"], bt_suffix, b["cu"],
                                         np.array([k - c for k, c in zip(kv_lens, cut)],
                                                  dtype=np.int32))
    merged, merged_lse = attnreg.merge_states(pre, pre_lse, suf, suf_lse)
    assert np.abs(merged - whole).max() < 1e-5
    assert np.abs(merged_lse - whole_lse).max() < 1e-4
    # the same merge by the backend, in its memory space (host memory for
    # cpu-ref): Backend.merge_states, and merge_states(backend=) routing there
    with reg.create(reg.select(attnreg.Shape(lse=True, **kw))) as merger:
        on_be, on_be_lse = merger.merge_states(pre, pre_lse, suf, suf_lse)
        assert np.array_equal(on_be, merged) and np.array_equal(on_be_lse, merged_lse)
        routed, routed_lse = attnreg.merge_states(pre, pre_lse, suf, suf_lse, backend=merger)
        assert np.array_equal(routed, merged) and np.array_equal(routed_lse, merged_lse)
    # in place over one side, as cascade attention does
    attnreg.merge_states(pre, pre_lse, suf, suf_lse, out=suf, lse_out=suf_lse)
    assert np.array_equal(suf, merged)


def test_merge_states_checks(reg):
    a = np.zeros((2, 3, 4), np.float32)
    lse = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="b: expected shape"):
        attnreg.merge_states(a, lse, np.zeros((2, 3, 5), np.float32), lse)
    with pytest.raises(ValueError, match="lse_a: expected dtype float32"):
        attnreg.merge_states(a, lse.astype(np.float64), a, lse)
    with pytest.raises(ValueError, match="must share strides"):
        attnreg.merge_states(a, lse, np.zeros((3, 2, 4), np.float32).transpose(1, 0, 2), lse)
    with pytest.raises(ValueError, match="lse: given, but the backend's shape does not ask"):
        shape = attnreg.Shape(q_heads=2, head_dim=16, q_dtype="f32", max_kv_len=16)
        with reg.create(reg.select(shape)) as be:
            be.forward(np.zeros((1, 2, 16), np.float32), np.zeros((1, 16, 2, 16), np.float32),
                       np.zeros((1, 16, 2, 16), np.float32), np.zeros((1, 1), np.int32),
                       np.array([0, 1], np.int32), np.array([16], np.int32),
                       lse=np.zeros((1, 2), np.float32))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_backend_merge_states_split_key_range(reg, dtype):
    """Backend.merge_states on cpu-ref: attention over keys [0, k1) and
    [k1, K) of random data (both non-causal, forward with the LSE), merged by
    the backend, equals attention over [0, K); strided state views (rows of a
    wider buffer) are merged where they lie."""
    rng = np.random.default_rng(7 + len(dtype))
    q_lens, kv_lens, page = [2, 3], [40, 57], 16
    kw = dict(q_heads=4, kv_heads=2, head_dim=16, q_dtype=dtype, max_q_len=3, max_kv_len=64,
              causal=False)
    b = paged_batch(rng, q_lens, kv_lens, 4, 2, 16, 16, page, dtype, dtype, False)
    with reg.create(reg.select(attnreg.Shape(lse=True, **kw))) as be:
        whole, whole_lse = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        k1 = [16, 32]  # whole pages: the second part's block table starts there
        bt2 = np.zeros_like(b["bt"])
        for i, c in enumerate(k1):
            rest = b["bt"][i, c // page:]
            bt2[i, :len(rest)] = rest
        rest_k = np.array([k - c for k, c in zip(kv_lens, k1)], np.int32)
        T = int(b["cu"][-1])
        np_dtype = whole.dtype
        # each part's output as rows inside a wider buffer (strided views)
        wide1, wide2 = (np.zeros((T, 4, 16 + 4), dtype=np_dtype) for _ in range(2))
        first = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], np.array(k1, np.int32),
                           out=wide1[:, :, 2:18])
        second = be.forward(b["q"], b["k"], b["v"], bt2, b["cu"], rest_k, out=wide2[:, :, 2:18])
        host, host_lse = attnreg.merge_states(first[0], first[1], second[0], second[1],
                                              out=np.zeros_like(wide1)[:, :, 2:18])
        # in place over the second part, where it lies
        merged, merged_lse = be.merge_states(first[0], first[1], second[0], second[1],
                                             out=second[0], lse_out=second[1])
        assert merged.base is wide2 and merged_lse is second[1]
    assert np.array_equal(merged, host) and np.array_equal(merged_lse, host_lse)
    dec = (lambda x: decode(x, "bf16")) if dtype == "bf16" else (lambda x: x.astype(np.float64))
    tol = {"f32": 1e-5, "f16": 2e-3, "bf16": 2e-2}[dtype]
    assert np.abs(dec(merged) - dec(whole)).max() < tol
    assert np.abs(merged_lse - whole_lse).max() < 1e-4


def test_backend_merge_states_checks(reg):
    a = np.zeros((2, 3, 4), np.float32)
    lse = np.zeros((2, 3), np.float32)
    shape = attnreg.Shape(q_heads=2, head_dim=16, q_dtype="f32", max_kv_len=16)
    with reg.create(reg.select(shape)) as be:
        with pytest.raises(ValueError, match="b: expected shape"):
            be.merge_states(a, lse, np.zeros((2, 3, 5), np.float32), lse)
        with pytest.raises(ValueError, match="must share strides"):
            be.merge_states(a, lse, np.zeros((3, 2, 4), np.float32).transpose(1, 0, 2), lse)
        with pytest.raises(ValueError, match="lse_out: expected shape"):
            be.merge_states(a, lse, a, lse, lse_out=np.zeros((3, 2), np.float32))
        out, out_lse = be.merge_states(a, lse, a, lse)
        assert not out.any() and np.allclose(out_lse, np.log(2.0))  # two sides at lse 0
    with pytest.raises(attnreg.Error, match="closed"):
        be.merge_states(a, lse, a, lse)


def test_lse_shape_flag_in_selection(reg):
    """return_lse is part of the shape selection sees: the aiter plugins
    write the log-sum-exp (their reduce kernel), so they accept it like any
    other shape; cpu-ref writes it on the host."""
    ex = reg.explain(attnreg.Shape(arch="gfx950", q_heads=32, kv_heads=8, lse=True))
    assert "lse=1" in ex["shape"] if isinstance(ex.get("shape"), str) else True
    generic = [v for p in ex["passes"] for v in p["verdicts"] if v["backend"] == "aiter-generic"]
    assert generic[0]["reason"] == "NONE", generic[0]
    assert reg.select(attnreg.Shape(lse=True)).backend == "cpu-ref"


@pytest.mark.parametrize("kv_dtype", ["f32", "f16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"])
def test_append_kv_round_trip(reg, kv_dtype):
    """Backend.append_kv writes new tokens' K/V at their slots
    (int64, -1 = padding) in the cache dtype: f16/bf16 rounded to nearest,
    FP8 the nearest code to x / scale (the reference's own table); then
    forward over the appended cache matches the float64 reference."""
    rng = np.random.default_rng(7)
    hkv, d, page, blocks = 2, 16, 4, 6
    shape = attnreg.Shape(q_heads=4, kv_heads=hkv, head_dim=d, q_dtype="f32", kv_dtype=kv_dtype,
                          page_size=page, max_q_len=5, max_kv_len=12)
    k_new = rng.uniform(-3, 3, (6, hkv, d)).astype(np.float32)
    v_new = rng.uniform(-3, 3, (6, hkv, d)).astype(np.float32)
    slots = np.array([9, 10, -1, 11, 12, 2], dtype=np.int64)
    np_dtype = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}.get(kv_dtype, np.uint8)
    k_cache = np.zeros((blocks, page, hkv, d), np_dtype)
    v_cache = np.zeros((blocks, page, hkv, d), np_dtype)
    with reg.create(reg.select(shape)) as be:
        be.append_kv(k_new, v_new, k_cache, v_cache, slots, k_scale=0.5, v_scale=0.25)
        for x, cache, scale in ((k_new, k_cache, 0.5), (v_new, v_cache, 0.25)):
            flat = decode(cache, kv_dtype).reshape(-1, hkv, d)
            for t, slot in enumerate(slots):
                if slot < 0:
                    continue
                if kv_dtype.startswith("fp8"):
                    table = FP8_VALUES[kv_dtype]
                    want = x[t] / scale
                    best = np.nanmin(np.abs(table[None, :] - want.reshape(-1, 1)), axis=1)
                    assert np.all(np.abs(flat[slot].reshape(-1) - want.reshape(-1)) <= best + 1e-12)
                else:
                    tol = {"f32": 0, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}[kv_dtype]
                    assert np.all(np.abs(flat[slot] - x[t]) <= tol * np.abs(x[t]))
        assert not decode(k_cache, kv_dtype).reshape(-1, hkv, d)[[0, 1, 3]].any()
        # a 5-token prefill over keys at slots 9..12 and 2 (blocks 2, 3, 0)
        q = rng.uniform(-1, 1, (4, 4, d)).astype(np.float32)
        bt = np.array([[2, 3, 0]], np.int32)
        cu, sk = np.array([0, 4], np.int32), np.array([9], np.int32)
        got = be.forward(q, k_cache, v_cache, bt, cu, sk, k_descale=0.5, v_descale=0.25)
    kd = decode(k_cache, kv_dtype) * (0.5 if kv_dtype.startswith("fp8") else 1)
    vd = decode(v_cache, kv_dtype) * (0.25 if kv_dtype.startswith("fp8") else 1)
    want = attention(q.astype(np.float64), kd, vd, bt, cu, sk, 1 / np.sqrt(d))
    assert np.abs(got - want).max() < 1e-4


def test_append_kv_checks(reg):
    shape = attnreg.Shape(q_heads=2, head_dim=16, q_dtype="f32", page_size=4, max_kv_len=8)
    cache = np.zeros((2, 4, 2, 16), np.float32)
    rows = np.zeros((3, 2, 16), np.float32)
    with reg.create(reg.select(shape)) as be:
        with pytest.raises(ValueError, match="slot_mapping: expected dtype int64"):
            be.append_kv(rows, rows, cache, cache, np.zeros(3, np.int32))
        with pytest.raises(attnreg.Error, match=r"slot_mapping\[1\] = 8 is past the cache"):
            be.append_kv(rows, rows, cache, cache, np.array([0, 8, 1], np.int64))


def test_prepared_batch_per_layer(reg):
    """Backend.prepare() checks a batch's metadata once; each
    layer's PreparedBatch.forward gives forward()'s bits, a call with another
    layout is checked in full again, and a closed backend refuses it."""
    rng = np.random.default_rng(5)
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=32, q_dtype="f32", max_q_len=3,
                          max_kv_len=64)
    layers = [paged_batch(rng, [3, 1], [40, 64], 4, 2, 32, 32, 16, "f32", "f32", False)
              for _ in range(3)]
    b0 = layers[0]
    be = reg.create(reg.select(shape))
    pb = be.prepare(b0["bt"], b0["cu"], b0["sk"])
    for b in layers:  # one step, three layers: own q and caches, shared metadata
        want = be.forward(b["q"], b["k"], b["v"], b0["bt"], b0["cu"], b0["sk"])
        assert np.array_equal(pb.forward(b["q"], b["k"], b["v"]), want)
    out = np.empty_like(want)
    assert pb.forward(b["q"], b["k"], b["v"], out) is out and np.array_equal(out, want)
    # another layout: a strided q view is checked again, and still right
    fused = np.zeros((4, 6, 32), np.float32)
    fused[:, 1:5] = b["q"]
    assert np.array_equal(pb.forward(fused[:, 1:5], b["k"], b["v"]), want)
    with pytest.raises(ValueError, match="q: expected shape"):
        pb.forward(b["q"][:, :2], b["k"], b["v"])
    be.close()
    with pytest.raises(attnreg.Error):
        pb.forward(b["q"], b["k"], b["v"])
