# SPDX-License-Identifier: Apache-2.0
"""attnreg's per-layer calls as ``torch.library`` custom ops, for
``torch.compile(fullgraph=True)`` and CUDA-graph capture.

Three ops in the namespace ``attnreg`` (``torch.ops.attnreg.*``)::

    attnreg::forward(int handle, Tensor q, Tensor k_cache, Tensor v_cache,
        Tensor block_table, Tensor cu_seqlens_q, Tensor seqused_k, Tensor(a!) out,
        Tensor(b!)? lse, Tensor? sinks, float? scale, float q_descale,
        float k_descale, float v_descale, int? max_seqlen_q, int? max_seqlen_k) -> ()
    attnreg::append_kv(int handle, Tensor k, Tensor v, Tensor(a!) k_cache,
        Tensor(b!) v_cache, Tensor slot_mapping, float k_scale, float v_scale) -> ()
    attnreg::merge_states(Tensor a, Tensor lse_a, Tensor b, Tensor lse_b,
        Tensor(a!) out, Tensor(b!) lse_out) -> ()

(``SCHEMAS`` holds the schemas the running torch inferred.) Every op writes
its results into tensors the caller passes, declared as mutated, and returns
nothing: forward() never allocates, as the C contract says, and the compiler
sees the KV caches that append_kv writes and forward then reads. The fake
(meta) implementations return nothing and touch neither the library nor the
data, so tracing costs no library call.

**Handles.** A Backend or a PreparedBatch is a Python object holding a C
pointer and checked state; an op's schema takes only tensors and scalars, and
torch.compile can put neither a Python object nor a raw pointer into a graph.
register() gives the object an int id (``obj._op_id``) that the op carries
and the op's real implementation looks up in a registry of weak references:
the registry never keeps a backend alive (closing or dropping it frees the C
object as before), and a call on an id whose object is gone or closed raises
attnreg.Error instead of touching freed memory. Under torch.compile the id is
a constant of the graph (dynamo guards on the object): register() objects
before compiling (the wrappers register lazily only in eager mode), and keep
the objects a compiled function uses alive across its calls: a Backend, with
the metadata as tensor inputs, or one PreparedBatch over static metadata
buffers (what a captured graph needs anyway); a new PreparedBatch per step
makes a new constant and so a recompilation.

**Wrappers.** forward(), append_kv() and merge_states() below take what
Backend.forward / PreparedBatch.forward, Backend.append_kv and
attnreg.merge_states take, allocate what those would allocate (out, lse)
before the op, and return what they return. With torch >= 2.4 (it has
``torch.library.custom_op`` and ``register_fake``; ``HAS_CUSTOM_OP``) and
torch tensors they call the op under torch.compile; with an older torch
(Debian 12's 1.13 has no torch.compile), without torch, or with NumPy
arrays they call the eager method directly, with the same results. In eager
mode (not under torch.compile's tracing) they call the ops' implementations
without the dispatcher, which costs µs a call (bench/python/call_overhead.py
--op measures both); set ``DISPATCH_EAGER = True`` to go through ``torch.ops.attnreg``
eagerly as well (the tests do, to check both routes give the same bits).
Where torch has ``torch.library.infer_schema`` (2.5+) the ops are defined
with ``torch.library.Library`` and one CompositeExplicitAutograd kernel
(a few µs through the dispatcher); on 2.4 with ``torch.library.custom_op``
(tens of µs for ops with this many arguments: custom_op's Python kernels).

A PreparedBatch's forward passes its own metadata tensors (block table,
cu_seqlens_q, seqused_k, sinks) to the op: the library reads the prepared
copies, but the compiler must see them as inputs to order the op after any
write to them. The stream is torch's current one (the capture stream under
``torch.cuda.graph``); the workspace is the backend's cached one: call
Backend.reserve_workspace() before capturing.

Importing this module needs no torch; importing attnreg never imports it.
"""

import functools
import itertools
import threading
import weakref
from typing import Any, Callable, Dict, Optional, Tuple, Union

import attnreg
from attnreg import Backend, Error, PreparedBatch

try:
    import torch
except ImportError:  # attnreg works without torch; the wrappers run eagerly
    torch = None

#: The running torch has torch.library.custom_op and register_fake (>= 2.4):
#: the ops are registered and the wrappers call them on torch tensors.
HAS_CUSTOM_OP: bool = torch is not None and hasattr(torch, "library") and all(
    hasattr(torch.library, n) for n in ("custom_op", "register_fake"))

#: Eager calls go through the dispatcher too (default: only under torch.compile).
DISPATCH_EAGER: bool = False

#: Op name -> the schema torch inferred ({} without custom ops).
SCHEMAS: Dict[str, str] = {}

__all__ = ["HAS_CUSTOM_OP", "DISPATCH_EAGER", "SCHEMAS", "register", "unregister", "lookup",
           "forward", "append_kv", "merge_states"]

_live: Dict[int, "weakref.ReferenceType[Any]"] = {}
_ids = itertools.count(1)
_lock = threading.Lock()
# Per backend id: (q_heads, head_dim_v, out torch dtype name, lse): what the
# wrapper allocates for out and lse, read once instead of per call.
_alloc: Dict[int, Tuple[int, int, str, bool]] = {}


def _drop(op_id: int, _ref: Any) -> None:
    _live.pop(op_id, None)
    _alloc.pop(op_id, None)


def register(obj: Union[Backend, PreparedBatch]) -> int:
    """The int id the ops take for a Backend or a PreparedBatch, assigned on
    the first call (kept in ``obj._op_id``; later calls return it). Call it
    outside torch.compile for every object a compiled function uses."""
    if not isinstance(obj, (Backend, PreparedBatch)):
        raise TypeError(f"register: expected an attnreg.Backend or PreparedBatch, got "
                        f"{type(obj).__name__}")
    op_id: int = obj._op_id
    if op_id:
        return op_id
    be = obj if isinstance(obj, Backend) else obj.backend
    sh = be.shape
    spec = (sh.q_heads, sh.head_dim_v_effective,
            attnreg._arrays.dtypes_for("torch", sh.out_dtype)[0], bool(sh.lse))
    with _lock:
        op_id = next(_ids)
        _live[op_id] = weakref.ref(obj, functools.partial(_drop, op_id))
        _alloc[op_id] = spec
    obj._op_id = op_id
    return op_id


def unregister(obj: Union[Backend, PreparedBatch]) -> None:
    """Forgets obj's id (calls with it then raise); dropping the object does
    this by itself."""
    op_id = obj._op_id
    if op_id:
        _drop(op_id, None)
        obj._op_id = 0


def lookup(op_id: int) -> Union[Backend, PreparedBatch]:
    """The live object registered under op_id; attnreg.Error when it is gone."""
    ref = _live.get(op_id)
    obj = ref() if ref is not None else None
    if obj is None:
        raise Error("ATTN_ERR_INVALID_ARGUMENT",
                    f"attnreg op handle {op_id}: no live Backend or PreparedBatch has this id "
                    f"(dropped, unregistered, or never registered)")
    return obj  # type: ignore[no-any-return]


_is_compiling: Callable[[], bool] = (
    (torch is not None and (getattr(getattr(torch, "compiler", None), "is_compiling", None) or
                            getattr(getattr(torch, "_dynamo", None), "is_compiling", None)))
    or (lambda: False))


def _not_compiling() -> bool:
    """Not under torch.compile's tracing (dynamo reads is_compiling as True)."""
    return not _is_compiling()


def _direct() -> bool:
    """Call the implementation itself: eager, and DISPATCH_EAGER off."""
    return not DISPATCH_EAGER and _not_compiling()


def _op_id(obj: Any) -> int:
    op_id: int = obj._op_id
    if op_id:
        return op_id
    if not _not_compiling():
        raise RuntimeError("attnreg.torch_ops: register() the Backend/PreparedBatch before "
                           "torch.compile traces a call on it (its id is a graph constant)")
    return register(obj)


# ---- the ops' real implementations (their annotated wrappers below give the schemas) -----

def _forward_impl(handle: int, q: Any, k_cache: Any, v_cache: Any, block_table: Any,
                  cu_seqlens_q: Any, seqused_k: Any, out: Any, lse: Any, sinks: Any,
                  scale: Optional[float], q_descale: float, k_descale: float,
                  v_descale: float, max_seqlen_q: Optional[int],
                  max_seqlen_k: Optional[int]) -> None:
    obj = lookup(handle)
    if isinstance(obj, PreparedBatch):
        bt, cu, sk = obj._meta
        if (tuple(block_table.shape) != tuple(bt.shape) or tuple(cu_seqlens_q.shape) !=
                tuple(cu.shape) or tuple(seqused_k.shape) != tuple(sk.shape)):
            raise ValueError(f"attnreg::forward: handle {handle} is a PreparedBatch; the "
                             f"metadata passed must be its own (block_table {list(bt.shape)}, "
                             f"cu_seqlens_q {list(cu.shape)}, seqused_k {list(sk.shape)})")
        obj.forward(q, k_cache, v_cache, out, lse)
    else:
        obj.forward(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k, out,
                    scale=scale, q_descale=q_descale, k_descale=k_descale,
                    v_descale=v_descale, sinks=sinks, max_seqlen_q=max_seqlen_q,
                    max_seqlen_k=max_seqlen_k, lse=lse)


def _append_kv_impl(handle: int, k: Any, v: Any, k_cache: Any, v_cache: Any,
                    slot_mapping: Any, k_scale: float, v_scale: float) -> None:
    obj = lookup(handle)
    be = obj.backend if isinstance(obj, PreparedBatch) else obj
    be.append_kv(k, v, k_cache, v_cache, slot_mapping, k_scale=k_scale, v_scale=v_scale)


def _merge_states_impl(a: Any, lse_a: Any, b: Any, lse_b: Any, out: Any,
                       lse_out: Any) -> None:
    attnreg.merge_states(a, lse_a, b, lse_b, out, lse_out)


_forward_op: Callable[..., None] = _forward_impl
_append_kv_op: Callable[..., None] = _append_kv_impl
_merge_states_op: Callable[..., None] = _merge_states_impl

if HAS_CUSTOM_OP:
    # each schema is inferred from these annotations (torch.Tensor, Optional).
    from torch import Tensor

    def _fwd(handle: int, q: Tensor, k_cache: Tensor, v_cache: Tensor,
             block_table: Tensor, cu_seqlens_q: Tensor, seqused_k: Tensor, out: Tensor,
             lse: Optional[Tensor], sinks: Optional[Tensor], scale: Optional[float],
             q_descale: float, k_descale: float, v_descale: float, max_seqlen_q: Optional[int],
             max_seqlen_k: Optional[int]) -> None:
        _forward_impl(handle, q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k, out,
                      lse, sinks, scale, q_descale, k_descale, v_descale, max_seqlen_q,
                      max_seqlen_k)

    def _fwd_fake(handle: int, q: Tensor, k_cache: Tensor, v_cache: Tensor,
                  block_table: Tensor, cu_seqlens_q: Tensor, seqused_k: Tensor, out: Tensor,
                  lse: Optional[Tensor], sinks: Optional[Tensor], scale: Optional[float],
                  q_descale: float, k_descale: float, v_descale: float, max_seqlen_q: Optional[int],
                  max_seqlen_k: Optional[int]) -> None:
        return None  # writes out (and lse) in place: nothing to describe

    def _app(handle: int, k: Tensor, v: Tensor, k_cache: Tensor,
             v_cache: Tensor, slot_mapping: Tensor, k_scale: float, v_scale: float) -> None:
        _append_kv_impl(handle, k, v, k_cache, v_cache, slot_mapping, k_scale, v_scale)

    def _app_fake(handle: int, k: Tensor, v: Tensor, k_cache: Tensor,
                  v_cache: Tensor, slot_mapping: Tensor, k_scale: float, v_scale: float) -> None:
        return None  # writes the caches in place

    def _mrg(a: Tensor, lse_a: Tensor, b: Tensor, lse_b: Tensor,
             out: Tensor, lse_out: Tensor) -> None:
        _merge_states_impl(a, lse_a, b, lse_b, out, lse_out)

    def _mrg_fake(a: Tensor, lse_a: Tensor, b: Tensor, lse_b: Tensor,
                  out: Tensor, lse_out: Tensor) -> None:
        return None  # writes out and lse_out in place

    _infer_schema: Any = getattr(torch.library, "infer_schema", None)  # public from torch 2.5
    _LIB = torch.library.Library("attnreg", "FRAGMENT") if _infer_schema is not None else None

    def _define(name: str, fn: Callable[..., None], fake: Callable[..., None],
                mutates: Tuple[str, ...]) -> Any:
        """The op from fn's annotations. Where torch has infer_schema, defined
        with torch.library.Library and one CompositeExplicitAutograd kernel
        (as vLLM's direct_register_custom_op does): a call through the
        dispatcher then costs a few µs, where custom_op's Python kernels
        (autograd and in-place bookkeeping per mutated argument) cost tens
        (bench/RESULTS.md). torch 2.4: torch.library.custom_op."""
        if _LIB is not None:
            _LIB.define(name + _infer_schema(fn, mutates_args=mutates))
            _LIB.impl(name, fn, "CompositeExplicitAutograd")
        else:
            torch.library.custom_op(f"attnreg::{name}", mutates_args=mutates)(fn)
        torch.library.register_fake(f"attnreg::{name}")(fake)
        op = getattr(torch.ops.attnreg, name).default
        SCHEMAS[name] = str(op._schema)
        return op

    _forward_op = _define("forward", _fwd, _fwd_fake, ("out", "lse"))
    _append_kv_op = _define("append_kv", _app, _app_fake, ("k_cache", "v_cache"))
    _merge_states_op = _define("merge_states", _mrg, _mrg_fake, ("out", "lse_out"))


def _all_torch(*xs: Any) -> bool:
    tensor = torch.Tensor
    return all(x is None or isinstance(x, tensor) for x in xs)


# ---- the wrappers ----------------------------------------------------------------------

def forward(backend_or_prepared: Union[Backend, PreparedBatch], q: Any, k_cache: Any,
            v_cache: Any, block_table: Any = None, cu_seqlens_q: Any = None,
            seqused_k: Any = None, out: Any = None, *, lse: Any = None, sinks: Any = None,
            scale: Optional[float] = None, q_descale: float = 1.0, k_descale: float = 1.0,
            v_descale: float = 1.0, max_seqlen_q: Optional[int] = None,
            max_seqlen_k: Optional[int] = None) -> Any:
    """Backend.forward (metadata and options given here) or
    PreparedBatch.forward (metadata and options from prepare(): give none
    here) through ``attnreg::forward``. Returns out, or (out, lse) for a
    Shape(lse=True) backend; both allocated when None, as the eager calls do."""
    obj = backend_or_prepared
    if isinstance(obj, PreparedBatch):
        if block_table is not None or cu_seqlens_q is not None or seqused_k is not None or \
                sinks is not None or scale is not None or max_seqlen_q is not None or \
                max_seqlen_k is not None or (q_descale, k_descale, v_descale) != (1.0, 1.0, 1.0):
            raise TypeError("torch_ops.forward: a PreparedBatch has its metadata and options "
                            "from prepare(); pass only q, k_cache, v_cache and out=, lse=")
        block_table, cu_seqlens_q, seqused_k = obj._meta
        sinks = obj._options["sinks"]
    elif isinstance(obj, Backend):
        if block_table is None or cu_seqlens_q is None or seqused_k is None:
            raise TypeError("torch_ops.forward: a Backend needs block_table, cu_seqlens_q and "
                            "seqused_k")
    else:
        raise TypeError(f"torch_ops.forward: expected an attnreg.Backend or PreparedBatch, "
                        f"got {type(obj).__name__}")
    if not HAS_CUSTOM_OP or not _all_torch(q, k_cache, v_cache, block_table, cu_seqlens_q,
                                           seqused_k, out, lse, sinks):
        if isinstance(obj, PreparedBatch):
            return obj.forward(q, k_cache, v_cache, out, lse)
        return obj.forward(q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k, out,
                           scale=scale, q_descale=q_descale, k_descale=k_descale,
                           v_descale=v_descale, sinks=sinks, max_seqlen_q=max_seqlen_q,
                           max_seqlen_k=max_seqlen_k, lse=lse)
    op_id = _op_id(obj)
    hq, dv, out_dtype, with_lse = _alloc[op_id]
    if out is None:
        out = torch.empty((q.shape[0], hq, dv), dtype=getattr(torch, out_dtype),
                          device=q.device)
    if with_lse and lse is None:
        lse = torch.empty((q.shape[0], hq), dtype=torch.float32, device=q.device)
    elif not with_lse and lse is not None:
        raise ValueError("lse: given, but the backend's shape does not ask for it "
                         "(Shape(lse=True))")
    args = (op_id, q, k_cache, v_cache, block_table, cu_seqlens_q, seqused_k, out, lse, sinks,
            scale, float(q_descale), float(k_descale), float(v_descale), max_seqlen_q,
            max_seqlen_k)
    if _direct():
        _forward_impl(*args)
    else:
        _forward_op(*args)
    return (out, lse) if with_lse else out


def append_kv(backend: Union[Backend, PreparedBatch], k: Any, v: Any, k_cache: Any,
              v_cache: Any, slot_mapping: Any, *, k_scale: float = 1.0,
              v_scale: float = 1.0) -> None:
    """Backend.append_kv (of a PreparedBatch: its backend's) through
    ``attnreg::append_kv``, which declares k_cache and v_cache mutated."""
    if not isinstance(backend, (Backend, PreparedBatch)):
        raise TypeError(f"torch_ops.append_kv: expected an attnreg.Backend, got "
                        f"{type(backend).__name__}")
    if not HAS_CUSTOM_OP or not _all_torch(k, v, k_cache, v_cache, slot_mapping):
        be = backend.backend if isinstance(backend, PreparedBatch) else backend
        be.append_kv(k, v, k_cache, v_cache, slot_mapping, k_scale=k_scale, v_scale=v_scale)
        return
    args = (_op_id(backend), k, v, k_cache, v_cache, slot_mapping, float(k_scale),
            float(v_scale))
    if _direct():
        _append_kv_impl(*args)
    else:
        _append_kv_op(*args)


def merge_states(a: Any, lse_a: Any, b: Any, lse_b: Any, out: Any = None,
                 lse_out: Any = None) -> Tuple[Any, Any]:
    """attnreg.merge_states through ``attnreg::merge_states`` (host memory).
    out and lse_out are allocated contiguous when None, as merge_states
    does; unlike it, out may not be a or b (nor lse_out lse_a or lse_b): the
    op would write an input its schema says it only reads."""
    if (out is not None and (out is a or out is b)) or (
            lse_out is not None and (lse_out is lse_a or lse_out is lse_b)):
        raise ValueError("torch_ops.merge_states: out/lse_out must not be an input "
                         "(use attnreg.merge_states to merge in place)")
    if not HAS_CUSTOM_OP or not _all_torch(a, lse_a, b, lse_b, out, lse_out):
        return attnreg.merge_states(a, lse_a, b, lse_b, out, lse_out)
    T, H, D = a.shape
    if out is None:
        out = torch.empty((T, H, D), dtype=a.dtype, device=a.device)
    if lse_out is None:
        lse_out = torch.empty((T, H), dtype=torch.float32, device=a.device)
    if _direct():
        _merge_states_impl(a, lse_a, b, lse_b, out, lse_out)
    else:
        _merge_states_op(a, lse_a, b, lse_b, out, lse_out)
    return out, lse_out
