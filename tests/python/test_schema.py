# SPDX-License-Identifier: Apache-2.0
"""Every dict the package returns in the CLI's vocabulary validates against
docs/attnreg.schema.json (the CLI's documents are checked by
tests/cli/validate_json.py): Shape.to_dict and Selection.to_dict against
the shape and selection definitions, explain() against explain's document,
list() against list's plugins, load_plugin()["abi"] in check's form, and
Plan.to_dict in test_hf_config.py."""
import json
import os
import re

import pytest

import attnreg

jsonschema = pytest.importorskip("jsonschema")
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "attnreg.schema.json")
with open(SCHEMA_PATH) as f:
    SCHEMA = json.load(f)


def problems(doc, definition=None):
    """Schema errors of doc, against the whole schema or one definition."""
    schema = SCHEMA if definition is None else dict(
        SCHEMA["definitions"][definition], definitions=SCHEMA["definitions"])
    return [f"{'/'.join(map(str, e.absolute_path)) or '<top>'}: {e.message}"
            for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]


SHAPES = [attnreg.Shape(q_heads=32, kv_heads=8, max_kv_len=4096),
          attnreg.Shape(arch="gfx950", q_heads=16, kv_heads=1, head_dim=256, kv_dtype="fp8_e4m3fn",
                        max_q_len=4, max_kv_len=8192, window=(127, 0), softcap=30.0, sinks=True)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shape_and_selection_dicts(reg, shape):
    assert not problems(shape.to_dict(), "shape")
    assert not problems(reg.select(shape).to_dict(), "selection")


@pytest.mark.parametrize("shape", SHAPES + [attnreg.Shape(arch="nosucharch")], ids=str)
def test_explain_is_an_explain_document(reg, shape):
    doc = reg.explain(shape)
    doc = dict(doc, schema_version=attnreg.SCHEMA_VERSION, command="explain")
    assert not problems(doc), problems(doc)


def test_list_is_list_plugins(reg):
    doc = {"schema_version": attnreg.SCHEMA_VERSION, "command": "list", "arch": None,
           "plugins": reg.list()}
    assert not problems(doc), problems(doc)


def test_abi_is_checks_string(reg):
    info = reg.load_plugin("cpu-ref")
    assert re.fullmatch(r"\d+\.\d+", info["abi"]), info["abi"]
    major, minor = attnreg.plugin_abi_version
    assert info["abi"].split(".")[0] == str(major)
