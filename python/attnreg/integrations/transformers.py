# SPDX-License-Identifier: Apache-2.0
"""attnreg as a Hugging Face transformers attention implementation.

    import attnreg
    from attnreg.integrations import transformers as attnreg_hf
    adapter = attnreg_hf.register()                # name "attnreg"
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="attnreg")
    ...
    adapter.decisions                              # {shape string: backend name}

Every attention call of the model goes through the registry's selection:
the shape (heads, head size, dtypes, the layer's sliding window, softcap,
sinks, capacities) is asked of the registry, the chosen backend is created
once per decision and kept, and forward runs on the K/V of transformers' own
cache (DynamicCache and the others keep [batch, kv_heads, keys, head_dim]),
packed into pages of the registry's layout ([blocks, page, kv_heads,
head_dim], one sequence's pages after another). transformers' mask is the
flash-attention form (None without padding): the backends apply causal and
sliding-window masks themselves, so no mask is built.

What it does not do: padded batches (left- or right-padding; pass one
sequence per row of equal length, or batch 1), dropout in training, and
attention without a cache-friendly layout (cross-attention). Each is an
error naming itself, never a silent wrong answer.

The helpers (pack_pages, shape_for, attention_forward) take NumPy arrays or
torch tensors, so the CPU test suite checks them without transformers or
torch (tests/python/test_transformers_cpu.py).
"""
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import attnreg

#: Tokens per KV page the packed caches use.
PAGE_SIZE = 16

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
_NUMPY_DTYPES = {"float32": "f32", "float16": "f16"}


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _dtype_name(x: Any) -> str:
    """The registry's dtype of an array (torch dtypes, NumPy float32/16)."""
    if _is_torch(x):
        name = str(x.dtype).replace("torch.", "")
        table = _TORCH_DTYPES
    else:
        name = str(x.dtype)
        table = _NUMPY_DTYPES
    if name not in table:
        raise TypeError(f"attnreg: unsupported dtype {name} (expected one of "
                        f"{', '.join(table)})")
    return table[name]


def _permuted(x: Any, dims: Sequence[int]) -> Any:
    """x with its axes permuted, as a new contiguous array."""
    if _is_torch(x):
        return x.permute(*dims).contiguous()
    import numpy as np
    return np.ascontiguousarray(x.transpose(dims))


def _zeros(like: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    if _is_torch(like):
        import torch
        return torch.zeros(shape, dtype=dtype or like.dtype, device=like.device)
    import numpy as np
    return np.zeros(shape, dtype=dtype or like.dtype)


def _int32(like: Any, values: Sequence[Any]) -> Any:
    """values as an int32 array beside `like` (same library and device)."""
    if _is_torch(like):
        import torch
        return torch.tensor(values, dtype=torch.int32, device=like.device)
    import numpy as np
    return np.asarray(values, dtype=np.int32)


def arch_of(x: Any) -> str:
    """The arch to ask for: "cpu" for host arrays, sm_XY for a CUDA tensor."""
    if _is_torch(x) and x.device.type == "cuda":
        import torch
        major, minor = torch.cuda.get_device_capability(x.device)
        return f"sm_{major}{minor}"
    return "cpu"


def capacity(n: int) -> int:
    """The capacity asked for a live length n: the next power of two (at
    least 16), so a growing context makes a handful of decisions, not one per
    token (decisions are per capacity, as for captured graphs)."""
    return max(16, 1 << (max(n, 1) - 1).bit_length())


def pack_pages(key: Any, value: Any, page_size: int = PAGE_SIZE) -> Tuple[Any, Any, Any, Any]:
    """transformers' K/V [B, Hkv, S, D] as the registry's paged caches:
    returns (k_cache, v_cache, block_table, seqused_k) with k_cache and
    v_cache [B * P, page_size, Hkv, D] (P = ceil(S / page_size), the tail of
    the last page zero), sequence b in blocks b*P .. b*P + P - 1
    (block_table int32 [B, P]) and seqused_k int32 [B] = S."""
    if len(key.shape) != 4 or len(value.shape) != 4 or key.shape[:3] != value.shape[:3]:
        raise ValueError(f"attnreg: key {tuple(key.shape)} and value {tuple(value.shape)}: "
                         "expected [batch, kv_heads, keys, head_dim] each, alike but head_dim")
    b, h, s = (int(n) for n in key.shape[:3])
    pages = -(-s // page_size)

    def paged(x: Any) -> Any:
        d = int(x.shape[3])
        buf = _zeros(x, (b, pages * page_size, h, d))
        buf[:, :s] = _permuted(x, (0, 2, 1, 3))
        return buf.reshape(b * pages, page_size, h, d)

    table = _int32(key, [[i * pages + p for p in range(pages)] for i in range(b)])
    return paged(key), paged(value), table, _int32(key, [s] * b)


def shape_for(query: Any, key: Any, value: Any, *, is_causal: bool = True,
              sliding_window: Optional[int] = None, softcap: Optional[float] = None,
              has_sinks: bool = False, page_size: int = PAGE_SIZE,
              arch: Optional[str] = None) -> attnreg.Shape:
    """The registry shape of one transformers attention call: query [B, Hq,
    Sq, D], key [B, Hkv, Sk, D], value [B, Hkv, Sk, Dv]. A sliding window W
    (a query sees the W keys ending at itself, as transformers' masks keep
    kv > q - W) is the window (W - 1, 0); capacities are capacity() of the
    live lengths."""
    _, hq, sq, d = (int(n) for n in query.shape)
    _, hkv, sk, _ = (int(n) for n in key.shape)
    dv = int(value.shape[3])
    window = (-1, -1)
    if sliding_window is not None and int(sliding_window) > 0:
        if not is_causal:
            raise NotImplementedError("attnreg: a sliding window without causal masking")
        window = (int(sliding_window) - 1, 0)
    dt = _dtype_name(query)
    return attnreg.Shape(arch=arch or arch_of(query), q_heads=hq, kv_heads=hkv, head_dim=d,
                         head_dim_v=dv if dv != d else 0, q_dtype=dt, kv_dtype=_dtype_name(key),
                         compute_dtype=dt, out_dtype=dt, page_size=page_size,
                         max_q_len=capacity(sq), max_kv_len=capacity(max(sk, sq)),
                         causal=bool(is_causal), window=window, softcap=float(softcap or 0.0),
                         sinks=bool(has_sinks))


def _check_mask(mask: Any) -> None:
    """transformers' flash-attention mask: None, or a 2D padding mask that
    must mark every key (no padding)."""
    if mask is None:
        return
    if len(mask.shape) == 2 and bool((mask != 0).all()):
        return
    raise NotImplementedError(
        f"attnreg: attention_mask {tuple(mask.shape)} pads the batch; padded batches are not "
        "supported (pass one sequence per row, of equal length, or batch 1)")


class Adapter:
    """The registry behind the "attnreg" attention implementation: decides a
    backend per shape, keeps one backend object per decision, and records
    the decisions (``decisions``: shape string -> backend name) so a host
    can say which kernel ran and why (Registry.explain on the shape)."""

    def __init__(self, registry: Optional[attnreg.Registry] = None,
                 page_size: int = PAGE_SIZE) -> None:
        self.registry = registry if registry is not None else attnreg.Registry()
        self.page_size = page_size
        self.decisions: Dict[str, str] = {}
        self._backends: Dict[attnreg.Shape, attnreg.Backend] = {}

    def backend(self, shape: attnreg.Shape) -> attnreg.Backend:
        """The backend object for shape (created on its first use)."""
        be = self._backends.get(shape)
        if be is None:
            sel = self.registry.select(shape)
            be = self.registry.create(sel)
            self._backends[shape] = be
            self.decisions[str(shape)] = be.name
        return be

    def close(self) -> None:
        """Destroys the backend objects made so far (decisions stay)."""
        for be in self._backends.values():
            be.close()
        self._backends.clear()

    def attention(self, module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                  scaling: Optional[float] = None, dropout: float = 0.0,
                  sliding_window: Optional[int] = None, softcap: Optional[float] = None,
                  s_aux: Any = None, sinks: Any = None, **kwargs: Any) -> Tuple[Any, None]:
        """transformers' attention-function contract: returns (out [B, Sq, Hq,
        Dv], None)."""
        if dropout and getattr(module, "training", False):
            raise NotImplementedError("attnreg: attention dropout in training")
        _check_mask(attention_mask)
        sink_logits = s_aux if s_aux is not None else sinks
        is_causal = kwargs.get("is_causal")
        if is_causal is None:
            is_causal = getattr(module, "is_causal", True)
        shape = shape_for(query, key, value, is_causal=is_causal, sliding_window=sliding_window,
                          softcap=softcap, has_sinks=sink_logits is not None,
                          page_size=self.page_size)
        b, hq, sq, d = (int(n) for n in query.shape)
        sk = int(key.shape[2])
        q = _permuted(query, (0, 2, 1, 3)).reshape(b * sq, hq, d)
        k_cache, v_cache, table, seqused = pack_pages(key, value, self.page_size)
        cu = _int32(query, [i * sq for i in range(b + 1)])
        if sink_logits is not None:
            sink_logits = (sink_logits.float().contiguous() if _is_torch(sink_logits)
                           else sink_logits.astype("float32"))
        scale = float(scaling) if scaling is not None else 1.0 / math.sqrt(d)
        out = self.backend(shape).forward(q, k_cache, v_cache, table, cu, seqused, scale=scale,
                                          sinks=sink_logits, max_seqlen_q=sq, max_seqlen_k=sk)
        return out.reshape(b, sq, hq, int(value.shape[3])), None


def register(registry: Optional[attnreg.Registry] = None, name: str = "attnreg",
             page_size: int = PAGE_SIZE) -> Adapter:
    """Registers attnreg with transformers under ``name`` (its
    AttentionInterface, and the flash-attention mask form in its
    AttentionMaskInterface) and returns the Adapter. Then
    ``from_pretrained(..., attn_implementation=name)`` or
    ``model.set_attn_implementation(name)`` runs the model's attention
    through the registry. Needs transformers >= 4.53."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError as e:
        raise ImportError(f"attnreg.integrations.transformers needs transformers >= 4.53 "
                          f"(AttentionInterface, masking_utils): {e}") from None
    adapter = Adapter(registry, page_size)

    def attnreg_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                          **kwargs: Any) -> Tuple[Any, None]:
        return adapter.attention(module, query, key, value, attention_mask, **kwargs)

    AttentionInterface.register(name, attnreg_attention)
    # The backends mask causally and by window themselves: the mask
    # transformers builds for flash attention (None unless padded) is all
    # they need, and nothing [B, 1, Sq, Sk] is materialised.
    flash_mask = AttentionMaskInterface._global_mapping.get("flash_attention_2")
    if flash_mask is None:
        from transformers import masking_utils
        flash_mask = masking_utils.flash_attention_mask
    AttentionMaskInterface.register(name, flash_mask)
    return adapter
