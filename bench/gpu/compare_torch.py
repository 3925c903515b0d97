#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compare_torch.py — attnreg's GPU backends beside torch SDPA (FlashAttention,
cuDNN) and FlexAttention, through the attnreg Python package, on identical
paged inputs: decode, MTP verify, prefill, chunked prefill.

Every implementation reads the same data: attnreg the paged caches (block
tables of shuffled pages), the torch kernels contiguous [B, H, L, D] copies of
the same keys (fp8 caches dequantised to bf16 first, outside the timing; the
row notes the 2x bytes). KV sets rotate past 4x the L2 (--l2-mb), times are
medians of CUDA-graph replays (each replay several calls over rotating sets),
and every output is checked against a float32 reference (rel-L2 <= 2e-2, NaN
poison in out) before its time counts.

    python3 bench/gpu/compare_torch.py --conf build/share/attnreg/conf-sm90 --out DIR [--quick]

Writes DIR/compare_torch.json and DIR/compare_torch.md (the table
bench/RESULTS.md quotes). Needs torch with CUDA; FlexAttention where present.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings

import attnreg

PAGE = 16


class Case:
    def __init__(self, family, hq, hkv, d, kv_dtype, q_len, kv_len, batch):
        self.family, self.hq, self.hkv, self.d = family, hq, hkv, d
        self.kv_dtype, self.q_len, self.kv_len, self.batch = kv_dtype, q_len, kv_len, batch
        self.descales = (0.5, 0.25) if kv_dtype == "fp8_e4m3fn" else (1.0, 1.0)

    @property
    def name(self):
        kv = "fp8" if self.kv_dtype.startswith("fp8") else "bf16"
        return (f"{self.family} {self.hq}/{self.hkv} D{self.d} {kv} q{self.q_len} "
                f"kv{self.kv_len} b{self.batch}")

    def bytes(self):
        elt = 1 if self.kv_dtype.startswith("fp8") else 2
        return (2 * self.batch * self.kv_len * self.hkv * self.d * elt
                + 2 * self.batch * self.q_len * self.hq * self.d * 2)

    def flops(self):
        q, k = self.q_len, self.kv_len
        pairs = sum(min(k, k - q + i + 1) for i in range(q))
        return 4.0 * self.hq * self.d * pairs * self.batch


def plan(quick):
    cases = []
    for kv in ([1024, 8192] if quick else [1024, 4096, 16384]):
        for b in ([1, 32] if quick else [1, 8, 32, 64]):
            cases.append(Case("decode", 32, 8, 128, "bf16", 1, kv, b))
    for q in (2, 4):
        for b in ([8, 32] if quick else [1, 8, 32, 64]):
            cases.append(Case("mtp", 16, 1, 256, "fp8_e4m3fn", q, 4096, b))
    for kv in ([4096] if quick else [4096, 16384]):
        cases.append(Case("chunked-prefill", 32, 8, 128, "bf16", 512, kv, 4))
    for L, b in ([(2048, 1)] if quick else [(512, 4), (2048, 1), (8192, 1)]):
        cases.append(Case("prefill", 32, 8, 128, "bf16", L, L, b))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conf", help="conf folder (default: the package's own)")
    ap.add_argument("--out", help="folder for compare_torch.json and compare_torch.md")
    ap.add_argument("--quick", action="store_true", help="a subset of the shapes (~1 min)")
    ap.add_argument("--l2-mb", type=float, default=60.0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        raise SystemExit("compare_torch.py: no CUDA device visible to torch")
    torch.set_grad_enabled(False)
    torch.backends.cuda.matmul.allow_tf32 = False
    warnings.filterwarnings("ignore")
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention)
    except Exception as e:  # noqa: reported as a skip
        flex, create_block_mask = None, None
        flex_why = f"{type(e).__name__}: {e}"
    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    props = torch.cuda.get_device_properties(0)
    conf = dict(conf_paths=[args.conf], default_conf=False, use_env=False) if args.conf else {}
    reg = attnreg.Registry(**conf)
    forced = {n: attnreg.Registry(**conf, backend=n)
              for n in ("aiter-generic", "aiter-mtp-gfx950")}
    dev = "cuda"
    L2 = args.l2_mb * 2 ** 20
    t_start = time.time()
    info = {"device": props.name, "arch": arch, "torch": torch.__version__,
            "cuda": torch.version.cuda, "attnreg": attnreg.__version__,
            "library": attnreg.library_path, "l2_bytes_assumed": L2, "quick": args.quick}
    print(f"{props.name} ({arch}); torch {torch.__version__}; attnreg {attnreg.__version__} "
          f"({attnreg.library_path})", flush=True)

    def timed(fn, nsets):
        fn(0)
        torch.cuda.synchronize()
        per = max(2, min(nsets, 16))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for i in range(per):
                fn(i)
        torch.cuda.current_stream().wait_stream(s)
        g, note = None, None
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(per):
                    fn(i)
        except Exception as e:
            g, note = None, f"no graph ({type(e).__name__}); plain launches"
            torch.cuda.synchronize()
        times = []
        for r in range(2 + args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            if g is not None:
                g.replay()
            else:
                for i in range(per):
                    fn(i)
            b.record()
            b.synchronize()
            if r >= 2:
                times.append(a.elapsed_time(b) * 1000.0 / per)
        return statistics.median(times), g is not None, note

    results = []
    for c in plan(args.quick):
        if time.time() - t_start > args.budget_s:
            results.append({"case": c.name, "skipped": "time budget spent"})
            continue
        print(f"--- {c.name}", flush=True)
        nb = (c.kv_len + PAGE - 1) // PAGE
        fp8 = c.kv_dtype.startswith("fp8")
        set_bytes = c.batch * nb * PAGE * c.hkv * c.d * (1 if fp8 else 2) * 2
        sets = max(2, int(math.ceil(4 * L2 / set_bytes)))
        total = sets * c.batch * nb
        kvdt = torch.float8_e4m3fn if fp8 else torch.bfloat16
        kd, vd = c.descales
        k = (torch.randn(total, PAGE, c.hkv, c.d, device=dev) / kd).to(kvdt)
        v = (torch.randn(total, PAGE, c.hkv, c.d, device=dev) / vd).to(kvdt)
        bt = torch.randperm(total, device=dev).to(torch.int32).view(sets, c.batch, nb)
        T = c.batch * c.q_len
        q = torch.randn(T, c.hq, c.d, device=dev).to(torch.bfloat16)
        cu = torch.arange(c.batch + 1, device=dev, dtype=torch.int32) * c.q_len
        sk = torch.full((c.batch,), c.kv_len, device=dev, dtype=torch.int32)

        def contiguous(cache, desc, s):  # [B, Hkv, L, D] bf16 of set s
            g = cache.view(torch.uint8)[bt[s].long()].view(cache.dtype) if fp8 else cache[bt[s].long()]
            g = g.reshape(c.batch, -1, c.hkv, c.d)[:, :c.kv_len]
            return (g.float() * desc if fp8 else g.float()).to(torch.bfloat16).permute(0, 2, 1, 3)
        Ks = [contiguous(k, kd, s).contiguous() for s in range(sets)]
        Vs = [contiguous(v, vd, s).contiguous() for s in range(sets)]
        q4 = q.view(c.batch, c.q_len, c.hq, c.d).transpose(1, 2)
        # float32 reference on set 0
        g = c.hq // c.hkv
        ref = torch.empty(T, c.hq, c.d, device=dev)
        mask = (torch.arange(c.kv_len, device=dev)[None, :] <=
                (c.kv_len - c.q_len + torch.arange(c.q_len, device=dev))[:, None])
        for b in range(c.batch):
            o = sdpa(q4[b:b + 1].float(), Ks[0][b:b + 1].float().repeat_interleave(g, 1),
                     Vs[0][b:b + 1].float().repeat_interleave(g, 1), attn_mask=mask,
                     scale=1 / math.sqrt(c.d))
            ref[b * c.q_len:(b + 1) * c.q_len] = o[0].transpose(0, 1)
        shape = attnreg.Shape(arch=arch, q_heads=c.hq, kv_heads=c.hkv, head_dim=c.d,
                              kv_dtype=c.kv_dtype, compute_dtype="bf16", max_q_len=c.q_len,
                              max_kv_len=c.kv_len)
        try:
            selected = reg.select(shape).backend
        except attnreg.Error as e:
            selected = None
            print(f"  attnreg selects nothing: {e}")
        entry = {"case": c.name, "family": c.family, "q_heads": c.hq, "kv_heads": c.hkv,
                 "head_dim": c.d, "kv_dtype": c.kv_dtype, "q_len": c.q_len, "kv_len": c.kv_len,
                 "batch": c.batch, "bytes": c.bytes(), "flops": c.flops(), "kv_sets": sets,
                 "selected": selected, "rows": []}
        impls = []
        for name, r in forced.items():
            try:
                sel = r.select(shape)
            except attnreg.Error as e:
                entry["rows"].append({"impl": f"attnreg/{name}", "skipped": e.status})
                continue
            be = r.create(sel)
            out = torch.full((T, c.hq, c.d), float("nan"), dtype=torch.bfloat16, device=dev)

            def fn(i, be=be, out=out):
                return be.forward(q, k, v, bt[i % sets], cu, sk, out=out, k_descale=kd,
                                  v_descale=vd)
            impls.append((f"attnreg/{name}", fn, lambda o: o, be))
        if c.q_len == 1:
            kw = {"is_causal": False}
        elif c.q_len == c.kv_len:
            kw = {"is_causal": True}
        else:  # chunked prefill: the queries are the last q_len positions
            try:
                from torch.nn.attention.bias import causal_lower_right
                kw = {"attn_mask": causal_lower_right(c.q_len, c.kv_len)}
            except ImportError:
                kw = {"attn_mask": mask}
        for label, backend in (("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                               ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
            def fn(i, backend=backend):
                with sdpa_kernel([backend]):
                    return sdpa(q4, Ks[i % sets], Vs[i % sets], scale=1 / math.sqrt(c.d),
                                enable_gqa=True, **kw)
            impls.append((label, fn, lambda o: o.transpose(1, 2).reshape(T, c.hq, c.d), None))
        if c.family in ("prefill", "chunked-prefill"):
            if flex is None:
                entry["rows"].append({"impl": "flex", "skipped": flex_why})
            else:
                off = c.kv_len - c.q_len
                bm = create_block_mask(lambda b, h, qi, ki: qi + off >= ki, None, None, c.q_len,
                                       c.kv_len, device=dev)
                q4c = q4.contiguous()

                def fn(i, bm=bm, q4c=q4c):
                    return flex(q4c, Ks[i % sets], Vs[i % sets], block_mask=bm,
                                scale=1 / math.sqrt(c.d), enable_gqa=True)
                impls.append(("flex", fn, lambda o: o.transpose(1, 2).reshape(T, c.hq, c.d), None))
        for label, fn, to_tokens, be in impls:
            try:
                o = to_tokens(fn(0)).float()
                torch.cuda.synchronize()
                nan = bool(torch.isnan(o).any())
                rel = float((o - ref).norm() / ref.norm())
                ok = rel <= 2e-2 and not nan
                us, graph, note = timed(fn, sets)
                row = {"impl": label, "us": us, "gbs": c.bytes() / us / 1e3,
                       "tflops": c.flops() / us / 1e6, "rel_l2": rel, "ok": ok, "graph": graph}
                if note:
                    row["note"] = note
                if fp8 and not label.startswith("attnreg"):
                    row["note"] = "fp8 KV dequantised to bf16 first: reads 2x the bytes"
                if label == f"attnreg/{selected}":
                    row["selected"] = True
                print(f"  {label:24s} {us:9.1f} us {row['gbs']:7.0f} GB/s "
                      f"{row['tflops']:6.1f} TF/s rel-L2 {rel:.1e} {'ok' if ok else 'FAIL'}",
                      flush=True)
            except Exception as e:
                row = {"impl": label, "skipped": f"{type(e).__name__}: {str(e)[:200]}"}
                print(f"  {label:24s} skipped: {row['skipped']}", flush=True)
                torch.cuda.synchronize()
            entry["rows"].append(row)
            if be is not None:
                be.close()
        peers = [r for r in entry["rows"] if r.get("ok") and not r["impl"].startswith("attnreg")]
        best = min(peers, key=lambda r: r["us"]) if peers else None
        for r in entry["rows"]:
            if best and r.get("ok"):
                r["ratio_to_fastest_peer"] = r["us"] / best["us"]
        entry["fastest_peer"] = best["impl"] if best else None
        results.append(entry)
        k = v = Ks = Vs = impls = None  # free this shape's memory before the next
        torch.cuda.empty_cache()

    lines = [f"# compare_torch: {info['device']} ({arch}), torch {info['torch']}, "
             f"attnreg {info['attnreg']}", "",
             "ratio = us / us of the fastest valid torch kernel; * = the backend attnreg "
             "selects; times are medians of CUDA-graph replays, KV rotated past 4x L2.", "",
             "| shape | impl | us | GB/s | TFLOP/s | ratio | rel-L2 | status |",
             "|---|---|---|---|---|---|---|---|"]
    for e in results:
        if "rows" not in e:
            lines.append(f"| {e['case']} | — | | | | | | {e['skipped']} |")
            continue
        for r in sorted(e["rows"], key=lambda r: r.get("us", float("inf"))):
            mark = "*" if r.get("selected") else ""
            if "skipped" in r:
                lines.append(f"| {e['case']} | {r['impl']} | | | | | | skipped: "
                             f"{r['skipped'][:80]} |")
                continue
            ratio = f"{r['ratio_to_fastest_peer']:.2f}" if "ratio_to_fastest_peer" in r else "—"
            status = ("ok" if r["ok"] else "FAIL") + ("" if r["graph"] else " (no graph)")
            lines.append(f"| {e['case']} | {r['impl']}{mark} | {r['us']:.1f} | {r['gbs']:.0f} | "
                         f"{r['tflops']:.1f} | {ratio} | {r['rel_l2']:.1e} | {status} |")
    notes = sorted({f"{r['impl']}: {r['note']}" for e in results for r in e.get("rows", [])
                    if "note" in r})
    lines += [""] + [f"- {n}" for n in notes] + [f"- elapsed {time.time() - t_start:.0f} s"]
    text = "\n".join(lines)
    print("\n" + text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "compare_torch.json"), "w") as f:
            json.dump({"info": info, "cases": results}, f, indent=1)
        with open(os.path.join(args.out, "compare_torch.md"), "w") as f:
            f.write(text + "\n")
        print(f"wrote {args.out}/compare_torch.json and compare_torch.md")
    for r in forced.values():
        r.close()
    reg.close()
    bad = [r for e in results for r in e.get("rows", []) if r.get("ok") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
