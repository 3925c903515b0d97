# SPDX-License-Identifier: Apache-2.0
"""The Registry API: errors as exceptions, explain/list against the CLI's
JSON, plans, the log callback, concurrent selection, lifetimes, argument
checks, and the import-time layout check."""
import ctypes
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import attnreg
from attnreg import _native


# ---- errors ---------------------------------------------------------------------

def test_version_is_the_librarys():
    assert attnreg.__version__ == _native.text(attnreg._lib.attnreg_version_string())
    assert attnreg.__version__.count(".") == 2


def test_invalid_shape_is_a_value_error(reg):
    with pytest.raises(attnreg.InvalidShapeError) as e:
        reg.select(attnreg.Shape(q_heads=32, kv_heads=5))
    assert isinstance(e.value, ValueError) and isinstance(e.value, attnreg.Error)
    assert e.value.status == "ATTN_ERR_INVALID_SHAPE"
    assert e.value.message == "requires num_heads (32) to be a multiple of num_kv_heads (5)"
    assert attnreg.Shape(q_heads=32, kv_heads=5).validate() == e.value.message
    assert attnreg.Shape(q_heads=32, kv_heads=8).validate() is None


def test_unsupported_lists_every_candidate(reg):
    with pytest.raises(attnreg.UnsupportedError) as e:
        reg.select(attnreg.Shape(arch="nosucharch"))
    assert e.value.status == "ATTN_ERR_UNSUPPORTED"
    for name in ("cpu-ref", "aiter-generic", "aiter-mtp-gfx950"):
        assert name in e.value.message


def test_forced_backend_rejects_or_is_missing():
    with attnreg.Registry(use_env=False, backend="cpu-ref") as r:
        assert r.select(attnreg.Shape()).backend == "cpu-ref"
        with pytest.raises(attnreg.BackendRejectedError) as e:
            r.select(attnreg.Shape(arch="gfx950"))
        assert e.value.status == "ATTN_ERR_BACKEND_REJECTED" and "cpu-ref" in e.value.message
    with attnreg.Registry(use_env=False, backend="no-such-backend") as r:
        with pytest.raises(attnreg.BackendRejectedError) as e:
            r.select(attnreg.Shape())
        assert e.value.status == "ATTN_ERR_NOT_FOUND" and "no-such-backend" in e.value.message


def test_disabled_backend(reg):
    with attnreg.Registry(use_env=False, disabled=["cpu-ref"]) as r:
        with pytest.raises(attnreg.UnsupportedError) as e:
            r.select(attnreg.Shape())
        assert "DISABLED_BY_HOST" in json.dumps(r.explain(attnreg.Shape()))
        assert "cpu-ref" in e.value.message


def test_conf_error_names_file_and_line(tmp_path):
    (tmp_path / "broken.ini").write_text("[plugin]\nformat_version = 1.0\nname = x\nthis is not ini\n")
    with pytest.raises(attnreg.ConfError) as e:
        attnreg.Registry(conf_paths=[str(tmp_path)], use_env=False, default_conf=False,
                         fail_on_conf_error=True)
    assert e.value.status == "ATTN_ERR_CONF" and "broken.ini" in e.value.message
    with attnreg.Registry(conf_paths=[str(tmp_path)], use_env=False, default_conf=False) as r:
        diags = r.diagnostics()
        assert diags and diags[0]["status"] == "ATTN_ERR_CONF"
        assert diags[0]["file"].endswith("broken.ini") and diags[0]["line"] > 0


def test_create_without_device_is_a_backend_error(reg):
    sel = reg.select(attnreg.Shape(arch="gfx950", q_heads=32, kv_heads=8))
    assert sel.backend == "aiter-generic"
    with pytest.raises(attnreg.BackendError) as e:
        reg.create(sel)
    assert e.value.status in ("ATTN_ERR_NO_KERNELS", "ATTN_ERR_ARCH_NOT_IN_BINARY",
                              "ATTN_ERR_NO_DEVICE")
    assert e.value.message


def test_shipped_conf_selects_the_gpu_plugins_for_sm_90(reg):
    """The conf that ships (the build's, or the wheel's bundled copy
    when the suite runs on the installed package) lists sm_90, where the
    kernels are verified, so the GPU plugins are selected for sm_90 shapes
    with no test conf; planning mode, no GPU needed."""
    decode = attnreg.Shape(arch="sm_90", q_heads=32, kv_heads=8, max_q_len=1, max_kv_len=4096)
    assert reg.select(decode).backend == "aiter-generic"
    mtp = attnreg.Shape(arch="sm_90", q_heads=16, kv_heads=1, head_dim=256, kv_dtype="fp8_e4m3fn",
                        max_q_len=4, max_kv_len=4096)
    assert reg.select(mtp).backend == "aiter-mtp-gfx950"


def test_fallback_and_strict(reg):
    shape = attnreg.Shape(kv_dtype="bf16", compute_dtype="fp8_e4m3fn")
    sel = reg.select(shape)
    assert sel.backend == "cpu-ref" and sel.fallback_applied
    assert sel.fallback_rule == "compute_dtype fp8_e4m3fn -> bf16"
    assert sel.fallback_backend == "cpu-ref" and sel.fallback_reason == "COMPUTE_DTYPE"
    assert sel.fallback_message
    assert sel.effective_shape == shape.replace(compute_dtype="bf16")
    with attnreg.Registry(use_env=False, strict=True) as r:
        with pytest.raises(attnreg.UnsupportedError):
            r.select(shape)


def test_shape_defaults_are_the_clis():
    s = attnreg.Shape(q_dtype="f16", max_q_len=7)
    assert (s.kv_dtype, s.compute_dtype, s.out_dtype) == ("f16", "f16", "f16")
    assert s.max_kv_len == 7 and attnreg.Shape().max_kv_len == 1
    assert (s.arch, s.page_size, s.causal, s.window, s.softcap, s.sinks) == \
        ("cpu", 16, True, (-1, -1), 0.0, False)
    with pytest.raises(ValueError, match="q_dtype.*bf17"):
        attnreg.Shape(q_dtype="bf17")
    with pytest.raises(ValueError, match="arch"):
        attnreg.Shape(arch="x" * 40)
    with pytest.raises(ValueError, match="head_dim"):
        attnreg.Shape(head_dim="128")
    with pytest.raises(ValueError, match="max_kv_len.*int32"):
        attnreg.Shape(max_kv_len=2**31)
    with pytest.raises(ValueError, match="causal|q_heads"):
        attnreg.Shape(q_heads=True)
    assert attnreg.Shape(q_heads=np.int64(8), max_kv_len=np.int32(64)).q_heads == 8


# ---- explain and list against the CLI ------------------------------------------------

def cli_json(build_dir, *args):
    exe = os.path.join(build_dir, "bin", "attnreg")
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNREG_")}
    p = subprocess.run([exe, *args, "--conf-only", "--conf", conf, "--json"],
                       capture_output=True, text=True, env=env)
    if not p.stdout.strip():  # the CLI could not even start (a carried build without libs)
        pytest.skip(f"{exe} printed nothing (exit {p.returncode}): {p.stderr.strip()[:200]}")
    return json.loads(p.stdout)


EXPLAIN_CASES = [
    (attnreg.Shape(q_heads=32, kv_heads=8, max_kv_len=4096),
     ["--q-heads", "32", "--kv-heads", "8", "--max-kv-len", "4096"]),
    (attnreg.Shape(arch="gfx950", q_heads=16, kv_heads=1, head_dim=256, kv_dtype="fp8_e4m3fn",
                   max_q_len=4, max_kv_len=4096),
     ["--arch", "gfx950", "--q-heads", "16", "--kv-heads", "1", "--head-dim", "256",
      "--kv-dtype", "fp8_e4m3fn", "--max-q-len", "4", "--max-kv-len", "4096"]),
    (attnreg.Shape(kv_dtype="bf16", compute_dtype="fp8_e4m3fn", softcap=50, window=(127, 0),
                   sinks=True),
     ["--compute-dtype", "fp8_e4m3fn", "--softcap", "50", "--window", "127,0", "--sinks"]),
    (attnreg.Shape(q_heads=32, kv_heads=5), ["--q-heads", "32", "--kv-heads", "5"]),
    (attnreg.Shape(arch="sm_90"), ["--arch", "sm_90"]),
]


@pytest.mark.parametrize("shape,flags", EXPLAIN_CASES, ids=[str(i) for i in range(len(EXPLAIN_CASES))])
def test_explain_equals_cli_json(build_dir, shape, flags):
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    with attnreg.Registry(conf_paths=[conf], use_env=False, default_conf=False) as r:
        ours = r.explain(shape)
    theirs = cli_json(build_dir, "explain", *flags)
    assert ours["schema_version"] == attnreg.SCHEMA_VERSION
    if "schema_version" not in theirs:  # a CLI from before schema_version
        ours.pop("schema_version")
    assert_same_json(ours, theirs)


# Keys the CLI's JSON may carry that this binding does not reproduce yet
# (none today: explain's "plan" and the selection's "graph_capturable" are
# reproduced). Any other extra key is a failure, so a new CLI key cannot go
# unnoticed.
PENDING_CLI_KEYS = set()


def assert_same_json(ours, theirs, where="$"):
    """ours == theirs, except keys of PENDING_CLI_KEYS that only the CLI has."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        extra = set(theirs) - set(ours)
        assert extra <= PENDING_CLI_KEYS, f"{where}: the CLI has keys {sorted(extra)} the binding lacks"
        assert set(ours) <= set(theirs), f"{where}: keys {sorted(set(ours) - set(theirs))} not in the CLI's"
        for key in ours:
            assert_same_json(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list) and isinstance(theirs, list):
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items, the CLI {len(theirs)}"
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_json(a, b, f"{where}[{k}]")
    else:
        assert ours == theirs, f"{where}: {ours!r} != the CLI's {theirs!r}"


def test_list_equals_cli_json(build_dir):
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    with attnreg.Registry(conf_paths=[conf], use_env=False, default_conf=False) as r:
        assert_same_json(r.list(), cli_json(build_dir, "list")["plugins"])
        assert [p["backend"] for p in r.list(arch="gfx950")] == \
            [p["backend"] for p in cli_json(build_dir, "list", "--arch", "gfx950")["plugins"]]


def test_list_and_load_plugin(reg):
    names = [p["backend"] for p in reg.list()]
    assert names == ["aiter-mtp-gfx950", "aiter-generic", "cpu-ref"]  # priority order
    info = reg.load_plugin("cpu-ref")
    assert info["status"] == "ATTN_OK" and "cpu" in info["built_archs"]
    with pytest.raises(attnreg.BackendRejectedError):
        reg.load_plugin("nope")


# ---- plans -------------------------------------------------------------------------------

def test_plan_gemma_like(reg):
    layers = [("sliding", (4095, 0)) if i % 2 == 0 else "full" for i in range(6)]
    plan = reg.plan(q_heads=16, kv_heads=8, head_dim=256, layers=layers, softcap=50.0, tp=2,
                    max_model_len=8192, max_prefill_tokens=2048, spec_tokens=3)
    assert plan.ok and plan.status == "ATTN_OK"
    assert plan.per_rank["q_heads"] == 8 and plan.per_rank["kv_heads"] == 4
    assert plan.per_rank["verify_q_len"] == 4
    assert {e["phase"] for e in plan.entries} == {"prefill", "decode", "verify"}
    e = plan.lookup(3, "decode")
    assert e["kind"] == "full" and e["backend"] == "cpu-ref" and 3 in e["layers"]
    assert plan.lookup(2, "prefill")["window"] == [4095, 0]
    with reg.create(e["selection"]) as be:
        assert be.shape.max_q_len == 1 and be.shape.q_heads == 8
    d = plan.to_dict()
    assert d["schema_version"] == 1 and len(d["entries"]) == len(plan.entries)
    with pytest.raises(KeyError):
        plan.lookup(99, "decode")


@pytest.mark.parametrize("config", ["llama-3.1-8b.json", "gemma-2-9b.json"])
def test_plan_equals_cli_json(build_dir, config):
    """The model the CLI reads from config.json, planned through the binding:
    the same entries, per-rank numbers and status as `attnreg plan --json`."""
    path = os.path.join(os.path.dirname(__file__), "..", "hf_configs", config)
    theirs = cli_json(build_dir, "plan", "--hf-config", path, "--tp", "2", "--max-model-len",
                      "8192", "--max-prefill-tokens", "2048", "--spec-tokens", "2")
    m = theirs["model"]
    layers = [None] * m["num_layers"]
    for e in theirs["entries"]:
        for i in e["layers"]:
            layers[i] = {"kind": e["kind"], "window": tuple(e["window"] or (-1, -1)),
                         "type_name": e["layer_type"]}
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    with attnreg.Registry(conf_paths=[conf], use_env=False, default_conf=False) as r:
        plan = r.plan(q_heads=m["num_attention_heads"], kv_heads=m["num_key_value_heads"],
                      head_dim=m["head_dim"], layers=layers, softcap=m["softcap"],
                      sinks=m["sinks"], tp=2, max_model_len=8192, max_prefill_tokens=2048,
                      spec_tokens=2)
        ours = plan.to_dict()
    for key in ("schema_version", "status", "exit_code", "message", "per_rank", "entries"):
        assert_same_json(ours[key], theirs[key], key)


def test_plan_invalid_tp(reg):
    with pytest.raises(attnreg.InvalidShapeError) as e:
        reg.plan(q_heads=32, kv_heads=8, tp=3, max_model_len=1024)
    assert "requires num_heads (32) to be a multiple of tp (3)" in e.value.message


def test_plan_with_linear_layers_and_unsupported(reg):
    plan = reg.plan(arch="nosucharch", q_heads=4, layers=[
        {"kind": "not_attention", "type_name": "linear_attention"}, "full"], max_model_len=512)
    assert not plan.ok and plan.status == "ATTN_ERR_UNSUPPORTED"
    lin = plan.lookup(0, "decode")
    assert lin["status"] == "NOT_ATTENTION" and lin["layer_type"] == "linear_attention"
    assert plan.lookup(1, "decode")["status"] == "ATTN_ERR_UNSUPPORTED"


# ---- log callback -----------------------------------------------------------------------

def test_log_callback_receives_levels_and_messages():
    got = []
    with attnreg.Registry(use_env=False, log_level="debug",
                          log=lambda level, msg: got.append((level, msg))) as r:
        r.select(attnreg.Shape(kv_dtype="bf16", compute_dtype="fp8_e4m3fn", q_heads=3))
    assert got and all(level in attnreg.LOG_LEVELS for level, _ in got)
    assert any(level == "debug" for level, _ in got)
    assert any("fp8_e4m3fn" in msg and "bf16" in msg for _, msg in got), got


def test_log_callback_exception_does_not_escape(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def bad(level, msg):
        raise RuntimeError("boom")
    with attnreg.Registry(use_env=False, log_level="debug", log=bad) as r:
        assert r.select(attnreg.Shape()).backend == "cpu-ref"
    assert seen and isinstance(seen[0], RuntimeError)


def test_log_level_checked():
    with pytest.raises(ValueError, match="log_level"):
        attnreg.Registry(log_level="loud")


# ---- threads --------------------------------------------------------------------------

def test_many_threads_select_at_once(reg):
    shapes = [attnreg.Shape(q_heads=h * g, kv_heads=h, head_dim=d, max_q_len=q, max_kv_len=4096)
              for h in (1, 2, 8) for g in (1, 4) for d in (64, 128) for q in (1, 4)]
    shapes.append(attnreg.Shape(q_heads=32, kv_heads=5))
    want = [(s, reg.select(s).backend if s.validate() is None else "invalid") for s in shapes]
    errors, barrier = [], threading.Barrier(8)

    def worker(k):
        try:
            barrier.wait()
            for rep in range(30):
                for s, w in want[k % 3::1]:
                    try:
                        got = reg.select(s).backend
                    except attnreg.InvalidShapeError:
                        got = "invalid"
                    if got != w:
                        errors.append((s, got, w))
                if rep % 10 == 0:
                    reg.explain(want[0][0])
        except Exception as e:  # noqa: collected, asserted below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---- lifetimes -------------------------------------------------------------------------

def test_backend_keeps_registry_alive():
    r = attnreg.Registry(use_env=False)
    shape = attnreg.Shape(q_heads=2, head_dim=16, max_kv_len=16)
    be = r.create(r.select(shape))
    r.close()
    assert r.closed
    with pytest.raises(attnreg.Error, match="closed"):
        r.select(shape)
    q = np.zeros((1, 2, 16), np.uint16)
    kv = np.zeros((1, 16, 2, 16), np.uint16)
    one = np.array([[0]], np.int32)
    out = be.forward(q, kv, kv, one, np.array([0, 1], np.int32), np.array([16], np.int32))
    assert out.shape == (1, 2, 16)
    assert r._h  # still open for the backend
    be.close()
    assert not r._h
    with pytest.raises(attnreg.Error, match="closed"):
        be.forward(q, kv, kv, one, np.array([0, 1], np.int32), np.array([16], np.int32))


def test_selection_from_another_registry(reg):
    with attnreg.Registry(use_env=False) as other:
        sel = other.select(attnreg.Shape())
        with pytest.raises(ValueError, match="another registry"):
            reg.create(sel)


# ---- forward argument checks -------------------------------------------------------

@pytest.fixture
def small():
    """A backend for 4/2 heads D16, sinks, and one valid batch."""
    r = attnreg.Registry(use_env=False)
    shape = attnreg.Shape(q_heads=4, kv_heads=2, head_dim=16, max_q_len=4, max_kv_len=32,
                          sinks=True)
    be = r.create(r.select(shape))
    args = dict(q=np.zeros((5, 4, 16), np.uint16), k_cache=np.zeros((3, 16, 2, 16), np.uint16),
                v_cache=np.zeros((3, 16, 2, 16), np.uint16),
                block_table=np.array([[0, 1], [2, 0]], np.int32),
                cu_seqlens_q=np.array([0, 4, 5], np.int32),
                seqused_k=np.array([20, 9], np.int32), sinks=np.zeros(4, np.float32))
    yield be, args
    be.close()
    r.close()


def call(be, args, **changes):
    a = dict(args)
    a.update(changes)
    sinks = a.pop("sinks")
    return be.forward(**a, sinks=sinks)


def test_forward_valid_call(small):
    be, args = small
    assert call(be, args).shape == (5, 4, 16)


@pytest.mark.parametrize("change,match", [
    (dict(q=np.zeros((5, 4, 16), np.float32)), r"q: expected dtype uint16 \(q_dtype bf16\)"),
    (dict(q=np.zeros((5, 3, 16), np.uint16)), r"q: expected shape \[\*, 4, 16\]"),
    (dict(q=np.zeros((5, 16, 4), np.uint16).transpose(0, 2, 1)), r"q: the last dimension"),
    (dict(k_cache=np.zeros((3, 8, 2, 16), np.uint16)), r"k_cache: expected shape \[\*, 16, 2, 16\]"),
    (dict(v_cache=np.zeros((2, 16, 2, 16), np.uint16)), r"v_cache: expected shape \[3, 16, 2, 16\]"),
    # any strided view is a layout, but the last dimension must be contiguous
    (dict(k_cache=np.zeros((3, 16, 2, 32), np.uint16)[..., ::2]),
     r"k_cache: the last dimension must be contiguous"),
    (dict(block_table=np.array([[0, 1], [2, 0]], np.int64)), r"block_table: expected dtype int32"),
    (dict(block_table=np.array([[0, 1]], np.int32)), r"block_table: expected shape \[2, \*\]"),
    (dict(cu_seqlens_q=np.array([0, 5], np.int32)), r"cu_seqlens_q: expected shape \[3\]"),
    (dict(cu_seqlens_q=np.array([0, 4, 6], np.int32)), r"cu_seqlens_q: the last entry is 6"),
    (dict(seqused_k=np.array([[20, 9]], np.int32)), r"seqused_k: expected shape \[num_seqs\]"),
    (dict(sinks=None), r"sinks: the shape has sinks"),
    (dict(sinks=np.zeros(4, np.float64)), r"sinks: expected dtype float32"),
    (dict(out=np.zeros((5, 4, 16), np.float32)), r"out: expected dtype uint16"),
    (dict(out=np.zeros((4, 4, 16), np.uint16)), r"out: expected shape \[5, 4, 16\]"),
    (dict(q=[[0]]), r"q: expected a numpy.ndarray or a torch.Tensor"),
])
def test_forward_argument_errors(small, change, match):
    be, args = small
    with pytest.raises((ValueError, TypeError), match=match):
        call(be, args, **change)


def test_forward_errors_from_the_backend(small):
    be, args = small
    with pytest.raises(attnreg.Error) as e:  # a block index past num_blocks
        call(be, args, block_table=np.array([[0, 7], [2, 0]], np.int32))
    assert e.value.status == "ATTN_ERR_INVALID_ARGUMENT" and "7" in e.value.message
    need = be.workspace_size(2, 5)
    if need > 1:
        with pytest.raises(attnreg.BackendError) as e:
            call(be, args, workspace=np.zeros(1, np.uint8))
        assert e.value.status == "ATTN_ERR_WORKSPACE_TOO_SMALL"


def test_sinks_given_without_sinks_shape(reg):
    be = reg.create(reg.select(attnreg.Shape(q_heads=1, head_dim=16, max_kv_len=16)))
    q = np.zeros((1, 1, 16), np.uint16)
    kv = np.zeros((1, 16, 1, 16), np.uint16)
    with pytest.raises(ValueError, match="sinks: given"):
        be.forward(q, kv, kv, np.array([[0]], np.int32), np.array([0, 1], np.int32),
                   np.array([16], np.int32), sinks=np.zeros(1, np.float32))
    be.close()


# ---- the layout check ------------------------------------------------------------------

def test_layout_check_passes():
    n = attnreg.check_layout()
    assert n == sum(len(c._fields_) for c in _native.MIRRORS.values())


def test_layout_mismatch_is_an_import_error():
    fields = [(f, ctypes.c_int64 if f == "head_dim" else t) for f, t in _native.Shape._fields_]

    class BadShape(ctypes.Structure):
        _fields_ = fields
    with pytest.raises(ImportError, match=r"attn_shape\.head_dim: the library has offset 44 size 4"):
        attnreg.check_layout({"attn_shape": BadShape})

    class Extra(ctypes.Structure):
        _fields_ = list(_native.BatchLimits._fields_) + [("max_num_pages", ctypes.c_int32)]
    with pytest.raises(ImportError, match=r"attn_batch_limits\.max_num_pages"):
        attnreg.check_layout({"attn_batch_limits": Extra})

    with pytest.raises(ImportError, match=r"no struct attn_nothing"):
        attnreg.check_layout({"attn_nothing": _native.BatchLimits})


def test_enum_lists_come_from_the_library():
    lib = attnreg._lib
    assert len(_native.STATUS_NAMES) == lib.attn_enum_count(b"attn_status") >= 19
    assert _native.STATUS_NAMES[0] == "ATTN_OK" and _native.STATUS["ATTN_ERR_INTERNAL"] == 18
    assert attnreg.DTYPES == ("f32", "f16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz")
    assert _native.PHASE_NAMES == ("prefill", "decode", "verify")
    assert _native.STATUS_CLASS["ATTN_ERR_NOT_FOUND"] == "backend_rejected"
    assert isinstance(attnreg._error(_native.STATUS["ATTN_ERR_NO_KERNELS"], "x"),
                      attnreg.BackendError)
    assert type(attnreg._error(_native.STATUS["ATTN_ERR_IO"], "x")) is attnreg.Error
    assert attnreg._exit_code("ATTN_ERR_NOT_FOUND") == 5
    assert attnreg._exit_code("ATTN_ERR_NO_MEMORY") == 10
    assert attnreg._exit_code("no such status") == 10


def test_enum_mismatch_is_an_import_error(monkeypatch):
    monkeypatch.setattr(_native, "STATUS_NAMES", _native.STATUS_NAMES[:2] + ("ATTN_ERR_WRONG",))
    with pytest.raises(ImportError, match="status 2"):
        attnreg.check_layout()


def test_import_fails_cleanly_without_library(tmp_path):
    env = dict(os.environ, ATTNREG_LIBRARY=str(tmp_path / "libattnreg.so.0"))
    p = subprocess.run([sys.executable, "-c", "import attnreg"], capture_output=True, text=True,
                       env=env)
    assert p.returncode != 0
    assert "ImportError" in p.stderr and "ATTNREG_LIBRARY" in p.stderr


def test_import_mismatch_in_a_fresh_interpreter():
    """The check runs at import: a patched mirror makes `import attnreg` fail."""
    code = ("import ctypes, importlib, attnreg\n"
            "n = attnreg._native\n"
            "class S(ctypes.Structure):\n"
            "    _fields_ = [(f, ctypes.c_int64 if f == 'head_dim' else t)\n"
            "                for f, t in n.Shape._fields_]\n"
            "n.MIRRORS['attn_shape'] = S\n"
            "importlib.reload(attnreg)\n")
    # reloading runs the package's import-time check again, on the patched table
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode != 0
    assert "ImportError" in p.stderr and "attn_shape.head_dim" in p.stderr


def test_package_variables_are_known_to_the_library():
    """ATTNREG_LIBRARY (and the tests' variables) must not draw the library's
    unknown-variable warning; a misspelt one still does."""
    code = ("import attnreg\n"
            "msgs = []\n"
            "attnreg.Registry(log=lambda level, m: msgs.append(m)).close()\n"
            "print('|'.join(msgs))\n")
    env = dict(os.environ, ATTNREG_LIBRARY=attnreg.library_path, ATTNREG_TEST_CONF="x",
               ATTNREG_TEST_BUILD="x", ATTNREG_PREFIX="x")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "is not one attnreg reads" not in p.stdout + p.stderr
    env["ATTNREG_LIBRAY"] = "typo"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "ATTNREG_LIBRAY" in p.stdout + p.stderr
