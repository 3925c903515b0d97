# SPDX-License-Identifier: Apache-2.0
"""libattnreg through ctypes: finding the library, the struct mirrors, the
function signatures, and the import-time check of every mirrored struct field
and enum name against the library itself.

Standard library only. Nothing here is public API; use the names exported by
the ``attnreg`` package.
"""

import ctypes
import ctypes.util
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, TypeVar

HERE = os.path.dirname(os.path.abspath(__file__))

#: Where a staged copy of the library lives inside the package (the layout of
#: a build tree or an installation prefix, so that the library finds its conf
#: folder at ``lib/../share/attnreg/conf`` and the shipped INIs find their
#: plugins at ``../../../lib/attnreg``).
BUNDLED_PREFIX = os.path.join(HERE, "_bundled")
BUNDLED_LIBRARY = os.path.join(BUNDLED_PREFIX, "lib", "libattnreg.so.0")

ATTN_ARCH_MAX = 32

# ---- enums (built at import from the library's own lists) -----------------

# Filled by read_enums() from attn_enum_count and the *_name functions, so a
# status, reason or dtype added to the C lists needs no edit here.
STATUS_NAMES: Tuple[str, ...] = ()
STATUS: Dict[str, int] = {}
#: status name -> its class ("invalid_shape", "backend", ...: the C
#: ATTN_STATUS_CLASS_MAP), which picks the exception raised.
STATUS_CLASS: Dict[str, str] = {}
OK = 0
DTYPE_NAMES: Tuple[str, ...] = ()
DTYPE: Dict[str, int] = {}
LOG_LEVEL_NAMES: Tuple[str, ...] = ()
LOG_LEVEL: Dict[str, int] = {}
PHASE_NAMES: Tuple[str, ...] = ()
LAYER_KIND_NAMES: Tuple[str, ...] = ()


def read_enums(lib: ctypes.CDLL) -> None:
    """Builds the enum lists above from the library."""
    global STATUS_NAMES, STATUS, STATUS_CLASS, DTYPE_NAMES, DTYPE, LOG_LEVEL_NAMES, LOG_LEVEL
    global PHASE_NAMES, LAYER_KIND_NAMES

    def names(enum: str, fn: Any) -> Tuple[str, ...]:
        return tuple(text(fn(code)) for code in range(lib.attn_enum_count(enum.encode())))

    STATUS_NAMES = names("attn_status", lib.attn_status_name)
    STATUS = {name: code for code, name in enumerate(STATUS_NAMES)}
    STATUS_CLASS = {name: text(lib.attn_status_class_name(code))
                    for code, name in enumerate(STATUS_NAMES)}
    DTYPE_NAMES = names("attn_dtype", lib.attn_dtype_name)
    DTYPE = {name: code for code, name in enumerate(DTYPE_NAMES) if code}
    LOG_LEVEL_NAMES = names("attn_log_level", lib.attn_log_level_name)
    LOG_LEVEL = {name: code for code, name in enumerate(LOG_LEVEL_NAMES)}
    PHASE_NAMES = names("attn_phase", lib.attn_phase_name)
    LAYER_KIND_NAMES = names("attn_layer_kind", lib.attn_layer_kind_name)


# ---- struct mirrors --------------------------------------------------------

c_u32, c_i32, c_u64, c_i64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64
c_float, c_size, c_vp, c_cp = ctypes.c_float, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p


class Shape(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("arch", ctypes.c_char * ATTN_ARCH_MAX),
                ("num_q_heads", c_i32), ("num_kv_heads", c_i32), ("head_dim", c_i32),
                ("head_dim_v", c_i32), ("q_dtype", c_i32), ("kv_dtype", c_i32),
                ("compute_dtype", c_i32), ("out_dtype", c_i32), ("page_size", c_i32),
                ("max_q_len", c_i32), ("max_kv_len", c_i32), ("causal", c_i32),
                ("window_left", c_i32), ("window_right", c_i32), ("softcap", c_float),
                ("has_sinks", c_i32), ("return_lse", c_i32)]


class ForwardArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("num_seqs", c_i32), ("num_tokens", c_i32),
                ("q", c_vp), ("q_stride_token", c_i64), ("q_stride_head", c_i64),
                ("k_cache", c_vp), ("v_cache", c_vp), ("num_blocks", c_i32),
                ("block_table", c_vp), ("block_table_stride", c_i32), ("cu_seqlens_q", c_vp),
                ("seqused_k", c_vp), ("max_seqlen_q", c_i32), ("max_seqlen_k", c_i32),
                ("scale", c_float), ("q_descale", c_float), ("k_descale", c_float),
                ("v_descale", c_float), ("sinks", c_vp), ("out", c_vp),
                ("out_stride_token", c_i64), ("out_stride_head", c_i64), ("workspace", c_vp),
                ("workspace_size", c_size), ("stream", c_vp),
                # 0.4: K/V cache strides in elements (0 = contiguous)
                ("k_stride_block", c_i64), ("k_stride_token", c_i64), ("k_stride_head", c_i64),
                ("v_stride_block", c_i64), ("v_stride_token", c_i64), ("v_stride_head", c_i64),
                # 0.4: the log-sum-exp output (float32 [T, Hq] by its strides)
                ("lse", c_vp), ("lse_stride_token", c_i64), ("lse_stride_head", c_i64)]


class BatchLimits(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("max_num_seqs", c_i32), ("max_num_tokens", c_i32)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("index", c_i32), ("arch", ctypes.c_char * ATTN_ARCH_MAX),
                ("name", ctypes.c_char * 128), ("memory_bytes", c_u64), ("compute_units", c_i32)]


LOG_FN = ctypes.CFUNCTYPE(None, c_vp, ctypes.c_int, c_cp)


class RegistryOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("conf_paths", ctypes.POINTER(c_cp)),
                ("num_conf_paths", c_u32), ("skip_env_conf_path", c_i32),
                ("skip_default_conf", c_i32), ("log_fn", LOG_FN), ("log_user", c_vp),
                ("log_level", c_i32), ("strict", c_i32), ("forced_backend", c_cp),
                ("disabled_backends", ctypes.POINTER(c_cp)), ("num_disabled_backends", c_u32),
                ("runnable", c_i32), ("fail_on_conf_error", c_i32), ("skip_env", c_i32),
                ("probe_out_of_process", c_i32)]


class Diagnostic(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("status", c_i32), ("file", c_cp), ("line", c_i32),
                ("plugin", c_cp), ("message", c_cp)]


class PluginInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("name", c_cp), ("priority", c_i32), ("enabled", c_i32),
                ("archs", c_cp), ("library", c_cp), ("conf_file", c_cp), ("conf_line", c_i32),
                ("candidate", c_vp)]


class PluginLoadInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("status", c_i32), ("reason", c_i32), ("message", c_cp),
                ("version", c_cp), ("description", c_cp), ("built_archs", c_cp),
                ("abi_major", c_u32), ("abi_minor", c_u32), ("num_predicates", c_u32),
                ("arch_limits", c_vp), ("num_arch_limits", c_u32), ("graph_capturable", c_i32)]


class Selection(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("backend_name", c_cp), ("candidate", c_vp),
                ("effective_shape", Shape), ("fallback_applied", c_i32), ("fallback_rule", c_cp),
                ("fallback_backend", c_cp), ("fallback_reason", c_i32),
                ("fallback_message", c_cp), ("message", c_cp), ("graph_capturable", c_i32)]


PLAN_NAME_MAX = 32
PLAN_MAX_KERNELS = 4


class KernelPlan(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char * PLAN_NAME_MAX), ("role", ctypes.c_char * PLAN_NAME_MAX),
                ("threads", c_i32), ("rows", c_i32), ("keys", c_i32), ("stages", c_i32),
                ("shared_bytes", c_i32)]


class LaunchPlan(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("arch", ctypes.c_char * ATTN_ARCH_MAX),
                ("shared_limit", c_i32), ("wave_size", c_i32), ("num_kernels", c_u32),
                ("kernels", KernelPlan * PLAN_MAX_KERNELS)]


class VerdictRecord(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("pass", c_i32), ("backend", c_cp), ("accepted", c_i32),
                ("selected", c_i32), ("reason", c_i32), ("reason_name", c_cp), ("message", c_cp),
                ("predicate", c_cp), ("conf_file", c_cp), ("conf_line", c_i32),
                ("priority", c_i32)]


class Layer(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("kind", c_i32), ("window_left", c_i32),
                ("window_right", c_i32), ("type_name", c_cp)]


class Model(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("arch", ctypes.c_char * ATTN_ARCH_MAX),
                ("num_q_heads", c_i32), ("num_kv_heads", c_i32), ("head_dim", c_i32),
                ("head_dim_v", c_i32), ("num_layers", c_i32), ("layers", ctypes.POINTER(Layer)),
                ("softcap", c_float), ("has_sinks", c_i32), ("q_dtype", c_i32),
                ("kv_dtype", c_i32), ("compute_dtype", c_i32), ("out_dtype", c_i32),
                ("page_size", c_i32), ("tp_size", c_i32), ("max_model_len", c_i32),
                ("max_prefill_tokens", c_i32), ("spec_tokens", c_i32), ("scale", c_float)]


class PlanSummary(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("status", c_i32), ("message", c_cp),
                ("num_entries", c_size), ("num_layers", c_i32), ("tp_size", c_i32),
                ("rank_q_heads", c_i32), ("rank_kv_heads", c_i32),
                ("kv_heads_replicated", c_i32), ("prefill_q_len", c_i32),
                ("decode_q_len", c_i32), ("verify_q_len", c_i32), ("max_kv_len", c_i32)]


class PlanEntry(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("phase", c_i32), ("layer_kind", c_i32),
                ("layer_type", c_cp), ("layers", ctypes.POINTER(c_i32)), ("num_layers", c_u32),
                ("status", c_i32), ("shape", ctypes.POINTER(Shape)),
                ("selection", ctypes.POINTER(Selection)), ("message", c_cp),
                ("scale", c_float), ("effective_shape", ctypes.POINTER(Shape))]


class AppendArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("num_tokens", c_i32), ("src_dtype", c_i32), ("k", c_vp),
                ("v", c_vp), ("k_stride_token", c_i64), ("k_stride_head", c_i64),
                ("v_stride_token", c_i64), ("v_stride_head", c_i64), ("slot_mapping", c_vp),
                ("k_cache", c_vp), ("v_cache", c_vp), ("num_blocks", c_i32),
                ("k_cache_stride_block", c_i64), ("k_cache_stride_token", c_i64),
                ("k_cache_stride_head", c_i64), ("v_cache_stride_block", c_i64),
                ("v_cache_stride_token", c_i64), ("v_cache_stride_head", c_i64),
                ("k_scale", c_float), ("v_scale", c_float), ("stream", c_vp)]


class MergeArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("num_tokens", c_i32), ("num_heads", c_i32),
                ("head_dim", c_i32), ("dtype", c_i32), ("a", c_vp), ("lse_a", c_vp), ("b", c_vp),
                ("lse_b", c_vp), ("out", c_vp), ("lse_out", c_vp), ("stride_token", c_i64),
                ("stride_head", c_i64), ("lse_stride_token", c_i64), ("lse_stride_head", c_i64),
                ("stream", c_vp)]


class HfConfigInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_u32), ("model_type", c_cp), ("from_text_config", c_i32),
                ("max_position_embeddings", c_i32), ("num_notes", c_size)]


#: C struct name -> ctypes mirror. Every field of every mirror is checked.
MIRRORS = {
    "attn_shape": Shape, "attn_forward_args": ForwardArgs, "attn_batch_limits": BatchLimits,
    "attn_device_info": DeviceInfo, "attn_registry_options": RegistryOptions,
    "attn_diagnostic": Diagnostic, "attn_plugin_info": PluginInfo,
    "attn_plugin_load_info": PluginLoadInfo, "attn_selection": Selection,
    "attn_verdict_record": VerdictRecord, "attn_layer": Layer, "attn_model": Model,
    "attn_plan_summary": PlanSummary, "attn_plan_entry": PlanEntry, "attn_merge_args": MergeArgs,
    "attn_append_args": AppendArgs,
    "attn_kernel_plan": KernelPlan, "attn_launch_plan": LaunchPlan,
    "attn_hf_config_info": HfConfigInfo,
}


_S = TypeVar("_S", bound=ctypes.Structure)


def new(cls: Type[_S]) -> _S:
    """A zeroed struct with struct_size set to the size this mirror knows."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    return s


# ---- finding and loading the library ---------------------------------------

def _candidates() -> List[Tuple[str, str]]:
    """(path, how it was found) in lookup order."""
    env = os.environ.get("ATTNREG_LIBRARY")
    if env:
        return [(env, "ATTNREG_LIBRARY")]
    out = []
    if os.path.exists(BUNDLED_LIBRARY):
        out.append((BUNDLED_LIBRARY, "the copy installed beside the package"))
    found = ctypes.util.find_library("attnreg")
    if found:
        out.append((found, "the system's (ctypes.util.find_library)"))
    return out


#: Shared libraries a wheel bundles beside libattnreg for machines that lack
#: them: libinih (a link dependency) and libjansson (opened by soname to read
#: config.json). The H200 carry folder holds libinih there too.
BUNDLED_DEPS = ("libinih.so.1", "libjansson.so.4")


def _preload_deps(libdir: str) -> None:
    """Loads the copies of BUNDLED_DEPS in libdir first, globally, so that
    libattnreg's own lookups by soname find them."""
    for name in BUNDLED_DEPS:
        path = os.path.join(libdir, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def _require_regular(path: str) -> None:
    """dlopen of a FIFO waits for a writer forever (ATTNREG_LIBRARY=/some/fifo
    hung `import attnreg`), a device is read without end: the conf reader's
    rule, a regular file, checked on the descriptor opened O_NONBLOCK so that
    the check does not block either and no rename slips in between."""
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
    finally:
        os.close(fd)


def load_library() -> Tuple[ctypes.CDLL, str]:
    """(CDLL, path). ImportError naming every place looked at when none loads."""
    tried = []
    for path, how in _candidates():
        try:
            if os.path.sep in path:
                if not os.path.exists(path):
                    raise OSError(f"{path}: no such file")
                _require_regular(path)
                _preload_deps(os.path.dirname(os.path.abspath(path)))
            lib = ctypes.CDLL(path)
            return lib, path
        except OSError as e:
            tried.append(f"{path} ({how}): {e}")
    if not tried:
        raise ImportError(
            "attnreg: libattnreg not found: ATTNREG_LIBRARY is not set, no copy is installed "
            f"beside the package ({BUNDLED_LIBRARY}) and ctypes.util.find_library('attnreg') "
            "finds none; set ATTNREG_LIBRARY=/path/to/libattnreg.so.0")
    raise ImportError("attnreg: libattnreg could not be loaded: " + "; ".join(tried))


P = ctypes.POINTER
SIGNATURES = {
    "attnreg_version_string": (c_cp, []),
    "attnreg_version": (None, [P(ctypes.c_int), P(ctypes.c_int), P(ctypes.c_int)]),
    "attnreg_plugin_abi_version": (c_u32, []),
    "attn_status_name": (c_cp, [ctypes.c_int]),
    "attn_status_message": (c_cp, [ctypes.c_int]),
    "attn_status_class_name": (c_cp, [ctypes.c_int]),
    "attn_status_exit_code": (ctypes.c_int, [ctypes.c_int]),
    "attn_reason_name": (c_cp, [c_i32]),
    "attn_reason_layer_name": (c_cp, [c_i32]),
    "attn_enum_count": (c_size, [c_cp]),
    "attn_dtype_name": (c_cp, [c_i32]),
    "attn_dtype_from_name": (ctypes.c_int, [c_cp]),
    "attn_log_level_name": (c_cp, [ctypes.c_int]),
    "attn_phase_name": (c_cp, [c_i32]),
    "attn_layer_kind_name": (c_cp, [c_i32]),
    "attn_last_error": (c_cp, []),
    "attn_shape_validate": (ctypes.c_int, [P(Shape), c_cp, c_size]),
    "attn_shape_format": (ctypes.c_int, [P(Shape), c_cp, c_size]),
    "attn_registry_open": (ctypes.c_int, [P(RegistryOptions), P(c_vp)]),
    "attn_registry_close": (None, [c_vp]),
    "attn_registry_diagnostic_count": (c_size, [c_vp]),
    "attn_registry_diagnostic": (ctypes.c_int, [c_vp, c_size, P(Diagnostic)]),
    "attn_registry_conf_path_count": (c_size, [c_vp]),
    "attn_registry_conf_path": (c_cp, [c_vp, c_size]),
    "attn_registry_plugin_count": (c_size, [c_vp]),
    "attn_registry_plugin": (ctypes.c_int, [c_vp, c_size, P(PluginInfo)]),
    "attn_plugin_info_has_arch": (ctypes.c_int, [P(PluginInfo), c_cp]),
    "attn_registry_load_plugin": (ctypes.c_int, [c_vp, c_size, P(PluginLoadInfo)]),
    "attn_registry_probe_devices": (ctypes.c_int, [c_vp, c_size, P(DeviceInfo), c_u32, P(c_u32)]),
    "attn_registry_select": (ctypes.c_int, [c_vp, P(Shape), P(Selection)]),
    "attn_registry_explain": (ctypes.c_int, [c_vp, P(Shape), P(c_vp)]),
    "attn_explanation_free": (None, [c_vp]),
    "attn_explanation_status": (ctypes.c_int, [c_vp]),
    "attn_explanation_count": (c_size, [c_vp]),
    "attn_explanation_record": (ctypes.c_int, [c_vp, c_size, P(VerdictRecord)]),
    "attn_explanation_selection": (ctypes.c_int, [c_vp, P(Selection)]),
    "attn_explanation_pass_count": (c_size, [c_vp]),
    "attn_explanation_pass_rule": (c_cp, [c_vp, c_size]),
    "attn_explanation_pass_shape": (P(Shape), [c_vp, c_size]),
    "attn_model_init": (None, [P(Model), c_u32]),
    "attn_registry_plan": (ctypes.c_int, [c_vp, P(Model), P(c_vp)]),
    "attn_hf_config_read": (ctypes.c_int, [c_cp, P(c_vp)]),
    "attn_hf_config_parse": (ctypes.c_int, [c_cp, c_size, c_cp, P(c_vp)]),
    "attn_hf_config_free": (None, [c_vp]),
    "attn_hf_config_describe": (ctypes.c_int, [c_vp, P(HfConfigInfo)]),
    "attn_hf_config_note": (c_cp, [c_vp, c_size]),
    "attn_hf_config_apply": (ctypes.c_int, [c_vp, P(Model)]),
    "attn_plan_free": (None, [c_vp]),
    "attn_plan_summarize": (ctypes.c_int, [c_vp, P(PlanSummary)]),
    "attn_plan_entry_get": (ctypes.c_int, [c_vp, c_size, P(PlanEntry)]),
    "attn_merge_states": (ctypes.c_int, [P(MergeArgs)]),
    "attn_backend_merge_states": (ctypes.c_int, [c_vp, P(MergeArgs)]),
    "attn_backend_append_kv": (ctypes.c_int, [c_vp, P(AppendArgs)]),
    "attn_plan_lookup": (ctypes.c_int, [c_vp, c_i32, c_i32, P(PlanEntry)]),
    "attn_backend_create": (ctypes.c_int, [c_vp, P(Selection), P(c_vp)]),
    "attn_registry_describe_plan": (ctypes.c_int, [c_vp, P(Selection), P(LaunchPlan)]),
    "attn_backend_workspace_size": (ctypes.c_int, [c_vp, P(BatchLimits), P(c_size)]),
    "attn_backend_forward": (ctypes.c_int, [c_vp, P(ForwardArgs)]),
    "attn_backend_destroy": (None, [c_vp]),
    "attn_backend_name": (c_cp, [c_vp]),
    "attn_backend_shape": (P(Shape), [c_vp]),
    "attn_struct_size": (c_size, [c_cp]),
    "attn_struct_layout": (ctypes.c_int, [c_cp, c_cp, P(c_size), P(c_size)]),
    "attn_struct_field_name": (c_cp, [c_cp, c_size]),
}


def bind(lib: ctypes.CDLL, path: str) -> None:
    """Sets every function's restype and argtypes from SIGNATURES (an
    ImportError when the library lacks one)."""
    missing = [name for name in SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise ImportError(f"attnreg: {path} lacks {', '.join(missing)} (a libattnreg older than "
                          "this package: the layout queries arrived with host API 0.3)")
    for name, (res, args) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    read_enums(lib)


def text(b: Optional[bytes]) -> Any:
    """A C string as str (None stays None). Typed Any: the callers know
    whether the C side can return NULL."""
    return b.decode("utf-8", errors="replace") if b is not None else None


# ---- the import-time check --------------------------------------------------

def check_layout(lib: ctypes.CDLL,
                 mirrors: Optional[Mapping[str, Type[ctypes.Structure]]] = None) -> int:
    """Every field of every mirror against the library's own offsetof/sizeof,
    and every enum name this package uses against the library's names.
    Raises ImportError naming the struct and field (or enum value) that
    differ; returns the number of fields checked."""
    mirrors = MIRRORS if mirrors is None else mirrors
    checked = 0
    for cname, cls in mirrors.items():
        csize = lib.attn_struct_size(cname.encode())
        if csize == 0:
            raise ImportError(f"attnreg: layout mismatch: the library has no struct {cname}")
        for field in cls._fields_:
            fname = field[0]
            off, size = c_size(), c_size()
            st = lib.attn_struct_layout(cname.encode(), fname.encode(), ctypes.byref(off),
                                        ctypes.byref(size))
            desc = getattr(cls, fname)
            if st != OK:
                raise ImportError(f"attnreg: layout mismatch: {cname}.{fname} is mirrored here "
                                  f"but the library has no such field ({text(lib.attn_last_error())})")
            if off.value != desc.offset or size.value != desc.size:
                raise ImportError(
                    f"attnreg: layout mismatch: {cname}.{fname}: the library has offset "
                    f"{off.value} size {size.value}, the Python mirror offset {desc.offset} size "
                    f"{desc.size}")
            checked += 1
        if ctypes.sizeof(cls) > csize:
            raise ImportError(f"attnreg: layout mismatch: {cname}: the Python mirror is "
                              f"{ctypes.sizeof(cls)} bytes, the library's struct {csize}")
    for what, names, fn in (("status", STATUS_NAMES, lib.attn_status_name),
                            ("dtype", DTYPE_NAMES, lib.attn_dtype_name),
                            ("log level", LOG_LEVEL_NAMES, lib.attn_log_level_name)):
        for code, name in enumerate(names):
            got = text(fn(code))
            if got != name:
                raise ImportError(f"attnreg: enum mismatch: {what} {code} is {got} in the "
                                  f"library, {name} here")
    return checked
