#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Holds the files that copy attnreg's lists to the X-macros they come from.

The lists (commands, flags per command with how each value is read, dtypes,
log levels, exit codes and the statuses behind them, conf keys, shape
fields, phases, layer kinds) are printed by attnreg_lists, a program built
from the same X-macros as the library and the CLI. Each mode checks one kind
of copy and names every missing or extra item with the file (and line):

  completion  sources scripts/attnreg.bash-completion in a bare bash and asks
              it what it offers: the words after `attnreg`, each command's
              flags, and each flag's values (dtypes, log levels, files,
              folders, the backends and archs `attnreg list --json` names,
              nothing for numbers, the flags again after a switch).
  man         docs/man/attnreg.1 and attnreg.conf.5: the lists marked in them,
              every flag and dtype named anywhere in them, the INI example.
  docs        README.md, cli/README.md, docs/*.md: the lists marked in them,
              their INI examples; docs/attnreg.schema.json's enums and shape.
  help        `attnreg CMD --help` names exactly the flags CMD reads.

The files are not generated: the man pages are prose around the lists, the
completion script is code that the shell runs and that packagers and readers
take from the tree, and the installed files are the committed ones. The check
keeps them exact instead, and says what to add or remove where.

A list is marked where it is written, invisibly:

  roff      .\\" attnreg-list: NAME [part]   (a line of its own)
  markdown  <!-- attnreg-list: NAME [part] -->

and what follows is the list. A roff .TP list (to the next .SH, .SS, .RE,
.PP or .\\" attnreg-end) or a markdown table: the items are the first word
of each entry's head (its flags, for flag lists), and a flag table's
`commands` column names the commands that read each flag (or says all).
Else a text: roff's next text line, markdown's text from the marker to
<!-- attnreg-end --> or to the end of the paragraph; the items are the
first words between its commas and bars ("and" and "or" dropped), or all
its words when it has none. An exit-codes entry also names its statuses
(ATTN_...): exactly those that exit with its code. Several markers may show
one list; with `part`, each shows some of it and together they show all of
it.
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

FLAG_RE = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
STATUS_RE = re.compile(r"\bATTN_[A-Z0-9_]+\b")
DTYPE_LIKE_RE = re.compile(r"\b(?:b?f(?:8|16|32|64)|fp[468]_[a-z0-9]+)\b")
ROFF_MARKER_RE = re.compile(r'^\.\\"\s*attnreg-list:\s*(\S+)(\s+part)?\s*$')
ROFF_END_RE = re.compile(r'^\.\\"\s*attnreg-end\s*$')
MD_MARKER_RE = re.compile(r"<!--\s*attnreg-list:\s*(\S+)(\s+part)?\s*-->(.*)$")
MD_END_RE = re.compile(r"<!--\s*attnreg-end\s*-->")

# Which lists each file must show (a marker that is lost must not silence
# the check); other docs/*.md are checked where they mark a list.
REQUIRED = {
    "docs/man/attnreg.1": [
        "commands", "shape-flags", "target-flags", "common-flags", "own-flags:list",
        "own-flags:plan", "own-flags:run", "own-flags:verify", "dtypes", "log-levels",
        "exit-codes",
    ],
    "docs/man/attnreg.conf.5": [
        "conf:plugin", "conf:narrow", "conf:registry", "conf:fallback", "fallback-fields",
        "dtypes",
    ],
    "cli/README.md": [
        "commands", "shape-flags", "target-flags", "own-flags:plan", "common-flags", "dtypes",
        "log-levels", "exit-codes",
    ],
    "README.md": ["shape-flags", "dtypes", "exit-codes"],
    "docs/DESIGN.md": ["conf:narrow", "fallback-fields"],
    "docs/JSON.md": ["shape-fields"],
}
# The keys an INI example may use in each section (params: any).
INI_SECTIONS = {"plugin": "conf:plugin", "narrow": "conf:narrow",
                "registry": "conf:registry", "fallback": "conf:fallback"}


class Problems:
    def __init__(self):
        self.lines = []

    def add(self, where, text):
        self.lines.append(f"{where}: {text}")

    def compare(self, where, what, found, expected, part=False):
        """Reports the items of `found` no table holds and, unless part,
        the table's items `found` lacks."""
        extra = sorted(set(found) - set(expected))
        missing = [] if part else [item for item in expected if item not in found]
        if missing:
            self.add(where, f"{what}: missing {', '.join(missing)} (the tables have "
                     f"{'it' if len(missing) == 1 else 'them'})")
        if extra:
            self.add(where, f"{what}: extra {', '.join(extra)} (not in the tables)")

    def report(self, mode):
        if self.lines:
            print("\n".join(self.lines))
            print(f"{mode}: {len(self.lines)} problem(s); the lists come from the X-macros "
                  f"(attn_types.h, attnreg.h, cli/cli_lists.h, core/internal.h)")
            return 1
        print(f"{mode}: every list matches the tables")
        return 0


def read_lists(program):
    out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    lists = collections.OrderedDict()
    for line in out.splitlines():
        fields = line.split("\t")
        lists.setdefault(fields[0], []).append(fields[1:])
    return lists


def items(lists, name):
    return [row[0] for row in lists.get(name, [])]


def all_flags(lists):
    flags = set(items(lists, "main-words"))
    for name, rows in lists.items():
        if name.startswith("flags:"):
            flags.update(row[0] for row in rows)
    return {f for f in flags if f.startswith("--")}


# ---- reading the marked lists ---------------------------------------------

def roff_text(line):
    """A roff line as the reader sees it, near enough to find words in."""
    line = re.sub(r"^\.(?:B|I|BR|BI|IB|RB|IR|RI|SM|SB)\s+", "", line)
    line = re.sub(r"\\f[BIRP]|\\&|\\c", "", line)
    line = line.replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\")
    return line.replace('"', "")


def md_text(line):
    return line.replace("`", "").replace("**", "")


def words_of(text, entry):
    """The items of a head (entry) or a line of text: the first word of each
    part between commas and bars; a line without those, every word. A head's
    " = VALUE" is no item."""
    if entry:
        text = re.split(r"\s=(?:\s|$)", text)[0]
    parts = [p.strip() for p in re.split(r"[,|]", text)]
    parts = [re.sub(r"^(?:and|or)\s+", "", p) for p in parts if p]
    if not entry and len(parts) == 1:
        parts = parts[0].split()
    out = []
    for p in parts:
        word = p.split()[0] if p.split() else ""
        word = word.strip(".:;()[]\"'")
        if word and word not in ("and", "or"):
            out.append(word)
    return out


class Block:
    """One marked list: where, which, and its entries (head, body) or its
    line of text (entry False)."""

    def __init__(self, path, line, name, part):
        self.path, self.line, self.name, self.part = path, line, name, part
        self.entries = []  # (line, head, body, markdown cells or None)
        self.entry = False
        self.header = None  # a markdown table's header cells


def roff_blocks(path, lines):
    blocks = []
    for i, line in enumerate(lines):
        m = ROFF_MARKER_RE.match(line)
        if not m:
            continue
        b = Block(path, i + 1, m.group(1), bool(m.group(2)))
        j = i + 1
        while j < len(lines) and lines[j].startswith('.\\"'):
            j += 1
        if j < len(lines) and lines[j].startswith(".TP"):
            b.entry = True
            while j < len(lines):
                text = lines[j]
                if re.match(r"\.(SH|SS|RE|PP|LP|P)\b", text) or ROFF_END_RE.match(text):
                    break
                if text.startswith(".TP") and j + 1 < len(lines):
                    b.entries.append([j + 2, roff_text(lines[j + 1]), "", None])
                    j += 2
                    continue
                if b.entries and not text.startswith('.\\"'):
                    b.entries[-1][2] += " " + roff_text(text)
                j += 1
        elif j < len(lines):
            b.entries.append([j + 1, roff_text(lines[j]), "", None])
        blocks.append(b)
    return blocks


def md_blocks(path, lines):
    blocks = []
    for i, line in enumerate(lines):
        m = MD_MARKER_RE.search(line)
        if not m:
            continue
        b = Block(path, i + 1, m.group(1), bool(m.group(2)))
        rest = m.group(3)
        if not rest.strip() and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("|"):
            b.entry = True
            j = i + 1
            rows = []
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append((j + 1, [c.strip() for c in lines[j].strip().strip("|").split("|")]))
                j += 1
            b.header = [md_text(c) for c in rows[0][1]]
            for n, cells in rows[1:]:
                if all(re.fullmatch(r":?-+:?", c) for c in cells):
                    continue
                cells = [md_text(c) for c in cells]
                b.entries.append([n, cells[0], " ".join(cells[1:]), cells])
        else:
            # The text after the marker, on to <!-- attnreg-end --> or to
            # the end of the paragraph.
            text, j = rest, i
            while not MD_END_RE.search(text):
                j += 1
                if j >= len(lines) or not lines[j].strip():
                    break
                text += " " + lines[j]
            end = MD_END_RE.search(text)
            b.entries.append([i + 1, md_text(text[:end.start()] if end else text), "", None])
        blocks.append(b)
    return blocks


def check_commands_column(problems, lists, rel, b):
    """A flag table's `commands` column: the commands that read each flag
    ("all": every one)."""
    commands = items(lists, "commands")
    for line, head, body, cells in b.entries:
        flags = FLAG_RE.findall(head)
        if not flags or len(cells) < 2:
            continue
        named = commands if cells[1].strip() == "all" else words_of(cells[1], True)
        readers = [c for c in commands if flags[0] in items(lists, "flags:" + c)]
        problems.compare(f"{rel}:{line}", f"the commands that read {flags[0]}", named, readers)


def check_blocks(problems, lists, rel, blocks):
    shown = collections.defaultdict(list)
    for b in blocks:
        where = f"{rel}:{b.line}"
        if b.name not in lists and not b.name.startswith("own-flags:"):
            problems.add(where, f"marker names '{b.name}', which no table prints")
            continue
        expected = items(lists, b.name)
        found = []
        for line, head, body, cells in b.entries:
            if "flags" in b.name:
                found += FLAG_RE.findall(head)
            elif b.name == "exit-codes" and not b.entry:
                found += [p.split()[0] for p in head.split(",") if p.split()]
            else:
                found += words_of(head, b.entry)
        if b.name == "exit-codes" and b.entry:
            statuses = {row[0]: row[2:] for row in lists["exit-codes"]}
            for line, head, body, cells in b.entries:
                code = head.split()[0] if head.split() else ""
                if code in statuses:
                    problems.compare(f"{rel}:{line}", f"exit code {code}'s statuses",
                                     STATUS_RE.findall(head + " " + body), statuses[code])
        problems.compare(where, b.name, found, expected, part=b.part)
        if "flags" in b.name and b.header and len(b.header) > 1 and b.header[1] == "commands":
            check_commands_column(problems, lists, rel, b)
        if b.part:
            shown[b.name] += found
        else:
            shown[b.name] = expected
    for name, found in shown.items():
        missing = [item for item in items(lists, name) if item not in found]
        if missing:
            problems.add(rel, f"{name}: every part lacks {', '.join(missing)}")
    return set(shown)


def check_required(problems, rel, shown):
    for name in REQUIRED.get(rel, []):
        if name not in shown:
            problems.add(rel, f"no marked list '{name}' (attnreg-list: {name})")


def check_ini(problems, lists, rel, lines, start_re, end_re, text=lambda s: s):
    """Every key of an INI example is one its section may hold."""
    inside, section = False, None
    for i, line in enumerate(lines):
        if not inside:
            inside = bool(start_re.match(line))
            section = None
            continue
        if end_re.match(line):
            inside = False
            continue
        line = text(line).split(";")[0].strip()
        m = re.match(r"\[([a-z]+)(?::[^\]]*)?\]", line)
        if m:
            section = m.group(1)
            if section not in INI_SECTIONS and section != "params":
                problems.add(f"{rel}:{i + 1}", f"INI example: unknown section [{section}]")
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
        if m and section in INI_SECTIONS and m.group(1) not in items(lists,
                                                                     INI_SECTIONS[section]):
            problems.add(f"{rel}:{i + 1}",
                         f"INI example: '{m.group(1)}' is no key of [{section}] "
                         f"({INI_SECTIONS[section]})")


# ---- modes -----------------------------------------------------------------

def check_man(problems, lists, source):
    known_flags = all_flags(lists)
    dtypes = set(items(lists, "dtypes"))
    for rel in ("docs/man/attnreg.1", "docs/man/attnreg.conf.5"):
        lines = open(os.path.join(source, rel), encoding="utf-8").read().splitlines()
        shown = check_blocks(problems, lists, rel, roff_blocks(rel, lines))
        check_required(problems, rel, shown)
        for i, line in enumerate(lines):
            if line.startswith('.\\"'):
                continue
            text = roff_text(line)
            for flag in FLAG_RE.findall(text):
                if flag not in known_flags:
                    problems.add(f"{rel}:{i + 1}", f"names {flag}, which no command reads")
            for word in DTYPE_LIKE_RE.findall(text):
                if word not in dtypes:
                    problems.add(f"{rel}:{i + 1}", f"names dtype '{word}', which is no dtype")
            m = re.match(r'\.TH .*"attnreg ([0-9.]+)"', line)
            if m and m.group(1) != items(lists, "version")[0]:
                problems.add(f"{rel}:{i + 1}", f".TH says attnreg {m.group(1)}, the version is "
                             f"{items(lists, 'version')[0]}")
        check_ini(problems, lists, rel, lines, re.compile(r"\.nf"), re.compile(r"\.fi"),
                  roff_text)


def check_schema(problems, lists, source):
    rel = "docs/attnreg.schema.json"
    schema = json.load(open(os.path.join(source, rel), encoding="utf-8"))
    enums = {"phase": "phases", "kind": "layer-kinds"}

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                if isinstance(value, dict) and "enum" in value:
                    name = "dtypes" if key.endswith("_dtype") else enums.get(key)
                    if name:
                        problems.compare(f"{rel}: {path}/properties/{key}", f"{name} enum",
                                         value["enum"], items(lists, name))
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for k, value in enumerate(node):
                walk(value, f"{path}/{k}")

    walk(schema, "#")
    shape = schema["definitions"]["shape"]
    fields = items(lists, "shape-fields")
    problems.compare(f"{rel}: #/definitions/shape/properties", "shape-fields",
                     list(shape["properties"]), fields)
    problems.compare(f"{rel}: #/definitions/shape/required", "shape-fields",
                     shape.get("required", []), fields)


def check_docs(problems, lists, source):
    docs = ["README.md", "cli/README.md"] + sorted(
        os.path.relpath(p, source) for p in glob.glob(os.path.join(source, "docs", "*.md")))
    for rel in docs:
        lines = open(os.path.join(source, rel), encoding="utf-8").read().splitlines()
        shown = check_blocks(problems, lists, rel, md_blocks(rel, lines))
        check_required(problems, rel, shown)
        check_ini(problems, lists, rel, lines, re.compile(r"\s*```ini"), re.compile(r"\s*```"))
    check_schema(problems, lists, source)


def check_help(problems, lists, attnreg):
    for cmd in items(lists, "commands"):
        text = subprocess.run([attnreg, cmd, "--help"], check=True, capture_output=True,
                              text=True).stdout
        # "--flag VALUE" is how the SHAPE help spells the form of a value.
        named = set(FLAG_RE.findall(text)) - {"--flag"}
        expected = [f for f in items(lists, "flags:" + cmd) if f != "--help"]
        problems.compare(f"attnreg {cmd} --help", "flags", named, expected)


def installed_names(attnreg):
    """The backends and archs `attnreg list --json` names: what the
    completion offers for --backend and --arch."""
    doc = json.loads(subprocess.run([attnreg, "list", "--json"], capture_output=True,
                                    text=True).stdout)
    backends = [p["backend"] for p in doc["plugins"]]
    archs = sorted({a for p in doc["plugins"] for a in p["archs"]})
    return backends, archs


def check_completion(problems, lists, source, attnreg, bash):
    rel = "scripts/attnreg.bash-completion"
    backends, archs = installed_names(attnreg)
    if not backends or not archs:
        problems.add(rel, f"{attnreg} list --json names no backend or no arch: nothing to hold "
                     "--backend and --arch to")
    expect_words = {"dtype": items(lists, "dtypes"), "level": items(lists, "log-levels"),
                    "backend": backends, "arch": archs, "text": []}
    # (words, what, what it must offer): a list of words, "file" or "dir"
    # (the files or folders there), or ("as", CMD) for what `attnreg CMD`
    # offers (a switch takes no value, so the flags follow it again).
    queries = [(["attnreg", ""], "the words after attnreg", items(lists, "main-words")),
               (["attnreg", "help", ""], "attnreg help", items(lists, "commands"))]
    for cmd in items(lists, "commands"):
        flags = lists.get("flags:" + cmd, [])
        queries.append((["attnreg", cmd, ""], f"attnreg {cmd}'s flags", [f for f, _ in flags]))
        for flag, kind in flags:
            words = ["attnreg", cmd, flag, ""]
            if kind == "none":
                queries.append((words, f"attnreg {cmd} after the switch {flag}", ("as", cmd)))
            else:
                queries.append((words, f"attnreg {cmd} {flag}'s values ({kind})",
                                kind if kind in ("file", "dir") else expect_words[kind]))

    script = ['set +e', 'source "$1"',
              'q() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=();'
              ' _attnreg attnreg "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}";'
              ' echo "@@"; printf "%s\\n" "${COMPREPLY[@]}"; }']
    for words, _, _ in queries:
        script.append("q " + " ".join("'" + w + "'" for w in words))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(attnreg)) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "probe-file.npy"), "w").close()
        os.mkdir(os.path.join(tmp, "probe-dir"))
        out = subprocess.run([bash, "--norc", "--noprofile", "-c", "\n".join(script), "bash",
                              os.path.abspath(os.path.join(source, rel))], cwd=tmp, env=env,
                             capture_output=True, text=True)
    if out.returncode != 0 or out.stderr:
        problems.add(rel, f"bash: exit {out.returncode}: {out.stderr.strip()}")
        return
    replies = [[w for w in r.split("\n") if w] for r in out.stdout.split("@@\n")[1:]]
    if len(replies) != len(queries):
        problems.add(rel, f"{len(replies)} answers to {len(queries)} questions")
        return
    after = {words[1]: got for (words, _, _), got in zip(queries, replies) if len(words) == 3}
    for (words, what, want), got in zip(queries, replies):
        if isinstance(want, tuple):
            problems.compare(rel, what, got, after[want[1]])
        elif want in ("file", "dir"):
            shown, hidden = ("probe-dir", "probe-file.npy") if want == "dir" else (
                "probe-file.npy", None)
            if shown not in got or (hidden and hidden in got):
                problems.add(rel, f"{what}: offers {', '.join(got) or 'nothing'}, not the "
                             f"{want}s there ({shown})")
        else:
            problems.compare(rel, what, got, want)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["completion", "man", "docs", "help"])
    ap.add_argument("--lists", required=True, help="the attnreg_lists program")
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--attnreg", help="the attnreg command (completion, help)")
    ap.add_argument("--bash", default="bash")
    args = ap.parse_args()
    lists = read_lists(args.lists)
    problems = Problems()
    if args.mode == "completion":
        check_completion(problems, lists, args.source, args.attnreg, args.bash)
    elif args.mode == "man":
        check_man(problems, lists, args.source)
    elif args.mode == "docs":
        check_docs(problems, lists, args.source)
    else:
        check_help(problems, lists, args.attnreg)
    return problems.report(args.mode)


if __name__ == "__main__":
    sys.exit(main())
