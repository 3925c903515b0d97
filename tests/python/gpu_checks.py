# SPDX-License-Identifier: Apache-2.0
"""The GPU checks of the Python package, as plain functions so that they run
with pytest (test_gpu.py) or without it (`python3 gpu_checks.py`, for a GPU
machine that has torch but no pytest): CUDA tensors through aiter-generic and
aiter-mtp-gfx950 against torch SDPA on the same data, and forward captured in
a torch.cuda.CUDAGraph and replayed on new data, and merge_states of device
tensors through the backend."""
import math
import os
import sys
import time

import torch

import attnreg

PAGE = 16


def arch():
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def conf_kwargs():
    """ATTNREG_TEST_CONF: the only conf folder (conf-sm90 on NVIDIA)."""
    conf = os.environ.get("ATTNREG_TEST_CONF")
    return dict(conf_paths=[conf], default_conf=False, use_env=False) if conf else {}


def batch(hq, hkv, d, q_len, kv_lens, kv_dtype, descales, gen):
    nb = [(k + PAGE - 1) // PAGE for k in kv_lens]
    total = sum(nb) + 5
    perm = torch.randperm(total, generator=gen).to(torch.int32)
    bt = torch.zeros(len(kv_lens), max(nb), dtype=torch.int32)
    at = 0
    for s, n in enumerate(nb):
        bt[s, :n] = perm[at:at + n]
        at += n
    kd, vd = descales
    if kv_dtype == "fp8_e4m3fn":
        k = (torch.randn(total, PAGE, hkv, d, generator=gen) / kd).to(torch.float8_e4m3fn)
        v = (torch.randn(total, PAGE, hkv, d, generator=gen) / vd).to(torch.float8_e4m3fn)
    else:
        k = torch.randn(total, PAGE, hkv, d, generator=gen).to(torch.bfloat16)
        v = torch.randn(total, PAGE, hkv, d, generator=gen).to(torch.bfloat16)
    T = q_len * len(kv_lens)
    q = torch.randn(T, hq, d, generator=gen).to(torch.bfloat16)
    cu = torch.arange(len(kv_lens) + 1, dtype=torch.int32) * q_len
    sk = torch.tensor(kv_lens, dtype=torch.int32)
    dev = "cuda"
    return [t.to(dev) for t in (q, k, v, bt, cu, sk)]


def gather(cache, idx):
    """cache[idx] as float32 (fp8 gathered through its bytes: indexing fp8 tensors
    is not implemented on every torch)."""
    if cache.dtype == torch.bfloat16:
        return cache[idx].float()
    return cache.view(torch.uint8)[idx].view(cache.dtype).float()


def sdpa_reference(q, k, v, bt, q_len, kv_lens, descales):
    """Per sequence: gather pages, dequantise, SDPA with a lower-right causal mask."""
    outs = []
    hq, d = q.shape[1], q.shape[2]
    kd, vd = descales
    for s, kl in enumerate(kv_lens):
        idx = bt[s, :(kl + PAGE - 1) // PAGE].long()
        K = gather(k, idx).reshape(-1, k.shape[2], d)[:kl] * (kd if k.dtype != torch.bfloat16 else 1)
        V = gather(v, idx).reshape(-1, v.shape[2], d)[:kl] * (vd if v.dtype != torch.bfloat16 else 1)
        g = hq // K.shape[1]
        K, V = K.repeat_interleave(g, 1), V.repeat_interleave(g, 1)
        qs = q[s * q_len:(s + 1) * q_len].float()
        mask = (torch.arange(kl, device=q.device)[None, :] <=
                (kl - q_len + torch.arange(q_len, device=q.device))[:, None])
        o = torch.nn.functional.scaled_dot_product_attention(
            qs.transpose(0, 1), K.transpose(0, 1), V.transpose(0, 1), attn_mask=mask,
            scale=1 / math.sqrt(d))
        outs.append(o.transpose(0, 1))
    return torch.cat(outs)


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


CASES = [  # backend, hq, hkv, d, q_len, kv_lens, kv_dtype, descales
    ("aiter-generic", 32, 8, 128, 1, [1000, 77, 4096, 16], "bf16", (1.0, 1.0)),
    ("aiter-generic", 32, 8, 128, 64, [64, 700], "bf16", (1.0, 1.0)),
    ("aiter-generic", 8, 1, 256, 4, [300, 2049], "fp8_e4m3fn", (0.5, 0.25)),
    ("aiter-mtp-gfx950", 16, 1, 256, 4, [1024, 33, 4096], "fp8_e4m3fn", (0.5, 0.25)),
    ("aiter-mtp-gfx950", 16, 1, 256, 2, [4096, 100], "fp8_e4m3fn", (1.0, 1.0)),
]


def _forced(name):
    return attnreg.Registry(**conf_kwargs(), backend=name)


def check_cuda_tensors_vs_sdpa(case):
    """One case of CASES: returns the rel-L2 error; raises AssertionError."""
    name, hq, hkv, d, q_len, kv_lens, kv_dtype, descales = case
    gen = torch.Generator().manual_seed(hq * 131 + q_len)
    q, k, v, bt, cu, sk = batch(hq, hkv, d, q_len, kv_lens, kv_dtype, descales, gen)
    shape = attnreg.Shape(arch=arch(), q_heads=hq, kv_heads=hkv, head_dim=d, kv_dtype=kv_dtype,
                          compute_dtype="bf16", max_q_len=q_len, max_kv_len=max(kv_lens))
    with _forced(name) as forced:
        sel = forced.select(shape)
        assert sel.backend == name, sel
        with forced.create(sel) as be:
            out = torch.full((q.shape[0], hq, d), float("nan"), dtype=torch.bfloat16,
                             device="cuda")
            ret = be.forward(q, k, v, bt, cu, sk, out=out, k_descale=descales[0],
                             v_descale=descales[1])
            torch.cuda.synchronize()
    assert ret is out
    assert not torch.isnan(out).any(), "NaN in the output (an element never written?)"
    err = rel_l2(out.float(), sdpa_reference(q, k, v, bt, q_len, kv_lens, descales))
    assert err <= 2e-2, f"rel-L2 {err:.2e}"
    return err


def check_forward_in_a_cuda_graph(name):
    """Capture one forward in a CUDAGraph, change q in place, replay, compare."""
    hq, hkv, d, q_len = (32, 8, 128, 1) if name == "aiter-generic" else (16, 1, 256, 3)
    kv_dtype = "bf16" if name == "aiter-generic" else "fp8_e4m3fn"
    kv_lens = [500, 1500, 64]
    gen = torch.Generator().manual_seed(7)
    q, k, v, bt, cu, sk = batch(hq, hkv, d, q_len, kv_lens, kv_dtype, (1.0, 1.0), gen)
    shape = attnreg.Shape(arch=arch(), q_heads=hq, kv_heads=hkv, head_dim=d, kv_dtype=kv_dtype,
                          compute_dtype="bf16", max_q_len=q_len, max_kv_len=2048)
    with _forced(name) as forced:
        with forced.create(forced.select(shape)) as be:
            out = torch.empty((q.shape[0], hq, d), dtype=torch.bfloat16, device="cuda")
            assert be.reserve_workspace(len(kv_lens), q.shape[0]) >= 0
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):  # warm-up: allocates and caches the workspace
                be.forward(q, k, v, bt, cu, sk, out=out)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                be.forward(q, k, v, bt, cu, sk, out=out)
            q.copy_(torch.randn(q.shape, generator=gen).to(torch.bfloat16))  # new data
            out.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            err = rel_l2(out.float(), sdpa_reference(q, k, v, bt, q_len, kv_lens, (1.0, 1.0)))
            assert err <= 2e-2, f"replay rel-L2 {err:.2e}"
            del g
            try:  # host memory for a GPU backend is refused before any call
                be.forward(q.cpu(), k, v, bt, cu, sk)
            except ValueError as e:
                assert "q: on cpu" in str(e), e
            else:
                raise AssertionError("a CPU q was accepted by a GPU backend")
    return err


def check_compiled_step_in_a_cuda_graph():
    """A layer step through attnreg.torch_ops (KV append, through the op when
    the backend has one, else an index_put in torch; attention through a
    PreparedBatch over static metadata) under torch.compile(fullgraph=True),
    captured in a CUDAGraph, replayed on new data: equal to the eager step,
    and the new K rows are in the cache. Returns the replay's rel-L2 against
    SDPA."""
    from attnreg import torch_ops
    hq, hkv, d = 32, 8, 128
    kv_lens = [100, 37, 200]
    gen = torch.Generator().manual_seed(3)
    q, k, v, bt, cu, sk = batch(hq, hkv, d, 1, kv_lens, "bf16", (1.0, 1.0), gen)
    shape = attnreg.Shape(arch=arch(), q_heads=hq, kv_heads=hkv, head_dim=d, max_q_len=1,
                          max_kv_len=256)
    bt_host = bt.cpu()
    # each sequence's newest token (position kv_len - 1) is the one appended
    slots = torch.tensor([int(bt_host[s, (n - 1) // PAGE]) * PAGE + (n - 1) % PAGE
                          for s, n in enumerate(kv_lens)], dtype=torch.int64, device="cuda")
    with attnreg.Registry(**conf_kwargs()) as reg, reg.create(reg.select(shape)) as be:
        be.reserve_workspace(len(kv_lens), q.shape[0])
        pb = be.prepare(bt, cu, sk)
        torch_ops.register(be)
        torch_ops.register(pb)
        try:  # a zero-token append says whether the backend has the op
            be.append_kv(k.new_empty((0, hkv, d)), v.new_empty((0, hkv, d)), k, v,
                         slots[:0])
            has_append = True
        except attnreg.UnsupportedError:
            has_append = False

        def step(x, k_new, v_new, slot_mapping):
            if has_append:
                torch_ops.append_kv(be, k_new, v_new, k, v, slot_mapping)
            else:
                k.view(-1, hkv, d)[slot_mapping] = k_new
                v.view(-1, hkv, d)[slot_mapping] = v_new
            return torch_ops.forward(pb, (x * 1.0).to(torch.bfloat16), k, v) * 2

        compiled = torch.compile(step, fullgraph=True)
        xs = torch.randn(q.shape, generator=gen).cuda()
        kn = torch.randn(len(kv_lens), hkv, d, generator=gen).to("cuda", torch.bfloat16)
        vn = torch.randn(len(kv_lens), hkv, d, generator=gen).to("cuda", torch.bfloat16)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up: compiles, first (checked) prepared call
            for _ in range(2):
                compiled(xs, kn, vn, slots)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = compiled(xs, kn, vn, slots)
        xs.copy_(torch.randn(q.shape, generator=gen))  # new data
        kn.copy_(torch.randn(kn.shape, generator=gen))
        vn.copy_(torch.randn(vn.shape, generator=gen))
        y.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        got = y.clone()
        assert torch.equal(k.view(-1, hkv, d)[slots], kn), "the new K rows are not in the cache"
        want = step(xs, kn, vn, slots)  # eager, same data (the writes are idempotent)
        torch.cuda.synchronize()
        assert not torch.isnan(got).any(), "NaN after replay"
        diff = float((got.float() - want.float()).abs().max())
        assert diff <= 1e-2, f"replayed compiled step differs from eager by {diff}"
        err = rel_l2(got.float() / 2, sdpa_reference(xs.to(torch.bfloat16), k, v, bt, 1,
                                                     kv_lens, (1.0, 1.0)))
        assert err <= 2e-2, f"replay rel-L2 {err:.2e}"
        del g
    return err


def check_numpy_refused():
    import numpy as np
    shape = attnreg.Shape(arch=arch(), q_heads=32, kv_heads=8, head_dim=128, max_kv_len=64)
    with attnreg.Registry(**conf_kwargs()) as reg:
        with reg.create(reg.select(shape)) as be:
            q = np.zeros((1, 32, 128), np.uint16)
            kv = np.zeros((4, 16, 8, 128), np.uint16)
            try:
                be.forward(q, kv, kv, np.zeros((1, 4), np.int32), np.array([0, 1], np.int32),
                           np.array([64], np.int32))
            except ValueError as e:
                return str(e)
    raise AssertionError("NumPy arrays were accepted by a GPU backend")


def check_merge_states_on_device():
    """Device tensors: the module-level merge_states (host memory) refuses
    them and names Backend.merge_states; the GPU backend merges them on its
    device, against the CPU merge of the same data."""
    shape = attnreg.Shape(arch=arch(), q_heads=8, kv_heads=8, head_dim=128, max_kv_len=64)
    gen = torch.Generator().manual_seed(5)
    T, H, D = 7, 8, 128
    a, b = (torch.randn(T, H, D, generator=gen).to(torch.bfloat16) for _ in range(2))
    la, lb = (torch.randn(T, H, generator=gen) for _ in range(2))
    want, want_lse = attnreg.merge_states(a, la, b, lb)  # CPU torch tensors: the host merge
    dev = [x.cuda() for x in (a, la, b, lb)]
    try:
        attnreg.merge_states(*dev)
    except ValueError as e:
        assert "Backend.merge_states" in str(e), e
    else:
        raise AssertionError("attnreg.merge_states took CUDA tensors")
    with attnreg.Registry(**conf_kwargs()) as reg:
        with reg.create(reg.select(shape)) as be:
            out, lse = be.merge_states(*dev)
            torch.cuda.synchronize()
            routed, _ = attnreg.merge_states(*dev, backend=be)
            torch.cuda.synchronize()
    err = (out.cpu().float() - want.float()).abs().max().item()
    assert err <= 2e-2 and (lse.cpu() - want_lse).abs().max().item() <= 1e-4, err
    assert torch.equal(routed, out)
    return err


def check_split_then_merge_on_device():
    """Cascade attention on the GPU: decode over each sequence's keys split
    at a page boundary (the second part through the block table's later
    columns), each part with its log-sum-exp, merged on the device, equals
    decode over all keys (output and LSE)."""
    hq, hkv, d = 32, 8, 128
    kv_lens = [512, 1024, 256]
    gen = torch.Generator().manual_seed(11)
    q, k, v, bt, cu, sk = batch(hq, hkv, d, 1, kv_lens, "bf16", (1.0, 1.0), gen)
    shape = attnreg.Shape(arch=arch(), q_heads=hq, kv_heads=hkv, head_dim=d, max_q_len=1,
                          max_kv_len=max(kv_lens), lse=True)
    split = 128  # keys of the first part: a multiple of the page
    with _forced("aiter-generic") as forced:
        with forced.create(forced.select(shape)) as be:
            whole, lse_w = be.forward(q, k, v, bt, cu, sk)
            a, lse_a = be.forward(q, k, v, bt, cu, torch.full_like(sk, split))
            b, lse_b = be.forward(q, k, v, bt[:, split // PAGE:], cu, sk - split)
            out, lse = be.merge_states(a, lse_a, b, lse_b)
            torch.cuda.synchronize()
    err = rel_l2(out.float(), whole.float())
    lerr = (lse - lse_w).abs().max().item()
    assert err <= 1e-2 and lerr <= 1e-3, (err, lerr)
    return err


def main():
    """Every check, without pytest; exit 1 when one fails."""
    if not torch.cuda.is_available():
        print("gpu_checks: no CUDA device visible to torch: SKIPPED")
        return 0
    checks = [(f"cuda tensors vs SDPA: {c[0]} q{c[4]} {c[6]} kv{c[5]}",
               lambda c=c: check_cuda_tensors_vs_sdpa(c)) for c in CASES]
    checks += [(f"CUDA graph capture + replay: {n}", lambda n=n: check_forward_in_a_cuda_graph(n))
               for n in ("aiter-generic", "aiter-mtp-gfx950")]
    checks.append(("NumPy arrays refused for a GPU backend", check_numpy_refused))
    checks.append(("merge_states on the device (Backend.merge_states)",
                   check_merge_states_on_device))
    checks.append(("split key range, LSE, merged on the device == whole",
                   check_split_then_merge_on_device))
    from attnreg import torch_ops
    if torch_ops.HAS_CUSTOM_OP:
        checks.append(("torch.compile(fullgraph=True) step captured in a CUDA graph",
                       check_compiled_step_in_a_cuda_graph))
    failed = 0
    for label, fn in checks:
        t0 = time.time()
        try:
            r = fn()
            shown = f"rel-L2 {r:.2e}" if isinstance(r, float) else repr(r)[:80]
            print(f"PASS {label}: {shown} ({time.time() - t0:.1f} s)", flush=True)
        except Exception as e:  # noqa: every check reported
            failed += 1
            print(f"FAIL {label}: {type(e).__name__}: {e}", flush=True)
    print(f"gpu_checks: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
