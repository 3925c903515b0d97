#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side table of gpu_attn_bench JSON files from one run (A/B of a switch or of two builds).

    python3 bench/gpu/ab_table.py off=a.json on=b.json [--family mtp,decode] [--kernel mtp]
    python3 bench/gpu/ab_table.py base=a_r1.json,a_r2.json,a_r3.json new=b_r1.json,b_r2.json,b_r3.json
    python3 bench/gpu/ab_table.py --selftest

Prints a markdown table: per shape (family, heads, head size, q_len, kv_len, batch)
each run's median time (with its segment count) and its rate (TFLOP/s for the
multi-token families, else TB/s of the bytes the shape must move), then each
run's time over the first run's. Rows missing from a run show '-'. Compare only
files written on the same machine in the same call (bench/RESULTS.md, Method).

Rounds: a label may name several files (comma-separated), one per round of
alternating runs (scripts/device-run.sh's ab-builds step writes them). A row's
time is then the median of its rounds' times, its rate is scaled to that time,
and a last column gives the range of the per-round ratios (round i of a run
over round i of the first run), which shows whether the rounds agree.
"""
import json
import os
import statistics
import sys
import tempfile

import tool_cli  # bench/gpu/tool_cli.py (the script's folder is on sys.path)


def load(path):
    with open(path) as f:
        doc = json.load(f)
    # heads, head size and path too: the prefill rows share (q, kv, batch)
    return {(r["family"], r["kernel"], r["q_len"], r["kv_len"], r["batch"],
             r.get("q_heads"), r.get("kv_heads"), r.get("head_dim"), r.get("path")): r
            for r in doc["results"]}


def is_multi(r):
    return r["family"].startswith(("prefill", "chunked", "mixed")) and r.get("path") != "decode"


def rate(r, us):
    """TFLOP/s for the multi-token families (prefill, chunked, mixed), else TB/s,
    scaled from the row's own time to `us` (the median over rounds)."""
    scale = r["us"] / us
    if is_multi(r) and "tflops" in r:
        return f"{r['tflops'] * scale:.0f} TF/s"
    return f"{r['gbs'] * scale / 1000:.2f} TB/s"


def median_row(rounds, key):
    """(median time, a row for its segment count and rate, per-round times) or None."""
    times = [res[key]["us"] for res in rounds if key in res]
    if not times:
        return None
    us = statistics.median(times)
    rep = min((res[key] for res in rounds if key in res), key=lambda r: abs(r["us"] - us))
    return us, rep, [res[key]["us"] if key in res else None for res in rounds]


def table(runs, family=None, kernel=None):
    """runs: [(label, [round dicts])] -> markdown lines."""
    base_label, base = runs[0]
    multi_round = any(len(rounds) > 1 for _, rounds in runs)
    keys = [k for k in base[0]
            if (not family or k[0] in family) and (not kernel or k[1] == kernel)]
    head = ["family", "heads", "D", "q", "kv", "batch"]
    for label, _ in runs:
        head += [f"{label} us (nseg)", f"{label} rate"]
    head += [f"{label}/{base_label}" for label, _ in runs[1:]]
    if multi_round:
        head += [f"{label}/{base_label} per round" for label, _ in runs[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        heads = f"{k[5]}/{k[6]}" if k[5] is not None else "-"
        row = [k[0], heads, str(k[7] if k[7] is not None else "-"), str(k[2]), str(k[3]), str(k[4])]
        meds = [median_row(rounds, k) for _, rounds in runs]
        for m in meds:
            row += [f"{m[0]:.1f} ({m[1]['nseg']})", rate(m[1], m[0])] if m else ["-", "-"]
        for m in meds[1:]:
            row.append(f"{m[0] / meds[0][0]:.3f}" if m and meds[0] else "-")
        if multi_round:
            for m in meds[1:]:
                ratios = [b / a for a, b in zip(meds[0][2], m[2]) if a and b] if m and meds[0] else []
                row.append(f"{min(ratios):.3f}-{max(ratios):.3f}" if ratios else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def selftest():
    def doc(us_list):
        return {"results": [{"family": "mtp", "kernel": "mtp", "q_len": 4, "kv_len": kv, "batch": 32,
                             "us": us, "nseg": 8, "gbs": 67108.864 * kv / 4096 / us}
                            for kv, us in us_list]}
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, rows in {"a1": [(4096, 40.0), (16384, 110.0)], "a2": [(4096, 42.0), (16384, 112.0)],
                           "a3": [(4096, 41.0), (16384, 111.0)], "b1": [(4096, 44.0), (16384, 121.0)],
                           "b2": [(4096, 42.0), (16384, 123.2)], "b3": [(4096, 45.1)]}.items():
            paths[name] = os.path.join(d, name + ".json")
            with open(paths[name], "w") as f:
                json.dump(doc(rows), f)
        runs = [("a", [load(paths[n]) for n in ("a1", "a2", "a3")]),
                ("b", [load(paths[n]) for n in ("b1", "b2", "b3")])]
        out = "\n".join(table(runs))
        # kv 4096: medians 41.0 and 44.0 -> 1.073; per round 1.100, 1.000, 1.100
        assert "| 41.0 (8) | 1.64 TB/s | 44.0 (8) | 1.53 TB/s | 1.073 | 1.000-1.100 |" in out, out
        # kv 16384: b lacks round 3; medians 111.0 and 122.1 -> 1.100
        assert "| 111.0 (8) |" in out and "| 1.100 | 1.100-1.100 |" in out, out
        one = "\n".join(table([("a", runs[0][1][:1]), ("b", runs[1][1][:1])]))
        assert "per round" not in one and "| 40.0 (8) | 1.68 TB/s | 44.0 (8) |" in one, one
    print("ab_table selftest: ok")


def main(argv):
    ap = tool_cli.parser(__doc__, "check the table on built-in files")
    ap.add_argument("runs", nargs="*", metavar="LABEL=FILE.json[,FILE.json...]")
    ap.add_argument("--family", type=lambda s: s.split(","), help="families to show")
    ap.add_argument("--kernel", help="kernel column value to show (e.g. mtp)")
    args = tool_cli.parse(ap, argv, selftest, "runs", "at least one LABEL=FILE.json")
    if args is None:
        return 0
    runs = []
    for spec in args.runs:
        label, sep, paths = spec.partition("=")
        if not sep or not label or not paths or "" in paths.split(","):
            ap.error(f"'{spec}': expected LABEL=FILE.json[,FILE.json...]")
        try:
            runs.append((label, [load(p) for p in paths.split(",")]))
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"{paths}: {e}")
    print("\n".join(table(runs, args.family, args.kernel)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
