# SPDX-License-Identifier: Apache-2.0
"""The package's typing and documentation: every public member (the names
in attnreg.__all__, the transformers integration's, and their public
methods and properties) has a docstring; the package ships py.typed; and,
where mypy is installed (Debian's `mypy`; .ci/run runs it too), `mypy
--strict` passes on the package as the tests import it."""
import inspect
import os
import shutil
import subprocess

import pytest

import attnreg
from attnreg.integrations import transformers as attnreg_hf


def public_members():
    modules = [(attnreg, attnreg.__all__),
               (attnreg_hf, [n for n in dir(attnreg_hf) if not n.startswith("_")
                             and getattr(getattr(attnreg_hf, n), "__module__", "")
                             == attnreg_hf.__name__])]
    for mod, names in modules:
        for name in names:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            yield f"{mod.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(value, property):
                        yield f"{mod.__name__}.{name}.{attr}", value.fget
                    elif inspect.isfunction(value) or isinstance(value, classmethod):
                        yield f"{mod.__name__}.{name}.{attr}", value


def test_every_public_member_has_a_docstring():
    members = dict(public_members())
    assert len(members) > 40, sorted(members)
    missing = [name for name, obj in members.items() if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, f"public members without a docstring: {missing}"


def test_py_typed_is_shipped():
    assert os.path.exists(os.path.join(os.path.dirname(attnreg.__file__), "py.typed"))


def test_mypy_strict_on_the_package():
    mypy = shutil.which("mypy")
    if not mypy:
        pytest.skip("mypy is not installed (Debian: apt-get install mypy)")
    pkg = os.path.dirname(attnreg.__file__)
    config = os.path.join(os.path.dirname(__file__), "..", "..", "python", "pyproject.toml")
    p = subprocess.run([mypy, "--strict", "--config-file", config, "--no-incremental",
                        "--cache-dir", os.devnull, pkg], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
