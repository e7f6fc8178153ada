"""How each pyburn dtype lives in WGSL: the type stored in buffers and the type computed in.

=========  ========  ========  ==================================================
dtype      stored    computed  why
=========  ========  ========  ==================================================
float32    f32       f32
float16    f16       f32       rounded once on store, like numpy's float16 loops;
                               only where the adapter has ``shader-f16``
int32      i32       i32       wraps on overflow, as WGSL defines
uint8      u32       u32       one element per 32-bit word, masked to 8 bits on store
bool       u32       u32       one element per word, 0 or 1
=========  ========  ========  ==================================================

uint8 and bool take a whole word each because WGSL storage has no 8-bit type: packing four
to a word would make every kernel that writes them read-modify-write shared words (atomics
on most GPUs). Transfers pack and unpack them on the GPU (``bytes.wgsl``). float64 and int64
do not exist in WGSL and are refused with a `DTypeError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType, bool_, float16, float32, int32, uint8
from ...errors import DTypeError


@dataclass(frozen=True)
class Kind:
    """The WGSL side of one dtype."""

    dtype: DType
    #: element type of storage buffers
    storage: str
    #: type kernels compute in (the {{T}} of op expressions)
    compute: str
    #: bytes per stored element
    itemsize: int

    def load(self, expr: str) -> str:
        """WGSL that turns a stored element `expr` into the compute type."""
        return f"f32({expr})" if self.storage == "f16" else expr

    def store(self, expr: str) -> str:
        """WGSL that turns a compute-type value `expr` into the stored element."""
        if self.dtype is float16:
            return f"pb_to_f16({expr})"
        if self.dtype is uint8:
            return f"(({expr}) & 0xffu)"
        if self.dtype is bool_:
            return f"select(0u, 1u, ({expr}) != 0u)"
        return expr

    def store_truth(self, expr: str) -> str:
        """WGSL that stores a WGSL ``bool`` `expr` (this must be the bool kind)."""
        return f"select(0u, 1u, {expr})"


KINDS: dict[DType, Kind] = {k.dtype: k for k in (
    Kind(float32, "f32", "f32", 4),
    Kind(float16, "f16", "f32", 2),
    Kind(int32, "i32", "i32", 4),
    Kind(uint8, "u32", "u32", 4),
    Kind(bool_, "u32", "u32", 4),
)}


def kind_of(dtype: DType, device: str = "wgpu") -> Kind:
    """The WGSL kind of `dtype`, or a DTypeError naming the dtype and the device."""
    found = KINDS.get(dtype)
    if found is None:
        raise DTypeError(f"device {device!r} does not support {dtype.name}: WGSL has no "
                         f"64-bit types (use float32 or int32)")
    return found
