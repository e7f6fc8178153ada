"""The wasm backend: tensors in a WebAssembly memory (`memory`), primitives as pyburn's own
WebAssembly SIMD kernels (`kernels`), on the engine of `engine`.

Handles are `WasmTensor` views (storage, shape, strides, offset): reshape of a contiguous
tensor, permute, expand, slice and flip only make a new view. Kernels take contiguous
operands, so an operand that is not is copied first by the strided copy kernel, whose
shape and strides go in the memory's reserved bottom (`META`). Elements leave the memory
only as one bulk copy (`to_bytes`) and enter it as one (`from_bytes`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from ...dtypes import DType, bool_, float32, int32, uint8
from ...ops.elementwise import BINARY, UNARY, ElementwiseOp
from ..base import Backend, Shape
from ..pool import BufferPool
from ..strided import (
    StridedView,
    cat_shape,
    flip_view,
    inside_view,
    padded_shape,
    slabs,
    slice_view,
)
from . import conv as convolution
from . import matmul as linalg
from . import order as order_
from . import pooling as pools
from . import quantized as quant
from . import rows as rows_
from .assemble import Module
from .engine import Engine, Export
from .kernels import Kernels
from .kinds import KINDS
from .memory import RESERVED, Memory

#: where a call's shapes and strides go (below every buffer: `memory.RESERVED`)
META = 16
Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


class WasmTensor(StridedView):
    """A wasm tensor: its storage's buffer is an address in the engine's memory."""

    __slots__ = ()

    @property
    def size(self) -> int:
        """Bytes per element."""
        return KINDS[self.dtype].size

    @property
    def address(self) -> int:
        """Where the first element is (the view's offset included)."""
        return self.storage.buffer + self.offset * self.size


class WasmBackend(Backend):
    """Every primitive as WebAssembly kernels over one engine's memory."""

    name = "wasm"
    dtypes = frozenset({float32, int32, uint8, bool_})
    caps = frozenset({"conv", "max_pool", "avg_pool", "softmax", "layer_norm",
                      "quant_matmul"})

    def __init__(self, engine: Engine):
        self.engine = engine
        self.memory = Memory(engine)
        self.pool = BufferPool(self.memory)
        self.kernels = Kernels(engine)
        self._capability_kernels: dict[str, Export] = {}

    def capability_kernel(self, name: str) -> Export:
        """A kernel of the capabilities: `rows`' softmax and layer_norm and `pooling`'s box
        sums are one module, compiled the first time any of them is called; each of
        `quantized`'s products (``quant_linear_int8`` ...) is a module of its own, compiled
        the first time it is called (a model uses one or two of the eight)."""
        found = self._capability_kernels.get(name)
        if found is None:
            with self.engine.lock:  # compiled once, whichever thread asks first
                found = self._capability_kernels.get(name)
                if found is None:
                    functions = ([quant.kernel(name)] if name.startswith(quant.PRODUCTS)
                                 else [*rows_.kernels(), *pools.kernels()])
                    self._capability_kernels.update(self.engine.instantiate(
                        Module(functions).binary()))
                    found = self._capability_kernels[name]
        return found

    # ---- memory -------------------------------------------------------------------------
    def empty(self, shape: Shape, dtype: DType) -> WasmTensor:
        """A new contiguous tensor (contents undefined)."""
        nbytes = max(1, math.prod(shape)) * KINDS[dtype].size
        return WasmTensor(self.pool.allocate(nbytes), shape, dtype)

    def contiguous(self, x: WasmTensor) -> WasmTensor:
        """`x`, or a contiguous copy of it."""
        if x.is_contiguous():
            return x
        out = self.empty(x.shape, x.dtype)
        self.copy(out, x)
        return out

    def copy(self, dst: WasmTensor, src: WasmTensor, kernel: str | None = None) -> None:
        """Every element of view `src` into view `dst` (the same shape), by the strided
        copy kernel, or by `kernel` with the same arguments (``accumulate_f32``)."""
        if not math.prod(src.shape):
            return
        shape = src.shape or (1,)
        strides = [(s.strides or (0,)) for s in (src, dst)]
        size = src.size
        meta = [*shape, *(k * size for k in strides[0]), *(k * size for k in strides[1]),
                *[0] * len(shape)]
        if 16 * len(shape) > RESERVED - META:
            raise ValueError(f"a tensor of rank {len(shape)} is beyond the wasm backend's "
                             f"{(RESERVED - META) // 16}")
        run = self.kernels[kernel or f"copy_{size}"]
        with self.engine.lock:  # the kernel reads what is written for it at META
            self.engine.write(META, struct.pack(f"<{len(meta)}i", *meta))
            run(dst.address, src.address, len(shape), META)

    def accumulate(self, dst: WasmTensor, src: WasmTensor) -> None:
        """Every float32 of view `src` added into view `dst`, in row-major order."""
        self.copy(dst, self.contiguous(src), "accumulate_f32")

    def memory_in_use(self) -> int | None:
        """Bytes of the WebAssembly memory's buffers handed out (idle pooled ones not
        counted)."""
        return self.pool.stats().in_use_bytes

    def footprint(self, x: WasmTensor) -> tuple[object, int]:
        """The storage the view reads, and its size."""
        return x.storage, x.storage.nbytes

    # ---- transfer -----------------------------------------------------------------------
    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> WasmTensor:
        """A tensor from C-ordered little-endian bytes: one copy into the memory."""
        return WasmTensor(self.pool.upload(data), shape, dtype)

    def to_bytes(self, x: WasmTensor, shape: Shape, dtype: DType) -> bytes:
        """The elements as C-ordered bytes: one copy out of the memory."""
        x = self.contiguous(x)
        return self.engine.read(x.address, x.numel * x.size)

    # ---- creation -----------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> WasmTensor:
        """`shape` of `value`."""
        out = self.empty(shape, dtype)
        if dtype is float32:
            self.kernels["fill_4"](out.address, f32_bits(float(value)), out.numel)
        elif dtype is int32:
            self.kernels["fill_4"](out.address, int(value), out.numel)
        else:
            self.kernels["fill_1"](out.address, int(value) & 0xFF, out.numel)
        return out

    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> WasmTensor:
        """``start + i * step``: float64 arithmetic rounded to float32, or int32."""
        if dtype is float32:
            out = self.empty((n,), dtype)
            self.kernels["arange_f32"](out.address, float(start), float(step), n)
            return out
        whole = self.empty((n,), int32)
        self.kernels["arange_i32"](whole.address, int(start), int(step), n)
        return whole if dtype is int32 else self.cast(whole, dtype)

    def random_bits(self, shape: Shape, seed: int, offset: int) -> WasmTensor:
        """The Philox words of ``pyburn.random`` as int32."""
        out = self.empty(shape, int32)
        block = offset // 4
        counter = [(block >> (32 * w)) & 0xFFFFFFFF for w in range(4)]
        self.kernels["philox"](out.address, out.numel, offset % 4, *counter,
                               seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
        return out

    # ---- elementwise --------------------------------------------------------------------
    def unary(self, op: str, x: WasmTensor, out: DType) -> WasmTensor:
        """An op of ``UNARY``."""
        return self._elementwise(UNARY[op], [x], out)

    def binary(self, op: str, a: WasmTensor, b: WasmTensor, out: DType) -> WasmTensor:
        """An op of ``BINARY`` on operands of one shape."""
        return self._elementwise(BINARY[op], [a, b], out)

    def _elementwise(self, op: ElementwiseOp, operands: list[WasmTensor],
                     out: DType) -> WasmTensor:
        """One call of `op`'s kernel over rows of the operands (`_rows`): a broadcast
        operand is read in place; one that is no such view is copied contiguous first."""
        layout = _rows(operands[0].shape, operands)
        if layout is None:
            operands = [self.contiguous(x) for x in operands]
            layout = _rows(operands[0].shape, operands)
        assert layout is not None  # contiguous operands are one row
        rows, n, steps = layout
        result = self.empty(operands[0].shape, out)
        broadcast = tuple(inner == 0 and n > 1 for _, inner in steps)
        size = operands[0].size
        self.kernels.elementwise(op, operands[0].dtype, out, broadcast)(
            result.address, *(x.address for x in operands), rows, n,
            *(outer * size for outer, _ in steps))
        return result

    def where(self, cond: WasmTensor, a: WasmTensor, b: WasmTensor) -> WasmTensor:
        """``a if cond else b``, elementwise."""
        cond, a, b = self.contiguous(cond), self.contiguous(a), self.contiguous(b)
        out = self.empty(a.shape, a.dtype)
        self.kernels[f"where_{a.size}"](out.address, cond.address, a.address, b.address,
                                        a.numel)
        return out

    def cast(self, x: WasmTensor, dtype: DType) -> WasmTensor:
        """`x` as `dtype`, as every backend casts."""
        if x.dtype is dtype:
            return x
        x = self.contiguous(x)
        out = self.empty(x.shape, dtype)
        self.kernels[f"cast_{x.dtype.name}_{dtype.name}"](out.address, x.address, x.numel)
        return out

    # ---- reductions ---------------------------------------------------------------------
    def reduce(self, op: str, x: WasmTensor, axes: tuple[int, ...]) -> WasmTensor:
        """`op` over `axes`, kept as size-1 dims: the axes brought together, then one call
        over the (outer, length, inner) block."""
        kept = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
        if not axes:
            return self.contiguous(x) if op not in ("any", "all") else self.cast(x, bool_)
        if axes != tuple(range(axes[0], axes[-1] + 1)):  # not one block: move them last
            rest = tuple(a for a in range(len(x.shape)) if a not in axes)
            x = self.permute(x, rest + axes)
            axes = tuple(range(len(rest), len(x.shape)))
        x = self.contiguous(x)
        outer = math.prod(x.shape[:axes[0]])
        length = math.prod(x.shape[axes[0]:axes[-1] + 1])
        inner = math.prod(x.shape[axes[-1] + 1:])
        out = self.empty(kept, bool_ if op in ("any", "all") else x.dtype)
        self.kernels[f"reduce_{op}_{x.dtype.name}"](out.address, x.address, outer, length,
                                                    inner)
        return out

    def arg_reduce(self, op: str, x: WasmTensor, axis: int) -> WasmTensor:
        """The int32 index of the first max ("argmax") or min along `axis`, kept."""
        x = self.contiguous(x)
        outer, length, inner = _around(x.shape, axis)
        out = self.empty(x.shape[:axis] + (1,) + x.shape[axis + 1:], int32)
        self.kernels[f"arg_{op}_{x.dtype.name}"](out.address, x.address, outer, length, inner)
        return out

    def scan(self, op: str, x: WasmTensor, axis: int) -> WasmTensor:
        """Inclusive cumsum ("sum") or cumprod along `axis`, in order."""
        x = self.contiguous(x)
        out = self.empty(x.shape, x.dtype)
        self.kernels[f"scan_{op}_{x.dtype.name}"](out.address, x.address,
                                                  *_around(x.shape, axis))
        return out

    def sort(self, x: WasmTensor, axis: int, descending: bool) -> tuple[WasmTensor, WasmTensor]:
        """Stable sort along `axis` (brought last, sorted row by row, then put back)."""
        order = tuple(a for a in range(len(x.shape)) if a != axis) + (axis,)
        rows = self.contiguous(self.permute(x, order))
        values, indices = self.empty(rows.shape, x.dtype), self.empty(rows.shape, int32)
        length = x.shape[axis] if x.shape else 1
        scratch = self.pool.allocate(max(16, order_.sort_scratch_bytes(length, x.dtype)))
        self.kernels[f"sort_{x.dtype.name}"](values.address, indices.address, rows.address,
                                             rows.numel // max(length, 1), length,
                                             int(descending), scratch.buffer)
        back = tuple(order.index(a) for a in range(len(x.shape)))
        return self.permute(values, back), self.permute(indices, back)

    # ---- movement -----------------------------------------------------------------------
    def reshape(self, x: WasmTensor, shape: Shape) -> WasmTensor:
        """A view where `x` is contiguous, else a contiguous copy viewed so."""
        x = self.contiguous(x)
        return WasmTensor(x.storage, shape, x.dtype, None, x.offset)

    def permute(self, x: WasmTensor, axes: tuple[int, ...]) -> WasmTensor:
        """Dims reordered, as a view."""
        return x.view(tuple(x.shape[a] for a in axes), tuple(x.strides[a] for a in axes),
                      x.offset)

    def expand(self, x: WasmTensor, shape: Shape) -> WasmTensor:
        """Size-1 dims broadcast, as a view (stride 0)."""
        strides = tuple(0 if n == 1 and m != 1 else s
                        for n, m, s in zip(x.shape, shape, x.strides))
        return x.view(shape, strides, x.offset)

    def slice(self, x: WasmTensor, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> WasmTensor:
        """Basic slicing, as a view."""
        return slice_view(x, starts, stops, steps)

    def flip(self, x: WasmTensor, axes: tuple[int, ...]) -> WasmTensor:
        """`axes` reversed, as a view."""
        return flip_view(x, axes)

    def pad(self, x: WasmTensor, pads: Sequence[tuple[int, int]],
            value: float | int | bool) -> WasmTensor:
        """`value` around `x`: a fill, then `x` copied into the inside (no padding: `x`)."""
        if not any(lo or hi for lo, hi in pads):
            return x
        out = self.full(padded_shape(x.shape, pads), value, x.dtype)
        self.copy(inside_view(out, x.shape, pads), x)
        return out

    def cat(self, xs: Sequence[WasmTensor], axis: int) -> WasmTensor:
        """Each part copied into its slab of the result."""
        out = self.empty(cat_shape(xs, axis), xs[0].dtype)
        for slab, x in slabs(out, xs, axis):
            self.copy(slab, x)
        return out

    # ---- indexing -----------------------------------------------------------------------
    def _covered(self, x: WasmTensor, index: WasmTensor, axis: int) -> WasmTensor:
        """The view of `x` that `index` covers in every dim but `axis`."""
        stops = [x.shape[a] if a == axis else n for a, n in enumerate(index.shape)]
        return slice_view(x, [0] * len(stops), stops, [1] * len(stops))

    def gather(self, x: WasmTensor, axis: int, index: WasmTensor) -> WasmTensor:
        """``out[.., j, ..] = x[.., index[.., j, ..], ..]`` along `axis`."""
        x, index = self.contiguous(self._covered(x, index, axis)), self.contiguous(index)
        outer, x_len, inner = _around(x.shape, axis)
        out = self.empty(index.shape, x.dtype)
        self.kernels[f"gather_{x.size}"](out.address, x.address, index.address, outer, x_len,
                                         index.shape[axis], inner)
        return out

    def scatter(self, x: WasmTensor, axis: int, index: WasmTensor, src: WasmTensor,
                reduce: str) -> WasmTensor:
        """A copy of `x` with `src` written (or added) at `index` along `axis`: into the
        part of the copy that `index` covers, made contiguous first where that is not all
        of it, then copied back."""
        out = self.empty(x.shape, x.dtype)
        self.copy(out, x)
        covered = self._covered(out, index, axis)
        part = covered if covered.shape == out.shape else self.contiguous(covered)
        index, src = self.contiguous(index), self.contiguous(src)
        outer, length, inner = _around(part.shape, axis)
        self.kernels[f"scatter_{x.dtype.name}"](part.address, index.address, src.address,
                                                outer, length, index.shape[axis], inner,
                                                int(reduce == "add"))
        if part is not covered:
            self.copy(covered, part)
        return out

    def index_select(self, x: WasmTensor, axis: int, index: WasmTensor) -> WasmTensor:
        """The entries `index` (1-d) along `axis`."""
        x, index = self.contiguous(x), self.contiguous(index)
        outer, x_len, inner = _around(x.shape, axis)
        out = self.empty(x.shape[:axis] + (index.numel,) + x.shape[axis + 1:], x.dtype)
        self.kernels[f"index_select_{x.size}"](out.address, x.address, index.address, outer,
                                               x_len, index.numel, inner)
        return out

    def nonzero(self, x: WasmTensor) -> tuple[WasmTensor, Shape]:
        """The int32 coordinates of the nonzero elements, (count, rank)."""
        x = self.contiguous(x)
        name = x.dtype.name
        count = int(self.kernels[f"count_nonzero_{name}"](x.address, x.numel) or 0)
        rank = len(x.shape)
        out = self.empty((count, rank), int32)
        run = self.kernels[f"nonzero_{name}"]
        with self.engine.lock:
            self.engine.write(META, struct.pack(f"<{rank}i", *x.shape))
            run(out.address, x.address, x.numel, rank, META)
        return out, (count, rank)

    # ---- convolution, pooling, rows, quantized products (the capabilities) ---------------
    def conv(self, x: WasmTensor, w: WasmTensor, stride: Ints, padding: Pads, dilation: Ints,
             groups: int) -> WasmTensor:
        """x (N, C, *S) with w (O, C/groups, *K)."""
        return convolution.conv(self, x, w, stride, padding, dilation, groups)

    def conv_transpose(self, x: WasmTensor, w: WasmTensor, stride: Ints, padding: Ints,
                       dilation: Ints, groups: int, size: Ints) -> WasmTensor:
        """conv's adjoint in its input."""
        return convolution.conv_transpose(self, x, w, stride, padding, dilation, groups, size)

    def conv_weight(self, x: WasmTensor, g: WasmTensor, kernel: Ints, stride: Ints,
                    padding: Pads, dilation: Ints, groups: int) -> WasmTensor:
        """conv's adjoint in its weight."""
        return convolution.conv_weight(self, x, g, kernel, stride, padding, dilation, groups)

    def max_pool(self, x: WasmTensor, kernel: Ints, stride: Ints, padding: Pads,
                 dilation: Ints, indices: bool) -> tuple[WasmTensor, WasmTensor | None]:
        """Max pooling, and the first max's position (the "max_pool" capability)."""
        return pools.max_pool(self, x, kernel, stride, padding, dilation, indices)

    def avg_pool(self, x: WasmTensor, windows: tuple[tuple[tuple[int, int, int], ...], ...],
                 divisor: int) -> WasmTensor:
        """The mean over a box per output position, sliding or adaptive (the "avg_pool"
        capability): box sums one pooled dim at a time, then one division."""
        return pools.avg_pool(self, x, windows, divisor)

    def softmax(self, x: WasmTensor, axis: int, log: bool) -> WasmTensor:
        """softmax (log_softmax where `log`) of float32 x along `axis`: one call of
        ``softmax_f32`` over the (outer, length, inner) block (the "softmax" capability)."""
        x = self.contiguous(x)
        out = self.empty(x.shape, x.dtype)
        if x.numel:
            self.capability_kernel("softmax_f32")(out.address, x.address,
                                                  *_around(x.shape, axis), int(log))
        return out

    def layer_norm(self, x: WasmTensor, weight: WasmTensor | None, bias: WasmTensor | None,
                   ndims: int, eps: float) -> WasmTensor:
        """float32 x normalised over its trailing `ndims` dims, times `weight` and plus
        `bias` where given: one call of ``layer_norm_f32`` (the "layer_norm" capability)."""
        x = self.contiguous(x)
        out = self.empty(x.shape, x.dtype)
        n = math.prod(x.shape[len(x.shape) - ndims:])
        if x.numel:
            weight, bias = (None if t is None else self.contiguous(t) for t in (weight, bias))
            name = "layer_norm_f32" + ("_w" if weight is not None else "") + \
                ("_b" if bias is not None else "")
            self.capability_kernel(name)(out.address, x.address,
                                         0 if weight is None else weight.address,
                                         0 if bias is None else bias.address, x.numel // n, n,
                                         eps)
        return out

    def quant_linear(self, x: WasmTensor, data: WasmTensor, scale: WasmTensor,
                     zero: WasmTensor | None, bits: int, signed: bool, block: int, k: int,
                     bias: WasmTensor | None) -> WasmTensor:
        """x times packed int8/int4 weights dequantized a tile at a time (the "quant_matmul"
        capability: ``quantized.quant_linear``)."""
        return quant.quant_linear(self, x, data, scale, zero, bits, signed, block, k, bias)

    def quant_matmul_int(self, a: WasmTensor, a_zero: WasmTensor | None, data: WasmTensor,
                         zero: WasmTensor | None, bits: int, signed: bool,
                         k: int) -> WasmTensor:
        """The exact int32 product with packed weights (``quantized.quant_matmul_int``)."""
        return quant.quant_matmul_int(self, a, a_zero, data, zero, bits, signed, k)

    # ---- linear algebra -----------------------------------------------------------------
    def matmul(self, a: WasmTensor, b: WasmTensor) -> WasmTensor:
        """(*B, M, K) @ (*B, K, N): float32 on the packed-panel kernel, integers (wrapping)
        on int32's."""
        dtype = a.dtype
        if dtype is not float32 and dtype is not int32:
            a, b = self.cast(a, int32), self.cast(b, int32)
        a = self.contiguous(a)
        *batch, m, k = a.shape
        n = b.shape[-1]
        out = self.empty((*batch, m, n), a.dtype)
        if a.dtype is int32:
            b = self.contiguous(b)
            self.kernels["matmul_i32"](out.address, a.address, b.address, math.prod(batch), m,
                                       k, n)
            return out if dtype is int32 else self.cast(out, dtype)
        strides = _matrix_strides(b)
        if strides is not None and strides[1:] == (b.size, k * b.size) and m <= linalg.ROWS:
            # B is the transpose of rows of k floats (x @ w.T): dot products, no copy
            self.kernels["matmul_nt_f32"](out.address, a.address, b.address,
                                          math.prod(batch), m, k, n, strides[0])
            return out
        if strides is None or strides[2] != b.size:  # the packing reads rows in order
            b = self.contiguous(b)
            strides = (k * n * b.size, n * b.size, b.size)
        pack_a, pack_b = (self.pool.allocate(size) for size in linalg.scratch_bytes(k, n))
        self.kernels["matmul_f32"](out.address, a.address, b.address, math.prod(batch), m, k,
                                   n, pack_a.buffer, pack_b.buffer, *strides[:2])
        return out


def _matrix_strides(b: WasmTensor) -> tuple[int, int, int] | None:
    """The bytes from one matrix of `b` (..., K, N) to the next, from a row to the next and
    from a column to the next, where one step each says it (a transposed matrix, a matrix
    broadcast over the batch); else None (a flipped view, batch dims that do not merge)."""
    *batch, _, _ = b.shape
    *batch_strides, row, column = b.strides
    dims = [(size, stride) for size, stride in zip(batch, batch_strides) if size != 1]
    if min(row, column, *(stride for _, stride in dims)) < 0:
        return None
    if any(outer != inner * size for (_, outer), (size, inner) in zip(dims, dims[1:])):
        return None
    matrix = dims[-1][1] if dims else 0
    return matrix * b.size, row * b.size, column * b.size


def _rows(shape: Shape, views: Sequence[WasmTensor]) -> tuple[int, int,
                                                               list[tuple[int, int]]] | None:
    """`views` (of one `shape`) as rows: (rows, n, each view's (row stride, stride along a
    row)), the strides in elements and each along-the-row stride 0 or 1; None where some
    view is not so (a permuted one, a flipped one, a broadcast over two levels)."""
    merged: list[tuple[int, list[int]]] = []  # (size, each view's stride), innermost first
    for axis in reversed(range(len(shape))):
        if shape[axis] == 1:
            continue
        strides = [v.strides[axis] for v in views]
        if merged and all(s == t * merged[-1][0] for s, t in zip(strides, merged[-1][1])):
            merged[-1] = (shape[axis] * merged[-1][0], merged[-1][1])
        else:
            merged.append((shape[axis], strides))
    if len(merged) > 2:
        return None
    n, inner = merged[0] if merged else (1, [1] * len(views))
    if any(s not in (0, 1) for s in inner):
        return None
    rows, outer = merged[1] if len(merged) == 2 else (1, [0] * len(views))
    return rows, n, list(zip(outer, inner))


def _around(shape: Shape, axis: int) -> tuple[int, int, int]:
    """The (outer, length, inner) block of a contiguous tensor around `axis`."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def f32_bits(value: float) -> int:
    """The bits of `value` as float32, as an i32."""
    try:
        packed = struct.pack("<f", value)
    except OverflowError:
        packed = struct.pack("<f", math.copysign(math.inf, value))
    return struct.unpack("<i", packed)[0]
