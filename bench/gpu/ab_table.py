#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side table of gpu_attn_bench JSON files from one run (A/B of a switch).

    python3 bench/gpu/ab_table.py off=a.json on=b.json [--family mtp,decode] [--kernel mtp]

Prints a markdown table: per shape (family, heads, head size, q_len, kv_len, batch)
each run's median time (with its segment count) and its rate (TFLOP/s for the
multi-token families, else TB/s of the bytes the shape must move), then each
run's time over the first run's. Rows missing from a run show '-'. Compare only
files written on the same machine in the same call (bench/RESULTS.md, Method).
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    # heads, head size and path too: the prefill rows share (q, kv, batch)
    return {(r["family"], r["kernel"], r["q_len"], r["kv_len"], r["batch"],
             r.get("q_heads"), r.get("kv_heads"), r.get("head_dim"), r.get("path")): r
            for r in doc["results"]}


def rate(r):
    """TFLOP/s for the multi-token families (prefill, chunked, mixed), else TB/s."""
    multi = r["family"].startswith(("prefill", "chunked", "mixed")) and r.get("path") != "decode"
    if multi and "tflops" in r:
        return f"{r['tflops']:.0f} TF/s"
    return f"{r['gbs'] / 1000:.2f} TB/s"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="LABEL=FILE.json")
    ap.add_argument("--family", type=lambda s: s.split(","), help="families to show")
    ap.add_argument("--kernel", help="kernel column value to show (e.g. mtp)")
    args = ap.parse_args(argv)
    runs = []
    for spec in args.runs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            ap.error(f"'{spec}': expected LABEL=FILE.json")
        try:
            runs.append((label, load(path)))
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"{path}: {e}")
    base_label, base = runs[0]
    keys = [k for k in base
            if (not args.family or k[0] in args.family) and (not args.kernel or k[1] == args.kernel)]
    head = ["family", "heads", "D", "q", "kv", "batch"]
    for label, _ in runs:
        head += [f"{label} us (nseg)", f"{label} rate"]
    head += [f"{label}/{base_label}" for label, _ in runs[1:]]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k in keys:
        heads = f"{k[5]}/{k[6]}" if k[5] is not None else "-"
        row = [k[0], heads, str(k[7] if k[7] is not None else "-"), str(k[2]), str(k[3]), str(k[4])]
        for _, res in runs:
            r = res.get(k)
            row += [f"{r['us']:.1f} ({r['nseg']})", rate(r)] if r else ["-", "-"]
        for _, res in runs[1:]:
            r = res.get(k)
            row.append(f"{r['us'] / base[k]['us']:.2f}" if r else "-")
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
