"""How each dtype's elements sit in the wasm backend's memory and in its kernels' lanes:
float32 as f32x4, int32 as i32x4, and uint8 and bool (one byte each) widened to i32x4 of
0..255 on the way in and narrowed back, keeping the low byte, on the way out."""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType, bool_, float32, int32, uint8

#: keep each lane's low byte, then narrow four i32 lanes to four bytes (the narrowing
#: saturates: the mask makes it exact)
_TO_BYTES = ("v128.const i32x4 255 255 255 255 v128.and local.tee $t local.get $t "
             "i16x8.narrow_i32x4_u local.tee $t local.get $t i8x16.narrow_i16x8_u")


@dataclass(frozen=True)
class Kind:
    """How a dtype's elements sit in memory (`size` bytes) and in a kernel's lanes: how four
    (or one, or one into every lane) of them are loaded from the address on the stack, and
    stored to it."""

    dtype: DType
    size: int
    lanes: str  # "f32x4" or "i32x4"
    load4: str
    load1: str
    store4: str
    store1: str
    splat: str  # one element into every lane

    @property
    def integer(self) -> bool:
        return self.lanes == "i32x4"


_WORDS = {float32: "f32x4", int32: "i32x4"}
KINDS: dict[DType, Kind] = {
    **{dtype: Kind(dtype, 4, lanes, "v128.load align=4", "v128.load32_zero",
                   "v128.store align=4", "v128.store32_lane 0", "v128.load32_splat")
       for dtype, lanes in _WORDS.items()},
    **{dtype: Kind(dtype, 1, "i32x4",
                   "v128.load32_zero i16x8.extend_low_i8x16_u i32x4.extend_low_i16x8_u",
                   "i32.load8_u i32x4.splat", f"{_TO_BYTES} v128.store32_lane align=1 0",
                   "i32x4.extract_lane 0 i32.store8", "i32.load8_u i32x4.splat")
       for dtype in (uint8, bool_)},
}
