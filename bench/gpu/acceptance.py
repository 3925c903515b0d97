#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The acceptance lines of issues 18 and 19, judged row by row on peer_bench JSON of one run.

    python3 bench/gpu/acceptance.py peer_bench.json [more.json ...]
    python3 bench/gpu/acceptance.py --selftest

The files are ../shared/tools/peer_bench's output (one run may be split by
family over several files, as bench/gpu/results/h200_v28_peer_bench_*.json
are). For every case the tool takes attnreg's row (the one with "selected":
true: the backend attn_registry_select picks) and the peers' rows by "impl"
(sdpa-cudnn, sdpa-flash); a row counts only where its "valid" is true. Each
line prints its rows (attnreg's figure, the peer's, the ratio or the rate,
the bound) and a verdict:

  issue 18  bf16 decode (16-bit KV, q_len 1), batch >= 8: time <= 1.05 x cuDNN's
            fp8-KV decode, batch >= 32: time < cuDNN's (cuDNN on the dequantised copy)
            MTP verify (family mtp), batch >= 32, kv >= 4096: >= 2.7 TB/s of the
            case's "bytes" (what the shape must move)
  issue 19  prefill, >= 2048 query tokens: time <= 1.15 x cuDNN's
            prefill and extend, every row: faster than FlashAttention-2 (sdpa-flash)
            prefill, D 128, 8192 query tokens: >= 520 TFLOP/s (the case's "flops")

"met" needs at least one row and every row within its bound; a row without
attnreg's valid time fails it; a row without the peer's is listed as not
judged and leaves the line "not judged" if no row could be judged. The
issues judge on an H200: the device of each file is printed, and a line
notes it when it is not one. Exit status 0 when every line was judged
(met or not), 1 when a file could not be read, 2 when a line had no rows or
none judged. Performance figures are never test thresholds: this is a
report for a person and the notes, not a gate.
"""
import json
import sys

import tool_cli  # bench/gpu/tool_cli.py (the script's folder is on sys.path)

TB = 1e12


def load(paths):
    """Cases of every file (a case name seen twice: the later file's), and the devices."""
    cases, devices = {}, []
    for p in paths:
        with open(p) as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{p}: not JSON ({e})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
            raise ValueError(f"{p}: no 'cases' list (not a peer_bench JSON file)")
        devices.append((p, (doc.get("info") or {}).get("device", "?")))
        for c in doc["cases"]:
            cases[c.get("name", str(len(cases)))] = c
    return list(cases.values()), devices


def row_of(case, impl=None):
    """attnreg's selected row (impl None) or the peer's, if valid."""
    for r in case.get("rows", []):
        if (r.get("selected") if impl is None else r.get("impl") == impl) and r.get("valid"):
            if isinstance(r.get("us"), (int, float)) and r["us"] > 0:
                return r
    return None


def judge_ratio(cases, pick, peer, bound, strict):
    """Rows of attnreg's time / the peer's: (name, ours, theirs, ratio, ok or None)."""
    out = []
    for c in cases:
        if not pick(c["case"]):
            continue
        a, b = row_of(c), row_of(c, peer)
        if a is None:
            out.append((c["name"], None, b and b["us"], None, False))
        elif b is None:
            out.append((c["name"], a["us"], None, None, None))
        else:
            r = a["us"] / b["us"]
            out.append((c["name"], a["us"], b["us"], r, r < bound if strict else r <= bound))
    return out


def judge_rate(cases, pick, rate, bound):
    """Rows of attnreg's rate: (name, ours us, None, rate, ok)."""
    out = []
    for c in cases:
        if not pick(c["case"]):
            continue
        a = row_of(c)
        if a is None:
            out.append((c["name"], None, None, None, False))
        else:
            v = rate(c["case"], a["us"])
            out.append((c["name"], a["us"], None, v, v >= bound))
    return out


def is_fp8(dt):
    return str(dt).startswith("fp8")


LINES = [
    ("18", "bf16 decode, batch >= 8: time <= 1.05 x cuDNN's", "ratio",
     lambda cs: judge_ratio(cs, lambda k: k["family"] == "decode" and not is_fp8(k["kv_dtype"])
                            and k["batch"] >= 8, "sdpa-cudnn", 1.05, False)),
    ("18", "fp8-KV decode, batch >= 32: faster than cuDNN on the dequantised copy", "ratio",
     lambda cs: judge_ratio(cs, lambda k: k["family"] == "decode" and is_fp8(k["kv_dtype"])
                            and k["batch"] >= 32, "sdpa-cudnn", 1.0, True)),
    ("18", "MTP verify, batch >= 32 and kv >= 4096: >= 2.7 TB/s", "TB/s",
     lambda cs: judge_rate(cs, lambda k: k["family"] == "mtp" and k["batch"] >= 32
                           and k["kv_len"] >= 4096, lambda k, us: k["bytes"] / (us * 1e-6) / TB, 2.7)),
    ("19", "prefill, >= 2048 tokens: time <= 1.15 x cuDNN's", "ratio",
     lambda cs: judge_ratio(cs, lambda k: k["family"] == "prefill" and k["q_len"] >= 2048,
                            "sdpa-cudnn", 1.15, False)),
    ("19", "prefill and extend, every row: faster than FlashAttention-2", "ratio",
     lambda cs: judge_ratio(cs, lambda k: k["family"] in ("prefill", "extend"), "sdpa-flash", 1.0,
                            True)),
    ("19", "prefill D128, 8192 tokens: >= 520 TFLOP/s", "TFLOP/s",
     lambda cs: judge_rate(cs, lambda k: k["family"] == "prefill" and k["head_dim"] == 128
                           and k["q_len"] == 8192, lambda k, us: k["flops"] / (us * 1e-6) / TB,
                           520.0)),
]


def report(cases, devices):
    """The report's lines, and whether every acceptance line was judged."""
    out = []
    for p, dev in devices:
        out.append(f"file {p}: {dev}")
    if any("H200" not in str(dev) for _, dev in devices):
        out.append("note: the issues' acceptance is judged on an H200; these figures are for reference")
    all_judged = True
    for issue, title, unit, fn in LINES:
        rows = fn(cases)
        judged = [r for r in rows if r[4] is not None]
        if not rows:
            verdict, all_judged = "no rows", False
        elif not judged:
            verdict, all_judged = "not judged (no peer rows)", False
        else:
            bad = sum(1 for r in judged if not r[4])
            verdict = "met" if bad == 0 and len(judged) == len(rows) else \
                f"NOT met ({bad} of {len(judged)} rows)" if bad else \
                f"met on the {len(judged)} judged rows ({len(rows) - len(judged)} without the peer)"
        out.append(f"issue {issue}: {title}: {verdict}")
        for name, ours, theirs, v, ok in rows:
            mark = "ok  " if ok else "FAIL" if ok is False else "?   "
            ours_s = f"{ours:.1f} us" if ours is not None else "no valid attnreg row"
            if unit == "ratio":
                peer_s = f"{theirs:.1f} us" if theirs is not None else "no peer row"
                v_s = f"{v:.3f}x" if v is not None else "-"
                out.append(f"  {mark} {name}: {ours_s} vs {peer_s}: {v_s}")
            else:
                v_s = f"{v:.2f} {unit}" if v is not None else "-"
                out.append(f"  {mark} {name}: {ours_s}: {v_s}")
    return out, all_judged


def selftest():
    def case(name, fam, kv_dtype, q, kv, b, d, us, peers, nbytes=0, flops=0.0):
        rows = [{"impl": "attnreg/x", "us": us, "valid": us is not None, "selected": True}]
        rows += [{"impl": i, "us": u, "valid": True} for i, u in peers.items()]
        return {"name": name, "rows": rows,
                "case": {"family": fam, "kv_dtype": kv_dtype, "q_len": q, "kv_len": kv, "batch": b,
                         "head_dim": d, "bytes": nbytes, "flops": flops}}
    cases = [
        case("dec b8", "decode", "bf16", 1, 4096, 8, 128, 10.4, {"sdpa-cudnn": 10.0}),
        case("dec b1", "decode", "bf16", 1, 4096, 1, 128, 20.0, {"sdpa-cudnn": 10.0}),  # not a row
        case("dec b32", "decode", "bf16", 1, 4096, 32, 128, 10.6, {"sdpa-cudnn": 10.0}),
        case("f8 b32", "decode", "fp8_e4m3fn", 1, 4096, 32, 128, 9.0, {"sdpa-cudnn": 10.0}),
        case("mtp b32", "mtp", "fp8_e4m3fn", 4, 4096, 32, 256, 25.0, {}, nbytes=int(2.75e12 * 25e-6)),
        case("mtp b64", "mtp", "fp8_e4m3fn", 4, 4096, 64, 256, None, {}, nbytes=1),
        case("pf 2048", "prefill", "bf16", 2048, 2048, 4, 128, 11.0, {"sdpa-cudnn": 10.0,
                                                                      "sdpa-flash": 20.0}),
        case("pf 8192", "prefill", "bf16", 8192, 8192, 1, 128, 1000.0, {"sdpa-flash": 1500.0},
             flops=5.3e14 * 1e-3),
        case("ext", "extend", "bf16", 512, 4096, 4, 128, 30.0, {"sdpa-flash": 29.0}),
    ]
    out, judged = report(cases, [("t.json", "NVIDIA H100 80GB HBM3")])
    text = "\n".join(out)
    want = [
        "note: the issues' acceptance is judged on an H200",
        "issue 18: bf16 decode, batch >= 8: time <= 1.05 x cuDNN's: NOT met (1 of 2 rows)",
        "  ok   dec b8: 10.4 us vs 10.0 us: 1.040x",
        "  FAIL dec b32: 10.6 us vs 10.0 us: 1.060x",
        "issue 18: fp8-KV decode, batch >= 32: faster than cuDNN on the dequantised copy: met",
        "issue 18: MTP verify, batch >= 32 and kv >= 4096: >= 2.7 TB/s: NOT met (1 of 2 rows)",
        "  ok   mtp b32: 25.0 us: 2.75 TB/s",
        "  FAIL mtp b64: no valid attnreg row: -",
        # 8192 has no cuDNN row: judged on the 2048 row alone
        "issue 19: prefill, >= 2048 tokens: time <= 1.15 x cuDNN's: met on the 1 judged rows (1 without the peer)",
        "  ?    pf 8192: 1000.0 us vs no peer row: -",
        "issue 19: prefill and extend, every row: faster than FlashAttention-2: NOT met (1 of 3 rows)",
        "  FAIL ext: 30.0 us vs 29.0 us: 1.034x",
        "issue 19: prefill D128, 8192 tokens: >= 520 TFLOP/s: met",
        "  ok   pf 8192: 1000.0 us: 530.00 TFLOP/s",
    ]
    for w in want:
        assert w in text, f"missing: {w!r}\n--- report:\n{text}"
    assert "dec b1" not in text, text
    assert judged, text
    out, judged = report([cases[0]], [("t.json", "NVIDIA H200")])
    text = "\n".join(out)
    assert "note:" not in text and "MTP verify, batch >= 32 and kv >= 4096: >= 2.7 TB/s: no rows" in text
    assert not judged
    print("acceptance selftest: ok")


def main(argv):
    ap = tool_cli.parser(__doc__, "check the verdicts on built-in cases")
    ap.add_argument("files", nargs="*", metavar="FILE.json", help="peer_bench JSON files of one run")
    args = tool_cli.parse(ap, argv, selftest, "files", "at least one peer_bench JSON file")
    if args is None:
        return 0
    try:
        cases, devices = load(args.files)
    except (OSError, ValueError) as e:
        print(f"acceptance.py: {e}", file=sys.stderr)
        return 1
    out, judged = report(cases, devices)
    print("\n".join(out))
    return 0 if judged else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
