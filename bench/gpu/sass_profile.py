#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a kernel's warps spend their instructions and stall samples, from Nsight Compute's
per-instruction source counters:

    ncu --section SourceCounters --section WarpStateStats -k regex:KERNEL -c 1 \\
        --page source --print-source sass --csv PROGRAM ARGS > profile.csv
    python3 bench/gpu/sass_profile.py profile.csv [--cuts 0x3840,0x75a0] [--top 15]

Prints the instructions executed a warp (warps = the executions of the kernel's first
instruction, which every warp runs once), the loops (backward branches taken more often than
the kernel's first instruction ran), the instructions and stall samples of each region
(the prologue up to the first loop, each loop, the rest; or the regions between --cuts, byte
offsets from the kernel's start), the stall reasons, the most sampled instructions with their
two main reasons, and the opcodes of the hottest loop a pass. This is how version 22 found
decode-mma's fixed cost (bench/RESULTS.md): a Q store waiting on its own global load."""
import collections
import csv
import io
import sys

import tool_cli  # bench/gpu/tool_cli.py (the script's folder is on sys.path)


class Profile:
    def __init__(self, text):
        rows = list(csv.reader(io.StringIO(text)))
        try:
            hi = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
        except StopIteration:
            raise ValueError("no 'Address' header: not an ncu --page source --csv export")
        self.kernel = next((r[1] for r in rows[:hi] if len(r) > 1 and r[0] == "Kernel Name"), "?")
        h = rows[hi]
        for need in ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
            if need not in h:
                raise ValueError(f"column '{need}' missing (profile with --section SourceCounters)")
        self.stall_cols = [c for c in h if c.startswith("stall_") and "Not Issued" not in c]
        data = [r for r in rows[hi + 1:] if len(r) == len(h)]
        if not data:
            raise ValueError("no instruction rows")
        base = int(data[0][0], 16)

        def num(v):
            v = v.replace(",", "")
            return int(v) if v.isdigit() else 0

        self.ins = []
        for r in data:
            src = r[h.index("Source")].strip()
            self.ins.append({
                "off": int(r[0], 16) - base,
                "src": src,
                "op": self._opcode(src),
                "n": num(r[h.index("Instructions Executed")]),
                "samples": num(r[h.index("Warp Stall Sampling (All Samples)")]),
                "stalls": {c: num(r[h.index(c)]) for c in self.stall_cols},
            })
        self.base = base
        self.warps = max(self.ins[0]["n"], 1)

    @staticmethod
    def _opcode(src):
        words = src.replace(";", " ").split()
        if words and words[0].startswith("@"):
            words = words[1:]
        return words[0].split(".")[0] if words else "?"

    def loops(self):
        """(start, end) offsets of backward branches taken more than once a warp."""
        out = []
        for i in self.ins:
            if i["op"] != "BRA" or i["n"] <= self.warps:
                continue
            try:
                target = int(i["src"].replace(";", " ").split()[-1], 16) - self.base
            except ValueError:
                continue
            if 0 <= target < i["off"]:
                out.append((target, i["off"] + 16))
        return sorted(set(out))

    def regions(self, cuts=None):
        if cuts is None:
            cuts = []
            for lo, hi in self.loops():
                cuts += [lo, hi]
        cuts = sorted(set(c for c in cuts if c > 0))
        bounds = [0] + cuts + [self.ins[-1]["off"] + 16]
        out = []
        for lo, hi in zip(bounds, bounds[1:]):
            part = [i for i in self.ins if lo <= i["off"] < hi]
            if part:
                out.append((lo, hi, part))
        return out

    def report(self, cuts=None, top=15):
        total_n = sum(i["n"] for i in self.ins)
        total_s = max(sum(i["samples"] for i in self.ins), 1)
        lines = [f"kernel: {self.kernel}",
                 f"{len(self.ins)} instructions ({len(self.ins) * 16} bytes), {self.warps} warps, "
                 f"{total_n / self.warps:.0f} executed a warp, {total_s} stall samples"]
        for lo, hi in self.loops():
            lines.append(f"loop {lo:#x}-{hi:#x}: {(hi - lo) // 16} instructions")
        lines.append("regions:")
        for lo, hi, part in self.regions(cuts):
            n = sum(i["n"] for i in part)
            s = sum(i["samples"] for i in part)
            lines.append(f"  {lo:#07x}-{hi:#07x}: {len(part):5d} instructions, "
                         f"{n / self.warps:8.0f} executed a warp, {s:6d} samples "
                         f"({100 * s / total_s:3.0f} %)")
        reasons = collections.Counter()
        for i in self.ins:
            reasons.update(i["stalls"])
        lines.append("stall reasons: " + ", ".join(
            f"{c[6:]} {v} ({100 * v / total_s:.0f} %)" for c, v in reasons.most_common(8) if v))
        lines.append("most sampled instructions (offset, executions a warp, samples, reasons):")
        for i in sorted(self.ins, key=lambda i: -i["samples"])[:top]:
            if not i["samples"]:
                break
            why = sorted(((v, c[6:]) for c, v in i["stalls"].items() if v), reverse=True)[:2]
            lines.append(f"  {i['off']:#07x} {i['n'] / self.warps:6.1f} {i['samples']:6d}  "
                         f"{i['src'][:56]:56s} {', '.join(f'{c} {v}' for v, c in why)}")
        loops = self.loops()
        if loops:
            lo, hi = max(loops, key=lambda l: sum(i["n"] for i in self.ins if l[0] <= i["off"] < l[1]))
            body = [i for i in self.ins if lo <= i["off"] < hi]
            passes = max(max(i["n"] for i in body) / self.warps, 1e-9)
            ops = collections.Counter()
            for i in body:
                ops[i["op"]] += i["n"] / self.warps / passes
            lines.append(f"hottest loop {lo:#x}-{hi:#x}: {passes:.1f} passes a warp, "
                         f"{sum(ops.values()):.0f} instructions a pass: " +
                         ", ".join(f"{op} {v:.0f}" for op, v in ops.most_common(14)))
        return "\n".join(lines)


def selftest():
    header = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
              '"stall_long_sb","stall_wait"\n')
    rows = [("0x1000", "LDC R1, c[0x0][0x28]", 1, 4, 0, 1),
            ("0x1010", "LDG.E R2, desc[UR4][R4.64]", 0, 4, 0, 0),
            ("0x1020", "STS [R3], R2", 9, 4, 9, 0),
            ("0x1030", "HMMA.16816.F32 R8, R12, R16, R8", 5, 40, 0, 5),
            ("0x1040", "@!P0 BRA 0x1030", 2, 40, 0, 2),
            ("0x1050", "EXIT", 0, 4, 0, 0)]
    text = '"Kernel Name","k"\n' + header + "".join(
        f'"{a}","{s}","{w}","{n}","{l}","{x}"\n' for a, s, w, n, l, x in rows)
    p = Profile(text)
    assert p.warps == 4 and p.kernel == "k", (p.warps, p.kernel)
    assert p.loops() == [(0x30, 0x50)], p.loops()
    regs = [(lo, hi, len(part)) for lo, hi, part in p.regions()]
    assert regs == [(0, 0x30, 3), (0x30, 0x50, 2), (0x50, 0x60, 1)], regs
    out = p.report()
    assert "10.0 passes a warp" in out and "HMMA 1" in out and "long_sb 9" in out, out
    for bad in ("", '"Address","Source"\n"0x0","NOP"\n'):
        try:
            Profile(bad)
        except ValueError:
            continue
        raise AssertionError("accepted a bad export")
    print("sass_profile selftest: ok")


def main(argv):
    ap = tool_cli.parser(__doc__, "check the parser on a built-in export")
    ap.add_argument("csv", nargs="?", help="ncu --page source --print-source sass --csv output")
    ap.add_argument("--cuts", help="region bounds, byte offsets from the kernel's start (0x3840,0x75a0)")
    ap.add_argument("--top", type=int, default=15, help="most sampled instructions to list")
    a = tool_cli.parse(ap, argv, selftest, "csv", "the CSV export")
    if a is None:
        return 0
    try:
        with open(a.csv, encoding="utf-8", errors="replace") as f:
            p = Profile(f.read())
        cuts = [int(c, 0) for c in a.cuts.split(",")] if a.cuts else None
    except (OSError, ValueError) as e:
        print(f"sass_profile: {a.csv}: {e}", file=sys.stderr)
        return 2
    print(p.report(cuts, a.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
