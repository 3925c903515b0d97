# SPDX-License-Identifier: Apache-2.0
"""plan_hf_config: a model's whole attention planned from its Hugging Face
config.json, by libattnreg's own reader (attn_hf_config_read), so a Python
engine follows exactly the rules of ``attnreg plan --hf-config``: the other
families' key names, layer_types before the pattern keys, the softmax scale,
the attention kinds no backend computes refused with the key named, and the
model's own validation before any capacity is asked for."""

import ctypes
import json
import os
from typing import Any, Dict, Optional, Tuple, Union

from . import _native
from . import (Plan, Registry, _error, _json_float, _lib, _plan_model, _target_model, _text)


ConfigSource = Union[str, "os.PathLike[str]", Dict[str, Any]]


def _read(config: ConfigSource) -> Tuple[ctypes.c_void_p, str]:
    """(handle, name) of a path, a model folder holding config.json, or a
    dict (the parsed config)."""
    handle = ctypes.c_void_p()
    if isinstance(config, dict):
        try:
            text = json.dumps(config, allow_nan=False).encode()
        except (TypeError, ValueError) as e:
            raise ValueError(f"plan_hf_config: the config dict is not JSON: {e}") from None
        name = "<dict>"
        st = _lib.attn_hf_config_parse(text, len(text), name.encode(), ctypes.byref(handle))
    else:
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        name = path
        st = _lib.attn_hf_config_read(os.fsencode(path), ctypes.byref(handle))
    if st != _native.OK:
        raise _error(st)
    return handle, name


def _model_dict(handle: ctypes.c_void_p, info: Any, m: Any) -> Dict[str, Any]:
    """The CLI's "model" object (with its deprecated 0.3 names)."""
    scale = None
    if m.head_dim > 0:
        scale = _json_float(m.scale if m.scale > 0 else m.head_dim ** -0.5)
    model_type = _text(info.model_type) or None
    return {"model_type": model_type, "from_text_config": bool(info.from_text_config),
            "num_layers": m.num_layers, "num_q_heads": m.num_q_heads,
            "num_kv_heads": m.num_kv_heads, "head_dim": m.head_dim, "softcap": m.softcap,
            "has_sinks": bool(m.has_sinks), "scale": scale,
            "max_position_embeddings": info.max_position_embeddings or None,
            "num_attention_heads": m.num_q_heads, "num_key_value_heads": m.num_kv_heads,
            "sinks": bool(m.has_sinks)}


def plan_hf_config(config: ConfigSource, registry: Optional[Registry] = None, *,
                   arch: str = "cpu", q_dtype: str = "bf16", kv_dtype: Optional[str] = None,
                   compute_dtype: Optional[str] = None, out_dtype: Optional[str] = None,
                   page_size: int = 16, tp: int = 1, max_model_len: Optional[int] = None,
                   max_prefill_tokens: int = 0, spec_tokens: int = 0) -> Plan:
    """Plans a model from its Hugging Face config: ``config`` is a path to a
    config.json, a model folder holding one, or the parsed dict. The other
    arguments are the engine's choices, as ``attnreg plan``'s flags
    (``max_model_len`` None = the config's max_position_embeddings);
    ``registry`` None opens one on the default conf search.

    Returns a Plan whose ``config``, ``model``, ``target`` and ``notes`` say
    what was read (``to_dict()`` is ``attnreg plan --json``) and whose
    entries each carry the softmax ``scale`` to pass to forward.

    Raises UnsupportedError for attention no backend here computes (MLA,
    block-sparse, chunked local, ALiBi), naming the key; InvalidShapeError
    for a model that could never run (28 query heads over 6 KV heads, a tp
    that does not divide them), checked before max_model_len is needed;
    ValueError when neither the config nor the caller gives a max_model_len;
    Error (ATTN_ERR_IO, ATTN_ERR_INVALID_ARGUMENT) for an unreadable or
    malformed config."""
    handle, name = _read(config)
    try:
        info = _native.new(_native.HfConfigInfo)
        st = _lib.attn_hf_config_describe(handle, ctypes.byref(info))
        if st != _native.OK:
            raise _error(st)
        notes = [_text(_lib.attn_hf_config_note(handle, k)) for k in range(info.num_notes)]
        m = _target_model(arch, q_dtype, kv_dtype, compute_dtype, out_dtype, page_size, tp,
                          max_prefill_tokens, spec_tokens)
        m.max_model_len = 0 if max_model_len is None else max_model_len
        st = _lib.attn_hf_config_apply(handle, ctypes.byref(m))
        if st != _native.OK:
            raise _error(st)  # an invalid model, before any length is asked for
        if m.max_model_len == 0 and max_model_len is None:
            raise ValueError(f"plan_hf_config: {name} has no max_position_embeddings (nor "
                             "n_positions, max_seq_len, seq_length): pass max_model_len")
        if registry is None:
            registry = Registry()
        # The plan copies what it keeps; the config's layers must live until
        # attn_registry_plan returns, which the finally below guarantees.
        registry._enter()  # a registry call: a close() meanwhile waits for it
        try:
            return _plan_model(registry, m, config=name, model=_model_dict(handle, info, m),
                               notes=notes)
        finally:
            registry._release()
    finally:
        _lib.attn_hf_config_free(handle)


__all__ = ["plan_hf_config", "Plan"]
