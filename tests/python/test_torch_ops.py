# SPDX-License-Identifier: Apache-2.0
"""attnreg.torch_ops: the per-layer calls as torch.library custom ops.

Without torch the module imports and its wrappers run the eager methods
(NumPy arrays); with any torch the wrappers give the eager calls' bits on
cpu-ref; with torch >= 2.4 (custom_op) opcheck passes on the three ops and
torch.compile(fullgraph=True) of a layer step calling them has no graph
break; with CUDA and the aiter-generic plugin's kernels, the toy engine
compiles with fullgraph=True and a compiled step is captured in a CUDA graph
(those live in test_torch_ops_gpu.py's checks below, skipped otherwise)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import attnreg
from test_forward_cpu import paged_batch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def torch_or_skip():
    return pytest.importorskip("torch")


def custom_op_torch_or_skip():
    torch = torch_or_skip()
    from attnreg import torch_ops
    if not torch_ops.HAS_CUSTOM_OP:
        pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op/register_fake "
                    f"(>= 2.4): the wrappers run eagerly")
    if not hasattr(torch.library, "opcheck") or not hasattr(torch, "compile"):
        pytest.skip(f"torch {torch.__version__} lacks torch.library.opcheck or torch.compile")
    return torch, torch_ops


def test_import_without_torch():
    """Importing attnreg.torch_ops with torch unimportable works; the
    wrappers then call the eager methods (here on NumPy arrays)."""
    code = r"""
import sys
sys.modules["torch"] = None   # import torch raises ImportError
import numpy as np
import attnreg, attnreg.torch_ops as t
assert not t.HAS_CUSTOM_OP and t.SCHEMAS == {}
sh = attnreg.Shape(q_heads=2, kv_heads=1, head_dim=16, q_dtype="f32", page_size=4, max_q_len=2,
                   max_kv_len=8)
with attnreg.Registry(use_env=False) as reg, reg.create(reg.select(sh)) as be:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 2, 16)).astype(np.float32)
    k = rng.standard_normal((3, 4, 1, 16)).astype(np.float32)
    bt, cu, sk = (np.array([[1, 2]], np.int32), np.array([0, 2], np.int32),
                  np.array([7], np.int32))
    want = be.forward(q, k, k, bt, cu, sk)
    assert np.array_equal(t.forward(be, q, k, k, bt, cu, sk), want)
    assert np.array_equal(t.forward(be.prepare(bt, cu, sk), q, k, k), want)
print("ok")
"""
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_attnreg_import_does_not_import_torch_ops():
    r = subprocess.run([sys.executable, "-c", "import sys, attnreg; "
                        "print('attnreg.torch_ops' in sys.modules, sys.modules.get('torch') is not None)"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["False", "False"], r.stdout + r.stderr


def _shape_and_batch(rng, lse=False, sinks=False):
    kw = dict(q_heads=4, kv_heads=2, head_dim=32, q_dtype="f32", max_q_len=3, max_kv_len=64,
              lse=lse, sinks=sinks)
    return attnreg.Shape(**kw), paged_batch(rng, [3, 1], [40, 64], 4, 2, 32, 32, 16, "f32",
                                            "f32", sinks)


def test_numpy_wrappers_equal_eager(reg):
    from attnreg import torch_ops
    rng = np.random.default_rng(3)
    shape, b = _shape_and_batch(rng)
    with reg.create(reg.select(shape)) as be:
        want = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        got = torch_ops.forward(be, b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        assert np.array_equal(got, want)
        pb = be.prepare(b["bt"], b["cu"], b["sk"])
        assert np.array_equal(torch_ops.forward(pb, b["q"], b["k"], b["v"]), want)
        with pytest.raises(TypeError, match="metadata and options from prepare"):
            torch_ops.forward(pb, b["q"], b["k"], b["v"], b["bt"])
        with pytest.raises(TypeError, match="needs block_table"):
            torch_ops.forward(be, b["q"], b["k"], b["v"])


def _torch_batch(torch, b):
    return {k: (torch.from_numpy(np.ascontiguousarray(v)) if v is not None else None)
            for k, v in b.items()}


@pytest.fixture(params=[False, True], ids=["direct", "dispatcher"])
def dispatch_eager(request):
    """torch_ops.DISPATCH_EAGER off (eager calls skip the dispatcher) and on
    (they go through torch.ops.attnreg; needs custom_op)."""
    from attnreg import torch_ops
    if request.param and not torch_ops.HAS_CUSTOM_OP:
        pytest.skip("no torch.library.custom_op (torch >= 2.4): no dispatcher route")
    torch_ops.DISPATCH_EAGER = request.param
    yield request.param
    torch_ops.DISPATCH_EAGER = False


@pytest.mark.parametrize("lse,sinks", [(False, False), (True, True)], ids=["plain", "lse+sinks"])
def test_torch_wrappers_equal_eager(reg, lse, sinks, dispatch_eager):
    """The wrappers on CPU torch tensors give Backend.forward's,
    PreparedBatch.forward's, append_kv's and merge_states' bits exactly
    (directly, and through torch.ops.attnreg with torch >= 2.4)."""
    torch = torch_or_skip()
    from attnreg import torch_ops
    rng = np.random.default_rng(11)
    shape, nb = _shape_and_batch(rng, lse=lse, sinks=sinks)
    t = _torch_batch(torch, nb)
    with reg.create(reg.select(shape)) as be:
        want = be.forward(t["q"], t["k"], t["v"], t["bt"], t["cu"], t["sk"], sinks=t["sinks"])
        got = torch_ops.forward(be, t["q"], t["k"], t["v"], t["bt"], t["cu"], t["sk"],
                                sinks=t["sinks"])
        pb = be.prepare(t["bt"], t["cu"], t["sk"], sinks=t["sinks"])
        got_pb = torch_ops.forward(pb, t["q"], t["k"], t["v"])
        out = torch.empty_like(want[0] if lse else want)
        got_out = torch_ops.forward(pb, t["q"], t["k"], t["v"], out=out)
        if lse:
            for g in (got, got_pb, got_out):
                assert torch.equal(g[0], want[0]) and torch.equal(g[1], want[1])
            assert got_out[0] is out
        else:
            for g in (got, got_pb, got_out):
                assert torch.equal(g, want)
            assert got_out is out
            with pytest.raises(ValueError, match="lse: given"):
                torch_ops.forward(be, t["q"], t["k"], t["v"], t["bt"], t["cu"], t["sk"],
                                  lse=torch.empty(4, 4))
        # append_kv: the same writes as the eager call
        k_new = torch.randn(3, 2, 32)
        v_new = torch.randn(3, 2, 32)
        slots = torch.tensor([5, 17, 40], dtype=torch.int64)
        kc, vc = t["k"].clone(), t["v"].clone()
        be.append_kv(k_new, v_new, kc, vc, slots)
        kc2, vc2 = t["k"].clone(), t["v"].clone()
        torch_ops.append_kv(be, k_new, v_new, kc2, vc2, slots)
        assert torch.equal(kc, kc2) and torch.equal(vc, vc2) and not torch.equal(kc, t["k"])
        torch_ops.append_kv(pb, k_new * 2, v_new, kc2, vc2, slots)  # a prepared batch's backend
        assert not torch.equal(kc, kc2)
    # merge_states
    a, b = torch.randn(4, 3, 8), torch.randn(4, 3, 8)
    la, lb = torch.randn(4, 3), torch.randn(4, 3)
    want_m, want_l = attnreg.merge_states(a, la, b, lb)
    got_m, got_l = torch_ops.merge_states(a, la, b, lb)
    assert torch.equal(got_m, want_m) and torch.equal(got_l, want_l)
    with pytest.raises(ValueError, match="must not be an input"):
        torch_ops.merge_states(a, la, b, lb, out=b)


def test_handles(reg):
    torch = torch_or_skip()
    from attnreg import torch_ops
    shape, nb = _shape_and_batch(np.random.default_rng(2))
    t = _torch_batch(torch, nb)
    be = reg.create(reg.select(shape))
    h = torch_ops.register(be)
    assert h > 0 and torch_ops.register(be) == h and torch_ops.lookup(h) is be
    pb = be.prepare(t["bt"], t["cu"], t["sk"])
    hp = torch_ops.register(pb)
    assert hp != h and torch_ops.lookup(hp) is pb
    del pb
    import gc
    gc.collect()
    with pytest.raises(attnreg.Error, match=f"handle {hp}: no live"):
        torch_ops.lookup(hp)
    torch_ops.unregister(be)
    with pytest.raises(attnreg.Error, match="no live"):
        torch_ops.lookup(h)
    with pytest.raises(TypeError):
        torch_ops.register(object())
    be.close()
    with pytest.raises(attnreg.Error, match="closed"):
        torch_ops.forward(be, t["q"], t["k"], t["v"], t["bt"], t["cu"], t["sk"])


# ---- torch >= 2.4: the ops themselves ---------------------------------------------------

def test_schemas():
    torch, torch_ops = custom_op_torch_or_skip()
    s = torch_ops.SCHEMAS
    assert set(s) == {"forward", "append_kv", "merge_states"}
    for name, mutated in (("forward", ("out", "lse")), ("append_kv", ("k_cache", "v_cache")),
                          ("merge_states", ("out", "lse_out"))):
        args = torch.ops.attnreg.__getattr__(name).default._schema.arguments
        written = {a.name for a in args if a.alias_info is not None and a.alias_info.is_write}
        assert written == set(mutated), (name, written)
        assert s[name].endswith("-> ()")


@pytest.mark.parametrize("lse,sinks", [(False, False), (True, True)], ids=["plain", "lse+sinks"])
def test_opcheck(reg, lse, sinks):
    """torch.library.opcheck (schema, fake tensor, autograd registration,
    AOT dispatch) on each op with CPU tensors on cpu-ref."""
    torch, torch_ops = custom_op_torch_or_skip()
    shape, nb = _shape_and_batch(np.random.default_rng(5), lse=lse, sinks=sinks)
    t = _torch_batch(torch, nb)
    T = t["q"].shape[0]
    with reg.create(reg.select(shape)) as be:
        pb = be.prepare(t["bt"], t["cu"], t["sk"], sinks=t["sinks"])
        for obj in (be, pb):
            out = torch.empty(T, 4, 32)
            lse_t = torch.empty(T, 4) if lse else None
            args = (torch_ops.register(obj), t["q"], t["k"], t["v"], t["bt"], t["cu"], t["sk"],
                    out, lse_t, t["sinks"], None, 1.0, 1.0, 1.0,
                    None, None)
            torch.library.opcheck(torch.ops.attnreg.forward.default, args)
        slots = torch.tensor([5, 17, 40], dtype=torch.int64)
        torch.library.opcheck(torch.ops.attnreg.append_kv.default,
                              (torch_ops.register(be), torch.randn(3, 2, 32),
                               torch.randn(3, 2, 32), t["k"].clone(), t["v"].clone(), slots,
                               1.0, 1.0))
    a, b = torch.randn(4, 3, 8), torch.randn(4, 3, 8)
    la, lb = torch.randn(4, 3), torch.randn(4, 3)
    torch.library.opcheck(torch.ops.attnreg.merge_states.default,
                          (a, la, b, lb, torch.empty(4, 3, 8), torch.empty(4, 3)))


@pytest.mark.parametrize("compiler", ["aot_eager", "inductor"])
def test_compile_fullgraph_cpu(reg, compiler):
    """A layer step (KV append, attention through a Backend and through a
    PreparedBatch, a merge, torch around them) under
    torch.compile(fullgraph=True): no graph break (fullgraph raises on one;
    dynamo's explain counts none), results equal to eager."""
    torch, torch_ops = custom_op_torch_or_skip()
    shape, nb = _shape_and_batch(np.random.default_rng(9), lse=True)
    t = _torch_batch(torch, nb)
    with reg.create(reg.select(shape)) as be:
        pb = be.prepare(t["bt"], t["cu"], t["sk"])
        torch_ops.register(be)
        torch_ops.register(pb)
        caches = [t["k"].clone(), t["v"].clone()]

        def step(x, k_new, v_new, slots, bt, cu, sk):
            kc, vc = caches
            torch_ops.append_kv(be, k_new * 1.0, v_new, kc, vc, slots)
            q = x * 0.5
            o1, l1 = torch_ops.forward(be, q, kc, vc, bt, cu, sk)
            o2, l2 = torch_ops.forward(pb, q + 0.0, kc, vc)
            m, lm = torch_ops.merge_states(o1, l1, o2, l2)
            return o1 + 1.0, m, lm

        k_new, v_new = torch.randn(3, 2, 32), torch.randn(3, 2, 32)
        slots = torch.tensor([5, 17, 40], dtype=torch.int64)
        inputs = (t["q"] * 2, k_new, v_new, slots, t["bt"], t["cu"], t["sk"])
        want = step(*inputs)
        want_caches = [c.clone() for c in caches]
        caches[:] = [t["k"].clone(), t["v"].clone()]
        torch._dynamo.reset()
        if hasattr(torch._dynamo, "explain"):
            explained = torch._dynamo.explain(step)(*inputs)
            assert explained.graph_break_count == 0, explained.break_reasons
            caches[:] = [t["k"].clone(), t["v"].clone()]
            torch._dynamo.reset()
        compiled = torch.compile(step, fullgraph=True, backend=compiler)
        got = compiled(*inputs)
        for g, w in zip(got, want):
            assert torch.equal(g, w)
        for c, w in zip(caches, want_caches):
            assert torch.equal(c, w)  # the cache writes reached the caller's tensors
        got2 = compiled(*inputs)  # again: same graph, same bits
        assert torch.equal(got2[0], want[0])


def test_compile_unregistered_is_a_clear_error(reg):
    torch, torch_ops = custom_op_torch_or_skip()
    shape, nb = _shape_and_batch(np.random.default_rng(4))
    t = _torch_batch(torch, nb)
    with reg.create(reg.select(shape)) as be:
        torch._dynamo.reset()
        compiled = torch.compile(lambda q: torch_ops.forward(be, q, t["k"], t["v"], t["bt"],
                                                             t["cu"], t["sk"]),
                                 fullgraph=True, backend="aot_eager")
        with pytest.raises(Exception, match="register"):
            compiled(t["q"])


# ---- CUDA + the aiter-generic plugin ---------------------------------------------------

def gpu_or_skip():
    torch, torch_ops = custom_op_torch_or_skip()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    import gpu_checks
    try:
        with attnreg.Registry(**gpu_checks.conf_kwargs()) as r:
            sh = attnreg.Shape(arch=gpu_checks.arch(), q_heads=8, kv_heads=2, head_dim=128,
                               max_q_len=1, max_kv_len=64)
            sel = r.select(sh)
            if sel.backend != "aiter-generic":
                pytest.skip(f"aiter-generic not selected for {sh} (got {sel.backend})")
            r.create(sel).close()
    except attnreg.Error as e:
        pytest.skip(f"aiter-generic cannot run here: {e}")
    return torch, torch_ops, gpu_checks


def test_gpu_toy_engine_compiled_fullgraph():
    """examples/python/toy_engine.py --compile on CUDA: every step under
    torch.compile(fullgraph=True) (a graph break would raise), checked
    against torch SDPA as the eager engine is."""
    torch, torch_ops, gpu_checks = gpu_or_skip()
    cmd = [sys.executable, os.path.join(REPO, "examples", "python", "toy_engine.py"),
           "--device", "cuda", "--compile", "--decode-steps", "8"]
    conf = os.environ.get("ATTNREG_TEST_CONF")
    if conf:
        cmd += ["--conf", conf]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "under torch.compile(fullgraph=True" in r.stdout and "0 beyond 2e-2" in r.stdout, \
        r.stdout


def test_gpu_compiled_step_in_a_cuda_graph():
    """One compiled layer step (KV append through the op or torch, attention
    through a PreparedBatch over static metadata buffers) captured in a
    torch.cuda.CUDAGraph and replayed on new data equals the eager step."""
    torch, torch_ops, gpu_checks = gpu_or_skip()
    gpu_checks.check_compiled_step_in_a_cuda_graph()
