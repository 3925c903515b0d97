# SPDX-License-Identifier: Apache-2.0
"""The anchored source edits of the timestamp scripts (mtp_stamps_apply.py,
prefill_stamps_apply.py): the file to edit (argv[1], else the script's kernel),
each edit replacing an anchor that must occur exactly once, and nothing written
until every anchor has been found."""
import sys


class Patch:
    def __init__(self, default_path):
        self.path = sys.argv[1] if len(sys.argv) > 1 else default_path
        self.text = open(self.path).read()

    def rep(self, old, new):
        n = self.text.count(old)
        assert n == 1, (old[:70], n)
        self.text = self.text.replace(old, new, 1)

    def write(self):
        open(self.path, 'w').write(self.text)
