# SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def build_dir():
    """The CMake build folder the suite runs from (ctest sets it), for the CLI
    comparisons; those tests skip without it."""
    d = os.environ.get("ATTNREG_TEST_BUILD")
    if not d or not os.path.exists(os.path.join(d, "bin", "attnreg")):
        pytest.skip("ATTNREG_TEST_BUILD with bin/attnreg not set (ctest sets it)")
    return d


@pytest.fixture
def reg():
    import attnreg
    r = attnreg.Registry(use_env=False)
    yield r
    r.close()
