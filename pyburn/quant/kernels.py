"""Quantized kernels on the raw parts of the packed format: products of float or quantized
activations with packed int8/int4 weights, for linear layers and 2-d convolutions.

Each function takes a weight as ``data`` (int32 packed words, (N, ceil(K / per_word))),
``scale`` (float32: () per tensor, (N,) per channel, (N, ceil(K / block)) block-wise) and
``zero_point`` (int32 of the scale's shape, or None for a symmetric scheme), with its
``bits`` (8 or 4), ``signed`` and ``block`` (0 unless block-wise) and the logical row
length ``k``. Where the device offers the "quant_matmul" capability
(``pyburn.ops.capability.QUANT_MATMUL``: cpu, wgpu, wasm) the product is one backend call that
dequantizes or unpacks the weights as it reads them, so they stay packed in memory (4x or 8x
less traffic than float32); elsewhere (flex, float16 or float64 activations, a block
that is not a whole number of words) the composite unpacks them with shifts and masks and
runs the float or integer product: the reference every kernel is tested against.

- `linear_weight_only`: float x times the dequantized weight, ``(q - zero_point) * scale``.
- `linear_dynamic`: x quantized on the fly to uint8 (onnxruntime's DynamicQuantizeLinear:
  per tensor, or per row), an exact int32 product with the weight's integers, then
  ``float(acc) * (x_scale * w_scale) + bias``: the numbers of onnxruntime's
  DynamicQuantizeLinear + MatMulInteger + Cast + Mul pipeline, the integer part exactly.
- `conv2d_weight_only` and `conv2d_dynamic`: im2col (``F.unfold``) and the same products,
  one per group.
- `matmul_integer` and `conv_integer`: ONNX's MatMulInteger and ConvInteger on integer
  tensors, the weight packed on the way in.

>>> import pyburn
>>> from pyburn.quant.kernels import linear_weight_only
>>> x = pyburn.tensor([[1.0, 2.0, 3.0]])
>>> data = pyburn.tensor([[0x00FF0201]])  # int8 row [1, 2, -1]
>>> linear_weight_only(x, data, pyburn.tensor(0.5), None, bits=8, signed=True, block=0,
...                    k=3).tolist()
[[1.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import Tensor, cat, where
from .._tensor import remembered
from ..dtypes import int32
from ..errors import ArgumentError, DTypeError, ShapeError
from ..nn import functional as F
from ..nn.functional.windows import pad_spatial
from ..ops.capability import quantized as qcap
from ..ops.creation import ones
from .packing import pack

Ints = int | Sequence[int]
Pads = Sequence[tuple[int, int]]


@dataclass(frozen=True)
class _Weight:
    """A checked packed weight with its scale and zero point in the canonical (N, nb) form
    of the "quant_matmul" capability (see ``pyburn.ops.capability.quantized``)."""

    data: Tensor
    scale: Tensor
    zero: Tensor | None
    bits: int
    signed: bool
    block: int
    k: int

    @property
    def rows(self) -> int:
        """N, the weight's output features."""
        return self.data.shape[0]

    def centered(self) -> Tensor:
        """``q - zero_point``, (N, k) int32."""
        return qcap.centered(self.data, self.zero, self.bits, self.signed, self.block, self.k)

    def narrow(self, start: int, length: int) -> _Weight:
        """Rows [start, start + length) (a convolution group's output channels)."""
        zero = None if self.zero is None else self.zero.narrow(0, start, length)
        return _Weight(self.data.narrow(0, start, length), self.scale.narrow(0, start, length),
                       zero, self.bits, self.signed, self.block, self.k)


def _weight(op: str, data: Tensor, scale: Tensor, zero_point: Tensor | None, bits: int,
            signed: bool, block: int, k: int) -> _Weight:
    """Check the packed parts (what is wrong, with the shapes and dtypes, in the error) and
    bring the scale and zero point to the canonical (N, nb) form."""
    if bits not in (4, 8):
        raise ArgumentError(f"{op}: bits must be 4 or 8, got {bits!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ArgumentError(f"{op}: k (the weight's row length) must be a positive int, "
                            f"got {k!r}")
    if isinstance(block, bool) or not isinstance(block, int) or block < 0:
        raise ArgumentError(f"{op}: block must be 0 (no blocks) or a positive int, got {block!r}")
    if data.dtype is not int32:
        raise DTypeError(f"{op}: packed data must be int32, got {data.dtype.name}")
    per = qcap.per_word(bits)
    words = -(-k // per)
    if data.ndim != 2 or data.shape[1] != words:
        raise ShapeError(f"{op}: packed data of k={k} {bits}-bit values per row must have "
                         f"shape (N, {words}), got {data.shape}")
    n = data.shape[0]
    if not scale.dtype.is_floating_point:
        raise DTypeError(f"{op}: scale must be a float tensor, got {scale.dtype.name}")
    if zero_point is not None:
        if zero_point.dtype is not int32:
            raise DTypeError(f"{op}: zero_point must be int32, got {zero_point.dtype.name}")
        if zero_point.shape != scale.shape:
            raise ShapeError(f"{op}: zero_point shape {zero_point.shape} differs from scale "
                             f"shape {scale.shape}")
    if block:
        blocks = -(-k // block)
        if scale.shape != (n, blocks):
            raise ShapeError(f"{op}: a block-wise scale for {n} rows of k={k} in blocks of "
                             f"{block} must have shape ({n}, {blocks}), got {scale.shape}")
        return _Weight(data, scale, zero_point, bits, signed, block, k)
    if scale.shape not in ((), (n,)):
        raise ShapeError(f"{op}: without blocks the scale is () per tensor or ({n},) per "
                         f"channel, got shape {scale.shape}")

    def rows(t: Tensor) -> Tensor:
        return t.reshape((-1, 1)).expand((n, 1))
    return _Weight(data, rows(scale), None if zero_point is None else rows(zero_point),
                   bits, signed, words * per, k)


def _offered(w: _Weight, *tensors: Tensor | None) -> bool:
    """Whether the device's backend runs this product as one "quant_matmul" call: it offers
    the capability, everything is on one device, the floats are float32 (the kernels'
    type) and a block is a whole number of words."""
    first = w.data
    present = [t for t in tensors if t is not None]
    return (qcap.QUANT_MATMUL.name in first.device.backend.caps
            and w.block % qcap.per_word(w.bits) == 0
            and w.scale.dtype.name == "float32"
            and all(t.device is first.device for t in present)
            and all(t.dtype.name in ("float32", "int32") for t in present))


def _rows(x: Tensor, k: int, op: str) -> Tensor:
    """x (..., k) as a matrix of rows (M, k)."""
    if x.ndim == 0 or x.shape[-1] != k:
        raise ShapeError(f"{op}: x's last dim must be the weight's k={k}, got shape {x.shape}")
    return x.reshape((-1, k))


def _check_bias(bias: Tensor | None, n: int, op: str) -> None:
    if bias is not None and bias.shape != (n,):
        raise ShapeError(f"{op}: bias must have shape ({n},), got {bias.shape}")


def _weight_only(x2: Tensor, w: _Weight, bias: Tensor | None) -> Tensor:
    """(M, k) float rows times the dequantized weight, plus `bias`: (M, N)."""
    if _offered(w, x2, bias):
        return qcap.quant_linear(x2, w.data, w.scale, w.zero, w.bits, w.signed, w.block, w.k,
                                 bias)
    dense = qcap.dequantize(w.data, w.scale.cast(x2.dtype), w.zero, w.bits, w.signed,
                            w.block, w.k)
    return F.linear(x2, dense, bias)


def linear_weight_only(x: Tensor, data: Tensor, scale: Tensor, zero_point: Tensor | None, *,
                       bits: int, signed: bool, block: int, k: int,
                       bias: Tensor | None = None) -> Tensor:
    """``x @ dequantize(W).T + bias`` for float x (..., k): (..., N), the packed weight
    dequantized inside the kernel (``(q - zero_point) * scale``). Differentiable in x and
    the bias."""
    op = "linear_weight_only"
    w = _weight(op, data, scale, zero_point, bits, signed, block, k)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
    _check_bias(bias, w.rows, op)
    y = _weight_only(_rows(x, k, op), w, bias)
    return y.reshape(x.shape[:-1] + (w.rows,))


def quantize_activations(x: Tensor, per_row: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """uint8 asymmetric quantization of float rows x (M, K) by onnxruntime's
    DynamicQuantizeLinear formulas, over the whole tensor or (`per_row`) each row: the range
    [min(x, 0), max(x, 0)], ``scale = range / 255`` (1 / 255 for an empty range),
    ``zero = saturate(round(-min / scale))``, ``q = saturate(round(x / scale) + zero)``,
    rounding half to even. Returns (q, scale, zero): int32 (M, K), float (1, 1) or (M, 1),
    int32 like the scale."""
    if per_row:
        low, high = x.amin(1, keepdim=True), x.amax(1, keepdim=True)
    else:
        low, high = x.amin().reshape((1, 1)), x.amax().reshape((1, 1))
    low, high = low.clamp(max=0.0), high.clamp(min=0.0)
    scale = where(high == low, 1.0, high - low) / 255.0
    zero = (-low / scale).clamp(0, 255).round()
    q = ((x / scale).round() + zero).clamp(0, 255)
    return q.cast(int32), scale, zero.cast(int32)


def _integer_product(q: Tensor, zero: Tensor | None, w: _Weight) -> Tensor:
    """``(q - zero) @ (W - zero_point).T`` in int32, exact: (M, N); `zero` (1, 1) or (M, 1),
    or None for integers already centered."""
    if _offered(w, q, zero):
        return qcap.quant_matmul_int(q, None if zero is None else zero.expand((q.shape[0], 1)),
                                     w.data, w.zero, w.bits, w.signed, w.k)
    return (q if zero is None else q - zero) @ w.centered().mT


def _integer_rows(op: str, rows: Tensor, zero: Tensor | None, signed: bool) -> _Weight:
    """The 8-bit integers of `rows` (N, k), held in an integer tensor, packed as a weight of
    scale 1, with `zero` (None, one value or one per row) as its zero point."""
    n, k = rows.shape
    zeros = None if zero is None else zero.int().reshape((-1,)).expand((n,))
    return _weight(op, pack(rows.int(), 8, signed), ones((n,), device=rows.device), zeros, 8,
                   signed, 0, k)


def matmul_integer(a: Tensor, a_zero: Tensor | None, b: Tensor, b_zero: Tensor | None, *,
                   signed: bool, memo: dict[str, Any] | None = None) -> Tensor:
    """The exact int32 ``(a - a_zero) @ (b - b_zero)`` of 8-bit integers held in integer
    tensors, ONNX's MatMulInteger: a (..., K); b (K, N) of int8 (`signed`) or uint8 values;
    a_zero None, one value, or (for a 2-d a) one per row; b_zero None, one value or one per
    column. b's columns are packed as weight rows (one pass over b; kept in `memo` while the
    same b and b_zero come in, as a model's constant weight does) and the product runs as
    the device's "quant_matmul" integer kernel where it has one (the composite elsewhere)."""
    op = "matmul_integer"
    if b.ndim != 2 or a.ndim == 0 or a.shape[-1] != b.shape[0]:
        raise ShapeError(f"{op}: a (..., K) times b (K, N), got shapes {a.shape} and {b.shape}")
    k, n = b.shape
    rows = _rows(a.int(), k, op)
    if a_zero is None or a_zero.numel() == 1:
        a_zero = None if a_zero is None else a_zero.int().reshape((1, 1))
    elif a.ndim == 2 and a_zero.numel() == rows.shape[0]:
        a_zero = a_zero.int().reshape((-1, 1))
    else:
        raise ShapeError(f"{op}: a's zero point is one value or one per row of a 2-d a, got "
                         f"shape {a_zero.shape} for a of shape {a.shape}")
    if b_zero is not None and b_zero.numel() not in (1, n):
        raise ShapeError(f"{op}: b's zero point is one value or one per column ({n}), got "
                         f"shape {b_zero.shape}")
    w = remembered(memo, (b, b_zero), lambda: _integer_rows(op, b.mT, b_zero, signed))
    return _integer_product(rows, a_zero, w).reshape(a.shape[:-1] + (n,))


def _dynamic(x2: Tensor, w: _Weight, bias: Tensor | None, per_row: bool) -> Tensor:
    """(M, k) float rows quantized on the fly, the integer product, the rescale."""
    q, x_scale, x_zero = quantize_activations(x2, per_row)
    acc = _integer_product(q, x_zero, w)
    # onnxruntime multiplies the two scales first, then the converted accumulator
    y = acc.cast(x_scale.dtype) * (x_scale * w.scale.reshape((1, w.rows)).cast(x_scale.dtype))
    return y if bias is None else y + bias


def linear_dynamic(x: Tensor, data: Tensor, scale: Tensor, zero_point: Tensor | None, *,
                   bits: int = 8, signed: bool = True, k: int, bias: Tensor | None = None,
                   per_row: bool = False) -> Tensor:
    """``x @ dequantize(W).T + bias`` with x quantized on the fly to uint8 (per tensor, as
    onnxruntime's dynamic quantization does, or per row), an exact int32 product of the
    integers and ``float(acc) * (x_scale * w_scale) + bias``; W per tensor or per channel
    (not block-wise). x (..., k) float gives (..., N)."""
    op = "linear_dynamic"
    w = _weight(op, data, scale, zero_point, bits, signed, 0, k)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
    _check_bias(bias, w.rows, op)
    y = _dynamic(_rows(x, k, op), w, bias, per_row)
    return y.reshape(x.shape[:-1] + (w.rows,))


def _pair(v: Ints, name: str, op: str) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, int) else tuple(v)
    if len(pair) != 2 or not all(isinstance(p, int) and not isinstance(p, bool) for p in pair):
        raise ArgumentError(f"{op}: {name} must be an int or two ints, got {v!r}")
    return pair  # type: ignore[return-value]


def _symmetric(padding: Ints, op: str) -> Pads:
    """A symmetric padding (an int or one per dim) as (before, after) pairs."""
    return tuple((p, p) for p in _pair(padding, "padding", op))  # type: ignore[return-value]


def _conv2d(op: str, x: Tensor, w: _Weight, weight_shape: Sequence[int], stride: Ints,
            pads: Pads, dilation: Ints, groups: int, bias: Tensor | None,
            product: Callable[[Tensor, _Weight, Tensor | None], Tensor]) -> Tensor:
    """A 2-d convolution of x (N, C, H, W) held in a float type, padded with zeros by
    (before, after) `pads` per spatial dim, as im2col and one quantized product per group:
    `product` maps (rows (M, k) of one group, that group's weight, its bias) to (M, out
    channels of the group)."""
    if len(weight_shape) != 4:
        raise ShapeError(f"{op}: weight_shape must be (O, I / groups, kh, kw), got "
                         f"{tuple(weight_shape)}")
    o, i, kh, kw = weight_shape
    if w.rows != o or w.k != i * kh * kw:
        raise ShapeError(f"{op}: weight_shape {tuple(weight_shape)} needs packed data of "
                         f"{o} rows of k={i * kh * kw}, got {w.rows} rows of k={w.k}")
    if x.ndim != 4:
        raise ShapeError(f"{op}: x must be (N, C, H, W), got shape {x.shape}")
    if groups < 1 or o % groups or x.shape[1] != i * groups:
        raise ShapeError(f"{op}: {x.shape[1]} input channels and {o} output channels do not "
                         f"make groups={groups} of weight_shape {tuple(weight_shape)}")
    _check_bias(bias, o, op)
    kernel, dil = (kh, kw), _pair(dilation, "dilation", op)
    step = _pair(stride, "stride", op)
    x = pad_spatial(x, pads)
    out_h = (x.shape[2] - dil[0] * (kh - 1) - 1) // step[0] + 1
    out_w = (x.shape[3] - dil[1] * (kw - 1) - 1) // step[1] + 1
    if out_h < 1 or out_w < 1:
        raise ShapeError(f"{op}: a {kh}x{kw} kernel (dilation {dil}) does not fit the padded "
                         f"input of spatial size {x.shape[2:]}")
    cols = F.unfold(x, kernel, dilation=dil, stride=step)  # (N, C k, L)
    n, _, positions = cols.shape
    per_group = o // groups
    outs = []
    for g in range(groups):
        rows = cols.narrow(1, g * w.k, w.k).mT.reshape((n * positions, w.k))
        part = w.narrow(g * per_group, per_group)
        outs.append(product(rows, part, None if bias is None
                            else bias.narrow(0, g * per_group, per_group)))
    y = outs[0] if groups == 1 else cat(outs, 1)
    return y.reshape((n, out_h, out_w, o)).permute((0, 3, 1, 2))


def _integer_conv(op: str, centered: Tensor, w: _Weight, weight_shape: Sequence[int],
                  stride: Ints, pads: Pads, dilation: Ints, groups: int) -> Tensor:
    """The exact int32 convolution (N, O, out_h, out_w) of centered integers (held exactly
    in a float type, so that the padding is zero: the zero point, as in ConvInteger) with
    the packed weight minus its zero point."""
    def product(rows: Tensor, part: _Weight, _: Tensor | None) -> Tensor:
        return _integer_product(rows.cast(int32), None, part)

    return _conv2d(op, centered, w, weight_shape, stride, pads, dilation, groups, None,
                   product)


def conv2d_weight_only(x: Tensor, data: Tensor, scale: Tensor, zero_point: Tensor | None, *,
                       bits: int, signed: bool, block: int, weight_shape: Sequence[int],
                       stride: Ints = 1, padding: Ints = 0, dilation: Ints = 1,
                       groups: int = 1, bias: Tensor | None = None) -> Tensor:
    """conv2d of float x (N, C, H, W) with a packed weight of `weight_shape`
    (O, C / groups, kh, kw), held as (O, C / groups * kh * kw) rows: im2col and the
    weight-only product per group. Returns (N, O, out_h, out_w)."""
    op = "conv2d_weight_only"
    k = _conv_k(weight_shape, op)
    w = _weight(op, data, scale, zero_point, bits, signed, block, k)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
    return _conv2d(op, x, w, weight_shape, stride, _symmetric(padding, op), dilation, groups,
                   bias, _weight_only)


def conv2d_dynamic(x: Tensor, data: Tensor, scale: Tensor, zero_point: Tensor | None, *,
                   bits: int = 8, signed: bool = True, weight_shape: Sequence[int],
                   stride: Ints = 1, padding: Ints = 0, dilation: Ints = 1, groups: int = 1,
                   bias: Tensor | None = None) -> Tensor:
    """conv2d with x quantized on the fly (per tensor, over the whole input, as onnxruntime's
    DynamicQuantizeLinear + ConvInteger), the exact integer product per group and the
    rescale; W per tensor or per channel. Returns (N, O, out_h, out_w)."""
    op = "conv2d_dynamic"
    k = _conv_k(weight_shape, op)
    w = _weight(op, data, scale, zero_point, bits, signed, 0, k)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
    _check_bias(bias, w.rows, op)
    # one range for the whole input (padding included: zero is always inside it)
    q, x_scale, x_zero = quantize_activations(x.reshape((1, -1)))
    centered = (q - x_zero).cast(x.dtype).reshape(x.shape)
    acc = _integer_conv(op, centered, w, weight_shape, stride, _symmetric(padding, op),
                        dilation, groups)
    channel = (1, w.rows, 1, 1)
    # onnxruntime multiplies the two scales first, then the converted accumulator
    y = acc.cast(x.dtype) * (x_scale.reshape(()) * w.scale.reshape(channel).cast(x.dtype))
    return y if bias is None else y + bias.reshape(channel)


def conv_integer(x: Tensor, x_zero: Tensor | None, w: Tensor, w_zero: Tensor | None, *,
                 signed: bool, stride: Ints = 1, pads: Pads = ((0, 0), (0, 0)),
                 dilation: Ints = 1, groups: int = 1,
                 memo: dict[str, Any] | None = None) -> Tensor:
    """The exact int32 2-d convolution of (x - x_zero) with (w - w_zero), ONNX's
    ConvInteger: x (N, C, H, W) and w (O, C / groups, kh, kw) of 8-bit integers held in
    integer tensors (w int8 when `signed`, else uint8); x_zero None or one value (the
    padding: zero after centering); w_zero None, one value or one per output channel;
    `pads` (before, after) per spatial dim. w's rows are packed (one pass over w; kept in
    `memo` while the same w and w_zero come in) and each
    group's product runs as the device's "quant_matmul" integer kernel where it has one
    (the composite elsewhere). Returns (N, O, out_h, out_w) int32."""
    op = "conv_integer"
    if w.ndim != 4:
        raise ShapeError(f"{op}: w must be (O, C / groups, kh, kw), got shape {w.shape}")
    if x_zero is not None and x_zero.numel() != 1:
        raise ShapeError(f"{op}: x's zero point is one value, got shape {x_zero.shape}")
    o = w.shape[0]
    if w_zero is not None and w_zero.numel() not in (1, o):
        raise ShapeError(f"{op}: w's zero point is one value or one per output channel "
                         f"({o}), got shape {w_zero.shape}")
    centered = x.int() if x_zero is None else x.int() - x_zero.int().reshape(())
    k = _conv_k(w.shape, op)
    packed = remembered(memo, (w, w_zero),
                        lambda: _integer_rows(op, w.reshape((o, k)), w_zero, signed))
    return _integer_conv(op, centered.float(), packed, w.shape, stride, pads, dilation,
                         groups)


def _conv_k(weight_shape: Sequence[int], op: str) -> int:
    """The row length C / groups * kh * kw of a convolution weight's packed rows."""
    if len(weight_shape) != 4 or not all(isinstance(d, int) and d > 0 for d in weight_shape):
        raise ShapeError(f"{op}: weight_shape must be four positive ints (O, I / groups, kh, "
                         f"kw), got {tuple(weight_shape)}")
    return weight_shape[1] * weight_shape[2] * weight_shape[3]
