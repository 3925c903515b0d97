#!/usr/bin/env python3
"""Copies include/*.h to OUT with one int64_t field appended to every
versioned struct (those that start with `uint32_t struct_size;`): exactly the
change the headers' append-only rule allows a future minor version to make.
The growth test builds libattnreg from the copy and runs a host built
against the unchanged headers on it.

    grow_headers.py SRC_INCLUDE_DIR OUT_DIR
"""
import pathlib
import re
import sys

src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
grown = 0
for header in sorted(src.glob("*.h")):
    text = header.read_text()

    def grow(m):
        global grown
        body = m.group(2)
        if not re.match(r"\s*uint32_t struct_size;", body):
            return m.group(0)
        grown += 1
        return "%s%s    int64_t abi_growth_field; /* appended by grow_headers.py */\n} %s;" % (
            m.group(1), body, m.group(3))

    text = re.sub(r"(typedef struct \w+ \{\n)(.*?)\} (\w+);", grow, text, flags=re.S)
    (out / header.name).write_text(text)
if grown < 10:
    sys.exit("grow_headers.py: only %d versioned structs found" % grown)
print("grew %d structs" % grown)
