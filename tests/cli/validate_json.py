#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""validate_json.py -- every `attnreg ... --json` document against
docs/attnreg.schema.json (python3-jsonschema).

Checked: the stdout of every CLI baseline whose command has --json (the
cli.* tests pin those to the real output), plus documents this script makes
the built `attnreg` write live: `verify --json`, `run --json` on .npy inputs
it writes, `check --json` and `devices --json`, and a usage error of every
command. Each must be one valid UTF-8 JSON object that the schema accepts;
an "error" member must carry the process's exit code.

  validate_json.py SCHEMA ATTNREG CONF_DIR BASELINES_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("validate_json.py: python3-jsonschema is missing (scripts/setup-deps.sh installs it)")


def check(validator, what, raw, exit_code):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"{what}: stdout is not UTF-8: {e}"]
    try:
        doc = json.loads(text)
    except ValueError as e:
        return [f"{what}: stdout is not one JSON document: {e}"]
    problems = [f"{what}: {'/'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}"
                for e in validator.iter_errors(doc)]
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        if doc["error"].get("exit_code") != exit_code:
            problems.append(f"{what}: error.exit_code {doc['error'].get('exit_code')} "
                            f"but the process exited {exit_code}")
    elif exit_code not in (0, 1, 8):
        # 1 (check found problems) and 8 (verify mismatch) are results, not errors.
        problems.append(f"{what}: exit {exit_code} without an error member")
    return problems


def baselines(validator, folder):
    problems, count = [], 0
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        command = data.split(b"\n", 1)[0].split()
        if b"--json" not in command:
            continue
        stdout = data.split(b"--- stdout\n", 1)[1].split(b"--- stderr\n", 1)[0]
        exit_code = int(data.rsplit(b"--- exit ", 1)[1].split()[0])
        problems += check(validator, f"baseline {name}", stdout, exit_code)
        count += 1
    return problems, count


def npy(path, descr, shape, values):
    fmt = {"<f4": "f", "<i4": "i"}[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def live(validator, attnreg, conf):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNREG_")}
    base = ["--conf", conf, "--conf-only"]
    shape = ["--q-heads", "4", "--kv-heads", "2", "--head-dim", "16", "--q-dtype", "f32",
             "--max-q-len", "2", "--max-kv-len", "20"]
    runs = [["verify", *base, *shape, "--seed", "1"], ["verify", *base, *shape, "--lse"],
            ["check", *base], ["devices", *base],
            ["select", *base, *shape], ["explain", *base, *shape], ["list", *base]]
    for cmd in ["list", "explain", "select", "plan", "check", "devices", "run", "verify"]:
        runs.append([cmd, "--no-such-flag"])
    runs.append(["no-such-command"])
    with tempfile.TemporaryDirectory() as tmp:
        # run: one sequence, 2 new tokens of 20 keys, pages of 16.
        npy(f"{tmp}/q.npy", "<f4", (2, 4, 16), [((i * 7) % 11) / 11.0 for i in range(2 * 4 * 16)])
        kv = 2 * 16 * 2 * 16
        npy(f"{tmp}/k.npy", "<f4", (2, 16, 2, 16), [((i * 5) % 13) / 13.0 for i in range(kv)])
        npy(f"{tmp}/v.npy", "<f4", (2, 16, 2, 16), [((i * 3) % 7) / 7.0 for i in range(kv)])
        npy(f"{tmp}/bt.npy", "<i4", (1, 2), [1, 0])
        npy(f"{tmp}/cu.npy", "<i4", (2,), [0, 2])
        npy(f"{tmp}/sk.npy", "<i4", (1,), [20])
        runs.append(["run", *base, *shape, "--q", f"{tmp}/q.npy", "--k-cache", f"{tmp}/k.npy",
                     "--v-cache", f"{tmp}/v.npy", "--block-table", f"{tmp}/bt.npy",
                     "--cu-seqlens-q", f"{tmp}/cu.npy", "--seqused-k", f"{tmp}/sk.npy",
                     "--out", f"{tmp}/out.npy"])
        runs.append(["run", *base, *shape, "--q", f"{tmp}/missing.npy", "--k-cache",
                     f"{tmp}/k.npy", "--v-cache", f"{tmp}/v.npy", "--block-table", f"{tmp}/bt.npy",
                     "--cu-seqlens-q", f"{tmp}/cu.npy", "--seqused-k", f"{tmp}/sk.npy",
                     "--out", f"{tmp}/out.npy"])
        problems = []
        for args in runs:
            p = subprocess.run([attnreg, *args, "--json"], capture_output=True, env=env)
            problems += check(validator, "live `attnreg " + " ".join(args[:1]) + " ... --json`"
                              f" (exit {p.returncode})", p.stdout, p.returncode)
    return problems, len(runs)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    schema_path, attnreg, conf, folder = sys.argv[1:]
    with open(schema_path) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    problems, n_base = baselines(validator, folder)
    more, n_live = live(validator, attnreg, conf)
    problems += more
    for p in problems:
        print(p)
    print(f"validate_json: {n_base} baseline and {n_live} live documents, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
