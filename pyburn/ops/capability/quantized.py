"""Products with packed quantized weights as one backend call: the "quant_matmul"
capability, and the composites written in tensor ops that run everywhere else (the flex
reference).

The packed format (``pyburn.quant``): a weight of logical shape (N, K) is an int32 tensor
``data`` (N, ceil(K / per_word)), per_word = 32 // bits, element k of a row in word
``k // per_word`` at bits ``(k % per_word) * bits``, two's complement for signed values, the
padding after element K - 1 zero. The backend methods take the scale and zero point in one
canonical form, whatever the scheme: (N, nb) tensors, one value per `block` consecutive
elements of a row (``nb = ceil(K / block)``; a per-tensor or per-channel scale is one block
of the whole padded row, an expanded view), so that one kernel serves every scheme.

>>> import pyburn
>>> from pyburn.ops.capability.quantized import unpack
>>> unpack(pyburn.tensor([[0x7F01FF80]]), 8, True, 3).tolist()
[[-128, -1, 1]]
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, result, wrap
from ...dtypes import int32
from ...tape import Grads
from ..creation import arange
from .record import Capability


def per_word(bits: int) -> int:
    """How many values of `bits` bits one int32 word holds."""
    return 32 // bits


def unpack(data: Tensor, bits: int, signed: bool, k: int) -> Tensor:
    """The int32 values (N, k) of packed words `data` (N, W): shifts and masks, then the
    sign of a signed value restored as ``(v ^ half) - half``."""
    n, words = data.shape
    shifts = arange(0, 32, bits, dtype=int32, device=data.device)
    values = (data.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    if signed:
        half = 1 << (bits - 1)
        values = (values ^ half) - half
    return values.reshape((n, words * per_word(bits))).narrow(1, 0, k)


def per_element(param: Tensor, block: int, k: int) -> Tensor:
    """A block parameter (N, nb) repeated over its blocks: (N, k)."""
    n, blocks = param.shape
    return param.unsqueeze(-1).expand((n, blocks, block)).reshape(
        (n, blocks * block)).narrow(1, 0, k)


def centered(data: Tensor, zero: Tensor | None, bits: int, signed: bool, block: int,
             k: int) -> Tensor:
    """``q - zero_point`` (N, k) in int32, the zero point in the canonical (N, nb) form."""
    q = unpack(data, bits, signed, k)
    return q if zero is None else q - per_element(zero, block, k)


def dequantize(data: Tensor, scale: Tensor, zero: Tensor | None, bits: int, signed: bool,
               block: int, k: int) -> Tensor:
    """``(q - zero_point) * scale``, (N, k) in the scale's dtype (canonical forms)."""
    q = centered(data, zero, bits, signed, block, k)
    return q.cast(scale.dtype) * per_element(scale, block, k)


def quant_linear(x: Tensor, data: Tensor, scale: Tensor, zero: Tensor | None, bits: int,
                 signed: bool, block: int, k: int, bias: Tensor | None) -> Tensor:
    """The backend's ``x @ dequantize(W).T + bias`` for float32 x (M, k): (M, N)."""
    backend: Any = x.device.backend  # a backend that offers "quant_matmul"
    handle = backend.quant_linear(
        x._h, data._h, scale._h, None if zero is None else zero._h, bits, signed, block, k,
        None if bias is None else bias._h)
    inputs = (x, data, scale) + (() if zero is None else (zero,)) + \
        (() if bias is None else (bias,))
    return result(handle, (x.shape[0], data.shape[0]), x.dtype, "quant_linear", inputs,
                  bits=bits, signed=signed, block=block, k=k, zero=zero is not None,
                  bias=bias is not None)


def quant_matmul_int(a: Tensor, a_zero: Tensor | None, data: Tensor, zero: Tensor | None,
                     bits: int, signed: bool, k: int) -> Tensor:
    """The backend's integer product ``(a - a_zero) @ (W - zero_point).T`` in int32 for
    int32 a (M, k) (``a - a_zero`` within [-255, 255]): (M, N), outside any graph (integers
    have no gradient)."""
    backend: Any = a.device.backend  # a backend that offers "quant_matmul"
    handle = backend.quant_matmul_int(
        a._h, None if a_zero is None else a_zero._h, data._h,
        None if zero is None else zero._h, bits, signed, k)
    return wrap(handle, (a.shape[0], data.shape[0]), int32, a.device)


def _quant_linear_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """For ``x @ W.T + b`` with W the dequantized weight: ``g @ W`` for x, g summed over the
    rows for b; the packed weight, its scale and zero point get none (they are not
    trained: a quantized layer's adapters are)."""
    x, data, scale, *rest = inputs
    zero = rest[0] if ctx["zero"] else None
    w = dequantize(data, scale, zero, ctx["bits"], ctx["signed"], ctx["block"], ctx["k"])
    grads: tuple[Tensor | None, ...] = (g @ w if x.requires_grad else None, None, None)
    if ctx["zero"]:
        grads += (None,)
    if ctx["bias"]:
        grads += (g.sum(0) if rest[-1].requires_grad else None,)
    return grads


QUANT_MATMUL = Capability(
    "quant_matmul", ("quant_linear", "quant_matmul_int"),
    """``quant_linear(x, data, scale, zero, bits, signed, block, k, bias)``: x (M, k)
    float32, data (N, W) int32 packed words of `bits` (4 or 8) bits, signed or not, scale
    (N, nb) float32 and zero (N, nb) int32 or None, one value per `block` elements of a row
    (a multiple of 32 // bits; nb = ceil(k / block), views with zero strides allowed), bias
    (N,) float32 or None; returns the float32 (M, N) ``x @ ((q - zero) * scale).T + bias``,
    the weights dequantized as they are read. ``quant_matmul_int(a, a_zero, data, zero,
    bits, signed, k)``: a (M, k) int32, a_zero (M, 1) int32 or None, every ``a - a_zero``
    within [-255, 255], zero (N, 1) int32 or None; returns the int32 (M, N)
    ``(a - a_zero) @ (q - zero).T``, exact.""",
    "pyburn.quant.kernels.linear_weight_only",
    rules={"quant_linear": _quant_linear_rule})
