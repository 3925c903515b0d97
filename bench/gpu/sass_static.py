#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Static SASS of the GPU kernels, read on a machine without a GPU: instructions a kernel, by
opcode, in an address range, and the difference between two builds.

    bash scripts/sass.sh plugins/gpu/attn_prefill.hip main.sass      # the listing (nvdisasm -c)
    python3 bench/gpu/sass_static.py main.sass -k 'prefill_kernelILi128ELb1ELb0ELb0ELb1E'
    python3 bench/gpu/sass_static.py main.sass -k REGEX --opcodes [--range 0x17090:0x17ed0]
    python3 bench/gpu/sass_static.py --diff main.sass branch.sass [-k REGEX] [--opcodes]
    python3 bench/gpu/sass_static.py --selftest

-k selects kernels by a regular expression on their (mangled) names: every kernel when
absent. Without --opcodes each selected kernel prints its instruction count (--loops: and its
backward branches, each loop body's range and instructions); with --opcodes the
opcodes (the first word without its modifiers: LDGSTS.E.BYPASS.128 counts as LDGSTS) and how
many of each. --range LO:HI (byte addresses of the listing, hexadecimal, inclusive) keeps the
instructions of one region, such as one loop's body: a static count, what one pass of that
loop issues, not what the kernel executes (that is bench/gpu/sass_profile.py's, on Nsight
Compute's counters). --diff prints each selected kernel's count in A and in B and B - A, and
with --opcodes the opcodes whose counts differ. This is how version 35 of bench/RESULTS.md
counted the prefill producer's instructions a tile without a device."""
import collections
import re
import sys

import tool_cli  # bench/gpu/tool_cli.py (the script's folder is on sys.path)

_SECTION = re.compile(r"\s+\.section\s+\.text\.(\S+?),")
_INSN = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"(\.L_x_\d+):")
_TARGET = re.compile(r"BRA(?:\.\S+)?\s.*`\((\.L_x_\d+)\)")


def kernels(text, labels=None):
    """{mangled name: [(address, instruction text), ...]} of an `nvdisasm -c` listing; the
    branch labels' addresses ({kernel: {label: address}}) into `labels` if given."""
    out, cur, pending = {}, None, []
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            cur = out.setdefault(m.group(1), [])
            name, pending = m.group(1), []
            continue
        m = _LABEL.match(line)
        if m and cur is not None:
            pending.append(m.group(1))
            continue
        m = _INSN.match(line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
            if labels is not None:
                for lab in pending:
                    labels.setdefault(name, {})[lab] = cur[-1][0]
            pending = []
    if not out:
        raise ValueError("no kernel sections: not an `nvdisasm -c` listing")
    return out


def loops(insns, labels):
    """The backward branches of one kernel: [(target, branch address, instructions from the
    target to the branch)], in address order: the bodies of its loops, nested ones apart."""
    out = []
    for a, t in insns:
        m = _TARGET.search(t)
        if m and m.group(1) in labels and labels[m.group(1)] <= a:
            lo = labels[m.group(1)]
            out.append((lo, a, sum(1 for b, _ in insns if lo <= b <= a)))
    return out


def opcode(insn):
    """LDGSTS of '@!P0 LDGSTS.E.BYPASS.128 [R1], [R2.64]'."""
    words = insn.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def select(ks, pattern, none_ok=False):
    """The kernels whose names match `pattern` (all for None); an error if none does."""
    names = sorted(n for n in ks if pattern is None or re.search(pattern, n))
    if not names and not none_ok:
        raise ValueError(f"no kernel matches '{pattern}'")
    return names


def in_range(insns, rng):
    if rng is None:
        return insns
    lo, hi = rng
    return [(a, t) for a, t in insns if lo <= a <= hi]


def counts(insns):
    return collections.Counter(opcode(t) for _, t in insns)


def parse_range(text):
    """'0x10:0x20' -> (16, 32); a ValueError naming the text otherwise."""
    try:
        lo, hi = (int(x, 16) for x in text.split(":"))
    except ValueError:
        raise ValueError(f"--range '{text}': give LO:HI, hexadecimal byte addresses") from None
    if hi < lo:
        raise ValueError(f"--range '{text}': HI is below LO")
    return lo, hi


def report(ks, pattern, rng, by_opcode, labels=None):
    lines = []
    for n in select(ks, pattern):
        insns = in_range(ks[n], rng)
        lines.append(f"{len(insns):7d}  {n}")
        if labels is not None:
            for lo, hi, count in loops(insns, labels.get(n, {})):
                lines.append(f"{count:9d}  loop {lo:#x}:{hi:#x}")
        if by_opcode:
            for op, c in counts(insns).most_common():
                lines.append(f"{c:9d}  {op}")
    return lines


def diff(ka, kb, pattern, rng, by_opcode):
    lines = [f"{'A':>7} {'B':>7} {'B - A':>7}  kernel"]
    names = sorted(set(select(ka, pattern, True)) | set(select(kb, pattern, True)))
    if not names:
        raise ValueError(f"no kernel matches '{pattern}'")
    for n in names:
        a, b = in_range(ka.get(n, []), rng), in_range(kb.get(n, []), rng)
        sa = str(len(a)) if n in ka else "-"
        sb = str(len(b)) if n in kb else "-"
        d = f"{len(b) - len(a):+d}" if n in ka and n in kb else ""
        lines.append(f"{sa:>7} {sb:>7} {d:>7}  {n}")
        if by_opcode and n in ka and n in kb:
            ca, cb = counts(a), counts(b)
            for op in sorted(set(ca) | set(cb), key=lambda o: (-(abs(cb[o] - ca[o])), o)):
                if ca[op] != cb[op]:
                    lines.append(f"{ca[op]:>15} {cb[op]:>7} {cb[op] - ca[op]:+7d}  {op}")
    return lines


_SAMPLE_A = """
//--------------------- .text.kern_a --------------------------
	.section	.text.kern_a,"ax",@progbits
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
        /*0010*/              @!P0 LDGSTS.E.BYPASS.128 [R2], [R4.64], P1 ;
        /*0020*/                   LDGSTS.E.BYPASS.128 [R2+0x800], [R4.64+0x80] ;
        /*0030*/                   IADD3 R4, P5, R12, UR26, RZ ;
.L_x_7:
        /*0040*/                   IADD3 R4, R4, 0x1, RZ ;
        /*0050*/              @P0 BRA `(.L_x_7) ;
        /*0060*/                   EXIT ;
//--------------------- .text.kern_b --------------------------
	.section	.text.kern_b,"ax",@progbits
        /*0000*/                   MUFU.EX2 R3, R3 ;
        /*0010*/                   EXIT ;
"""
_SAMPLE_B = _SAMPLE_A.replace(
    "        /*0030*/                   IADD3 R4, P5, R12, UR26, RZ ;\n", "")


def selftest():
    ka, kb = kernels(_SAMPLE_A), kernels(_SAMPLE_B)
    assert sorted(ka) == ["kern_a", "kern_b"] and len(ka["kern_a"]) == 7, ka
    labels = {}
    kernels(_SAMPLE_A, labels)
    assert labels == {"kern_a": {".L_x_7": 0x40}}, labels
    assert loops(ka["kern_a"], labels["kern_a"]) == [(0x40, 0x50, 2)]
    assert report(ka, "kern_a", None, False, labels) == ["      7  kern_a",
                                                         "        2  loop 0x40:0x50"]
    assert opcode("@!P0 LDGSTS.E.BYPASS.128 [R2], [R4.64], P1") == "LDGSTS"
    assert counts(ka["kern_a"])["LDGSTS"] == 2
    assert report(ka, "kern_a", None, False) == ["      7  kern_a"]
    assert report(ka, "_a$", (0x10, 0x20), True) == ["      2  kern_a", "        2  LDGSTS"]
    d = diff(ka, kb, None, None, True)
    assert d[1].split() == ["7", "6", "-1", "kern_a"], d
    assert d[2].split() == ["2", "1", "-1", "IADD3"], d
    assert d[3].split() == ["2", "2", "+0", "kern_b"], d
    for bad, why in (("", "not an `nvdisasm -c` listing"),):
        try:
            kernels(bad)
            raise AssertionError("accepted an empty listing")
        except ValueError as e:
            assert why in str(e), e
    for bad in ("x", "0x20:0x10", "10"):
        try:
            parse_range(bad)
            raise AssertionError(f"accepted --range {bad}")
        except ValueError as e:
            assert bad in str(e), e
    try:
        select(ka, "nothing")
        raise AssertionError("selected nothing silently")
    except ValueError as e:
        assert "nothing" in str(e)
    print("sass_static selftest: ok")


def main(argv):
    ap = tool_cli.parser(__doc__, "check the reader on a built-in listing")
    ap.add_argument("listing", nargs="*", help="nvdisasm -c output (two with --diff)")
    ap.add_argument("-k", "--kernel", help="regular expression on the kernels' mangled names")
    ap.add_argument("--opcodes", action="store_true", help="counts by opcode")
    ap.add_argument("--range", help="LO:HI, hexadecimal byte addresses of the listing")
    ap.add_argument("--diff", action="store_true", help="compare two listings: A B")
    ap.add_argument("--loops", action="store_true",
                    help="each kernel's backward branches: the loop bodies' ranges and sizes")
    args = tool_cli.parse(ap, argv, selftest, "listing", "an nvdisasm listing")
    if args is None:
        return 0
    if len(args.listing) != (2 if args.diff else 1):
        ap.error("give one listing, or two with --diff")
    try:
        rng = parse_range(args.range) if args.range else None
        ks, labels = [], {}
        for path in args.listing:
            with open(path) as f:
                try:
                    ks.append(kernels(f.read(), labels))
                except ValueError as e:
                    raise ValueError(f"{path}: {e}") from None
        lines = (diff(ks[0], ks[1], args.kernel, rng, args.opcodes) if args.diff
                 else report(ks[0], args.kernel, rng, args.opcodes, labels if args.loops else None))
    except (OSError, ValueError, re.error) as e:
        print(f"sass_static: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
