"""`QuantScheme`: how a tensor is quantized (integer type, symmetry, granularity), its named
presets, and the scale and zero point of a range.

Scales and zero points follow onnxruntime.quantization's ``compute_scale_zp``, so that a
weight quantized here and by onnxruntime's tools has the same scale and zero point:

- the range [rmin, rmax] is widened to hold 0 (0 must be exactly representable);
- symmetric: it becomes [-m, m] with m = max(|rmin|, |rmax|), and the zero point is the middle
  of the integer range, rounded half to even: 0 for int8 and int4, 128 for uint8, 8 for uint4;
  int8 uses the restricted range [-127, 127] (so scale = m / 127) as onnxruntime does, the
  other types their full range (int4: scale = m / 7.5 on [-8, 7]);
- scale = (rmax - rmin) / (qmax - qmin), computed in float64 and stored as float32;
  asymmetric zero point = round(qmin - rmin / scale) in float64, half to even;
- a range too small for a normal float32 scale (all zeros) gets scale 1 and zero point 0.

PyTorch's observers (torch.ao) compute the same for asymmetric (affine) schemes; for
symmetric int8 they divide by (qmax - qmin) / 2 = 127.5 over [-128, 127] unless the observer
is given ``quant_min=-127, quant_max=127``, and they clamp a tiny scale to float32's epsilon
instead of using 1.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentError

__all__ = ["ACTIVATIONS", "INT4_BLOCK32", "INT4_BLOCK128", "INT8_ASYMMETRIC_PER_TENSOR",
           "INT8_SYMMETRIC_PER_CHANNEL", "INT8_SYMMETRIC_PER_TENSOR", "PRESETS", "QuantScheme",
           "UINT4_BLOCK32", "UINT8_ASYMMETRIC_PER_CHANNEL", "UINT8_ASYMMETRIC_PER_TENSOR"]

#: bits, signed and the full integer range of each quantized type
TYPES: dict[str, tuple[int, bool, int, int]] = {
    "int8": (8, True, -128, 127), "uint8": (8, False, 0, 255),
    "int4": (4, True, -8, 7), "uint4": (4, False, 0, 15),
}
GRANULARITIES = ("tensor", "channel", "block")
#: the block size of a block-wise scheme when none is given
DEFAULT_BLOCK = 32
#: a block holds whole 32-bit words of 4-bit and of 8-bit values alike
BLOCK_MULTIPLE = 8
#: float32's smallest normal number: a smaller scale is replaced by 1 (onnxruntime's rule)
_TINY = 1.1754943508222875e-38


def f32(x: float) -> float:
    """`x` rounded to the nearest float32 (as a Python float); infinite beyond its range."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


@dataclass(frozen=True)
class QuantScheme:
    """How to quantize a tensor: `dtype` ("int8", "uint8", "int4", "uint4"), `symmetric`
    (zero point in the middle of the range) or not, and one scale per tensor, per channel
    (dim 0: a Linear's output feature, a convolution's output channel) or per block of
    `block_size` consecutive elements of a channel (block-wise, default 32; a multiple of 8).

    >>> QuantScheme("int4", granularity="block")
    QuantScheme(dtype='int4', symmetric=True, granularity='block', block_size=32)
    >>> QuantScheme("int4").qparams([-3.0], [7.5])
    ([1.0], None)
    >>> QuantScheme("uint8", symmetric=False).qparams([-1.0], [254.0])
    ([1.0], [1])
    """

    dtype: str = "int8"
    symmetric: bool = True
    granularity: str = "channel"
    block_size: int | None = None

    def __post_init__(self) -> None:
        if self.dtype not in TYPES:
            raise ArgumentError(f"QuantScheme: dtype must be one of {', '.join(TYPES)}, got "
                                f"{self.dtype!r}")
        if not isinstance(self.symmetric, bool):
            raise ArgumentError(f"QuantScheme: symmetric must be a bool, got "
                                f"{self.symmetric!r}")
        if self.granularity not in GRANULARITIES:
            raise ArgumentError(f"QuantScheme: granularity must be one of "
                                f"{', '.join(GRANULARITIES)}, got {self.granularity!r}")
        if self.granularity != "block":
            if self.block_size is not None:
                raise ArgumentError(f"QuantScheme: block_size={self.block_size!r} is only for "
                                    f"granularity='block', not {self.granularity!r}")
            return
        if self.block_size is None:
            object.__setattr__(self, "block_size", DEFAULT_BLOCK)
        size = self.block_size
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or \
                size % BLOCK_MULTIPLE:
            raise ArgumentError(f"QuantScheme: block_size must be a positive multiple of "
                                f"{BLOCK_MULTIPLE} (a block then holds whole 32-bit words), "
                                f"got {size!r}")

    # ---- the integer type ------------------------------------------------------------------
    @property
    def bits(self) -> int:
        """4 or 8."""
        return TYPES[self.dtype][0]

    @property
    def signed(self) -> bool:
        """Whether the integers are two's-complement signed (int8, int4)."""
        return TYPES[self.dtype][1]

    @property
    def type_range(self) -> tuple[int, int]:
        """The integers the type holds: quantized values saturate to it."""
        return TYPES[self.dtype][2:]

    @property
    def qrange(self) -> tuple[int, int]:
        """The integers a range maps onto: the type's, or [-127, 127] for symmetric int8."""
        low, high = self.type_range
        return (-high, high) if self.symmetric and self.dtype == "int8" else (low, high)

    @property
    def per_word(self) -> int:
        """How many values one packed int32 word holds (4 or 8)."""
        return 32 // self.bits

    @property
    def has_zero_point(self) -> bool:
        """False where every zero point is 0 (symmetric signed types): none is stored."""
        return not (self.symmetric and self.signed)

    # ---- shapes ----------------------------------------------------------------------------
    def scale_shape(self, n: int, k: int) -> tuple[int, ...]:
        """The shape of the scales (and zero points) of an [n, k] weight: [], [n] or
        [n, ceil(k / block_size)]."""
        if self.granularity == "tensor":
            return ()
        if self.granularity == "channel":
            return (n,)
        assert self.block_size is not None
        return (n, -(-k // self.block_size))

    # ---- scale and zero point --------------------------------------------------------------
    def qparams(self, rmin: Sequence[float], rmax: Sequence[float]
                ) -> tuple[list[float], list[int] | None]:
        """The scales (float32 values) and zero points (None where the scheme has none) of
        the ranges [rmin[i], rmax[i]], by onnxruntime's rule (see the module docstring)."""
        if len(rmin) != len(rmax):
            raise ArgumentError(f"qparams: {len(rmin)} minimums for {len(rmax)} maximums")
        qmin, qmax = self.qrange
        scales, zero_points = [], []
        for low, high in zip(rmin, rmax):
            low, high = min(f32(low), 0.0), max(f32(high), 0.0)
            if not (math.isfinite(low) and math.isfinite(high)):
                raise ArgumentError(f"cannot quantize the range [{low}, {high}]: it is not "
                                    f"finite (the tensor holds NaN or infinite values)")
            if self.symmetric:
                low, high = -max(-low, high), max(-low, high)
            scale = (high - low) / (qmax - qmin)
            if scale < _TINY:
                scales.append(1.0)
                zero_points.append(0)
                continue
            zero = (qmin + qmax) / 2 if self.symmetric else qmin - low / scale
            scales.append(f32(scale))
            zero_points.append(min(max(round(zero), qmin), qmax))
        return scales, (zero_points if self.has_zero_point else None)

    # ---- metadata --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The scheme as plain values (what saved files record)."""
        return {"dtype": self.dtype, "symmetric": self.symmetric,
                "granularity": self.granularity, "block_size": self.block_size}

    @classmethod
    def from_dict(cls, fields: Any) -> QuantScheme:
        """The scheme `to_dict` described."""
        if not isinstance(fields, dict) or set(fields) - {"dtype", "symmetric", "granularity",
                                                          "block_size"}:
            raise ArgumentError(f"not a quantization scheme: {fields!r}")
        return cls(**fields)

    def describe(self) -> str:
        """A short readable form: ``int8 symmetric per-channel``, ``int4 symmetric
        block 32``."""
        kind = "symmetric" if self.symmetric else "asymmetric"
        where = (f"block {self.block_size}" if self.granularity == "block"
                 else f"per-{self.granularity}")
        return f"{self.dtype} {kind} {where}"


#: int8 weights, one scale per output channel, zero point 0 (onnxruntime's and PyTorch's
#: usual choice for weights)
INT8_SYMMETRIC_PER_CHANNEL = QuantScheme("int8", True, "channel")
#: int8 weights, one scale for the whole tensor, zero point 0
INT8_SYMMETRIC_PER_TENSOR = QuantScheme("int8", True, "tensor")
#: int8, one scale and zero point for the whole tensor
INT8_ASYMMETRIC_PER_TENSOR = QuantScheme("int8", False, "tensor")
#: uint8, one scale and zero point for the whole tensor: how activations are quantized
UINT8_ASYMMETRIC_PER_TENSOR = QuantScheme("uint8", False, "tensor")
#: uint8, one scale and zero point per output channel
UINT8_ASYMMETRIC_PER_CHANNEL = QuantScheme("uint8", False, "channel")
#: int4 weights, one scale per 32 consecutive elements of a row, zero point 0
INT4_BLOCK32 = QuantScheme("int4", True, "block", 32)
#: int4 weights, one scale per 128 consecutive elements of a row, zero point 0
INT4_BLOCK128 = QuantScheme("int4", True, "block", 128)
#: uint4 weights with a zero point, one scale per 32 consecutive elements of a row
UINT4_BLOCK32 = QuantScheme("uint4", False, "block", 32)
#: the scheme of quantized activations (dynamic and static): uint8 asymmetric per tensor, as
#: onnxruntime's quantize_dynamic does
ACTIVATIONS = UINT8_ASYMMETRIC_PER_TENSOR

#: the presets by name
PRESETS: dict[str, QuantScheme] = {
    "INT8_SYMMETRIC_PER_CHANNEL": INT8_SYMMETRIC_PER_CHANNEL,
    "INT8_SYMMETRIC_PER_TENSOR": INT8_SYMMETRIC_PER_TENSOR,
    "INT8_ASYMMETRIC_PER_TENSOR": INT8_ASYMMETRIC_PER_TENSOR,
    "UINT8_ASYMMETRIC_PER_TENSOR": UINT8_ASYMMETRIC_PER_TENSOR,
    "UINT8_ASYMMETRIC_PER_CHANNEL": UINT8_ASYMMETRIC_PER_CHANNEL,
    "INT4_BLOCK32": INT4_BLOCK32, "INT4_BLOCK128": INT4_BLOCK128, "UINT4_BLOCK32": UINT4_BLOCK32,
}
