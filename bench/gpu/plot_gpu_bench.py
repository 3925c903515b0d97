#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plot gpu_attn_bench JSON: achieved fraction of copy bandwidth per shape.

usage: plot_gpu_bench.py results.json out.png
Left: the MTP shapes (generic vs mtp, q_len 2 and 4), x = batch, one line per
kv_len. Right: plain decode (generic), x = batch, one line per kv_len.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    data = json.load(open(sys.argv[1]))
    res = data["results"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, q in zip(axes[:2], (2, 4)):
        for kernel, style in (("generic", "--"), ("mtp", "-")):
            for kv in (1024, 4096, 16384):
                pts = sorted((r["batch"], 100 * r["copy_fraction"]) for r in res
                             if r["family"] == "mtp" and r["kernel"] == kernel
                             and r["q_len"] == q and r["kv_len"] == kv)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                            label=f"{kernel} kv {kv}")
        ax.set_title(f"MTP shape 16:1, D 256, fp8 KV, q_len {q}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch")
        ax.set_ylabel("% of D2D copy bandwidth")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[2]
    for kv in (1024, 4096, 8192, 16384):
        pts = sorted((r["batch"], 100 * r["copy_fraction"]) for r in res
                     if r["family"] == "decode" and r["kv_len"] == kv)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"kv {kv}")
    ax.set_title("decode 32:8, D 128, bf16 KV, q_len 1 (generic)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch")
    ax.set_ylabel("% of D2D copy bandwidth")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(f"{data['device']} ({data['arch']}), copy {data['copy_gbs']:.0f} GB/s")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
