#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""AMD code-object check: read the kernels' metadata out of the
objects amd_compile_check.sh built (the .hip_fatbin offload bundle of each
object, one code object per gfx arch, its NT_AMDGPU_METADATA note) and
compare each kernel with the launch-plan table (amd_plan_dump, built from
plugins/common/attn_launch_plan.h) and the arch's limits:

  - every kernel in a code object has an entry in the plan table (a kernel
    the table does not know could be launched with sizes nobody checked);
  - every kernel the plans launch is in the code object of its arch;
  - static LDS (group_segment_fixed_size) equals the plan's static bytes,
    and static + the plan's dynamic LDS fit the arch's LDS per workgroup;
  - the VGPRs a wave allocates (arch + AGPRs, one file on gfx90a and later)
    fit the arch's registers per lane, the metadata's
    max_flat_workgroup_size admits the plan's threads;
  - scratch (private_segment_fixed_size, spills) is reported.

usage: amd_code_objects.py OBJECT_DIR PLAN_DUMP_EXECUTABLE [--json OUT]
Needs llvm-objcopy-22, clang-offload-bundler-22, llvm-readelf-22 and
llvm-cxxfilt-22 (Debian llvm-22, clang-tools-22).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TOOLS = {"objcopy": "llvm-objcopy-22", "bundler": "clang-offload-bundler-22",
         "readelf": "llvm-readelf-22", "cxxfilt": "llvm-cxxfilt-22"}
KEYS = ("name", "group_segment_fixed_size", "private_segment_fixed_size", "vgpr_count",
        "agpr_count", "sgpr_count", "max_flat_workgroup_size", "vgpr_spill_count",
        "sgpr_spill_count")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def kernels_of(code_object):
    """The kernels of one code object: a dict per kernel of the KEYS found."""
    notes = run(TOOLS["readelf"], "--notes", code_object)
    kernels, cur = [], None
    for line in notes.splitlines():
        m = re.match(r"^  - \.(\w+):\s*(.*)$", line)
        if m:  # a new kernel entry (indent 2)
            cur = {}
            kernels.append(cur)
        else:
            m = re.match(r"^    \.(\w+):\s*(.*)$", line)  # a key of the kernel (indent 4)
        if m and cur is not None and m.group(1) in KEYS:
            v = m.group(2).strip()
            cur[m.group(1)] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return [k for k in kernels if "name" in k]


def demangle(names):
    out = run(TOOLS["cxxfilt"], *names).splitlines()
    # "void attn_generic_kernel<4, 128, 2>(attn_kparams)" -> "attn_generic_kernel<4, 128, 2>"
    res = []
    for d in out:
        d = re.sub(r"^void\s+", "", d)
        d = re.sub(r"\(.*\)$", "", d)
        res.append(d)
    return res


def code_objects(obj_dir, tmp):
    """(arch, path) of every AMD code object in the fat objects of obj_dir."""
    found = []
    for f in sorted(os.listdir(obj_dir)):
        if not f.endswith(".o"):
            continue
        obj = os.path.join(obj_dir, f)
        fat = os.path.join(tmp, f + ".fatbin")
        try:
            run(TOOLS["objcopy"], "--dump-section", ".hip_fatbin=" + fat, obj,
                os.path.join(tmp, "discard.o"))
        except subprocess.CalledProcessError:
            continue  # no device code in this object
        for target in run(TOOLS["bundler"], "--list", "--type=o", "--input=" + fat).split():
            m = re.search(r"amdgcn-amd-amdhsa--(gfx\w+)$", target)
            if not m:
                continue
            co = os.path.join(tmp, "%s.%s.co" % (f, m.group(1)))
            run(TOOLS["bundler"], "--unbundle", "--type=o", "--input=" + fat,
                "--targets=" + target, "--output=" + co)
            found.append((m.group(1), f, co))
    return found


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    obj_dir, dump_exe = argv[1], argv[2]
    json_out = argv[argv.index("--json") + 1] if "--json" in argv else None
    plan = {}
    for line in run(dump_exe).splitlines():
        e = json.loads(line)
        plan[(e["arch"], e["kernel"])] = e
    failures, rows = [], []
    seen = set()
    with tempfile.TemporaryDirectory() as tmp:
        for arch, obj, co in code_objects(obj_dir, tmp):
            ks = kernels_of(co)
            for k, name in zip(ks, demangle([k["name"] for k in ks])):
                e = plan.get((arch, name))
                static = k.get("group_segment_fixed_size", 0)
                # gfx90a and later (gfx942, gfx950) have one VGPR file: the
                # metadata's vgpr_count is already the total a wave allocates
                # (arch VGPRs rounded up to 4, plus AGPRs).
                regs = k.get("vgpr_count", 0)
                row = {"arch": arch, "object": obj, "kernel": name, "static_lds": static,
                       "vgprs": k.get("vgpr_count", 0), "agprs": k.get("agpr_count", 0),
                       "sgprs": k.get("sgpr_count", 0),
                       "scratch": k.get("private_segment_fixed_size", 0),
                       "spills": k.get("vgpr_spill_count", 0) + k.get("sgpr_spill_count", 0),
                       "max_flat_workgroup_size": k.get("max_flat_workgroup_size", 0)}
                rows.append(row)
                if e is None:
                    failures.append("%s %s: in the code object but not in the launch-plan table"
                                    % (arch, name))
                    continue
                seen.add((arch, name))
                row.update(planned=e["planned"], dynamic_lds=e["dynamic_bytes"],
                           limit=e["shared_limit"])
                if static != e["static_bytes"]:
                    failures.append("%s %s: static LDS %d, the plan counts %d"
                                    % (arch, name, static, e["static_bytes"]))
                if e["planned"] and static + e["dynamic_bytes"] > e["shared_limit"]:
                    failures.append("%s %s: %d + %d bytes of LDS, %s has %d"
                                    % (arch, name, static, e["dynamic_bytes"], arch,
                                       e["shared_limit"]))
                if regs > e["max_registers"]:
                    failures.append("%s %s: %d VGPRs (arch + AGPRs), %s has %d"
                                    % (arch, name, regs, arch, e["max_registers"]))
                if row["max_flat_workgroup_size"] and row["max_flat_workgroup_size"] < e["threads"]:
                    failures.append("%s %s: launched with %d threads, compiled for at most %d"
                                    % (arch, name, e["threads"], row["max_flat_workgroup_size"]))
    for (arch, name), e in sorted(plan.items()):
        if e["planned"] and (arch, name) not in seen:
            failures.append("%s %s: the plans launch it, but no code object holds it"
                            % (arch, name))
    print("%-7s %-34s %7s %8s %7s %5s %5s %5s %7s %s" % (
        "arch", "kernel", "planned", "lds", "limit", "vgpr", "agpr", "sgpr", "scratch", "spills"))
    for r in sorted(rows, key=lambda r: (r["arch"], r["kernel"])):
        lds = r["static_lds"] + r.get("dynamic_lds", 0)
        print("%-7s %-34s %7s %8d %7s %5d %5d %5d %7d %d" % (
            r["arch"], r["kernel"], "yes" if r.get("planned") else "no", lds,
            r.get("limit", "?"), r["vgprs"], r["agprs"], r["sgprs"], r["scratch"], r["spills"]))
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"kernels": rows, "failures": failures}, f, indent=1)
    if not rows:
        failures.append("no AMD kernels found in %s" % obj_dir)
    for f in failures:
        print("amd-code-objects: FAIL: " + f, file=sys.stderr)
    if failures:
        return 1
    print("amd-code-objects: OK: %d kernels in %d code objects match the launch-plan table"
          % (len(rows), len({(r["arch"], r["object"]) for r in rows})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
