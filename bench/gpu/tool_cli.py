# SPDX-License-Identifier: Apache-2.0
"""The command line the bench's self-checking tools share (sass_profile.py, ab_table.py,
acceptance.py, sass_static.py): the module docstring as help (its first paragraph the
description, the rest the epilog, layout kept), a --selftest flag that checks the tool on
built-in input, and the error when neither it nor the tool's input is given."""
import argparse


def parser(doc, selftest_help):
    """An ArgumentParser for a tool whose module docstring is `doc`."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=doc.split("\n\n", 1)[1] if "\n\n" in doc else None)
    ap.add_argument("--selftest", action="store_true", help=selftest_help)
    return ap


def parse(ap, argv, selftest, needed, what):
    """The parsed arguments, or None once --selftest has run; an argparse error (exit 2)
    when the argument `needed` (its dest) is empty: "give WHAT (or --selftest)"."""
    args = ap.parse_args(argv)
    if args.selftest:
        selftest()
        return None
    if not getattr(args, needed):
        ap.error(f"give {what} (or --selftest)")
    return args
