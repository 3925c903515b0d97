# SPDX-License-Identifier: Apache-2.0
"""The command line the bench's self-checking tools share (sass_profile.py, ab_table.py,
acceptance.py): the module docstring as help (its first paragraph the description, the rest
the epilog, layout kept) and a --selftest flag that checks the tool on built-in input."""
import argparse


def parser(doc, selftest_help):
    """An ArgumentParser for a tool whose module docstring is `doc`."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=doc.split("\n\n", 1)[1] if "\n\n" in doc else None)
    ap.add_argument("--selftest", action="store_true", help=selftest_help)
    return ap
