"""The optional capabilities of ``pyburn.nn.functional`` on wgpu ("conv", "max_pool",
"avg_pool", "softmax", "layer_norm"; and "quant_matmul" of ``pyburn.quant``; the contract is
``pyburn.ops.capability``), as a
mixin of the backends whose handles these kernels run on.

Every method turns its handles into computed `GpuTensor`s with `ready`; what it returns is a
handle on both backends (a computed tensor is its own handle). For the plain backend `ready`
is the identity; the fusion decorator (``fusion.FusionBackend``), whose pending handles are
lazy, has its own, so that listing this class among its bases is all it takes to offer the
same kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import conv, pooling, quantized, rows
from .handle import GpuTensor
from .launch import Gpu

#: the capability names these methods provide
KERNEL_CAPS = frozenset({"conv", "max_pool", "avg_pool", "softmax", "layer_norm",
                         "quant_matmul"})

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


class Capabilities:
    """conv, conv_transpose, conv_weight, max_pool, avg_pool, softmax, layer_norm,
    quant_linear and quant_matmul_int as WGSL kernels."""

    gpu: Gpu

    def ready(self, x: Any) -> GpuTensor:
        """The computed tensor behind handle `x` (the plain backend's handles are)."""
        return x

    def conv(self, x: Any, w: Any, stride: Ints, padding: Pads, dilation: Ints,
             groups: int) -> Any:
        """Convolution as an implicit GEMM (``conv.wgsl``)."""
        return conv.conv(self.gpu, self.ready(x), self.ready(w), stride, padding,
                                    dilation, groups)

    def conv_transpose(self, x: Any, w: Any, stride: Ints, padding: Ints, dilation: Ints,
                       groups: int, size: Ints) -> Any:
        """Transposed convolution, the same kernel with the transposed input map."""
        return conv.conv_transpose(self.gpu, self.ready(x), self.ready(w), stride,
                                              padding, dilation, groups, size)

    def conv_weight(self, x: Any, g: Any, kernel: Ints, stride: Ints, padding: Pads,
                    dilation: Ints, groups: int) -> Any:
        """A convolution's weight gradient (``conv_weight.wgsl``)."""
        return conv.conv_weight(self.gpu, self.ready(x), self.ready(g), kernel,
                                           stride, padding, dilation, groups)

    def max_pool(self, x: Any, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints,
                 indices: bool) -> tuple[Any, Any]:
        """Max pooling with the first max's position (``max_pool.wgsl``)."""
        values, positions = pooling.max_pool(self.gpu, self.ready(x), kernel, stride, padding,
                                             dilation, indices)
        return values, None if positions is None else positions

    def avg_pool(self, x: Any, windows: Sequence[Sequence[tuple[int, int, int]]],
                 divisor: int) -> Any:
        """Average pooling over per-output boxes, sliding or adaptive (``avg_pool.wgsl``)."""
        return pooling.avg_pool(self.gpu, self.ready(x), windows, divisor)

    def softmax(self, x: Any, axis: int, log: bool) -> Any:
        """softmax or log_softmax along `axis`, one kernel (``rows.wgsl``)."""
        return rows.softmax(self.gpu, self.ready(x), axis, log)

    def layer_norm(self, x: Any, weight: Any, bias: Any, ndims: int, eps: float) -> Any:
        """Normalisation over the trailing `ndims` dims with its weight and bias (either may
        be None), one kernel (``rows.wgsl``)."""
        weight, bias = (None if t is None else self.ready(t) for t in (weight, bias))
        return rows.layer_norm(self.gpu, self.ready(x), weight, bias, ndims, eps)

    def quant_linear(self, x: Any, data: Any, scale: Any, zero: Any, bits: int, signed: bool,
                     block: int, k: int, bias: Any) -> Any:
        """x times packed weights dequantized as they are read (``quant_matmul.wgsl``)."""
        zero, bias = (None if t is None else self.ready(t) for t in (zero, bias))
        return quantized.quant_linear(self.gpu, self.ready(x), self.ready(data),
                                      self.ready(scale), zero, bits, signed, block, k, bias)

    def quant_matmul_int(self, a: Any, a_zero: Any, data: Any, zero: Any, bits: int,
                         signed: bool, k: int) -> Any:
        """The exact integer product with packed weights (``quant_matmul.wgsl``)."""
        a_zero, zero = (None if t is None else self.ready(t) for t in (a_zero, zero))
        return quantized.quant_matmul_int(self.gpu, self.ready(a), a_zero, self.ready(data),
                                          zero, bits, signed, k)
