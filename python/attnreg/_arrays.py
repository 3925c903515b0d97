# SPDX-License-Identifier: Apache-2.0
"""NumPy arrays and torch tensors as forward() arguments: what each must look
like for a backend's shape, checked before any pointer reaches C.

Neither numpy nor torch is imported here unless an argument is one of theirs.
"""

import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The dtype each attnreg dtype is carried in. NumPy has no bf16 or fp8: bf16 is
# passed as uint16 raw bits and fp8 as uint8 codes (as the .npy files of
# `attnreg run` are). torch has native types; fp8 caches may also be uint8.
NUMPY_DTYPES: Dict[str, Tuple[str, ...]] = {"f32": ("float32",), "f16": ("float16",), "bf16": ("uint16",),
                "fp8_e4m3fn": ("uint8",), "fp8_e4m3fnuz": ("uint8",)}
TORCH_DTYPES: Dict[str, Tuple[str, ...]] = {"f32": ("float32",), "f16": ("float16",), "bf16": ("bfloat16",),
                "fp8_e4m3fn": ("float8_e4m3fn", "uint8"),
                "fp8_e4m3fnuz": ("float8_e4m3fnuz", "uint8")}
ELEMENT_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "fp8_e4m3fn": 1, "fp8_e4m3fnuz": 1}
# Bytes per element of every carrier dtype name above: a dtype is accepted
# only when its name and its itemsize both match.
CARRIER_SIZE = {"float32": 4, "float16": 2, "uint16": 2, "bfloat16": 2, "uint8": 1,
                "float8_e4m3fn": 1, "float8_e4m3fnuz": 1, "int32": 4, "int64": 8}


def is_torch(x: Any) -> bool:
    """x is a torch tensor (checked without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def is_numpy(x: Any) -> bool:
    """x is a NumPy array (only when numpy is already imported)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


class View:
    """What forward needs of one array: kind, device, dtype name, shape,
    strides in elements, element size, address."""

    __slots__ = ("name", "obj", "kind", "device", "dtype", "shape", "strides", "itemsize", "ptr",
                 "nbytes")
    name: str
    obj: Any
    kind: str
    device: str
    dtype: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    itemsize: int
    ptr: int
    nbytes: int

    def __init__(self, name: str, obj: Any) -> None:
        self.name, self.obj = name, obj
        if is_torch(obj):
            self.kind = "torch"
            dev = obj.device
            self.device = "cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}"
            self.dtype = str(obj.dtype).replace("torch.", "")
            self.shape = tuple(int(s) for s in obj.shape)
            self.strides = tuple(int(s) for s in obj.stride())
            self.itemsize = obj.element_size()
            self.ptr = obj.data_ptr()
            self.nbytes = obj.numel() * self.itemsize
        elif is_numpy(obj):
            self.kind = "numpy"
            self.device = "cpu"
            dt = obj.dtype
            # dtype.name says nothing of byte order: '>f4' is "float32" too,
            # and the kernels would read its bytes swapped (NaN, silently).
            # Structured and sub-array dtypes are not numbers at all.
            if dt.fields is not None or dt.subdtype is not None:
                raise ValueError(f"{name}: a structured dtype ({dt}) is not a numeric array")
            if not dt.isnative:
                raise ValueError(f"{name}: dtype {dt.str} is not in this machine's byte order "
                                 f"({sys.byteorder}-endian); convert it with "
                                 f"a.astype(a.dtype.newbyteorder('='))")
            self.dtype = dt.name
            self.shape = tuple(obj.shape)
            self.itemsize = obj.dtype.itemsize
            if any(s % self.itemsize for s in obj.strides):
                raise ValueError(f"{name}: strides {obj.strides} bytes are not whole elements")
            self.strides = tuple(s // self.itemsize for s in obj.strides)
            self.ptr = obj.ctypes.data
            self.nbytes = obj.nbytes
            if not obj.flags.writeable and name in ("out", "workspace"):
                raise ValueError(f"{name}: the array is read-only")
        else:
            raise TypeError(f"{name}: expected a numpy.ndarray or a torch.Tensor, got "
                            f"{type(obj).__module__}.{type(obj).__qualname__}")

    def contiguous(self) -> bool:
        """Row-major contiguous (size-1 dimensions' strides ignored)."""
        expect = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expect:
                return False
            expect *= size
        return True

    def expect_shape(self, want: Sequence[Optional[int]], what: str) -> None:
        """want: a tuple of ints or None (any)."""
        ok = len(self.shape) == len(want) and all(w is None or w == s
                                                    for w, s in zip(want, self.shape))
        if not ok:
            shown = "[" + ", ".join("*" if w is None else str(w) for w in want) + "]"
            raise ValueError(f"{self.name}: expected shape {shown} ({what}), got "
                             f"[{', '.join(str(s) for s in self.shape)}]")

    def expect_dtype(self, allowed: Sequence[str], what: str) -> None:
        if self.dtype not in allowed or CARRIER_SIZE.get(self.dtype) != self.itemsize:
            raise ValueError(f"{self.name}: expected dtype {' or '.join(allowed)} ({what}), got "
                             f"{self.dtype}")

    def expect_contiguous(self) -> None:
        if not self.contiguous():
            raise ValueError(f"{self.name}: expected a contiguous array, got strides "
                             f"{list(self.strides)} (elements) for shape {list(self.shape)}")

    def expect_cache_strides(self) -> None:
        """A paged cache view [blocks, page, heads, dim]: strides >= 0 with
        the last dimension contiguous; C gets the three outer strides. A size-1
        dimension's stride is never used, so it is passed as 0 (contiguous):
        torch and NumPy report arbitrary strides for them."""
        self.expect_inner_contiguous()
        if any(s < 0 for s in self.strides):
            raise ValueError(f"{self.name}: negative strides {list(self.strides)} (elements) "
                             f"are not supported")
        self.strides = tuple(0 if size == 1 else st for size, st in
                             zip(self.shape[:-1], self.strides[:-1])) + self.strides[-1:]

    def expect_inner_contiguous(self) -> None:
        if self.shape and self.shape[-1] != 1 and self.strides[-1] != 1:
            raise ValueError(f"{self.name}: the last dimension must be contiguous (stride 1), "
                             f"got strides {list(self.strides)} (elements)")


def dtypes_for(kind: str, attn_dtype: str) -> Tuple[str, ...]:
    """The array dtypes that carry attn_dtype for arrays of this kind."""
    return (NUMPY_DTYPES if kind == "numpy" else TORCH_DTYPES)[attn_dtype]


def host_int_list(view: View) -> Optional[List[int]]:
    """An int32 host array's values (numpy or CPU torch), for the checks that
    read data; None for device memory (reading it would synchronise)."""
    if view.device != "cpu":
        return None
    obj = view.obj
    if view.kind == "torch":
        return [int(v) for v in obj.reshape(-1).tolist()]
    return [int(v) for v in obj.reshape(-1)]


def empty_like_spec(kind: str, device: str, shape: Sequence[int], dtype_name: str) -> Any:
    """An uninitialised array of this kind, device, shape and dtype."""
    if kind == "numpy":
        import numpy as np
        return np.empty(shape, dtype=dtype_name)
    import torch
    return torch.empty(shape, dtype=getattr(torch, dtype_name), device=device)


def workspace_buffer(kind: str, device: str, nbytes: int) -> Tuple[Any, int]:
    """A byte buffer for the workspace and its address: kind "torch" a torch
    tensor on ``device``, else ("host") a ctypes buffer (no numpy needed)."""
    if kind == "torch":
        import torch
        buf = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=device)
        return buf, buf.data_ptr()
    import ctypes
    host = (ctypes.c_uint8 * max(nbytes, 1))()
    return host, ctypes.addressof(host)


def stream_handle(stream: Any, device: str) -> Optional[int]:
    """The cudaStream_t to pass: the given stream (a torch.cuda.Stream, or an
    int handle), else torch's current stream on the device; NULL on CPU."""
    if stream is not None:
        if hasattr(stream, "cuda_stream"):
            return int(stream.cuda_stream) or None
        return int(stream) or None
    if device == "cpu":
        return None
    import torch
    return int(torch.cuda.current_stream(torch.device(device)).cuda_stream) or None
