#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""toy_engine.py — a two-layer toy transformer that runs its attention through
attnreg, as a Python inference engine would.

It keeps a paged KV cache (blocks of 16 tokens, a block table per sequence),
asks the registry once for its prefill and decode backends (shape limits are
capacities, decided before any tensor exists), runs a batch of prompts and
then --decode-steps greedy decode steps, and checks every attention call
against a reference on the same data: torch SDPA when torch is installed,
else the package's NumPy float64 reference (attnreg._reference).

    python3 examples/python/toy_engine.py                      # CPU: cpu-ref (torch or NumPy)
    python3 examples/python/toy_engine.py --device cuda \\
        --conf build/share/attnreg/conf-sm90                  # H200: the GPU backends
    python3 examples/python/toy_engine.py --compile [--device cuda ...]

--compile (torch >= 2.4) runs each step (embedding, both layers' KV append
and attention, the logits) as one torch.compile(fullgraph=True) graph: KV
append and attention go through attnreg.torch_ops' custom ops
(torch.ops.attnreg.append_kv / forward), so nothing breaks the graph; the
checks against the reference run after the step on what it returned.

Exits 0 when every step agrees with the reference (rel-L2 <= 2e-2), 1 otherwise.
"""
import argparse
import math
import sys
import time

import attnreg
from attnreg import from_bf16_bits, to_bf16_bits
from attnreg import torch_ops
from attnreg._reference import attention as reference_attention
from attnreg._reference import decode

try:
    import torch
except ImportError:  # NumPy fallback (CI has no torch)
    torch = None
import numpy as np

PAGE = 16


class Ops:
    """The handful of array operations the model needs, on torch or NumPy."""

    def __init__(self, use_torch, device):
        self.torch = use_torch
        self.device = device

    def randn(self, rng, *shape, scale=1.0):
        a = (rng.standard_normal(shape) * scale).astype(np.float32)
        return torch.from_numpy(a).to(self.device) if self.torch else a

    def zeros_cache(self, shape):
        if self.torch:
            return torch.zeros(shape, dtype=torch.bfloat16, device=self.device)
        return np.zeros(shape, dtype=np.uint16)

    def int32(self, values):
        a = np.asarray(values, dtype=np.int32)
        return torch.from_numpy(a).to(self.device) if self.torch else a

    def int64(self, values):
        a = np.asarray(values, dtype=np.int64)
        return torch.from_numpy(a).to(self.device) if self.torch else a

    def to_store(self, x):
        """float32 activations -> the cache/q storage type (bf16)."""
        return x.to(torch.bfloat16) if self.torch else to_bf16_bits(x)

    def from_store(self, x):
        return x.float() if self.torch else from_bf16_bits(x)

    def rmsnorm(self, x):
        if self.torch:
            return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)

    def silu(self, x):
        return x * torch.sigmoid(x) if self.torch else x / (1 + np.exp(-x))

    def argmax(self, x):
        return [int(v) for v in (x.argmax(-1).tolist() if self.torch else x.argmax(-1))]

    def embed(self, table, ids):
        return table[self.int32(ids).long()] if self.torch else table[np.asarray(ids)]

    def reference(self, q, k_cache, v_cache, bt_rows, q_lens, kv_lens, scale):
        """Attention on the same stored data: torch SDPA (float32 of the bf16
        values, sequence by sequence) or the package's NumPy float64
        reference (attnreg._reference)."""
        if not self.torch:
            cu = np.concatenate([[0], np.cumsum(q_lens)])
            return reference_attention(decode(q, "bf16"), decode(k_cache, "bf16"),
                                       decode(v_cache, "bf16"), np.asarray(bt_rows), cu,
                                       kv_lens, scale)
        outs = []
        t0 = 0
        for s, (ql, kl) in enumerate(zip(q_lens, kv_lens)):
            blocks = bt_rows[s][:(kl + PAGE - 1) // PAGE]
            idx = torch.tensor(blocks, device=self.device).long()
            K = k_cache[idx].reshape(-1, k_cache.shape[2], k_cache.shape[3])[:kl].float()
            V = v_cache[idx].reshape(-1, v_cache.shape[2], v_cache.shape[3])[:kl].float()
            qs = q[t0:t0 + ql].float()
            g = qs.shape[1] // K.shape[1]
            K, V = K.repeat_interleave(g, dim=1), V.repeat_interleave(g, dim=1)
            # query i sits at position kl - ql + i: a lower-right causal mask
            mask = (torch.arange(kl, device=self.device)[None, :] <=
                    (kl - ql + torch.arange(ql, device=self.device))[:, None])
            qh, kh, vh = qs.transpose(0, 1), K.transpose(0, 1), V.transpose(0, 1)
            if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
                o = torch.nn.functional.scaled_dot_product_attention(
                    qh, kh, vh, attn_mask=mask, scale=scale)
            else:  # torch < 2.0: the same math by hand
                sc = (qh @ kh.transpose(1, 2)) * scale
                o = torch.softmax(sc.masked_fill(~mask, float("-inf")), -1) @ vh
            outs.append(o.transpose(0, 1))
            t0 += ql
        return torch.cat(outs)

    def rel_l2(self, got, want):
        if self.torch:
            got, want = got.double(), want.double()
            return float((got - want).norm() / want.norm())
        got = got.astype(np.float64)
        return float(np.linalg.norm(got - want) / np.linalg.norm(want))


class ToyModel:
    def __init__(self, ops, rng, vocab, hidden, hq, hkv, d, layers, max_ctx):
        self.ops, self.hq, self.hkv, self.d = ops, hq, hkv, d
        s = 1 / math.sqrt(hidden)
        self.emb = ops.randn(rng, vocab, hidden)
        self.pos = ops.randn(rng, max_ctx, hidden)  # learned-style absolute positions
        self.unemb = ops.randn(rng, hidden, vocab, scale=s)  # untied: greedy does not echo
        self.layers = [dict(wq=ops.randn(rng, hidden, hq * d, scale=s),
                            wk=ops.randn(rng, hidden, hkv * d, scale=s),
                            wv=ops.randn(rng, hidden, hkv * d, scale=s),
                            wo=ops.randn(rng, hq * d, hidden, scale=1 / math.sqrt(hq * d)),
                            w1=ops.randn(rng, hidden, 2 * hidden, scale=s),
                            w2=ops.randn(rng, 2 * hidden, hidden, scale=s / 2))
                       for _ in range(layers)]


class Engine:
    def __init__(self, args):
        use_torch = torch is not None and not args.numpy
        if args.device == "cuda" and not use_torch:
            raise SystemExit("--device cuda needs torch")
        self.ops = ops = Ops(use_torch, args.device)
        self.args = args
        rng = np.random.default_rng(args.seed)
        hq, hkv, d = (8, 2, 64) if args.device == "cpu" else (32, 8, 128)
        self.prompts = [list(rng.integers(0, args.vocab, n)) for n in args.prompt_lens]
        self.max_ctx = max(args.prompt_lens) + args.decode_steps
        self.model = ToyModel(ops, rng, args.vocab, args.hidden, hq, hkv, d, 2, self.max_ctx)
        blocks_per_seq = (self.max_ctx + PAGE - 1) // PAGE
        nseq = len(self.prompts)
        num_blocks = nseq * blocks_per_seq + 4
        perm = rng.permutation(num_blocks)  # pages of a sequence are scattered
        self.bt_rows = [list(map(int, perm[s * blocks_per_seq:(s + 1) * blocks_per_seq]))
                        for s in range(nseq)]
        self.block_table = ops.int32(self.bt_rows)
        self.caches = [(ops.zeros_cache((num_blocks, PAGE, hkv, d)),
                        ops.zeros_cache((num_blocks, PAGE, hkv, d))) for _ in range(2)]
        arch = args.arch or ("cpu" if args.device == "cpu" else self.cuda_arch())
        conf = dict(conf_paths=[args.conf], default_conf=False, use_env=False) if args.conf \
            else {}
        self.reg = attnreg.Registry(**conf)
        base = dict(arch=arch, q_heads=hq, kv_heads=hkv, head_dim=d, page_size=PAGE,
                    max_kv_len=self.max_ctx)
        self.backends = {}
        for phase, q_len in (("prefill", max(args.prompt_lens)), ("decode", 1)):
            sel = self.reg.select(attnreg.Shape(max_q_len=q_len, **base))
            self.backends[phase] = self.reg.create(sel)
            print(f"{phase}: {sel.backend} for {sel.effective_shape}"
                  + (f" (fallback {sel.fallback_rule})" if sel.fallback_applied else ""))
        self.worst = 0.0
        self.failures = 0
        self.compiled = None
        if args.compile:
            self.setup_compile()

    def setup_compile(self):
        """torch.compile(fullgraph=True) of compiled_step, through the ops."""
        if not self.ops.torch or not torch_ops.HAS_CUSTOM_OP or not hasattr(torch, "compile"):
            raise SystemExit(f"--compile needs torch >= 2.4 with torch.compile and "
                             f"torch.library.custom_op (torch "
                             f"{getattr(torch, '__version__', 'missing')}; --numpy off)")
        self.has_append = {}
        for phase, be in self.backends.items():
            torch_ops.register(be)  # ids before tracing: they are graph constants
            k_cache, v_cache = self.caches[0]
            hkv, d = k_cache.shape[2], k_cache.shape[3]
            try:  # a zero-token append says whether the backend has one
                be.append_kv(k_cache.new_empty((0, hkv, d)), v_cache.new_empty((0, hkv, d)),
                             k_cache, v_cache, torch.zeros(0, dtype=torch.int64,
                                                           device=k_cache.device))
                self.has_append[phase] = True
            except attnreg.UnsupportedError as e:
                self.has_append[phase] = False
                print(f"note: {be.name} has no KV append ({e.message}); the compiled step "
                      f"writes the cache in torch")
        self.compiled = torch.compile(self.compiled_step, fullgraph=True,
                                      backend=self.args.compile_backend)
        self.compiled_calls = 0

    def compiled_step(self, phase, tokens, positions, slots, cu, sk, ends):
        """Engine.forward's model as one graph: the tensors in, the logits and
        each layer's (q, attention output) out, for the checks after."""
        m = self.model
        be = self.backends[phase]
        x = m.emb[tokens] + m.pos[positions]
        T = tokens.shape[0]
        per_layer = []
        for li, w in enumerate(m.layers):
            h = self.ops.rmsnorm(x)
            qs = (h @ w["wq"]).reshape(T, m.hq, m.d).to(torch.bfloat16)
            k = (h @ w["wk"]).reshape(T, m.hkv, m.d).to(torch.bfloat16)
            v = (h @ w["wv"]).reshape(T, m.hkv, m.d).to(torch.bfloat16)
            k_cache, v_cache = self.caches[li]
            if self.has_append[phase]:
                torch_ops.append_kv(be, k, v, k_cache, v_cache, slots)
            else:
                k_cache.view(-1, m.hkv, m.d)[slots] = k
                v_cache.view(-1, m.hkv, m.d)[slots] = v
            a = torch_ops.forward(be, qs, k_cache, v_cache, self.block_table, cu, sk).float()
            per_layer.append((qs, a))
            x = x + a.reshape(T, m.hq * m.d) @ w["wo"]
            x = x + self.ops.silu(self.ops.rmsnorm(x) @ w["w1"]) @ w["w2"]
        return self.ops.rmsnorm(x[ends]) @ m.unemb, per_layer

    def forward_compiled(self, phase, tokens, positions, q_lens, kv_lens, step):
        ops = self.ops
        seq_of = [s for s, n in enumerate(q_lens) for _ in range(n)]
        slots = [self.bt_rows[seq_of[t]][positions[t] // PAGE] * PAGE + positions[t] % PAGE
                 for t in range(len(tokens))]
        logits, per_layer = self.compiled(
            phase, ops.int64(tokens), ops.int64(positions), ops.int64(slots),
            ops.int32(np.concatenate([[0], np.cumsum(q_lens)])), ops.int32(kv_lens),
            ops.int64(np.cumsum(q_lens) - 1))
        self.compiled_calls += 1
        # each layer's cache is as its attention read it: the step wrote
        # nothing into it after that layer's append
        for li, (qs, got) in enumerate(per_layer):
            self.check(phase, li, step, qs, got, q_lens, kv_lens)
        return ops.argmax(logits)

    @staticmethod
    def cuda_arch():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"

    def attention(self, phase, layer, q, q_lens, kv_lens, step):
        ops = self.ops
        k_cache, v_cache = self.caches[layer]
        cu = ops.int32(np.concatenate([[0], np.cumsum(q_lens)]))
        sk = ops.int32(kv_lens)
        qs = ops.to_store(q)
        out = self.backends[phase].forward(qs, k_cache, v_cache, self.block_table, cu, sk)
        got = ops.from_store(out)
        self.check(phase, layer, step, qs, got, q_lens, kv_lens)
        return got

    def check(self, phase, layer, step, qs, got, q_lens, kv_lens):
        """One attention result against the reference on the same stored data."""
        k_cache, v_cache = self.caches[layer]
        want = self.ops.reference(qs, k_cache, v_cache, self.bt_rows, q_lens, kv_lens,
                                  1 / math.sqrt(self.model.d))
        rel = self.ops.rel_l2(got, want)
        self.worst = max(self.worst, rel)
        if not rel <= 2e-2:
            self.failures += 1
            print(f"  MISMATCH {phase} step {step} layer {layer}: rel-L2 {rel:.2e}")

    def forward(self, phase, tokens, positions, q_lens, kv_lens, step):
        """tokens: one flat list; positions: each token's position in its sequence."""
        if self.compiled is not None:
            return self.forward_compiled(phase, tokens, positions, q_lens, kv_lens, step)
        ops, m = self.ops, self.model
        x = ops.embed(m.emb, tokens) + ops.embed(m.pos, positions)
        T = len(tokens)
        seq_of = [s for s, n in enumerate(q_lens) for _ in range(n)]
        for li, w in enumerate(m.layers):
            h = ops.rmsnorm(x)
            q = (h @ w["wq"]).reshape(T, m.hq, m.d)
            k = ops.to_store((h @ w["wk"]).reshape(T, m.hkv, m.d))
            v = ops.to_store((h @ w["wv"]).reshape(T, m.hkv, m.d))
            k_cache, v_cache = self.caches[li]
            # The new tokens' K/V go into their pages through the backend's KV
            # append (vLLM's slot mapping: block * PAGE + offset).
            slots = [self.bt_rows[seq_of[t]][positions[t] // PAGE] * PAGE + positions[t] % PAGE
                     for t in range(T)]
            self.append_kv(phase, k, v, k_cache, v_cache, slots)
            a = self.attention(phase, li, q, q_lens, kv_lens, step)
            x = x + a.reshape(T, m.hq * m.d) @ w["wo"]
            x = x + ops.silu(ops.rmsnorm(x) @ w["w1"]) @ w["w2"]
        ends = np.cumsum(q_lens) - 1
        last = x[ops.int32(ends).long()] if ops.torch else x[ends]
        return ops.argmax(ops.rmsnorm(last) @ m.unemb)

    def append_kv(self, phase, k, v, k_cache, v_cache, slots):
        try:
            self.backends[phase].append_kv(k, v, k_cache, v_cache, self.ops.int64(slots))
            return
        except attnreg.UnsupportedError as e:
            # A backend without a KV append (the GPU plugins until theirs
            # lands): the same writes in torch/NumPy, said once.
            if not getattr(self, "_said_no_append", False):
                print(f"note: {self.backends[phase].name} has no KV append ({e.message}); "
                      f"writing the cache here")
                self._said_no_append = True
        for t, slot in enumerate(slots):
            k_cache[slot // PAGE, slot % PAGE] = k[t]
            v_cache[slot // PAGE, slot % PAGE] = v[t]

    def reference_name(self):
        if not self.ops.torch:
            return "a NumPy float64 reference"
        if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            return "torch SDPA"
        return "torch float32 math (this torch has no SDPA)"

    def run(self):
        t0 = time.time()
        lens = [len(p) for p in self.prompts]
        tokens = [t for p in self.prompts for t in p]
        positions = [i for n in lens for i in range(n)]
        nxt = self.forward("prefill", tokens, positions, lens, lens, 0)
        generated = [[t] for t in nxt]
        ctx = list(lens)
        for step in range(1, self.args.decode_steps + 1):
            nxt = self.forward("decode", nxt, ctx, [1] * len(ctx), [c + 1 for c in ctx], step)
            ctx = [c + 1 for c in ctx]
            for g, t in zip(generated, nxt):
                g.append(t)
        for s, g in enumerate(generated):
            print(f"seq {s}: prompt {lens[s]} tokens -> {g[:12]}{' ...' if len(g) > 12 else ''}")
        calls = 2 * (1 + self.args.decode_steps)
        print(f"{calls} attention calls ({'torch' if self.ops.torch else 'numpy'} on "
              f"{self.args.device}) checked against "
              f"{self.reference_name()}: worst rel-L2 "
              f"{self.worst:.2e}, {self.failures} beyond 2e-2; {time.time() - t0:.1f} s")
        if self.compiled is not None:
            writes = ", ".join(f"{p} {'op' if a else 'torch'}" for p, a in self.has_append.items())
            print(f"{self.compiled_calls} steps under torch.compile(fullgraph=True, backend="
                  f"{self.args.compile_backend}) through torch.ops.attnreg (KV writes: {writes})")
        for be in self.backends.values():
            be.close()
        self.reg.close()
        return 0 if self.failures == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (torch CUDA tensors)")
    ap.add_argument("--arch", help="arch to ask the registry for [cpu, or the GPU's sm_XY]")
    ap.add_argument("--conf", help="only this conf folder (e.g. build/share/attnreg/conf-sm90)")
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--prompt-lens", type=lambda s: [int(x) for x in s.split(",")],
                    default=[13, 7, 29])
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--numpy", action="store_true", help="NumPy even when torch is installed")
    ap.add_argument("--compile", action="store_true",
                    help="run each step under torch.compile(fullgraph=True) through the "
                         "attnreg.torch_ops custom ops (torch >= 2.4)")
    ap.add_argument("--compile-backend", default="inductor",
                    help="torch.compile backend for --compile [inductor]")
    args = ap.parse_args()
    if torch is not None:
        torch.manual_seed(args.seed)
        torch.set_grad_enabled(False)
    return Engine(args).run()


if __name__ == "__main__":
    sys.exit(main())
