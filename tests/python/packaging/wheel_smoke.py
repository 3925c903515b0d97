# SPDX-License-Identifier: Apache-2.0
"""The smoke test of an installed attnreg wheel, run by .ci/run under every
CPython it installs the wheel into (from outside the repository, without
PYTHONPATH or ATTNREG_LIBRARY): the bundled library, plugins, conf and
dependencies load; cpu-ref is selected and constructed; a config.json is
planned (through the bundled jansson); with NumPy, one cpu-ref forward
matches the package's float64 reference (attnreg._reference). Prints one
line per check, exits non-zero on the first failure."""
import math
import os
import sys

import attnreg

here = os.path.dirname(os.path.abspath(__file__))
assert "_bundled" in attnreg.library_path, attnreg.library_path
print(f"python {sys.version.split()[0]}: attnreg {attnreg.__version__} from "
      f"{attnreg.library_path}")
# The bundled dependencies are the copies loaded, not the system's.
with open("/proc/self/maps") as f:
    maps = f.read()
for dep in ("libinih.so.1", "libjansson.so.4"):
    where = {line.split()[-1] for line in maps.splitlines() if line.endswith(dep)}
    assert where and all("_bundled" in w for w in where), (dep, where)
print("bundled libinih and libjansson are the ones loaded")

with attnreg.Registry(use_env=False) as reg:
    names = [p["backend"] for p in reg.list()]
    assert "cpu-ref" in names, names
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=64, max_kv_len=64)
    sel = reg.select(shape)
    assert sel.backend == "cpu-ref", sel.backend
    print(f"select: {sel.backend} for {shape}")
    plan = attnreg.plan_hf_config(os.path.join(here, "..", "..", "hf_configs",
                                               "gemma-2-27b.json"), reg, max_model_len=4096)
    assert plan.ok and abs(plan.entries[0]["scale"] - 144 ** -0.5) < 1e-7, plan.status
    print(f"plan_hf_config: {len(plan.entries)} entries, scale {plan.entries[0]['scale']}")
    with reg.create(sel) as be:
        try:
            import numpy as np
        except ImportError:
            print("forward: skipped (no numpy in this interpreter)")
            sys.exit(0)
        rng = np.random.default_rng(0)
        q = rng.standard_normal((1, 4, 64)).astype(np.float32)
        k = rng.standard_normal((4, 16, 2, 64)).astype(np.float32)
        v = rng.standard_normal((4, 16, 2, 64)).astype(np.float32)
        fshape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=64, q_dtype="f32", max_kv_len=64)
        from attnreg._reference import attention
        bt = np.array([[0, 1, 2, 3]], dtype=np.int32)
        cu, sk = np.array([0, 1], dtype=np.int32), np.array([50], dtype=np.int32)
        with reg.create(reg.select(fshape)) as bf:
            out = bf.forward(q, k, v, bt, cu, sk)
        want = attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                         bt, cu, sk, 1 / math.sqrt(64))
        err = float(np.abs(out - want).max())
        assert err < 1e-4, err
        print(f"forward: cpu-ref f32 matches float64 (max abs error {err:.2e})")
