"""`QTensor`: a quantized tensor in pyburn's packed format, and fake quantization.

A tensor of shape (N, ...) is quantized as a matrix [N, K], K the product of the other dims
(a Linear weight [out, in]; a convolution weight [O, I, kh, kw] as [O, I * kh * kw]):

- ``data``: int32 words [N, ceil(K / per_word)] (`packing`);
- ``scale``: float32, [] per tensor, [N] per channel, [N, ceil(K / block)] block-wise;
- ``zero_point``: int32 of the scale's shape, or None for symmetric signed schemes;
- dequantized = (q - zero_point) * scale.

Quantizing computes the scales and zero points on the host from the tensor's minimums and
maximums, exactly as onnxruntime does (`scheme`), then q = saturate(round(x / scale) +
zero_point) on the tensor's device, rounding half to even (ONNX's QuantizeLinear).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..devices import device as as_device
from ..errors import ArgumentError, DeviceError, DTypeError, ShapeError
from ..ops.creation import tensor
from ..ops.math_ops import where
from ..ops.movement import pad_dim
from .packing import pack, unpack, words_per_row
from .scheme import ACTIVATIONS, QuantScheme

__all__ = ["QTensor", "fake_quantize", "fake_quantize_dynamic"]

#: a range given for calibration: one (min, max) for the tensor, or one per scale
Bounds = float | Sequence[float] | None


class QTensor:
    """A tensor quantized by `scheme`, as packed words, scales and zero points (see the module
    docstring); `shape` is the logical shape. Make one with `QTensor.quantize`.

    >>> import pyburn
    >>> from pyburn.quant import QTensor, INT8_SYMMETRIC_PER_CHANNEL
    >>> w = pyburn.tensor([[0.5, -1.0, 0.25], [2.0, 1.0, 0.0]], device="flex")
    >>> q = QTensor.quantize(w, INT8_SYMMETRIC_PER_CHANNEL)
    >>> q.dequantize().tolist()
    [[0.5039370059967041, -1.0, 0.25196850299835205], [2.0, 1.0078740119934082, 0.0]]
    >>> q
    QTensor(shape=(2, 3), scheme=int8 symmetric per-channel, device=flex, nbytes=16)
    """

    def __init__(self, data: Tensor, scale: Tensor, zero_point: Tensor | None,
                 scheme: QuantScheme, shape: Sequence[int]):
        if not isinstance(scheme, QuantScheme):
            raise ArgumentError(f"QTensor: scheme must be a QuantScheme, got "
                                f"{type(scheme).__name__}")
        self.shape = _logical_shape(shape)
        self.scheme = scheme
        n, k = self.rows, self.cols
        want = {"data": ((n, words_per_row(k, scheme.bits)), "int32"),
                "scale": (scheme.scale_shape(n, k), "float32"),
                "zero_point": (scheme.scale_shape(n, k), "int32")}
        given = {"data": data, "scale": scale, "zero_point": zero_point}
        if (zero_point is None) == scheme.has_zero_point:
            raise ArgumentError(f"QTensor: a {scheme.describe()} scheme "
                                f"{'needs' if scheme.has_zero_point else 'has no'} zero point")
        for name, t in given.items():
            if t is None:
                continue
            (dims, dtype) = want[name]
            if not isinstance(t, Tensor) or t.shape != dims or t.dtype.name != dtype:
                got = f"{t.dtype.name} {t.shape}" if isinstance(t, Tensor) else type(t).__name__
                raise ShapeError(f"QTensor of shape {self.shape} ({scheme.describe()}): "
                                 f"{name} must be {dtype} {dims}, got {got}")
            if t.device is not data.device:
                raise DeviceError(f"QTensor: {name} is on {t.device.name}, data on "
                                  f"{data.device.name}")
        self.data = data
        self.scale = scale
        self.zero_point = zero_point

    # ---- making one --------------------------------------------------------------------------
    @classmethod
    def quantize(cls, t: Tensor, scheme: QuantScheme, rmin: Bounds = None,
                 rmax: Bounds = None) -> QTensor:
        """`t` (a floating-point tensor of at least one dim) quantized by `scheme`, on its
        device. The ranges come from `t` itself, or from `rmin` and `rmax` (calibration): a
        number each for the whole tensor, or one per scale in the scale's order."""
        if not isinstance(scheme, QuantScheme):
            raise ArgumentError(f"quantize takes a QuantScheme, got {type(scheme).__name__}")
        if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
            got = t.dtype.name if isinstance(t, Tensor) else type(t).__name__
            raise DTypeError(f"only floating-point tensors can be quantized, got {got}")
        shape = _logical_shape(t.shape)
        if t.numel() == 0:
            raise ShapeError(f"cannot quantize an empty tensor (shape {t.shape})")
        n, k = shape[0], t.numel() // shape[0]
        groups = _grouped(t.detach().reshape(n, k).float(), scheme)
        lows = groups.amin(-1).tolist() if rmin is None else _bounds(rmin, groups, "rmin")
        highs = groups.amax(-1).tolist() if rmax is None else _bounds(rmax, groups, "rmax")
        scales, zeros = scheme.qparams(lows, highs)
        dims, device = scheme.scale_shape(n, k), t.device
        scale = tensor(scales, dtype="float32", device=device)
        zero = None if zeros is None else tensor(zeros, dtype="int32", device=device)
        q = _ungrouped(_quantized(groups, scale.unsqueeze(-1),
                                  None if zero is None else zero.unsqueeze(-1), scheme), n, k)
        return cls(pack(q, scheme.bits, scheme.signed), scale.reshape(dims),
                   None if zero is None else zero.reshape(dims), scheme, shape)

    # ---- reading it --------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        """N: the size of dim 0 (the channels)."""
        return self.shape[0]

    @property
    def cols(self) -> int:
        """K: the product of the other dims."""
        return math.prod(self.shape[1:])

    @property
    def layout(self) -> dict[str, Any]:
        """How the words hold the integers, as `pyburn.quant.kernels` takes it: ``bits``,
        ``signed`` and ``block`` (the block size, 0 unless block-wise)."""
        scheme = self.scheme
        block = scheme.block_size if scheme.granularity == "block" else 0
        return {"bits": scheme.bits, "signed": scheme.signed, "block": block or 0}

    @property
    def device(self) -> Device:
        """The device holding the words, scales and zero points."""
        return self.data.device

    @property
    def nbytes(self) -> int:
        """The bytes of the words, scales and zero points together."""
        parts = [self.data, self.scale] + ([] if self.zero_point is None else [self.zero_point])
        return sum(p.numel() * p.dtype.itemsize for p in parts)

    def int_repr(self) -> Tensor:
        """The quantized integers as an int32 tensor [N, K]."""
        return unpack(self.data, self.cols, self.scheme.bits, self.scheme.signed)

    def dequantize(self) -> Tensor:
        """The float32 tensor of shape `shape` that the integers stand for:
        (q - zero_point) * scale."""
        q = _grouped(self.int_repr(), self.scheme)
        if self.zero_point is not None:
            q = q - self.zero_point.reshape(-1, 1)
        values = q.float() * self.scale.reshape(-1, 1)
        return _ungrouped(values, self.rows, self.cols).reshape(self.shape)

    def to(self, device: Device | str) -> QTensor:
        """This tensor on `device`."""
        dev = as_device(device)
        return QTensor(self.data.to(dev), self.scale.to(dev),
                       None if self.zero_point is None else self.zero_point.to(dev),
                       self.scheme, self.shape)

    def __repr__(self) -> str:
        return (f"QTensor(shape={self.shape}, scheme={self.scheme.describe()}, "
                f"device={self.device.name}, nbytes={self.nbytes})")


# ---- fake quantization of activations ----------------------------------------------------------
def fake_quantize(x: Tensor, scale: Tensor, zero_point: Tensor,
                  scheme: QuantScheme = ACTIVATIONS) -> Tensor:
    """`x` quantized with `scale` and `zero_point` (tensors that broadcast with it) and
    dequantized again: what an integer kernel sees of `x`, as float32.

    >>> import pyburn
    >>> x = pyburn.tensor([0.0, 0.3, 1.0], device="flex")
    >>> scale = pyburn.tensor(0.5, device="flex")
    >>> fake_quantize(x, scale, pyburn.tensor(0, dtype=pyburn.int32, device="flex")).tolist()
    [0.0, 0.5, 1.0]
    """
    q = _quantized(x.float(), scale, zero_point, scheme)
    return (q - zero_point).float() * scale


def fake_quantize_dynamic(x: Tensor) -> Tensor:
    """`x` through ONNX's DynamicQuantizeLinear and DequantizeLinear: uint8 with a scale and
    zero point from x's own range (widened to hold 0), computed in float32 on x's device:
    scale = (max - min) / 255 (1 when the range is 0), zero point = round(-min / scale)."""
    x = x.float()
    low, high = x.amin().clamp(max=0.0), x.amax().clamp(min=0.0)
    qmin, qmax = ACTIVATIONS.type_range
    scale = (high - low) / float(qmax - qmin)
    scale = where(scale == 0.0, 1.0, scale)
    zero_point = (qmin - low / scale).clamp(qmin, qmax).round().int()
    return fake_quantize(x, scale, zero_point, ACTIVATIONS)


# ---- helpers -----------------------------------------------------------------------------------
def _quantized(x: Tensor, scale: Tensor, zero_point: Tensor | None,
               scheme: QuantScheme) -> Tensor:
    """saturate(round(x / scale) + zero_point) as int32."""
    q = (x / scale).round()
    if zero_point is not None:
        q = q + zero_point.float()
    return q.clamp(*scheme.type_range).int()


def _grouped(x: Tensor, scheme: QuantScheme) -> Tensor:
    """A matrix [N, K] as rows that each have one scale: [1, N*K] per tensor, [N, K] per
    channel, [N * blocks, block] block-wise (the last block zero-padded)."""
    n, k = x.shape
    if scheme.granularity == "tensor":
        return x.reshape(1, n * k)
    if scheme.granularity == "channel":
        return x
    size = scheme.block_size
    assert size is not None
    blocks = -(-k // size)
    return pad_dim(x, 1, 0, blocks * size - k).reshape(n * blocks, size)


def _ungrouped(x: Tensor, n: int, k: int) -> Tensor:
    """The [N, K] matrix that `_grouped` rearranged."""
    return x.reshape(n, -1)[:, :k]


def _logical_shape(shape: Sequence[int]) -> tuple[int, ...]:
    dims = tuple(shape)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                           for d in dims):
        raise ShapeError(f"a quantized tensor has at least one dim (dim 0 holds the channels), "
                         f"got shape {shape!r}")
    return dims


def _bounds(given: Any, groups: Tensor, what: str) -> list[float]:
    """A calibration bound as one float per row of `groups`."""
    count = groups.shape[0]
    values = [given] * count if isinstance(given, (int, float)) else list(given)
    if len(values) != count or not all(isinstance(v, (int, float)) for v in values):
        raise ArgumentError(f"{what} must be a number or {count} numbers (one per scale), got "
                            f"{given!r}")
    return [float(v) for v in values]
