# SPDX-License-Identifier: Apache-2.0
"""The binding against hostile arguments, threads and files. Each test
failed (or killed the interpreter) on the binding before the hardening of
0.4; the ones that could kill it run in a child interpreter."""
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import attnreg
from test_forward_cpu import paged_batch

INT32_OUT = [2**31, -2**31 - 1, 2**32 + 32]


@pytest.mark.parametrize("value", INT32_OUT)
@pytest.mark.parametrize("field", ["q_heads", "kv_heads", "head_dim", "page_size", "max_q_len",
                                   "max_kv_len"])
def test_shape_ints_outside_int32_name_the_field(field, value):
    with pytest.raises(ValueError, match=rf"Shape\.{field}: {value} does not fit in int32"):
        attnreg.Shape(**{field: value})


@pytest.mark.parametrize("window", [(2**32 + 5, -1), (-1, 2**31)])
def test_shape_window_outside_int32_is_refused(window):
    # Shape.window used to be stored mod 2**32 by ctypes
    with pytest.raises(ValueError, match=r"Shape\.window\[[01]\]: .* does not fit in int32"):
        attnreg.Shape(window=window)


@pytest.mark.parametrize("field", ["q_heads", "kv_heads", "head_dim", "tp", "max_model_len",
                                   "spec_tokens"])
def test_plan_ints_outside_int32_name_the_field(reg, field):
    # plan(q_heads=2**32 + 32) planned 32 heads
    kw = {"q_heads": 32, "kv_heads": 8, "max_model_len": 4096, field: 2**32 + 32}
    with pytest.raises(ValueError, match=rf"plan\.{field}: {2**32 + 32} does not fit in int32"):
        reg.plan(**kw)
    with pytest.raises(ValueError, match=r"plan\.layers\[1\]\.window\[0\]"):
        reg.plan(q_heads=8, max_model_len=64, layers=["full", ("sliding", (2**32, -1))])


def test_workspace_limits_outside_int32(reg):
    with reg.create(reg.select(attnreg.Shape(q_heads=2, head_dim=16))) as be:
        with pytest.raises(ValueError, match=r"workspace_size\.max_num_seqs"):
            be.workspace_size(2**32 + 1, 1)


def batch(seed=1, q_lens=(3, 1), kv_lens=(40, 9), hq=4, hkv=2, d=32, page=16):
    rng = np.random.default_rng(seed)
    shape = attnreg.Shape(q_heads=hq, kv_heads=hkv, head_dim=d, page_size=page, q_dtype="f32",
                          max_q_len=max(q_lens), max_kv_len=max(kv_lens))
    return shape, paged_batch(rng, list(q_lens), list(kv_lens), hq, hkv, d, d, page, "f32",
                              "f32", False)


def forward(be, b, **kw):
    args = dict(q=b["q"], k_cache=b["k"], v_cache=b["v"], block_table=b["bt"],
                cu_seqlens_q=b["cu"], seqused_k=b["sk"])
    args.update(kw)
    return be.forward(**args)


@pytest.mark.parametrize("name", ["q", "k_cache", "v_cache", "out"])
def test_big_endian_arrays_are_refused(reg, name):
    # '>f4' is dtype.name "float32" too: it passed and gave NaN silently
    shape, b = batch()
    with reg.create(reg.select(shape)) as be:
        key = {"q": "q", "k_cache": "k", "v_cache": "v"}.get(name)
        kw = {}
        if key:
            b[key] = b[key].astype(">f4")
        else:
            kw["out"] = np.empty((4, 4, 32), dtype=">f4")
        with pytest.raises(ValueError, match=rf"{name}: dtype >f4 is not in this machine's "
                                             r"byte order"):
            forward(be, b, **kw)


def test_big_endian_int32_metadata_is_refused(reg):
    shape, b = batch()
    with reg.create(reg.select(shape)) as be:
        b["sk"] = b["sk"].astype(">i4")
        with pytest.raises(ValueError, match=r"seqused_k: dtype >i4"):
            forward(be, b)


def test_block_table_view_narrower_than_its_keys(reg):
    # the C side knows the row stride only: bt[:, :1] was read past its
    # last column (past the buffer's end on the last row)
    shape, b = batch(kv_lens=(40, 9))
    with reg.create(reg.select(shape)) as be:
        b["bt"] = b["bt"][:, :1]
        with pytest.raises(ValueError, match=r"block_table: sequence 0 has 40 keys = 3 pages of "
                                             r"16, but block_table has 1 columns"):
            forward(be, b)


def test_cu_seqlens_wrapping_int32_is_refused(reg):
    # [0, 2147483584, -2147483648, -64, T]: its int32 differences wrap to
    # positive lengths; the binding compares the values themselves
    shape, b = batch(q_lens=(1, 1, 1, 1), kv_lens=(5, 5, 5, 5))
    with reg.create(reg.select(shape)) as be:
        b["cu"] = np.array([0, 2147483584, -2**31, -64, 4], dtype=np.int32)
        with pytest.raises(ValueError, match=r"cu_seqlens_q: decreases at sequence 1"):
            forward(be, b)


def run_child(code, timeout=120, env=None):
    """Runs `code` in a child interpreter with this one's sys.path; returns
    (returncode, output)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout, env=full_env)
    return p.returncode, p.stdout + p.stderr


def test_close_while_other_threads_select_and_explain():
    # close() from one thread while others select or explain freed the
    # registry under them (SIGSEGV/SIGBUS); now each call either completes
    # or raises "the registry is closed"
    rc, out = run_child("""
        import threading, time, attnreg
        for rnd in range(60):
            reg = attnreg.Registry(use_env=False)
            shapes = [attnreg.Shape(q_heads=h, head_dim=64) for h in (1, 2, 4, 8)]
            go, errors = threading.Event(), []
            def work():
                go.wait()
                for i in range(100000):
                    try:
                        reg.select(shapes[i % 4])
                        reg.explain(shapes[i % 4])
                    except attnreg.Error as e:
                        if "closed" not in str(e):
                            errors.append(str(e))
                        return
            ts = [threading.Thread(target=work) for _ in range(4)]
            for t in ts: t.start()
            go.set()
            time.sleep(0.001 * (rnd % 8))  # close while the calls are under way
            reg.close()
            for t in ts: t.join()
            assert not errors, errors
        print("survived")
    """)
    assert rc == 0 and "survived" in out, out


def test_one_backend_from_two_threads():
    # the C object is for one thread at a time: a second thread gets an
    # exception saying so (it used to kill the interpreter)
    rc, out = run_child("""
        import threading, numpy as np, attnreg
        from test_forward_cpu import paged_batch
        rng = np.random.default_rng(3)
        reg = attnreg.Registry(use_env=False)
        shape = attnreg.Shape(q_heads=8, kv_heads=2, head_dim=64, q_dtype="f32",
                              max_q_len=64, max_kv_len=512)
        b = paged_batch(rng, [64, 64], [512, 400], 8, 2, 64, 64, 16, "f32", "f32", False)
        be = reg.create(reg.select(shape))
        want = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
        busy, bad = [0], []
        def work():
            for _ in range(40):
                try:
                    got = be.forward(b["q"], b["k"], b["v"], b["bt"], b["cu"], b["sk"])
                    if not np.array_equal(got, want):
                        bad.append("wrong result")
                except attnreg.Error as e:
                    if "in use by another thread" not in str(e):
                        bad.append(str(e))
                    busy[0] += 1
        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts: t.start()
        for t in ts: t.join()
        be.close()
        reg.close()
        assert not bad, bad
        print("survived; refused", busy[0])
    """)
    assert rc == 0 and "survived" in out, out


def test_attnreg_library_naming_a_fifo_fails_at_once():
    # ATTNREG_LIBRARY=/some/fifo made `import attnreg` wait for a writer
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "libattnreg.so.0")
        os.mkfifo(fifo)
        try:
            rc, out = run_child("import attnreg", timeout=60, env={"ATTNREG_LIBRARY": fifo})
        except subprocess.TimeoutExpired:
            pytest.fail("import attnreg blocked on a FIFO named by ATTNREG_LIBRARY")
    assert rc != 0 and "not a regular file" in out, out
