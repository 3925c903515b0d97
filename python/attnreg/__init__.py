# SPDX-License-Identifier: Apache-2.0
"""attnreg — the attention-backend registry, for Python hosts.

A pure-Python binding (ctypes, standard library only) of libattnreg: select,
explain and plan attention backends, and run them on NumPy arrays (CPU
backends) or torch tensors (CPU, or CUDA for the GPU backends)::

    import attnreg
    with attnreg.Registry() as reg:
        sel = reg.select(attnreg.Shape(q_heads=32, kv_heads=8, max_kv_len=4096))
        with reg.create(sel) as be:
            out = be.forward(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k)

The library is found through ATTNREG_LIBRARY (a path), else the copy
installed beside this package, else the system's (ctypes.util.find_library).
Every mirrored struct field and enum name is checked against the library at
import: a mismatch is an ImportError naming the struct and field.

Thread safety is the C library's: select, explain, plan and the read-only
queries may run from many threads at once on one Registry; a Backend is used
by one thread at a time.
"""

import ctypes
import functools
import math
import operator
import os
import threading
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Type, TypeVar, Union, cast)

from . import _arrays, _native

_lib, library_path = _native.load_library()
_native.bind(_lib, library_path)
_native.check_layout(_lib)

#: The C library's version ("0.4.0").
__version__ = _native.text(_lib.attnreg_version_string())
#: The plugin ABI version the library speaks, as (major, minor).
plugin_abi_version = divmod(_lib.attnreg_plugin_abi_version(), 1 << 16)

#: Version of the dict layout of explain() and plan() (the CLI's --json).
SCHEMA_VERSION = 1

__all__ = [
    "Registry", "Shape", "Selection", "Backend", "Plan", "Error", "InvalidShapeError",
    "UnsupportedError", "BackendRejectedError", "ConfError", "BackendError", "__version__",
    "library_path", "DTYPES", "LOG_LEVELS", "to_bf16_bits", "from_bf16_bits", "check_layout",
    "plan_hf_config",
    "kv_views", "KV_LAYOUTS", "merge_states", "PreparedBatch",
]

DTYPES = tuple(n for n in _native.DTYPE_NAMES if n != "invalid")
LOG_LEVELS = _native.LOG_LEVEL_NAMES


# ---- errors ------------------------------------------------------------------

class Error(Exception):
    """A libattnreg failure. ``status`` is the stable status name
    ("ATTN_ERR_UNSUPPORTED"), ``code`` its number, ``message`` the library's
    sentence."""

    def __init__(self, status: Union[str, int], message: str) -> None:
        if isinstance(status, int):
            code = status
            status = (_native.STATUS_NAMES[code] if 0 <= code < len(_native.STATUS_NAMES)
                      else f"status {code}")
        else:
            code = _native.STATUS.get(status, -1)
        self.status, self.code, self.message = status, code, message
        super().__init__(f"{status}: {message}")


class InvalidShapeError(Error, ValueError):
    """No backend could ever run this shape (e.g. ``requires num_heads (32) to
    be a multiple of num_kv_heads (5)``)."""


class UnsupportedError(Error):
    """A valid shape that no enabled backend accepts; the message lists every
    candidate's reason."""


class BackendRejectedError(Error):
    """The forced backend rejects the shape, or no backend has that name."""


class ConfError(Error):
    """A conf file is malformed (with fail_on_conf_error, or at open)."""


class BackendError(Error):
    """create or forward failed: no device, no code for the arch, the
    constructor refused, a runtime error, a workspace too small, ..."""


# The exception of each status class (the C ATTN_STATUS_CLASS_MAP); the
# classes ok, io and internal raise Error itself.
_CLASS_ERRORS = {
    "invalid_shape": InvalidShapeError,
    "unsupported": UnsupportedError,
    "backend_rejected": BackendRejectedError,
    "conf": ConfError,
    "backend": BackendError,
}


def _status_name(code: int) -> str:
    """The stable name of a status code."""
    return str(_native.text(_lib.attn_status_name(code)))


def _error(code: int, message: Optional[str] = None) -> Error:
    """The exception for a status: its class by status, the message given, else
    the thread's last error, else the status's own sentence."""
    name = _status_name(code)
    if not message:
        message = _native.text(_lib.attn_last_error()) or _native.text(
            _lib.attn_status_message(code))
    return _CLASS_ERRORS.get(_native.STATUS_CLASS.get(name, ""), Error)(name, message or "")


def _exit_code(status_name: str) -> int:
    """The CLI's exit code for a status (cli/cli.h), for the "exit_code" key
    of explain/plan: the library's, from the status's class."""
    return int(_lib.attn_status_exit_code(_native.STATUS.get(status_name, -1)))


_text = _native.text


def _reason_name(code: int) -> str:
    """The stable name of a reason code."""
    return str(_text(_lib.attn_reason_name(code)))


# ---- shapes --------------------------------------------------------------------

def _dtype_code(field: str, name: str) -> int:
    """The dtype code of a name (ValueError naming the field otherwise)."""
    if name not in _native.DTYPE:
        raise ValueError(f"Shape.{field}: unknown dtype {name!r} (expected one of "
                         f"{', '.join(DTYPES)})")
    return _native.DTYPE[name]


def _int32(field: str, value: Any, owner: str = "Shape") -> int:
    """An int32 from any integer (int, numpy integer; not bool or float).
    Every int that reaches a ctypes int32 field goes through here: ctypes
    stores it mod 2**32 without a word (plan(q_heads=2**32 + 32) planned 32
    heads), so a value outside int32 is refused, naming the field."""
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{owner}.{field}: expected an int, got {value!r}") from None
    if not -2**31 <= value < 2**31:
        raise ValueError(f"{owner}.{field}: {value} does not fit in int32")
    return int(value)


class Shape:
    """What a backend must run, known before any tensor exists; the defaults
    are the CLI's (kv/compute/out dtypes follow q_dtype; max_kv_len is
    max(max_q_len, 1)). Lengths are capacities, not live lengths."""

    __slots__ = ("arch", "q_heads", "kv_heads", "head_dim", "head_dim_v", "q_dtype", "kv_dtype",
                 "compute_dtype", "out_dtype", "page_size", "max_q_len", "max_kv_len", "causal",
                 "window", "softcap", "sinks", "lse")

    def __init__(self, arch: str = "cpu", q_heads: int = 1, kv_heads: int = 0,
                 head_dim: int = 128, head_dim_v: int = 0, q_dtype: str = "bf16",
                 kv_dtype: Optional[str] = None, compute_dtype: Optional[str] = None,
                 out_dtype: Optional[str] = None, page_size: int = 16, max_q_len: int = 1,
                 max_kv_len: Optional[int] = None, causal: bool = True,
                 window: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                 sinks: bool = False, lse: bool = False) -> None:
        if not isinstance(arch, str) or len(arch.encode()) >= _native.ATTN_ARCH_MAX or not arch:
            raise ValueError(f"Shape.arch: expected a name of 1..{_native.ATTN_ARCH_MAX - 1} "
                             f"bytes, got {arch!r}")
        self.arch = arch
        q_heads, kv_heads, head_dim, head_dim_v, page_size, max_q_len = (
            _int32(f, v) for f, v in (("q_heads", q_heads), ("kv_heads", kv_heads),
                                      ("head_dim", head_dim), ("head_dim_v", head_dim_v),
                                      ("page_size", page_size), ("max_q_len", max_q_len)))
        self.q_heads, self.kv_heads, self.head_dim, self.head_dim_v = (q_heads, kv_heads,
                                                                       head_dim, head_dim_v)
        _dtype_code("q_dtype", q_dtype)
        self.q_dtype = q_dtype
        self.kv_dtype = q_dtype if kv_dtype is None else kv_dtype
        self.compute_dtype = q_dtype if compute_dtype is None else compute_dtype
        self.out_dtype = q_dtype if out_dtype is None else out_dtype
        for field in ("kv_dtype", "compute_dtype", "out_dtype"):
            _dtype_code(field, getattr(self, field))
        self.page_size, self.max_q_len = page_size, max_q_len
        self.max_kv_len = max(max_q_len, 1) if max_kv_len is None else _int32("max_kv_len",
                                                                              max_kv_len)
        self.causal = bool(causal)
        try:
            left, right = window
        except (TypeError, ValueError):
            raise ValueError(f"Shape.window: expected (left, right), got {window!r}") from None
        left, right = _int32("window[0]", left), _int32("window[1]", right)
        self.window = (left, right)
        self.softcap = float(softcap)
        self.sinks = bool(sinks)
        self.lse = bool(lse)  # forward also returns the log-sum-exp (return_lse)

    @property
    def kv_heads_effective(self) -> int:
        """KV heads as the tensors have them (kv_heads 0 = q_heads)."""
        return self.kv_heads or self.q_heads

    @property
    def head_dim_v_effective(self) -> int:
        """V's head size as the tensors have it (head_dim_v 0 = head_dim)."""
        return self.head_dim_v or self.head_dim

    def _to_c(self) -> Any:
        s = _native.new(_native.Shape)
        s.arch = self.arch.encode()
        s.num_q_heads, s.num_kv_heads = self.q_heads, self.kv_heads
        s.head_dim, s.head_dim_v = self.head_dim, self.head_dim_v
        s.q_dtype = _native.DTYPE[self.q_dtype]
        s.kv_dtype = _native.DTYPE[self.kv_dtype]
        s.compute_dtype = _native.DTYPE[self.compute_dtype]
        s.out_dtype = _native.DTYPE[self.out_dtype]
        s.page_size, s.max_q_len, s.max_kv_len = self.page_size, self.max_q_len, self.max_kv_len
        s.causal = int(self.causal)
        s.window_left, s.window_right = self.window
        s.softcap = self.softcap
        s.has_sinks = int(self.sinks)
        s.return_lse = int(self.lse)
        return s

    @classmethod
    def _from_c(cls, s: Any) -> "Shape":
        def dt(code: int) -> str:
            return str(_text(_lib.attn_dtype_name(code)))
        return cls(arch=_text(s.arch), q_heads=s.num_q_heads, kv_heads=s.num_kv_heads,
                   head_dim=s.head_dim, head_dim_v=s.head_dim_v, q_dtype=dt(s.q_dtype),
                   kv_dtype=dt(s.kv_dtype), compute_dtype=dt(s.compute_dtype),
                   out_dtype=dt(s.out_dtype), page_size=s.page_size, max_q_len=s.max_q_len,
                   max_kv_len=s.max_kv_len, causal=bool(s.causal),
                   window=(s.window_left, s.window_right), softcap=s.softcap,
                   sinks=bool(s.has_sinks), lse=bool(s.return_lse))

    def validate(self) -> Optional[str]:
        """None when valid; otherwise the registry's reason (a str)."""
        buf = ctypes.create_string_buffer(512)
        ok = _lib.attn_shape_validate(ctypes.byref(self._to_c()), buf, len(buf))
        return None if ok else _text(buf.value)

    def to_dict(self) -> Dict[str, Any]:
        """The keys of the CLI's JSON shape object."""
        return {"arch": self.arch, "num_q_heads": self.q_heads, "num_kv_heads": self.kv_heads,
                "head_dim": self.head_dim, "head_dim_v": self.head_dim_v,
                "q_dtype": self.q_dtype, "kv_dtype": self.kv_dtype,
                "compute_dtype": self.compute_dtype, "out_dtype": self.out_dtype,
                "page_size": self.page_size, "max_q_len": self.max_q_len,
                "max_kv_len": self.max_kv_len, "causal": self.causal,
                "window_left": self.window[0], "window_right": self.window[1],
                "softcap": self.softcap, "has_sinks": self.sinks, "return_lse": self.lse}

    def replace(self, **changes: Any) -> "Shape":
        """A copy with some fields changed (Shape's keyword arguments)."""
        kw = {k: getattr(self, k) for k in self.__slots__}
        kw.update(changes)
        return Shape(**kw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shape) and all(getattr(self, k) == getattr(other, k)
                                                for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(512)
        _lib.attn_shape_format(ctypes.byref(self._to_c()), buf, len(buf))
        return str(_text(buf.value))

    def __repr__(self) -> str:
        return "Shape(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


# ---- selections -----------------------------------------------------------------

class Selection:
    """A decision: ``backend`` (its name), ``effective_shape`` (after any
    fallback), and, when a fallback rule was applied, ``fallback_rule``,
    ``fallback_backend`` (the top candidate whose rejection motivated it),
    ``fallback_reason`` (its reason name) and ``fallback_message``."""

    def __init__(self, registry: "Registry", shape: Optional[Shape], c_sel: Any,
                 owner: Any = None) -> None:
        self.registry = registry
        self.shape = shape
        self._c = c_sel
        self._owner = owner  # what keeps the C strings alive (a Plan), if not the registry
        self.backend = _text(c_sel.backend_name)
        self.effective_shape = Shape._from_c(c_sel.effective_shape)
        self.fallback_applied = bool(c_sel.fallback_applied)
        applied = self.fallback_applied
        self.fallback_rule = _text(c_sel.fallback_rule) if applied else None
        self.fallback_backend = _text(c_sel.fallback_backend) if applied else None
        self.fallback_reason = _reason_name(c_sel.fallback_reason) if applied else None
        self.fallback_message = _text(c_sel.fallback_message) if applied else None
        #: whether the backend's forward may be captured in a CUDA/HIP graph
        self.graph_capturable = bool(c_sel.backend_name and c_sel.graph_capturable)

    def to_dict(self) -> Dict[str, Any]:
        """The keys of the CLI's JSON selection object."""
        if self._owner is None and not self.registry._h:
            # its strings live in the registry: freed with it
            raise Error("ATTN_ERR_INVALID_ARGUMENT", "the selection's registry is closed")
        return _selection_dict(self._c)

    def __repr__(self) -> str:
        extra = f", fallback_rule={self.fallback_rule!r}" if self.fallback_applied else ""
        return f"Selection(backend={self.backend!r}{extra})"


def _selection_dict(c_sel: Any) -> Dict[str, Any]:
    applied = bool(c_sel.fallback_applied)
    d = {"backend": _text(c_sel.backend_name), "fallback_applied": applied,
         "fallback_rule": _text(c_sel.fallback_rule) if applied else None,
         "fallback_backend": _text(c_sel.fallback_backend) if applied else None,
         "fallback_reason": _reason_name(c_sel.fallback_reason) if applied else None,
         "fallback_message": _text(c_sel.fallback_message) if applied else None,
         "message": _text(c_sel.message) or "",
         "graph_capturable": bool(c_sel.backend_name and c_sel.graph_capturable)}
    if c_sel.backend_name:
        d["effective_shape"] = Shape._from_c(c_sel.effective_shape).to_dict()
    return d


def _kernel_plan_dict(k: Any) -> Dict[str, Any]:
    return {"kernel": _text(k.kernel), "role": _text(k.role), "threads": k.threads,
            "rows": k.rows, "keys": k.keys, "stages": k.stages, "shared_bytes": k.shared_bytes}


def _launch_plan_dict(registry_handle: Any, c_sel: Any) -> Optional[Dict[str, Any]]:
    """The CLI's explain "plan": the selected GPU backend's launch plan, or
    None (cpu-ref, or no decision)."""
    if not c_sel.backend_name:
        return None
    lp = _native.new(_native.LaunchPlan)
    if _lib.attn_registry_describe_plan(registry_handle, ctypes.byref(c_sel),
                                        ctypes.byref(lp)) != _native.OK or lp.num_kernels == 0:
        return None
    kernels = [_kernel_plan_dict(lp.kernels[k])
               for k in range(min(lp.num_kernels, _native.PLAN_MAX_KERNELS))]
    d = {"arch": _text(lp.arch)}
    d.update(kernels[0])
    d.update({"shared_limit": lp.shared_limit, "wave_size": lp.wave_size, "kernels": kernels})
    return d


# ---- plans --------------------------------------------------------------------------

_PHASES = {n: k for k, n in enumerate(_native.PHASE_NAMES)}
_KINDS = {n: k for k, n in enumerate(_native.LAYER_KIND_NAMES)}


class Plan:
    """A whole model's attention, decided once (attn_registry_plan): ``status``,
    ``message``, ``per_rank`` (dict) and ``entries`` (dicts with the CLI's
    keys, plus ``selection``: a Selection for attention entries).
    ``lookup(layer, phase)`` is the entry a host asks at run time."""

    def __init__(self, registry: "Registry", handle: Any, config: Optional[str] = None,
                 model: Optional[Dict[str, Any]] = None,
                 target: Optional[Dict[str, Any]] = None, notes: Iterable[str] = ()) -> None:
        self.registry = registry
        self._h = handle
        #: The config.json read (plan_hf_config), else None.
        self.config = config
        #: The model's own numbers and the engine's choices, as the CLI's
        #: "model" and "target" objects; notes: how the config's values were
        #: derived (plan_hf_config).
        self.model, self.target, self.notes = model, target, list(notes)
        summary = _native.new(_native.PlanSummary)
        st = _lib.attn_plan_summarize(handle, ctypes.byref(summary))
        if st != _native.OK:
            raise _error(st)
        self.status = _status_name(summary.status)
        self.message = _text(summary.message) or ""
        self.per_rank = {"num_q_heads": summary.rank_q_heads,
                         "num_kv_heads": summary.rank_kv_heads,
                         "kv_heads_replicated": bool(summary.kv_heads_replicated),
                         "prefill_q_len": summary.prefill_q_len,
                         "decode_q_len": summary.decode_q_len,
                         "verify_q_len": summary.verify_q_len or None,
                         "max_kv_len": summary.max_kv_len}
        # The 0.3 names, kept one minor version (deprecated in the schema).
        self.per_rank.update({"q_heads": summary.rank_q_heads,
                              "kv_heads": summary.rank_kv_heads, "kv_len": summary.max_kv_len})
        self.entries = []
        for k in range(summary.num_entries):
            e = _native.new(_native.PlanEntry)
            if _lib.attn_plan_entry_get(handle, k, ctypes.byref(e)) == _native.OK:
                self.entries.append(self._entry(e))

    def _entry(self, e: Any) -> Dict[str, Any]:
        s = e.shape.contents if e.shape else None
        sel = e.selection.contents if e.selection else None
        applied = bool(sel and sel.fallback_applied)
        # The key names of shapes and selections (the CLI's plan --json).
        d = {"layers": [e.layers[i] for i in range(e.num_layers)],
             "layer_type": _text(e.layer_type), "kind": _native.LAYER_KIND_NAMES[e.layer_kind],
             "phase": _native.PHASE_NAMES[e.phase],
             "num_q_heads": s.num_q_heads if s else None,
             "num_kv_heads": s.num_kv_heads if s else None,
             "head_dim": s.head_dim if s else None,
             "head_dim_v": (s.head_dim_v or s.head_dim) if s else None,
             "max_q_len": s.max_q_len if s else None, "max_kv_len": s.max_kv_len if s else None,
             "window_left": s.window_left if s else None,
             "window_right": s.window_right if s else None,
             "softcap": s.softcap if s else None, "has_sinks": bool(s.has_sinks) if s else None,
             "scale": _json_float(e.scale) if s else None,
             "backend": _text(sel.backend_name) if sel else None,
             "fallback_rule": _text(sel.fallback_rule) if applied else None,
             "fallback_backend": _text(sel.fallback_backend) if applied else None,
             "fallback_reason": _reason_name(sel.fallback_reason) if applied else None,
             "fallback_message": _text(sel.fallback_message) if applied else None,
             "status": _status_name(e.status) if sel else "NOT_ATTENTION",
             "message": _text(e.message) or ""}
        # The 0.3 names, kept one minor version (deprecated in the schema).
        d.update({"q_heads": d["num_q_heads"], "kv_heads": d["num_kv_heads"],
                  "q_len": d["max_q_len"], "kv_len": d["max_kv_len"],
                  "window": [s.window_left, s.window_right] if s else None,
                  "sinks": d["has_sinks"], "fallback": d["fallback_rule"]})
        if sel and sel.backend_name:
            copy = _native.Selection.from_buffer_copy(sel)
            d["selection"] = Selection(self.registry, Shape._from_c(s), copy, owner=self)
        else:
            d["selection"] = None
        return d

    @property
    def ok(self) -> bool:
        """Every attention entry has a backend."""
        return self.status == "ATTN_OK"

    def lookup(self, layer: int, phase: str) -> Dict[str, Any]:
        """The entry dict that covers ``layer`` in ``phase`` ("prefill",
        "decode", "verify"); KeyError when the plan has none."""
        if phase not in _PHASES:
            raise ValueError(f"phase: expected one of {', '.join(_PHASES)}, got {phase!r}")
        for d in self.entries:
            if d["phase"] == phase and layer in d["layers"]:
                return d
        raise KeyError(f"layer {layer} has no {phase} entry in the plan")

    def to_dict(self) -> Dict[str, Any]:
        """The CLI's ``plan --json`` document (docs/attnreg.schema.json)."""
        d = {"schema_version": SCHEMA_VERSION, "command": "plan", "status": self.status,
             "exit_code": _exit_code(self.status), "message": self.message,
             "config": self.config, "model": self.model, "target": self.target,
             "per_rank": dict(self.per_rank), "notes": list(self.notes),
             "entries": [{k: v for k, v in d.items() if k != "selection"}
                         for d in self.entries]}
        if not self.ok:
            d["error"] = {"status": self.status, "message": self.message,
                          "exit_code": _exit_code(self.status)}
        return d

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        try:
            if h:
                _lib.attn_plan_free(h)
        except Exception:  # interpreter shutdown
            pass


def _json_float(x: float) -> float:
    """x as the CLI's JSON writes it (%.9g, which round-trips a C float), so
    the binding's dicts equal the CLI's documents."""
    return float(f"{x:.9g}")


def _target_model(arch: str, q_dtype: str, kv_dtype: Optional[str],
                  compute_dtype: Optional[str], out_dtype: Optional[str], page_size: int,
                  tp: int, max_prefill_tokens: int, spec_tokens: int) -> Any:
    """An attn_model with the engine's choices set (the model's own numbers
    are the caller's): Registry.plan and plan_hf_config."""
    m = _native.new(_native.Model)
    _lib.attn_model_init(ctypes.byref(m), ctypes.sizeof(m))
    if len(arch.encode()) >= _native.ATTN_ARCH_MAX:
        raise ValueError(f"plan: arch {arch!r} is too long")
    m.arch = arch.encode()
    m.q_dtype = _dtype_code("q_dtype", q_dtype)
    m.kv_dtype = _dtype_code("kv_dtype", kv_dtype or q_dtype)
    m.compute_dtype = _dtype_code("compute_dtype", compute_dtype or q_dtype)
    m.out_dtype = _dtype_code("out_dtype", out_dtype or q_dtype)
    m.page_size, m.tp_size = _int32("page_size", page_size, "plan"), _int32("tp", tp, "plan")
    m.max_prefill_tokens = _int32("max_prefill_tokens", max_prefill_tokens, "plan")
    m.spec_tokens = _int32("spec_tokens", spec_tokens, "plan")
    return m


def _target_dict(m: Any) -> Dict[str, Any]:
    """The CLI's "target" object of a plan."""
    def dt(code: int) -> str:
        return str(_text(_lib.attn_dtype_name(code)))
    return {"arch": _text(m.arch), "q_dtype": dt(m.q_dtype), "kv_dtype": dt(m.kv_dtype),
            "compute_dtype": dt(m.compute_dtype), "out_dtype": dt(m.out_dtype),
            "page_size": m.page_size, "tp": m.tp_size, "max_model_len": m.max_model_len,
            "max_prefill_tokens": m.max_prefill_tokens, "spec_tokens": m.spec_tokens}


def _plan_model(registry: "Registry", m: Any, keep: Any = None, **extras: Any) -> "Plan":
    """attn_registry_plan on a filled attn_model: a Plan, or the error of an
    invalid model (InvalidShapeError) or of a failed call."""
    handle = ctypes.c_void_p()
    st = _lib.attn_registry_plan(registry._handle(), ctypes.byref(m), ctypes.byref(handle))
    del keep
    if not handle:
        raise _error(st)
    if st == _native.STATUS["ATTN_ERR_INVALID_SHAPE"]:
        summary = _native.new(_native.PlanSummary)
        _lib.attn_plan_summarize(handle, ctypes.byref(summary))
        message = _text(summary.message)
        _lib.attn_plan_free(handle)
        raise _error(st, message)
    return Plan(registry, handle, target=_target_dict(m), **extras)


def _layers_array(layers: Optional[Sequence[Any]]) -> Tuple[Any, List[bytes]]:
    """layers: None, or one item per layer: "full", "not_attention",
    ("sliding", (L, R)), or a dict(kind=..., window=(L, R), type_name=...)."""
    if layers is None:
        return None, []
    arr = (_native.Layer * len(layers))()
    keep = []
    for i, item in enumerate(layers):
        if isinstance(item, str):
            item = {"kind": item}
        elif isinstance(item, (tuple, list)):
            item = {"kind": item[0], "window": item[1] if len(item) > 1 else (-1, -1)}
        kind = item.get("kind", "full")
        if kind not in _KINDS:
            raise ValueError(f"layers[{i}]: unknown kind {kind!r} (expected one of "
                             f"{', '.join(_KINDS)})")
        a = arr[i]
        a.struct_size = ctypes.sizeof(_native.Layer)
        a.kind = _KINDS[kind]
        try:
            left, right = item.get("window", (-1, -1))
        except (TypeError, ValueError):
            raise ValueError(f"layers[{i}]: expected window (left, right), got "
                             f"{item.get('window')!r}") from None
        a.window_left = _int32(f"layers[{i}].window[0]", left, "plan")
        a.window_right = _int32(f"layers[{i}].window[1]", right, "plan")
        if item.get("type_name"):
            b = item["type_name"].encode()
            keep.append(b)
            a.type_name = b
    return arr, keep


# ---- the registry ----------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def _registry_call(method: _F) -> _F:
    """Counts the call as a user of the registry handle for its duration, so
    that close() from another thread waits for it (the handle goes when the
    last user leaves) instead of freeing what the call is reading; a call on
    a closed registry raises."""
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._release()
    return cast(_F, call)


def _backend_call(method: _F) -> _F:
    """A Backend is used by one thread at a time (the C object is not
    thread-safe): a second thread gets an exception, not a crash. An RLock,
    so that a guarded method may call another on the same thread."""
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._busy.acquire(blocking=False):
            raise Error("ATTN_ERR_INVALID_ARGUMENT",
                        f"backend {self.name} is in use by another thread (a Backend is used "
                        "by one thread at a time; create one per thread)")
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()
    return cast(_F, call)


class _Closable:
    """with-statement support for objects with close()."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Releases the object (each subclass says how)."""
        raise NotImplementedError


def _check_seqlens(cu: List[int], sk: List[int], positional: bool) -> None:
    """The per-sequence rules of plugins/common/attn_batch_check.h on host
    arrays, with the same wording: a batch that contradicts itself is an
    error naming the sequence and the array, never rows of zeros (once,
    8 query tokens over seqused_k 2 gave 6 zero rows). Q > K is refused only
    under causal masking or a window (positional), where it leaves rows at
    negative positions; without them every query sees every key (cascade
    attention over a shorter shared prefix). Device arrays are not read (that
    would synchronise); cpu-ref checks again in C."""
    if cu[0] != 0:
        raise ValueError(f"cu_seqlens_q[0] is {cu[0]}, must be 0")
    for i, kv_len in enumerate(sk):
        q_len = cu[i + 1] - cu[i]  # >= 0: forward's loop refused a decreasing array
        if kv_len < 0:
            raise ValueError(f"seqused_k[{i}] is {kv_len}: sequence {i} needs a key count >= 0")
        if positional and q_len > kv_len:
            raise ValueError(f"sequence {i} has {q_len} query tokens (cu_seqlens_q[{i}..{i + 1}]) "
                             f"but seqused_k[{i}] is {kv_len}: the keys include the new tokens, "
                             f"so seqused_k must be at least the query tokens under causal "
                             f"masking or a window")


class Registry(_Closable):
    """An open registry (attn_registry_open): reads the conf files, loads no
    plugin until one is asked. A context manager; close() when done (Backends
    created from it keep it alive until they are closed too)."""

    def __init__(self, conf_paths: Union[str, "os.PathLike[str]", Iterable[Any]] = (),
                 use_env: bool = True, default_conf: bool = True, strict: bool = False,
                 runnable: bool = False, backend: Optional[str] = None,
                 disabled: Union[str, Iterable[str]] = (),
                 log_level: Union[str, int, None] = "warn",
                 log: Optional[Callable[[str, str], Any]] = None,
                 fail_on_conf_error: bool = False, probe_out_of_process: bool = False) -> None:
        if isinstance(conf_paths, (str, os.PathLike)):
            conf_paths = (conf_paths,)
        if isinstance(disabled, str):
            disabled = (disabled,)
        opt = _native.new(_native.RegistryOptions)
        self._conf = [str(p).encode() for p in conf_paths]
        self._conf_arr = (ctypes.c_char_p * max(1, len(self._conf)))(*self._conf)
        if self._conf:
            opt.conf_paths = ctypes.cast(self._conf_arr, ctypes.POINTER(ctypes.c_char_p))
        opt.num_conf_paths = len(self._conf)
        opt.skip_env_conf_path = int(not use_env)
        opt.skip_default_conf = int(not default_conf)
        opt.skip_env = int(not use_env)
        if log_level is None:
            opt.log_level = -1
        elif isinstance(log_level, int) and not isinstance(log_level, bool):
            opt.log_level = log_level
        elif isinstance(log_level, str) and log_level in _native.LOG_LEVEL:
            opt.log_level = _native.LOG_LEVEL[log_level]
        else:
            raise ValueError(f"log_level: expected one of {', '.join(LOG_LEVELS)} or None, got "
                             f"{log_level!r}")
        self._log = log
        self._log_fn = None
        if log is not None:
            if not callable(log):
                raise TypeError("log: expected a callable (level, message)")

            callback: Callable[[str, str], Any] = log

            def trampoline(_user: Any, level: int, message: bytes,
                           _log: Callable[[str, str], Any] = callback) -> None:
                try:
                    name = (_native.LOG_LEVEL_NAMES[level]
                            if 0 <= level < len(_native.LOG_LEVEL_NAMES) else str(level))
                    _log(name, _text(message))
                except BaseException as e:  # never unwind into C
                    import sys
                    # the hook reads these attributes of any object
                    sys.unraisablehook(_Unraisable(e, log))  # type: ignore[arg-type]
            self._log_fn = _native.LOG_FN(trampoline)
            opt.log_fn = self._log_fn
        opt.strict = int(bool(strict))
        self._forced = backend.encode() if backend else None
        opt.forced_backend = self._forced
        self._disabled = [d.encode() for d in disabled]
        self._disabled_arr = (ctypes.c_char_p * max(1, len(self._disabled)))(*self._disabled)
        if self._disabled:
            opt.disabled_backends = ctypes.cast(self._disabled_arr, ctypes.POINTER(ctypes.c_char_p))
        opt.num_disabled_backends = len(self._disabled)
        opt.runnable = int(bool(runnable))
        opt.fail_on_conf_error = int(bool(fail_on_conf_error))
        # load each plugin in a child process first (a plugin that crashes or
        # exits while loading is reported instead of taking the host down)
        opt.probe_out_of_process = int(bool(probe_out_of_process))
        self._lock = threading.Lock()
        self._users = 0        # open Backends
        self._closing = False  # close() was called; the handle goes when the last user does
        handle = ctypes.c_void_p()
        self._h: Optional[ctypes.c_void_p] = None
        st = _lib.attn_registry_open(ctypes.byref(opt), ctypes.byref(handle))
        if st != _native.OK:
            raise _error(st)
        self._h = handle

    # -- lifetime
    def close(self) -> None:
        """Closes the registry now, or when the last Backend created from it is
        closed, or when the calls other threads have under way return (later
        calls raise attnreg.Error). Selections and plans from it are unusable
        afterwards."""
        with self._lock:
            self._closing = True
            self._maybe_release()

    def _maybe_release(self) -> None:
        h = getattr(self, "_h", None)
        if h and self._users == 0:
            self._h = None
            _lib.attn_registry_close(h)

    def _acquire(self) -> None:
        with self._lock:
            self._users += 1

    def _enter(self) -> None:
        with self._lock:
            if self._closing or not self._h:
                raise Error("ATTN_ERR_INVALID_ARGUMENT", "the registry is closed")
            self._users += 1

    def _release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._closing:
                self._maybe_release()

    @property
    def closed(self) -> bool:
        """The registry was closed (or is closing)."""
        return self._closing or not self._h

    def _handle(self) -> Any:
        # Called inside a _registry_call (or by a Backend, which holds a
        # use): a close() that came meanwhile only marked the registry, the
        # handle stays valid until the call ends.
        h = self._h
        if not h:
            raise Error("ATTN_ERR_INVALID_ARGUMENT", "the registry is closed")
        return h

    def __del__(self) -> None:
        try:
            if getattr(self, "_h", None) and getattr(self, "_users", 0) == 0:
                h, self._h = self._h, None
                _lib.attn_registry_close(h)
        except Exception:  # interpreter shutdown: module globals may be gone
            pass

    # -- queries
    @_registry_call
    def conf_paths(self) -> List[str]:
        """The conf folders searched, in order."""
        h = self._handle()
        return [_text(_lib.attn_registry_conf_path(h, k))
                for k in range(_lib.attn_registry_conf_path_count(h))]

    @_registry_call
    def diagnostics(self) -> List[Dict[str, Any]]:
        """Problems found reading conf files or loading plugins (dicts)."""
        h = self._handle()
        out = []
        for k in range(_lib.attn_registry_diagnostic_count(h)):
            d = _native.new(_native.Diagnostic)
            if _lib.attn_registry_diagnostic(h, k, ctypes.byref(d)) == _native.OK:
                out.append({"status": _status_name(d.status), "file": _text(d.file),
                            "line": d.line, "plugin": _text(d.plugin),
                            "message": _text(d.message)})
        return out

    @_registry_call
    def list(self, arch: Optional[str] = None) -> List[Dict[str, Any]]:
        """The plugins the conf files declare, in priority order (the keys of
        `attnreg list --json`'s plugins). INI layer only: loads nothing."""
        h = self._handle()
        out = []
        for k in range(_lib.attn_registry_plugin_count(h)):
            p = _native.new(_native.PluginInfo)
            if _lib.attn_registry_plugin(h, k, ctypes.byref(p)) != _native.OK:
                continue
            if arch is not None and not _lib.attn_plugin_info_has_arch(ctypes.byref(p),
                                                                     arch.encode()):
                continue
            archs = [a.strip() for a in (_text(p.archs) or "").split(",") if a.strip()]
            out.append({"backend": _text(p.name), "priority": p.priority,
                        "enabled": bool(p.enabled), "archs": archs,
                        "library": _text(p.library), "conf_file": _text(p.conf_file),
                        "conf_line": p.conf_line})
        return out

    @_registry_call
    def load_plugin(self, name: str) -> Dict[str, Any]:
        """Loads a plugin's library (if not yet) and says what it found."""
        h = self._handle()
        for k in range(_lib.attn_registry_plugin_count(h)):
            p = _native.new(_native.PluginInfo)
            if _lib.attn_registry_plugin(h, k, ctypes.byref(p)) == _native.OK and \
                    _text(p.name) == name:
                info = _native.new(_native.PluginLoadInfo)
                _lib.attn_registry_load_plugin(h, k, ctypes.byref(info))
                return {"backend": name, "status": _status_name(info.status),
                        "reason": _reason_name(info.reason) if info.status else None,
                        "message": _text(info.message) or "", "version": _text(info.version),
                        "description": _text(info.description),
                        "built_archs": [a for a in (_text(info.built_archs) or "").split(",")
                                        if a],
                        # "major.minor", as `attnreg check --json` writes it
                        "abi": f"{info.abi_major}.{info.abi_minor}",
                        "num_predicates": info.num_predicates}
        raise BackendRejectedError("ATTN_ERR_NOT_FOUND", f"no backend named '{name}'")

    @_registry_call
    def select(self, shape: Union[Shape, Dict[str, Any]]) -> Selection:
        """The backend for ``shape`` (a Shape, or Shape's keyword arguments as
        a dict). Raises InvalidShapeError, UnsupportedError or
        BackendRejectedError with the registry's message."""
        shape = _as_shape(shape)
        sel = _native.new(_native.Selection)
        st = _lib.attn_registry_select(self._handle(), ctypes.byref(shape._to_c()),
                                       ctypes.byref(sel))
        if st != _native.OK:
            raise _error(st, _text(sel.message))
        return Selection(self, shape, sel)

    @_registry_call
    def explain(self, shape: Union[Shape, Dict[str, Any]]) -> Dict[str, Any]:
        """Every candidate's verdict in every pass, and the decision: a dict
        with the content of `attnreg explain --json`. A failed decision is
        reported in "status", not raised."""
        shape = _as_shape(shape)
        ex = ctypes.c_void_p()
        c_shape = shape._to_c()
        st = _lib.attn_registry_explain(self._handle(), ctypes.byref(c_shape), ctypes.byref(ex))
        if not ex:
            raise _error(st)
        try:
            status = _lib.attn_explanation_status(ex)
            sel = _native.new(_native.Selection)
            if _lib.attn_explanation_selection(ex, ctypes.byref(sel)) != status:
                sel = _native.new(_native.Selection)
            records = []
            for k in range(_lib.attn_explanation_count(ex)):
                r = _native.new(_native.VerdictRecord)
                if _lib.attn_explanation_record(ex, k, ctypes.byref(r)) == _native.OK:
                    records.append(r)
            passes = []
            for p in range(_lib.attn_explanation_pass_count(ex)):
                pshape = _lib.attn_explanation_pass_shape(ex, p)
                entry = {"pass": p, "rule": _text(_lib.attn_explanation_pass_rule(ex, p))}
                if pshape:
                    entry["shape"] = Shape._from_c(pshape.contents).to_dict()
                entry["verdicts"] = [
                    {"backend": _text(r.backend), "priority": r.priority,
                     "accepted": bool(r.accepted), "selected": bool(r.selected),
                     "reason": _reason_name(r.reason), "reason_code": r.reason,
                     "check": _text(r.predicate), "message": _text(r.message) or "",
                     "conf_file": _text(r.conf_file),
                     "conf_line": r.conf_line if r.conf_file else None}
                    for r in records if getattr(r, "pass") == p]
                passes.append(entry)
            name = _status_name(status)
            d = {"schema_version": SCHEMA_VERSION, "command": "explain", "status": name,
                 "exit_code": _exit_code(name), "shape": shape.to_dict(), "passes": passes,
                 "selection": _selection_dict(sel),
                 "plan": _launch_plan_dict(self._handle(), sel) if name == "ATTN_OK" else None}
            if name != "ATTN_OK":  # the CLI's error object under --json
                d["error"] = {"status": name, "message": _text(sel.message) or "",
                              "exit_code": _exit_code(name)}
            return d
        finally:
            _lib.attn_explanation_free(ex)

    @_registry_call
    def plan(self, arch: str = "cpu", q_heads: int = 1, kv_heads: int = 0, head_dim: int = 128,
             head_dim_v: int = 0, num_layers: int = 1, layers: Optional[Sequence[Any]] = None,
             softcap: float = 0.0, sinks: bool = False, q_dtype: str = "bf16",
             kv_dtype: Optional[str] = None, compute_dtype: Optional[str] = None,
             out_dtype: Optional[str] = None, page_size: int = 16, tp: int = 1,
             max_model_len: Optional[int] = None, max_prefill_tokens: int = 0,
             spec_tokens: int = 0, scale: float = 0.0) -> "Plan":
        """A whole model's attention (attn_registry_plan): q_heads/kv_heads are
        the whole model's, split over ``tp`` ranks as vLLM and SGLang do;
        ``layers`` (None = every layer full attention) gives each layer as
        "full", "not_attention", ("sliding", (L, R)) or a dict(kind, window,
        type_name); ``scale`` the softmax scale (0 = head_dim ** -0.5), which
        every attention entry reports. Returns a Plan (whose ``status`` says
        whether every attention entry has a backend); raises
        InvalidShapeError for a model no backend could run (e.g. heads not
        divisible by tp). For a Hugging Face config.json: plan_hf_config."""
        if max_model_len is None:
            raise ValueError("plan: max_model_len must be given (the kv capacity of every phase)")
        def i32(field: str, value: Any) -> int:
            return _int32(field, value, "plan")
        m = _target_model(arch, q_dtype, kv_dtype, compute_dtype, out_dtype, page_size, tp,
                          max_prefill_tokens, spec_tokens)
        m.num_q_heads, m.num_kv_heads, m.head_dim, m.head_dim_v = (
            i32("q_heads", q_heads), i32("kv_heads", kv_heads), i32("head_dim", head_dim),
            i32("head_dim_v", head_dim_v))
        arr, keep = _layers_array(layers)
        m.num_layers = i32("num_layers", len(layers) if layers is not None else num_layers)
        if arr is not None:
            m.layers = ctypes.cast(arr, ctypes.POINTER(_native.Layer))
        m.softcap, m.has_sinks, m.scale = float(softcap), int(bool(sinks)), float(scale)
        m.max_model_len = i32("max_model_len", max_model_len)
        model = {"model_type": None, "from_text_config": False, "num_layers": m.num_layers,
                 "num_q_heads": q_heads, "num_kv_heads": kv_heads, "head_dim": head_dim,
                 "softcap": float(softcap), "has_sinks": bool(sinks),
                 "scale": _json_float(float(scale) or head_dim ** -0.5) if head_dim > 0 else None,
                 "max_position_embeddings": None}
        return _plan_model(self, m, keep=(arr, keep), model=model)

    @_registry_call
    def create(self, selection: Selection) -> "Backend":
        """Constructs the selected backend (attn_backend_create): checks the
        binary holds code for the arch and a device is there, then calls the
        plugin's constructor. Raises BackendError."""
        if not isinstance(selection, Selection):
            raise TypeError("create: expected a Selection from select() or a plan entry")
        if selection.registry is not self:
            raise ValueError("create: the selection comes from another registry")
        h = self._handle()
        be = ctypes.c_void_p()
        st = _lib.attn_backend_create(h, ctypes.byref(selection._c), ctypes.byref(be))
        if st != _native.OK:
            raise _error(st)
        return Backend(self, selection, be)


class _Unraisable:
    """What sys.unraisablehook expects, for an exception raised by the log callback."""

    def __init__(self, exc: BaseException, obj: Any) -> None:
        self.exc_type, self.exc_value, self.exc_traceback = type(exc), exc, exc.__traceback__
        self.err_msg = "Exception ignored in the attnreg log callback"
        self.object = obj


def _as_shape(shape: Any) -> Shape:
    if isinstance(shape, Shape):
        return shape
    if isinstance(shape, dict):
        return Shape(**shape)
    raise TypeError(f"expected an attnreg.Shape, got {type(shape).__name__}")


# ---- backends ------------------------------------------------------------------------

class Backend(_Closable):
    """A constructed backend (attn_backend_create). A context manager;
    close() when done. Keeps its Registry alive. Used by one thread at a
    time, as the C object is: a call while another thread's call on the same
    Backend runs raises attnreg.Error instead of running."""

    def __init__(self, registry: Registry, selection: Selection, handle: Any) -> None:
        self.registry = registry
        self.selection = selection
        self._h = handle
        self._busy = threading.RLock()
        registry._acquire()
        self.name = _text(_lib.attn_backend_name(handle))
        self.shape = Shape._from_c(_lib.attn_backend_shape(handle).contents)
        self._ws: Dict[str, Tuple[Any, int, int]] = {}  # device -> (buffer, address, bytes)
        # Replaced workspaces stay allocated while the backend lives: a CUDA
        # graph captured with one keeps its address.
        self._ws_retired: List[Any] = []
        self._op_id = 0  # attnreg.torch_ops.register()'s id for the custom ops; 0 = none

    @_backend_call
    def close(self) -> None:
        """Destroys the backend object (and releases its registry)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.attn_backend_destroy(h)
            self._ws.clear()
            self._ws_retired.clear()
            self.registry._release()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> Any:
        if not self._h:
            raise Error("ATTN_ERR_INVALID_ARGUMENT", "the backend is closed")
        return self._h

    @property
    def is_cpu(self) -> bool:
        """The backend runs on the host (arch cpu)."""
        return self.shape.arch == "cpu"

    @_backend_call
    def workspace_size(self, max_num_seqs: int, max_num_tokens: int) -> int:
        """Bytes of scratch a forward of up to these many sequences and query
        tokens needs (attn_backend_workspace_size)."""
        lim = _native.new(_native.BatchLimits)
        lim.max_num_seqs = _int32("max_num_seqs", max_num_seqs, "workspace_size")
        lim.max_num_tokens = _int32("max_num_tokens", max_num_tokens, "workspace_size")
        n = ctypes.c_size_t()
        st = _lib.attn_backend_workspace_size(self._handle(), ctypes.byref(lim), ctypes.byref(n))
        if st != _native.OK:
            raise _error(st)
        return n.value

    @_backend_call
    def reserve_workspace(self, max_num_seqs: int, max_num_tokens: int,
                          device: Any = None) -> int:
        """Allocates (and caches) the workspace for batches up to these limits
        now, e.g. before capturing a CUDA graph: forward then never allocates
        for such batches. ``device``: a torch device for GPU backends (default
        "cuda:<current>"); CPU backends use host memory. Returns the bytes."""
        need = self.workspace_size(max(max_num_seqs, 1), max(max_num_tokens, 1))
        if self.is_cpu:
            kind, dev = "host", "cpu"
        else:
            import torch
            kind = "torch"
            tdev = torch.device(device) if device is not None else torch.device(
                "cuda", torch.cuda.current_device())
            index = tdev.index if tdev.index is not None else torch.cuda.current_device()
            dev = f"{tdev.type}:{index}"
        self._workspace(kind, dev, need)
        return need

    def _workspace(self, kind: str, device: str, need: int) -> Tuple[int, int]:
        """(address, bytes) of a cached workspace of at least ``need`` bytes."""
        cached = self._ws.get(device)
        if cached is None or cached[2] < need:
            if cached is not None:
                self._ws_retired.append(cached[0])
            buf, addr = _arrays.workspace_buffer(kind, device, need)
            cached = (buf, addr, need)
            self._ws[device] = cached
        return cached[1], cached[2]

    @_backend_call
    def forward(self, q: Any, k_cache: Any, v_cache: Any, block_table: Any, cu_seqlens_q: Any,
                seqused_k: Any, out: Any = None, *, scale: Optional[float] = None,
                q_descale: float = 1.0, k_descale: float = 1.0, v_descale: float = 1.0,
                sinks: Any = None, workspace: Any = None, stream: Any = None,
                max_seqlen_q: Optional[int] = None, max_seqlen_k: Optional[int] = None,
                lse: Any = None) -> Any:
        """Paged attention in vLLM's layouts: q [T, Hq, D] (rows may be strided;
        the last dimension contiguous), k_cache [blocks, page, Hkv, D] and
        v_cache [blocks, page, Hkv, Dv] as views with any strides (the last
        dimension contiguous; see kv_views() for the engines' layouts; a
        backend that cannot read a layout refuses it), block_table int32
        [seqs, W] (row stride free), cu_seqlens_q int32 [seqs + 1],
        seqused_k int32 [seqs], out [T, Hq, Dv] (allocated when None), sinks
        float32 [Hq] iff the shape has sinks. NumPy arrays for CPU backends
        (bf16 as uint16 bits, fp8 as uint8 codes), torch tensors on the
        backend's device (CUDA: torch's current stream unless ``stream``).
        max_seqlen_q/k default to the shape's capacities on devices and to
        the batch's real maxima for host arrays. The workspace is allocated
        and cached when not given (reserve_workspace() sizes it ahead, e.g.
        before a CUDA graph capture). Returns out; for a Shape(lse=True)
        backend (out, lse): the float32 log-sum-exp per (token, query head),
        into ``lse`` when given (a [T, Hq] view with any strides, e.g. vLLM's
        [Hq, T] transposed), for merge_states()."""
        a, out, lse = self._forward_args(q, k_cache, v_cache, block_table, cu_seqlens_q,
                                         seqused_k, out, scale=scale, q_descale=q_descale,
                                         k_descale=k_descale, v_descale=v_descale, sinks=sinks,
                                         workspace=workspace, stream=stream,
                                         max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
                                         lse=lse)
        st = _lib.attn_backend_forward(self._handle(), ctypes.byref(a))
        if st != _native.OK:
            raise _error(st)
        return (out, lse) if self.shape.lse else out

    def _forward_args(self, q: Any, k_cache: Any, v_cache: Any, block_table: Any,
                      cu_seqlens_q: Any, seqused_k: Any, out: Any, *, scale: Optional[float],
                      q_descale: float, k_descale: float, v_descale: float, sinks: Any,
                      workspace: Any, stream: Any, max_seqlen_q: Optional[int],
                      max_seqlen_k: Optional[int], lse: Any) -> Any:
        """Every check of forward(), then its ctypes arguments: (args, out, lse)."""
        self._handle()  # raises once closed
        sh = self.shape
        hq, hkv, d, dv = sh.q_heads, sh.kv_heads_effective, sh.head_dim, sh.head_dim_v_effective
        vq = _arrays.View("q", q)
        kind = vq.kind
        device = vq.device
        if (device == "cpu") != self.is_cpu:
            raise ValueError(f"q: on {device}, but backend {self.name} runs on arch {sh.arch}: "
                             f"expected {'host' if self.is_cpu else 'CUDA device'} memory")
        if kind == "numpy" and not self.is_cpu:
            raise ValueError(f"q: NumPy arrays are host memory; backend {self.name} (arch "
                             f"{sh.arch}) needs torch CUDA tensors")
        views = {"q": vq}
        for name, obj in (("k_cache", k_cache), ("v_cache", v_cache),
                          ("block_table", block_table), ("cu_seqlens_q", cu_seqlens_q),
                          ("seqused_k", seqused_k)):
            views[name] = _arrays.View(name, obj)
        if sinks is not None:
            views["sinks"] = _arrays.View("sinks", sinks)
        for name, v in views.items():
            if v.kind != kind:
                raise ValueError(f"{name}: a {v.kind} array among {kind} arrays (pass one kind)")
            if v.device != device:
                raise ValueError(f"{name}: on {v.device}, expected {device} (where q is)")

        vq.expect_dtype(_arrays.dtypes_for(kind, sh.q_dtype), f"q_dtype {sh.q_dtype}")
        vq.expect_shape((None, hq, d), "[num_tokens, q_heads, head_dim]")
        vq.expect_inner_contiguous()
        T = vq.shape[0]
        vk, vv = views["k_cache"], views["v_cache"]
        kvd = _arrays.dtypes_for(kind, sh.kv_dtype)
        vk.expect_dtype(kvd, f"kv_dtype {sh.kv_dtype}")
        vv.expect_dtype(kvd, f"kv_dtype {sh.kv_dtype}")
        vk.expect_shape((None, sh.page_size, hkv, d), "[num_blocks, page_size, kv_heads, head_dim]")
        nblocks = vk.shape[0]
        vv.expect_shape((nblocks, sh.page_size, hkv, dv),
                        "[num_blocks, page_size, kv_heads, head_dim_v], num_blocks as k_cache")
        # Any strided view (vLLM's kv.unbind(0), FlashInfer NHD kv[:, 0], HND
        # k.transpose(1, 2), K and V sharing one tensor): taken in place, the
        # strides go to C; only the last dimension must be contiguous.
        vk.expect_cache_strides()
        vv.expect_cache_strides()
        vbt, vcu, vsk = views["block_table"], views["cu_seqlens_q"], views["seqused_k"]
        for v in (vbt, vcu, vsk):
            v.expect_dtype(("int32",), "int32")
        if len(vsk.shape) != 1:
            raise ValueError(f"seqused_k: expected shape [num_seqs], got {list(vsk.shape)}")
        ns = vsk.shape[0]
        vsk.expect_contiguous()
        vcu.expect_shape((ns + 1,), "[num_seqs + 1], num_seqs from seqused_k")
        vcu.expect_contiguous()
        vbt.expect_shape((ns, None), "[num_seqs, max_blocks_per_seq]")
        vbt.expect_inner_contiguous()
        if sh.sinks:
            if "sinks" not in views:
                raise ValueError(f"sinks: the shape has sinks: expected a float32 [{hq}] array")
            views["sinks"].expect_dtype(("float32",), "float32")
            views["sinks"].expect_shape((hq,), "[q_heads]")
            views["sinks"].expect_contiguous()
        elif "sinks" in views:
            raise ValueError("sinks: given, but the backend's shape has no sinks "
                             "(Shape(sinks=True))")
        out_dtype = _arrays.dtypes_for(kind, sh.out_dtype)
        if out is None:
            out = _arrays.empty_like_spec(kind, device, (T, hq, dv), out_dtype[0])
        vo = _arrays.View("out", out)
        if vo.kind != kind or vo.device != device:
            raise ValueError(f"out: a {vo.kind} array on {vo.device}, expected {kind} on {device}")
        vo.expect_dtype(out_dtype, f"out_dtype {sh.out_dtype}")
        vo.expect_shape((T, hq, dv), "[num_tokens, q_heads, head_dim_v], num_tokens from q")
        vo.expect_inner_contiguous()

        if sh.lse:
            if lse is None:
                lse = _arrays.empty_like_spec(kind, device, (T, hq), "float32")
            vl = _arrays.View("lse", lse)
            if vl.kind != kind or vl.device != device:
                raise ValueError(f"lse: a {vl.kind} array on {vl.device}, expected {kind} on "
                                 f"{device}")
            vl.expect_dtype(("float32",), "float32")
            vl.expect_shape((T, hq), "[num_tokens, q_heads]")
            if any(st < 0 for st in vl.strides):
                raise ValueError(f"lse: negative strides {list(vl.strides)} are not supported")
        elif lse is not None:
            raise ValueError("lse: given, but the backend's shape does not ask for it "
                             "(Shape(lse=True))")

        host_cu = _arrays.host_int_list(vcu)
        host_sk = _arrays.host_int_list(vsk)
        if host_cu is not None:
            if host_cu[-1] != T:
                raise ValueError(f"cu_seqlens_q: the last entry is {host_cu[-1]}, expected "
                                 f"num_tokens {T} (q.shape[0])")
            for i in range(ns):
                if host_cu[i + 1] < host_cu[i]:
                    raise ValueError(f"cu_seqlens_q: decreases at sequence {i} "
                                     f"({host_cu[i]} -> {host_cu[i + 1]})")
            if host_sk is not None:
                _check_seqlens(host_cu, host_sk, sh.causal or sh.window != (-1, -1))
        if host_sk is not None and vbt.device == "cpu":
            # The C side knows only the row stride: a view narrower than its
            # rows (bt[:, :2] of a wider table) would be read past its last
            # column, past the buffer's end on the last row.
            width, page = vbt.shape[1], sh.page_size
            for i, keys in enumerate(host_sk):
                if keys < 0:
                    raise ValueError(f"seqused_k[{i}] is negative ({keys})")
                q_len = host_cu[i + 1] - host_cu[i] if host_cu is not None else 1
                pages = -(-keys // page)
                if q_len > 0 and pages > width:
                    raise ValueError(f"block_table: sequence {i} has {keys} keys = {pages} pages "
                                     f"of {page}, but block_table has {width} columns")
            if max_seqlen_q is None and host_cu is not None:
                max_seqlen_q = max((b - a for a, b in zip(host_cu, host_cu[1:])), default=0)
        if host_sk is not None and max_seqlen_k is None:
            max_seqlen_k = max(host_sk, default=0)
        if max_seqlen_q is None:
            max_seqlen_q = sh.max_q_len
        if max_seqlen_k is None:
            max_seqlen_k = sh.max_kv_len
        max_seqlen_q = _int32("max_seqlen_q", max_seqlen_q, "forward")
        max_seqlen_k = _int32("max_seqlen_k", max_seqlen_k, "forward")
        # Sizes and strides land in int32/int64 fields: out-of-range values
        # are refused here, not wrapped by ctypes.
        _int32("num_seqs", ns, "forward")
        _int32("num_tokens", T, "forward")
        _int32("num_blocks", nblocks, "forward")
        _int32("block_table_stride", vbt.strides[0] if ns else vbt.shape[1], "forward")

        if workspace is None:
            need = self.workspace_size(max(ns, 1), max(T, 1))
            ws_ptr, ws_size = self._workspace("torch" if kind == "torch" else "host", device, need)
        else:
            vw = _arrays.View("workspace", workspace)
            if vw.device != device:
                raise ValueError(f"workspace: on {vw.device}, expected {device}")
            vw.expect_contiguous()
            ws_ptr, ws_size = vw.ptr, vw.nbytes

        a = _native.new(_native.ForwardArgs)
        a.num_seqs, a.num_tokens = ns, T
        a.q, a.q_stride_token, a.q_stride_head = vq.ptr, vq.strides[0], vq.strides[1]
        a.k_cache, a.v_cache, a.num_blocks = vk.ptr, vv.ptr, nblocks
        a.k_stride_block, a.k_stride_token, a.k_stride_head = vk.strides[:3]
        a.v_stride_block, a.v_stride_token, a.v_stride_head = vv.strides[:3]
        a.block_table, a.block_table_stride = vbt.ptr, vbt.strides[0] if ns else vbt.shape[1]
        a.cu_seqlens_q, a.seqused_k = vcu.ptr, vsk.ptr
        a.max_seqlen_q, a.max_seqlen_k = max_seqlen_q, max_seqlen_k
        a.scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
        a.q_descale, a.k_descale, a.v_descale = float(q_descale), float(k_descale), float(v_descale)
        a.sinks = views["sinks"].ptr if "sinks" in views else None
        a.out, a.out_stride_token, a.out_stride_head = vo.ptr, vo.strides[0], vo.strides[1]
        a.workspace, a.workspace_size = (ws_ptr if ws_size else None), ws_size
        a.stream = _arrays.stream_handle(stream, device)
        if sh.lse:
            # a size-1 dimension's stride is never used: 0 = the default
            a.lse = vl.ptr
            a.lse_stride_token = vl.strides[0] if T > 1 else 0
            a.lse_stride_head = vl.strides[1] if hq > 1 else 0
        return a, out, lse

    def prepare(self, block_table: Any, cu_seqlens_q: Any, seqused_k: Any, *,
                scale: Optional[float] = None, q_descale: float = 1.0, k_descale: float = 1.0,
                v_descale: float = 1.0, sinks: Any = None, workspace: Any = None,
                stream: Any = None, max_seqlen_q: Optional[int] = None,
                max_seqlen_k: Optional[int] = None) -> "PreparedBatch":
        """A batch's metadata, for the per-layer calls of one step (FlashInfer's
        plan/run split): PreparedBatch.forward(q, k_cache, v_cache) then
        checks everything once, builds the ctypes arguments once, and on
        later calls checks only what can change between layers (which
        arrays, and that their shape, strides, dtype and device are the
        first call's) before handing the pointers to C. The metadata's
        contents are read when first checked: change them, prepare again."""
        return PreparedBatch(self, block_table, cu_seqlens_q, seqused_k,
                             dict(scale=scale, q_descale=q_descale, k_descale=k_descale,
                                  v_descale=v_descale, sinks=sinks, workspace=workspace,
                                  stream=stream, max_seqlen_q=max_seqlen_q,
                                  max_seqlen_k=max_seqlen_k))

    def append_kv(self, k: Any, v: Any, k_cache: Any, v_cache: Any, slot_mapping: Any, *,
                  k_scale: float = 1.0, v_scale: float = 1.0, stream: Any = None) -> None:
        """Writes new tokens' K and V ([T, kv_heads, head_dim] / [.., head_dim_v];
        f32, f16 or bf16 in the shape's q_dtype or any of those) into the paged
        caches at slot_mapping (int64 [T], slot = block * page_size + offset,
        negative = skip, as vLLM's reshape_and_cache_flash takes it),
        converted to the shape's kv_dtype (FP8: value / k_scale, v_scale).
        The caches are views as forward() takes them (any strides)."""
        h = self._handle()
        sh = self.shape
        hkv, d, dv = sh.kv_heads_effective, sh.head_dim, sh.head_dim_v_effective
        vk, vv = _arrays.View("k", k), _arrays.View("v", v)
        vkc, vvc = _arrays.View("k_cache", k_cache), _arrays.View("v_cache", v_cache)
        vs = _arrays.View("slot_mapping", slot_mapping)
        for x in (vv, vkc, vvc, vs):
            if x.kind != vk.kind or x.device != vk.device:
                raise ValueError(f"{x.name}: a {x.kind} array on {x.device}, expected "
                                 f"{vk.kind} on {vk.device} (where k is)")
        if (vk.device == "cpu") != self.is_cpu:
            raise ValueError(f"k: on {vk.device}, but backend {self.name} runs on arch {sh.arch}")
        src = _FLOAT_DTYPES.get((vk.kind, vk.dtype))
        if src is None:
            raise ValueError(f"k: dtype {vk.dtype}: new K/V rows are float32, float16 or bf16")
        vk.expect_shape((None, hkv, d), "[num_tokens, kv_heads, head_dim]")
        T = vk.shape[0]
        vv.expect_dtype((vk.dtype,), f"the dtype of k, {vk.dtype}")
        vv.expect_shape((T, hkv, dv), "[num_tokens, kv_heads, head_dim_v], num_tokens from k")
        kvd = _arrays.dtypes_for(vk.kind, sh.kv_dtype)
        vkc.expect_dtype(kvd, f"kv_dtype {sh.kv_dtype}")
        vvc.expect_dtype(kvd, f"kv_dtype {sh.kv_dtype}")
        vkc.expect_shape((None, sh.page_size, hkv, d), "[num_blocks, page_size, kv_heads, head_dim]")
        vvc.expect_shape((vkc.shape[0], sh.page_size, hkv, dv),
                         "[num_blocks, page_size, kv_heads, head_dim_v], num_blocks as k_cache")
        for x in (vkc, vvc):
            x.expect_cache_strides()
        for x in (vk, vv):
            x.expect_inner_contiguous()
        vs.expect_dtype(("int64",), "int64")
        vs.expect_shape((T,), "[num_tokens]")
        vs.expect_contiguous()
        a = _native.new(_native.AppendArgs)
        a.num_tokens, a.src_dtype = T, _native.DTYPE[src]
        a.k, a.v = vk.ptr, vv.ptr
        a.k_stride_token, a.k_stride_head = vk.strides[0], vk.strides[1]
        a.v_stride_token, a.v_stride_head = vv.strides[0], vv.strides[1]
        a.slot_mapping = vs.ptr
        a.k_cache, a.v_cache, a.num_blocks = vkc.ptr, vvc.ptr, vkc.shape[0]
        (a.k_cache_stride_block, a.k_cache_stride_token,
         a.k_cache_stride_head) = vkc.strides[:3]
        (a.v_cache_stride_block, a.v_cache_stride_token,
         a.v_cache_stride_head) = vvc.strides[:3]
        a.k_scale, a.v_scale = float(k_scale), float(v_scale)
        a.stream = _arrays.stream_handle(stream, vk.device)
        st = _lib.attn_backend_append_kv(h, ctypes.byref(a))
        if st != _native.OK:
            raise _error(st)

    @_backend_call
    def merge_states(self, a: Any, lse_a: Any, b: Any, lse_b: Any, out: Any = None,
                     lse_out: Any = None, *, stream: Any = None) -> Tuple[Any, Any]:
        """attnreg.merge_states() by this backend, in its memory space
        (attn_backend_merge_states): torch tensors on its CUDA device for a
        GPU backend, merged on torch's current stream unless ``stream``
        (as forward() and append_kv() take it); host arrays for cpu-ref.
        The same arrays, checks and result (out, lse_out). A backend whose
        plugin has no merge raises UnsupportedError naming it."""
        h = self._handle()
        m, out, lse_out, device = _merge_args(a, lse_a, b, lse_b, out, lse_out, self)
        m.stream = _arrays.stream_handle(stream, device)
        st = _lib.attn_backend_merge_states(h, ctypes.byref(m))
        if st != _native.OK:
            raise _error(st)
        return out, lse_out

    def __repr__(self) -> str:
        return f"Backend({self.name!r}, {self.shape})"


def _torch_spec(x: Any) -> Any:
    """What must not change between the calls of a PreparedBatch for the
    arguments built on the first to stay right: layout and place, not data."""
    return (x.shape, x.stride(), x.dtype, x.device)


def _numpy_spec(x: Any) -> Any:
    return (x.shape, x.strides, x.dtype)


def _torch_address(x: Any) -> int:
    return int(x.data_ptr())


def _numpy_address(x: Any) -> int:
    return int(x.ctypes.data)


class PreparedBatch:
    """Backend.prepare()'s result: one batch's metadata, checked on the
    first forward and reused by every layer's call."""

    __slots__ = ("backend", "_meta", "_options", "_args", "_specs", "_out_spec", "_lse_spec",
                 "_lse", "_spec", "_address", "_op_id", "_stream", "__weakref__")
    backend: "Backend"
    _meta: Tuple[Any, Any, Any]
    _options: Dict[str, Any]
    _args: Any
    _specs: Any
    _out_spec: Any
    _lse_spec: Any
    _lse: Any
    _spec: Callable[[Any], Any]
    _address: Callable[[Any], int]
    _op_id: int
    _stream: Optional[Callable[[], int]]

    def __init__(self, backend: "Backend", block_table: Any, cu_seqlens_q: Any, seqused_k: Any,
                 options: Dict[str, Any]) -> None:
        self.backend = backend
        self._op_id = 0  # attnreg.torch_ops.register()'s id for the custom ops; 0 = none
        self._meta = (block_table, cu_seqlens_q, seqused_k)  # kept alive: C holds pointers
        self._options = options
        self._args = None
        self._stream = None
        backend._handle()  # a closed backend is refused here already

    def forward(self, q: Any, k_cache: Any, v_cache: Any, out: Any = None, lse: Any = None) -> Any:
        """forward() of the backend on this batch. Returns out, or (out, lse)
        for a Shape(lse=True) backend; out (and lse) are allocated when None,
        like the first call's."""
        a = self._args
        if a is not None:
            spec = self._spec
            if (spec(q), spec(k_cache), spec(v_cache)) != self._specs or (
                    out is not None and spec(out) != self._out_spec) or (
                    lse is not None and spec(lse) != self._lse_spec):
                a = None  # another layout or place: every check again
        if a is not None:
            address = self._address
            if out is None:
                out = _arrays.empty_like_spec(*_alloc_args(self._out_spec))
            if self._lse is not None:
                if lse is None:
                    lse = _arrays.empty_like_spec(*_alloc_args(self._lse_spec))
                a.lse = address(lse)
            a.q, a.k_cache, a.v_cache, a.out = (address(q), address(k_cache), address(v_cache),
                                                address(out))
            if self._stream is not None:
                # torch's current stream of this call, not the first call's: a
                # warm-up on a side stream, then a capture on the graph's
                a.stream = self._stream()
        else:
            a, out, lse = self.backend._forward_args(q, k_cache, v_cache, *self._meta, out,
                                                     lse=lse, **self._options)
            torch_kind = _arrays.is_torch(q)
            self._spec = _torch_spec if torch_kind else _numpy_spec
            self._address = _torch_address if torch_kind else _numpy_address
            self._args, self._specs = a, (self._spec(q), self._spec(k_cache), self._spec(v_cache))
            self._out_spec, self._lse = self._spec(out), lse
            self._lse_spec = self._spec(lse) if lse is not None else None
            if self._options.get("stream") is None and torch_kind and q.device.type != "cpu":
                self._stream = _current_stream_fn(q.device)
        # the handle per call: it raises once the backend is closed (never a
        # call on a freed one)
        st = _lib.attn_backend_forward(self.backend._handle(), ctypes.byref(a))
        if st != _native.OK:
            raise _error(st)
        return (out, lse) if self._lse is not None else out


def _current_stream_fn(device: Any) -> Callable[[], int]:
    """A function giving torch's current stream on a CUDA device as an int
    handle (0 = the default stream), cheaply: torch's raw getter when it has
    one (what inductor calls), else torch.cuda.current_stream()."""
    import torch
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, index)
    dev = torch.device("cuda", index)
    return lambda: int(torch.cuda.current_stream(dev).cuda_stream)


def _alloc_args(spec: Any) -> Tuple[str, str, Any, str]:
    """(kind, device, shape, dtype name) for _arrays.empty_like_spec, from a
    spec tuple: a contiguous array like the first call's."""
    if len(spec) == 4:
        dev = spec[3]
        device = "cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}"
        return "torch", device, tuple(spec[0]), str(spec[2]).replace("torch.", "")
    return "numpy", "cpu", spec[0], spec[2].name


# ---- merging partial states (attn_merge_states) ----------------------------------

_FLOAT_DTYPES = {("numpy", "float32"): "f32", ("numpy", "float16"): "f16",
                 ("numpy", "uint16"): "bf16", ("torch", "float32"): "f32",
                 ("torch", "float16"): "f16", ("torch", "bfloat16"): "bf16"}


def merge_states(a: Any, lse_a: Any, b: Any, lse_b: Any, out: Any = None,
                 lse_out: Any = None, *, backend: Optional["Backend"] = None) -> Tuple[Any, Any]:
    """Merges two attention results over disjoint key ranges of the same
    queries by their log-sum-exp (attn_merge_states, on the CPU): a and b
    [T, H, D] (f32, f16, or bf16: NumPy uint16 bits or torch.bfloat16), lse_a
    and lse_b float32 [T, H], any strides with the last dimension contiguous
    (out may be a or b). Host memory: NumPy arrays or CPU torch tensors;
    device tensors are merged by the backend whose device holds them:
    ``backend=`` routes the call to Backend.merge_states. Returns (out,
    lse_out), allocated when not given: the result over the union of the key
    ranges and its log-sum-exp, as cascade attention merges a shared prefix
    with each request's suffix."""
    if backend is not None:
        return backend.merge_states(a, lse_a, b, lse_b, out, lse_out)
    m, out, lse_out, _ = _merge_args(a, lse_a, b, lse_b, out, lse_out, None)
    st = _lib.attn_merge_states(ctypes.byref(m))
    if st != _native.OK:
        raise _error(st)
    return out, lse_out


def _merge_args(a: Any, lse_a: Any, b: Any, lse_b: Any, out: Any, lse_out: Any,
                backend: Optional["Backend"]) -> Tuple[Any, Any, Any, str]:
    """Every check of a merge, then its ctypes arguments: (args, out,
    lse_out, device). Host memory without a backend; the backend's memory
    space (host for a CPU backend, its CUDA device's tensors otherwise) with
    one."""
    va, vb = _arrays.View("a", a), _arrays.View("b", b)
    vla, vlb = _arrays.View("lse_a", lse_a), _arrays.View("lse_b", lse_b)
    device = va.device
    if backend is None and device != "cpu":
        raise ValueError(f"a: on {device}: attnreg.merge_states merges host memory; merge "
                         f"device tensors with Backend.merge_states of the backend whose device "
                         f"holds them (or merge_states(..., backend=...))")
    if backend is not None and (device == "cpu") != backend.is_cpu:
        raise ValueError(f"a: on {device}, but backend {backend.name} runs on arch "
                         f"{backend.shape.arch}: expected "
                         f"{'host' if backend.is_cpu else 'CUDA device'} memory")
    for v in (vb, vla, vlb):
        if v.device != device:
            raise ValueError(f"{v.name}: on {v.device}, expected {device} (where a is)")
    if len(va.shape) != 3:
        raise ValueError(f"a: expected shape [num_tokens, heads, head_dim], got {list(va.shape)}")
    T, H, D = va.shape
    dtype = _FLOAT_DTYPES.get((va.kind, va.dtype))
    if dtype is None:
        raise ValueError(f"a: dtype {va.dtype}: the states are float32, float16 or bf16")
    if out is None:
        out = _arrays.empty_like_spec(va.kind, device, (T, H, D), va.dtype)
    if lse_out is None:
        lse_out = _arrays.empty_like_spec(va.kind, device, (T, H), "float32")
    vo, vlo = _arrays.View("out", out), _arrays.View("lse_out", lse_out)
    for v in (vo, vlo):
        if v.device != device:
            raise ValueError(f"{v.name}: on {v.device}, expected {device} (where a is)")
    for v in (vb, vo):
        v.expect_dtype((va.dtype,), f"the dtype of a, {va.dtype}")
        v.expect_shape((T, H, D), "[num_tokens, heads, head_dim] as a")
    for v in (va, vb, vo):
        v.expect_inner_contiguous()
    for v in (vla, vlb, vlo):
        v.expect_dtype(("float32",), "float32")
        v.expect_shape((T, H), "[num_tokens, heads] as a")
    # The C call takes one stride pair for the three states and one for the
    # three LSE arrays; views that differ are refused rather than copied
    # behind the caller's back.
    if any(v.kind != va.kind for v in (vb, vo, vla, vlb, vlo)):
        raise ValueError("merge_states: pass one kind of array (NumPy or torch)")
    if vb.strides != vo.strides or va.strides != vo.strides or any(
            v.strides != vlo.strides for v in (vla, vlb)):
        raise ValueError(f"merge_states: a, b and out must share strides ({list(va.strides)}, "
                         f"{list(vb.strides)}, {list(vo.strides)}), and so must lse_a, lse_b "
                         f"and lse_out")
    if any(st < 0 for v in (vo, vlo) for st in v.strides):
        raise ValueError("merge_states: negative strides are not supported")
    m = _native.new(_native.MergeArgs)
    m.num_tokens, m.num_heads, m.head_dim = T, H, D
    m.dtype = _native.DTYPE[dtype]
    m.a, m.lse_a, m.b, m.lse_b = va.ptr, vla.ptr, vb.ptr, vlb.ptr
    m.out, m.lse_out = vo.ptr, vlo.ptr
    m.stride_token, m.stride_head = (vo.strides[0] if T > 1 else 0), (vo.strides[1] if H > 1 else 0)
    m.lse_stride_token = vlo.strides[0] if T > 1 else 0
    m.lse_stride_head = vlo.strides[1] if H > 1 else 0
    return m, out, lse_out, device


# ---- NumPy encodings --------------------------------------------------------------

#: The engines' paged KV-cache tensors kv_views() takes apart.
KV_LAYOUTS = ("vllm", "nhd", "hnd")


def kv_views(cache: Any, layout: str) -> Tuple[Any, Any]:
    """(k_cache, v_cache) views of one engine KV tensor, in forward()'s
    [blocks, page, kv_heads, head_dim] order, without a copy (NumPy array or
    torch tensor): "vllm" [2, blocks, page, H, D] (FlashAttention's layout,
    kv.unbind(0)); "nhd" FlashInfer's [blocks, 2, page, H, D]; "hnd"
    FlashInfer's [blocks, 2, H, page, D]. A tensor holding K and V side by
    side in its last dimension needs no helper: cache[..., :D], cache[..., D:]."""
    if layout not in KV_LAYOUTS:
        raise ValueError(f"kv_views: layout {layout!r} is not one of {', '.join(KV_LAYOUTS)}")
    if len(cache.shape) != 5 or cache.shape[0 if layout == "vllm" else 1] != 2:
        want = {"vllm": "[2, blocks, page, H, D]", "nhd": "[blocks, 2, page, H, D]",
                "hnd": "[blocks, 2, H, page, D]"}[layout]
        raise ValueError(f"kv_views: a {layout} cache is {want}, got {list(cache.shape)}")
    if layout == "vllm":
        return cache[0], cache[1]
    k, v = cache[:, 0], cache[:, 1]
    if layout == "hnd":  # [blocks, H, page, D] -> [blocks, page, H, D], a view
        swap: Callable[[Any], Any] = (lambda x: x.transpose(1, 2)) if _arrays.is_torch(cache) \
            else (lambda x: x.swapaxes(1, 2))
        k, v = swap(k), swap(v)
    return k, v


def to_bf16_bits(x: Any) -> Any:
    """A float array as bf16 raw bits (numpy uint16, round to nearest even):
    how NumPy arrays carry bf16 to forward(). Needs numpy."""
    import numpy as np
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits: Any) -> Any:
    """bf16 raw bits (uint16) as float32 values. Needs numpy."""
    import numpy as np
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def check_layout(mirrors: Optional[Mapping[str, Type[ctypes.Structure]]] = None) -> int:
    """Re-runs the import-time check (every mirrored field and enum name
    against the library); raises ImportError on a mismatch. For tests and
    for hosts that want to say so in their own start-up log."""
    return _native.check_layout(_lib, mirrors)


# Last: the module uses the names above.
from ._hf_config import plan_hf_config  # noqa: E402
