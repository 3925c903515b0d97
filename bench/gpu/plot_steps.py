#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plot how the H200 peer-bench figures moved from version to version.

Reads the peer_bench JSON files committed in bench/gpu/results/ (the H200
runs listed in SOURCES below) and draws one PNG of
four panels, x = version, one line per shape:

  1. bf16 decode (32/8 heads, D128, q_len 1): attnreg's time / torch SDPA
     cuDNN's time, batch 1 (dashed) and batch >= 8 rows; lines at 1.05 (the
     acceptance of issue 18) and 1.0.
  2. fp8-KV decode (32/8, D128, e4m3fn KV), batch >= 32: attnreg's time /
     cuDNN's time on the dequantised bf16 copy; line at 1.0.
  3. MTP verify (16/1 heads, D256, fp8 KV), batch >= 32 and kv >= 4096:
     achieved TB/s = the case's "bytes" (what the shape must move) / attnreg's
     time; q_len 4 solid, q_len 2 dashed; a line at 2.7 TB/s (the acceptance)
     and the run's read-only stream ("read_gbs") as a marker where the file
     has it (version 9's run did not measure it).
  4. causal prefill (32/8 D128 at 2048 / 8192 tokens, batch 1 / 4; 16/1 D256
     at 2048): attnreg's time / cuDNN's time; lines at 1.15 and 1.0.

Every number comes from the files' own fields (the schema is peer_bench's,
../shared/tools/peer_bench/ beside the repository): a case is found by
its "case" dict (family, heads, head_dim, kv_dtype, q_len, kv_len, batch);
attnreg's time is the "us" of the row with "selected": true (the backend
attn_registry_select picks, e.g. attnreg/aiter-generic for decode,
attnreg/aiter-mtp-gfx950 for MTP); cuDNN's is the "us" of the "sdpa-cudnn"
row. A row that is missing or not "valid" leaves that version without a
point for the shape (never an invented value); version 9's run had no fp8
decode family. Version 19 was measured in two runs: decode and MTP come from
h200_v19_peer_bench_decode_mtp.json, prefill from
h200_v19_peer_bench_prefill_extend.json (the run bench/RESULTS.md quotes for
version 19's prefill; the decode/MTP run timed prefill too, not used here).
Version 28 (session 29's one H200 call) likewise:
h200_v28_peer_bench_decode_mtp.json and
h200_v28_peer_bench_prefill_extend.json.

A dev-machine tool (needs matplotlib); CI does not run it. Example:

    python3 bench/gpu/plot_steps.py --out bench/gpu/results/h200_steps.png \\
        --json bench/gpu/results/h200_steps.json

Prints the extracted series as markdown tables on stdout.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_DIR = os.path.join(HERE, "results")

# (version, file, families taken from it; None = every family in the file)
SOURCES = [
    (9, "h200_v9_peer_bench.json", None),
    (11, "h200_v11_peer_bench.json", None),
    (13, "h200_v13_peer_bench.json", None),
    (14, "h200_v14_peer_bench.json", None),
    (19, "h200_v19_peer_bench_decode_mtp.json", ("decode", "mtp")),
    (19, "h200_v19_peer_bench_prefill_extend.json", ("prefill", "extend")),
    (28, "h200_v28_peer_bench_decode_mtp.json", ("decode", "mtp")),
    (28, "h200_v28_peer_bench_prefill_extend.json", ("prefill", "extend")),
]

CUDNN = "sdpa-cudnn"


def shape(family, hq, hkv, d, kv_dtype, q_len, kv_len, batch):
    """The fields of a peer-bench "case" dict that identify one shape."""
    return {"family": family, "q_heads": hq, "kv_heads": hkv, "head_dim": d,
            "kv_dtype": kv_dtype, "q_len": q_len, "kv_len": kv_len,
            "batch": batch}


def dec_bf16(kv, b):
    return shape("decode", 32, 8, 128, "bf16", 1, kv, b)


def dec_fp8(kv, b):
    return shape("decode", 32, 8, 128, "fp8_e4m3fn", 1, kv, b)


def mtp(q, kv, b):
    return shape("mtp", 16, 1, 256, "fp8_e4m3fn", q, kv, b)


def prefill(hq, hkv, d, n, b):
    return shape("prefill", hq, hkv, d, "bf16", n, n, b)


# Panels: (key, title, y label, metric, series, reference lines).
# A series is (label, shape, dashed). Metric "ratio": attnreg us / cuDNN us;
# metric "tbs": case bytes / attnreg us, in TB/s.
PANELS = [
    ("decode_bf16",
     "bf16 decode, 32/8 heads D128, q_len 1 (lower is better)",
     "attnreg time / SDPA cuDNN time",
     "ratio",
     [(f"b{b} kv{kv}", dec_bf16(kv, b), b == 1)
      for b, kv in ((1, 1024), (1, 16384), (8, 1024), (8, 16384),
                    (32, 1024), (32, 16384), (64, 1024), (64, 16384))],
     [(1.05, "1.05 acceptance (batch >= 8)", "tab:red"),
      (1.0, "1.0 = cuDNN", "black")]),
    ("decode_fp8",
     "fp8-KV decode, 32/8 heads D128, batch >= 32 (lower is better)",
     "attnreg time / cuDNN time on the bf16 copy",
     "ratio",
     [(f"b{b} kv{kv}", dec_fp8(kv, b), False)
      for kv in (4096, 16384) for b in (32, 64)],
     [(1.0, "1.0 = cuDNN", "black")]),
    ("mtp",
     "MTP verify, 16/1 heads D256 fp8 KV (higher is better)",
     "TB/s = bytes the shape must move / attnreg time",
     "tbs",
     [(f"q{q} b{b} kv{kv}", mtp(q, kv, b), q == 2)
      for q in (4, 2) for kv in (4096, 16384) for b in (32, 64)],
     [(2.7, "2.7 TB/s acceptance", "tab:red")]),
    ("prefill",
     "causal bf16 prefill, q = kv tokens (lower is better)",
     "attnreg time / SDPA cuDNN time",
     "ratio",
     [(f"32/8 D128 {n} b{b}", prefill(32, 8, 128, n, b), False)
      for n in (2048, 8192) for b in (1, 4)]
     + [(f"16/1 D256 2048 b{b}", prefill(16, 1, 256, 2048, b), True)
        for b in (1, 4)],
     [(1.15, "1.15 acceptance (>= 2048 tokens)", "tab:red"),
      (1.0, "1.0 = cuDNN", "black")]),
]


def load_sources(results_dir):
    """[(version, file name, families or None, parsed JSON)]."""
    out = []
    for version, name, families in SOURCES:
        path = os.path.join(results_dir, name)
        with open(path) as f:
            out.append((version, name, families, json.load(f)))
    return out


def versions_of(sources):
    """The versions of SOURCES or of load_sources' list, ascending."""
    return sorted({src[0] for src in sources})


def runs_of(sources, version, family):
    """(file name, parsed JSON) of each run of this version that holds the
    family."""
    for v, name, families, data in sources:
        if v == version and (families is None or family in families):
            yield name, data


def find_case(sources, version, want):
    """The case dict of this version matching every field of want, with the
    file it came from; (None, None) when no file of the version has it."""
    for name, data in runs_of(sources, version, want["family"]):
        for entry in data.get("cases", []):
            c = entry.get("case", {})
            if all(c.get(k) == val for k, val in want.items()):
                return entry, name
    return None, None


def attnreg_row(entry):
    """The attnreg row of the backend the registry selects."""
    rows = [r for r in entry.get("rows", [])
            if r.get("impl", "").startswith("attnreg/")]
    sel = [r for r in rows if r.get("selected")]
    if not sel and entry.get("attnreg_selected"):  # no "selected" field
        sel = [r for r in rows
               if r.get("backend") == entry["attnreg_selected"]]
    return sel[0] if len(sel) == 1 else None


def impl_row(entry, impl):
    rows = [r for r in entry.get("rows", []) if r.get("impl") == impl]
    return rows[0] if len(rows) == 1 else None


def usable(row):
    return (row is not None and row.get("valid") is True
            and isinstance(row.get("us"), (int, float)) and row["us"] > 0)


def point(entry, metric):
    """(value, detail dict) of one case, or (None, reason)."""
    a = attnreg_row(entry)
    if not usable(a):
        return None, "no valid selected attnreg row"
    detail = {"case": entry.get("name"), "attnreg_impl": a["impl"],
              "attnreg_us": a["us"]}
    if metric == "tbs":
        nbytes = entry["case"].get("bytes")
        if not nbytes:
            return None, "case has no 'bytes'"
        detail["bytes"] = nbytes
        return nbytes / a["us"] / 1e6, detail  # B / us -> TB/s
    c = impl_row(entry, CUDNN)
    if not usable(c):
        return None, f"no valid {CUDNN} row"
    detail["cudnn_us"] = c["us"]
    return a["us"] / c["us"], detail


def read_gbs_of(sources, version, family):
    """read_gbs of the run that holds this version's family (or None)."""
    for name, data in runs_of(sources, version, family):
        return data.get("read_gbs"), name
    return None, None


def extract(sources):
    versions = versions_of(sources)
    out = {"versions": versions,
           "sources": [{"version": v, "file": n,
                        "families": list(f) if f else "all",
                        "read_gbs": d.get("read_gbs")}
                       for v, n, f, d in sources],
           "panels": []}
    for key, title, ylabel, metric, series, refs in PANELS:
        panel = {"key": key, "title": title, "ylabel": ylabel,
                 "metric": metric,
                 "reference_lines": [{"y": y, "label": label, "color": color}
                                     for y, label, color in refs],
                 "series": []}
        for label, want, dashed in series:
            s = {"label": label, "shape": want, "dashed": dashed,
                 "points": [], "missing": []}
            for v in versions:
                entry, name = find_case(sources, v, want)
                if entry is None:
                    s["missing"].append({"version": v,
                                         "reason": "shape not in the run"})
                    continue
                val, detail = point(entry, metric)
                if val is None:
                    s["missing"].append({"version": v, "file": name,
                                         "reason": detail})
                    continue
                detail.update({"version": v, "value": val, "file": name})
                s["points"].append(detail)
            panel["series"].append(s)
        if metric == "tbs":
            panel["read_gbs"] = []
            family = series[0][1]["family"]
            for v in versions:
                gbs, name = read_gbs_of(sources, v, family)
                if gbs is not None:
                    panel["read_gbs"].append({"version": v, "file": name,
                                              "tbs": gbs / 1e3})
        out["panels"].append(panel)
    return out


def markdown(ext):
    versions = ext["versions"]
    lines = []
    for p in ext["panels"]:
        unit = "TB/s" if p["metric"] == "tbs" else "x cuDNN"
        lines.append(f"### {p['title']} ({unit})")
        lines.append("")
        lines.append("| shape | " + " | ".join(f"v{v}" for v in versions)
                     + " |")
        lines.append("|---" * (len(versions) + 1) + "|")
        rows = [(s["label"], {q["version"]: q["value"] for q in s["points"]})
                for s in p["series"]]
        if "read_gbs" in p:
            rows.append(("read-only stream (read_gbs)",
                         {q["version"]: q["tbs"] for q in p["read_gbs"]}))
        for label, vals in rows:
            cells = [f"{vals[v]:.2f}" if v in vals else "-" for v in versions]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def spread(ys, gap):
    """Label heights for values ys (any order): at least gap apart, each
    group of crowded labels centred on the mean of its values."""
    clusters = []  # [first label's height, member indices], bottom up
    for i in sorted(range(len(ys)), key=lambda i: ys[i]):
        clusters.append([ys[i], [i]])
        while (len(clusters) > 1 and clusters[-2][0]
               + len(clusters[-2][1]) * gap > clusters[-1][0]):
            top = clusters.pop()
            members = clusters[-1][1] + top[1]
            mean = sum(ys[j] for j in members) / len(members)
            clusters[-1] = [mean - (len(members) - 1) * gap / 2, members]
    out = list(ys)
    for start, members in clusters:
        for k, j in enumerate(members):
            out[j] = start + k * gap
    return out


NOTES = {
    "decode_bf16": "dashed: batch 1 (goal <= 1.0)",
    "decode_fp8": "cuDNN reads the dequantised bf16 copy (2x the bytes);\n"
                  "v9's run had no fp8-KV decode family",
    "mtp": "solid: q_len 4, dashed: q_len 2; batch >= 32, kv >= 4096;\n"
           "v9's run did not measure read_gbs",
    "prefill": "dashed: 16/1 heads D256 at 2048 tokens",
}


def cudnn_spread(panel, limit=1.10):
    """A note naming the shapes whose cuDNN time itself moved by more than
    limit (max / min) across the runs: their ratio moves with it."""
    moved = []
    for s in panel["series"]:
        us = [q["cudnn_us"] for q in s["points"] if "cudnn_us" in q]
        if len(us) > 1 and max(us) / min(us) > limit:
            moved.append(f"{s['label']} {min(us):.0f}-{max(us):.0f} us")
    if not moved:
        return ""
    return ("\ncuDNN's own time moved between runs: " + "; ".join(moved))


def plot(ext, out_png):
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_steps.py: matplotlib is missing (a dev-machine tool: "
                 "apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    versions = ext["versions"]
    fig, axes = plt.subplots(2, 2, figsize=(17, 14))
    cmap = plt.get_cmap("tab10")
    for ax, p in zip(axes.flat, ext["panels"]):
        ends = []
        for i, s in enumerate(p["series"]):
            xs = [q["version"] for q in s["points"]]
            ys = [q["value"] for q in s["points"]]
            if not xs:
                continue
            color = cmap(i % 4) if p["key"] == "mtp" else cmap(i % 10)
            ax.plot(xs, ys, "--" if s["dashed"] else "-", marker="o",
                    color=color, label=s["label"], linewidth=1.6,
                    markersize=5)
            ends.append((xs[-1], ys[-1], color))
        for r in p["reference_lines"]:
            ax.axhline(r["y"], color=r["color"], linestyle=":",
                       linewidth=1.4, label=r["label"])
        if p.get("read_gbs"):
            ax.plot([q["version"] for q in p["read_gbs"]],
                    [q["tbs"] for q in p["read_gbs"]], linestyle="none",
                    marker="D", color="grey",
                    label="read-only stream of the run (read_gbs), TB/s")
        if p["metric"] == "tbs":
            ax.set_ylim(0, 4.6)
        else:  # head room for the note in the top left corner
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi + 0.1 * (hi - lo))
        lo, hi = ax.get_ylim()
        # the last point's value beside it, labels pushed apart
        for x in sorted({e[0] for e in ends}):
            at = [e for e in ends if e[0] == x]
            ys = spread([e[1] for e in at], 0.034 * (hi - lo))
            for (_, y, color), ly in zip(at, ys):
                ax.annotate(f"{y:.2f}", (x, y), xytext=(x + 0.35, ly),
                            textcoords="data", va="center", fontsize=8,
                            color=color)
        ax.text(0.01, 0.99, NOTES[p["key"]] + cudnn_spread(p),
                transform=ax.transAxes,
                va="top", ha="left", fontsize=8, color="dimgrey")
        ax.set_title(p["title"], fontsize=11)
        ax.set_ylabel(p["ylabel"])
        ax.set_xlabel("attnreg version (H200 peer_bench run)")
        ax.set_xticks(versions)
        ax.set_xticklabels([f"v{v}" for v in versions])
        ax.set_xlim(versions[0] - 0.7, versions[-1] + 1.6)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, ncol=4, loc="upper center",
                  bbox_to_anchor=(0.5, -0.11), frameon=False)
    split = [f"v{v}" for v in versions
             if sum(src[0] == v for src in SOURCES) > 1]
    fig.suptitle("attnreg on the H200, version by version (peer_bench: "
                 "bench/gpu/results/h200_v{" + ",".join(map(str, versions))
                 + "}_peer_bench*.json; one run per version, "
                 + " and ".join(split) + "'s prefill from a second run)",
                 fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


def main(argv=None):
    versions = versions_of(SOURCES)
    ap = argparse.ArgumentParser(
        description="Plot attnreg's H200 peer-bench figures against the "
                    "version (bf16 decode, fp8-KV decode and prefill as "
                    "ratios to torch SDPA cuDNN's time, MTP verify in TB/s) "
                    "from the peer_bench JSON files of versions "
                    + ", ".join(map(str, versions))
                    + " in bench/gpu/results/ (SOURCES). Prints the "
                    "extracted series as markdown tables.")
    ap.add_argument("--out", required=True, metavar="PNG",
                    help="the PNG to write (four panels)")
    ap.add_argument("--json", metavar="OUT.json",
                    help="also write the extracted series (every point with "
                         "its case, file, attnreg and cuDNN times) as JSON")
    ap.add_argument("--results-dir", default=RESULTS_DIR, metavar="DIR",
                    help="where the peer_bench JSON files are (default: "
                         "results/ beside this script)")
    args = ap.parse_args(argv)

    ext = extract(load_sources(args.results_dir))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(ext, f, indent=1)
            f.write("\n")
    plot(ext, args.out)
    print(markdown(ext))
    return 0


if __name__ == "__main__":
    sys.exit(main())
