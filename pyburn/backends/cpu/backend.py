"""The cpu backend: every primitive of ``pyburn.backends.base`` as one or two numpy calls.

Handles are numpy arrays. Since no primitive writes into an input, movement ops return
views (a permuted, expanded or sliced handle shares its input's memory) and a handle made
from an immutable ``bytes`` object wraps it without a copy.

Floating-point warnings
    pyburn gives IEEE results quietly (``1 / 0`` is inf), so numpy's "divide by zero"
    warnings must not fire, and changing numpy's error state for the whole program would
    silence the user's own numpy code. Each thread gets a private ``contextvars.Context``
    in which numpy ignores floating-point errors, and the primitives that can raise one run
    inside it: entering a context costs about 0.02 µs, against about 0.9 µs for a fresh
    ``np.errstate``.
"""

from __future__ import annotations

import contextvars
import functools
import math
import threading
from collections.abc import Callable, Sequence

import numpy as np

from ...dtypes import ALL_DTYPES, DType, bool_, float16, float32, float64, int32, int64, uint8
from ...ops.elementwise import BINARY
from ...ops.reducers import REDUCTIONS
from ..base import Backend, Handle, Shape
from . import activations, fused, quantized, sums
from . import conv as convolution
from .ops import BINARY_FUNCTIONS, UNARY_FUNCTIONS
from .philox import philox_words

#: the numpy dtype of every pyburn dtype
NUMPY_DTYPES: dict[DType, np.dtype] = {
    bool_: np.dtype(np.bool_), uint8: np.dtype(np.uint8), int32: np.dtype(np.int32),
    int64: np.dtype(np.int64), float16: np.dtype(np.float16),
    float32: np.dtype(np.float32), float64: np.dtype(np.float64),
}
# Transfers are little-endian whatever the machine; on little-endian machines these are
# the native dtypes and cost nothing.
_LITTLE_ENDIAN = {d: n.newbyteorder("<") for d, n in NUMPY_DTYPES.items()}
# Each reduction's fold is the ufunc of its combine's numpy column, called through its own
# reduce and accumulate: np.sum and friends add ~1 µs of Python on top of them.
_FOLDS: dict[str, np.ufunc] = {name: getattr(np, BINARY[r.combine].numpy)
                               for name, r in REDUCTIONS.items()}
_TWO_63 = 2.0**63


def _run_in_errstate(fn: Callable, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


class _QuietNumpy(threading.local):
    """Per thread, a context in which numpy ignores floating-point errors; `run(f, *args)`
    calls f inside it."""

    def __init__(self) -> None:
        if np.lib.NumpyVersion(np.__version__) < "2.0.0":
            # numpy 1.x keeps its error state per thread, not per context: the private
            # context would not isolate it, so pay for an errstate per call instead.
            self.run = _run_in_errstate
            return
        context = contextvars.Context()
        context.run(np.seterr, all="ignore")
        self.run = context.run


_QUIET = _QuietNumpy()


def _quietly(method: Callable) -> Callable:
    """Run a backend method inside the calling thread's quiet numpy context. A quiet method
    must not call another one: a context cannot be entered while it is already entered."""

    @functools.wraps(method)
    def quiet(*args):
        return _QUIET.run(method, *args)

    return quiet


def _accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype sums and products accumulate in: float16 would lose most of its bits."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul; float16 goes through float32, which is both faster (BLAS has no float16)
    and accumulates with more bits; integers go through float64 BLAS where every sum is
    exact (`_exact_in_float64`), numpy's integer loop (30x slower) otherwise."""
    if a.dtype == np.float16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    if a.dtype.kind in "iu" and _exact_in_float64(a, b):
        # exact, then wrapped to the integer type as numpy's integer product wraps
        exact = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
        return exact.astype(np.result_type(a, b))
    return np.matmul(a, b)


def _exact_in_float64(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether every sum of products of integer matrices a (..., K) and b (..., K, N) stays
    below 2**53 in magnitude, where float64 holds each integer exactly; checked on their
    largest magnitudes (a pass over each, small next to the product's K passes)."""
    if not a.size or not b.size:
        return False
    largest = [max(int(m.max()), -int(m.min())) for m in (a, b)]
    return a.shape[-1] * largest[0] * largest[1] < 2 ** 53


def _float_to_int64(x: np.ndarray) -> np.ndarray:
    """``int(v)`` wrapped to int64 for every element (NaN and +-inf give 0)."""
    if not x.size or np.maximum.reduce(np.abs(x), axis=None) < _TWO_63:  # NaN fails this
        return x.astype(np.int64)  # the common case: one exact conversion
    # fmod by 2**64 is exact, and so is moving the remainder into [-2**63, 2**63): floats
    # that large are multiples of 2**11.
    wrapped = np.fmod(np.where(np.isfinite(x), x, 0).astype(np.float64), 2.0 * _TWO_63)
    wrapped = np.where(wrapped >= _TWO_63, wrapped - 2.0 * _TWO_63, wrapped)
    wrapped = np.where(wrapped < -_TWO_63, wrapped + 2.0 * _TWO_63, wrapped)
    return wrapped.astype(np.int64)


def _flat_cells(shape: Shape, axis: int, index: np.ndarray) -> np.ndarray:
    """The flat positions, in a C-ordered array of `shape`, of ``(i, index[i, j, k], k)``
    (axis 1 shown) for every element of `index`, as a 1-d array. The offsets of the other
    dims are summed on their small broadcast shapes first, so the full-size work is one
    multiply and one add (``np.ravel_multi_index`` on full-size grids costs three times
    more)."""
    rank = len(shape)
    steps = [math.prod(shape[d + 1:]) for d in range(rank)]
    base = np.zeros((1,) * rank, dtype=np.intp)
    for d, n in enumerate(index.shape):
        if d != axis:
            base = base + (np.arange(n) * steps[d]).reshape((n,) + (1,) * (rank - 1 - d))
    return (index.astype(np.intp) * steps[axis] + base).reshape(-1)


#: signed integer dtypes by byte size, for bitwise views of any dtype
_SAME_SIZE_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


class CpuBackend(Backend):
    """The numpy backend: fast on any machine with numpy, float64/int64/float16 included."""

    name = "cpu"
    dtypes = frozenset(ALL_DTYPES)
    #: beyond the dtypes, capabilities of ``pyburn.ops.capability``: convolution
    #: (conv, conv_transpose, conv_weight; conv with its bias and with an activation after
    #: it), max pooling, softmax,
    #: layer_norm, batch_norm (with batch statistics and with given ones), linear, the nll
    #: loss, the Adam update, products with packed quantized weights and elementwise
    #: activations, as one numpy computation each
    caps = frozenset({"float64", "int64", "float16", "conv", "conv_bias", "conv_activation",
                      "max_pool", "softmax", "layer_norm", "batch_norm", "batch_norm_eval",
                      "linear", "nll_loss", "adam", "quant_matmul", "activation"})

    # ---- transfer ------------------------------------------------------------------------
    def footprint(self, x: Handle) -> tuple[object, int]:
        """The array at the root of `x`'s views, and its size."""
        while isinstance(x.base, np.ndarray):
            x = x.base
        return x, x.nbytes

    def from_bytes(self, data: bytes | memoryview, shape: Shape, dtype: DType) -> Handle:
        """Wrap `data` without copying when it is immutable (``bytes``, or a read-only view
        such as a memory-mapped file) and aligned; writable buffers are copied, since their
        owner may still write into them."""
        array = np.frombuffer(data, dtype=_LITTLE_ENDIAN[dtype])
        # a view at an odd address (a tensor inside an ONNX file) is copied too: numpy
        # cannot hand unaligned arrays to BLAS and falls back to loops 100x slower
        if not (isinstance(data, bytes) or (isinstance(data, memoryview) and data.readonly)) \
                or not array.flags.aligned:
            array = array.copy()
        return array.astype(NUMPY_DTYPES[dtype], copy=False).reshape(shape)

    def to_bytes(self, x: Handle, shape: Shape, dtype: DType) -> bytes:
        """The elements in C order, little-endian."""
        return x.astype(_LITTLE_ENDIAN[dtype], copy=False).tobytes()

    def host_array(self, x: Handle) -> Handle:
        """The handle: a numpy array, which DLPack may share."""
        return x

    def from_host_array(self, array: np.ndarray, dtype: DType) -> Handle:
        """The array itself, sharing its memory (a handle may be any numpy view)."""
        return array

    # ---- creation ------------------------------------------------------------------------
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Handle:
        """A new array of `shape` filled with `value`."""
        return np.full(shape, value, dtype=NUMPY_DTYPES[dtype])

    @_quietly
    def arange(self, start: float | int, step: float | int, n: int, dtype: DType) -> Handle:
        """``start + i * step``: exact in int64 for integer dtypes, float64 for floats."""
        exact = np.float64 if dtype.is_floating_point else np.int64
        return (np.arange(n, dtype=exact) * step + start).astype(NUMPY_DTYPES[dtype],
                                                                  copy=False)

    def random_bits(self, shape: Shape, seed: int, offset: int) -> Handle:
        """Philox-4x32-10 words, reinterpreted as int32."""
        return philox_words(math.prod(shape), seed, offset).view(np.int32).reshape(shape)

    # ---- elementwise ---------------------------------------------------------------------
    # unary and binary are the hot path of small-tensor code: one dict lookup, the numpy
    # call in the quiet context, and a cast only where numpy chose another dtype.
    def unary(self, op: str, x: Handle, out: DType) -> Handle:
        """Apply ``UNARY[op]`` with its numpy function."""
        result = _QUIET.run(UNARY_FUNCTIONS[op], x)
        if type(result) is not np.ndarray:  # ufuncs return numpy scalars for 0-d input
            result = np.asarray(result)
        want = NUMPY_DTYPES[out]
        return result if result.dtype is want else result.astype(want, copy=False)

    def binary(self, op: str, a: Handle, b: Handle, out: DType) -> Handle:
        """Apply ``BINARY[op]`` with its numpy function."""
        result = _QUIET.run(BINARY_FUNCTIONS[op], a, b)
        if type(result) is not np.ndarray:
            result = np.asarray(result)
        want = NUMPY_DTYPES[out]
        return result if result.dtype is want else result.astype(want, copy=False)

    def where(self, cond: Handle, a: Handle, b: Handle) -> Handle:
        """``a`` where `cond`, else ``b``, as a bitwise select on integer views of the
        values: ``b ^ ((a ^ b) & mask)``. For a random mask that is about 6x faster than
        `np.where`, whose branchy loop mispredicts (it dominates relu's backward)."""
        bits = _SAME_SIZE_INT[a.dtype.itemsize]
        mask = -cond.astype(bits)
        ai, bi = a.view(bits), b.view(bits)
        return (bi ^ ((ai ^ bi) & mask)).view(a.dtype)

    @_quietly
    def cast(self, x: Handle, dtype: DType) -> Handle:
        """``astype``, except that floats become integers as in Python (and flex): truncated
        toward zero, NaN and +-inf as 0, values out of range wrapped around (a direct numpy
        cast leaves those platform-defined)."""
        if x.dtype.kind == "f" and dtype.is_integer:
            x = _float_to_int64(x)
        return x.astype(NUMPY_DTYPES[dtype], copy=False)

    # ---- reductions and scans ------------------------------------------------------------
    @_quietly
    def reduce(self, op: str, x: Handle, axes: tuple[int, ...]) -> Handle:
        """The fold's ufunc reduce with ``keepdims`` (maximum and minimum propagate NaN;
        any and all fold the truth values); sum and prod accumulate float16 in float32 and
        keep integer dtypes (numpy would widen them to int64); sums are `sums.sum_kept`'s."""
        reduction = REDUCTIONS[op]
        if reduction.truth:
            x = x.astype(np.bool_, copy=False)
        if not axes:  # nothing to reduce (also keeps a 0-d result an array)
            return x
        if x.size == 0:  # maximum and minimum have no identity of their own: the table's
            kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
            return np.full(kept, reduction.identity, x.dtype)
        if op == "sum":
            return sums.sum_kept(x, axes)
        fold = _FOLDS[op]
        if reduction.widens:
            total = fold.reduce(x, axis=axes, keepdims=True, dtype=_accumulator(x.dtype))
            return total.astype(x.dtype, copy=False)
        return fold.reduce(x, axis=axes, keepdims=True)

    def arg_reduce(self, op: str, x: Handle, axis: int) -> Handle:
        """np.argmax / np.argmin: first occurrence, and NaN wins both."""
        found = np.argmax(x, axis=axis, keepdims=True) if op == "argmax" else np.argmin(
            x, axis=axis, keepdims=True)
        return found.astype(np.int32)

    @_quietly
    def scan(self, op: str, x: Handle, axis: int) -> Handle:
        """The fold's ufunc accumulate (np.cumsum is np.add's) in the input dtype (float16
        accumulates in float32)."""
        running = _FOLDS[op].accumulate(x, axis=axis, dtype=_accumulator(x.dtype))
        return running.astype(x.dtype, copy=False)

    # ---- movement ------------------------------------------------------------------------
    def reshape(self, x: Handle, shape: Shape) -> Handle:
        """A view where the strides allow it, else a copy."""
        return x.reshape(shape)

    def permute(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """A transposed view."""
        return x.transpose(axes)

    def expand(self, x: Handle, shape: Shape) -> Handle:
        """A broadcast view (stride 0 along expanded dims). A contiguous input is viewed
        directly through the ndarray constructor: 0.2 µs against 1.8 µs for
        `np.broadcast_to`, which matters for every tensor-scalar op."""
        if x.size == 1:  # a scalar constant: every stride 0
            return np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        if not x.flags.c_contiguous:
            return np.broadcast_to(x, shape)
        strides = tuple(0 if old == 1 else step for old, step in zip(x.shape, x.strides))
        return np.ndarray(shape, x.dtype, x, 0, strides)

    def slice(self, x: Handle, starts: Sequence[int], stops: Sequence[int],
              steps: Sequence[int]) -> Handle:
        """A strided view."""
        if not starts:  # x[()] would turn a 0-d array into a scalar
            return x
        return x[tuple(map(slice, starts, stops, steps))]

    def flip(self, x: Handle, axes: tuple[int, ...]) -> Handle:
        """A view with negative strides along `axes`."""
        return np.flip(x, axes) if axes else x

    def pad(self, x: Handle, pads: Sequence[tuple[int, int]], value: float | int | bool) -> Handle:
        """A filled array with x copied into its interior (np.pad takes ~5x longer on small
        inputs)."""
        shape = tuple(n + before + after for n, (before, after) in zip(x.shape, pads))
        out = np.full(shape, value, dtype=x.dtype)
        out[tuple(slice(before, before + n) for n, (before, _) in zip(x.shape, pads))] = x
        return out

    def cat(self, xs: Sequence[Handle], axis: int) -> Handle:
        """np.concatenate."""
        return np.concatenate(xs, axis=axis)

    # ---- indexing ------------------------------------------------------------------------
    def gather(self, x: Handle, axis: int, index: Handle) -> Handle:
        """np.take_along_axis on x cut down to index's size in the other dims."""
        within = tuple(slice(None) if d == axis else slice(0, n)
                       for d, n in enumerate(index.shape))
        return np.take_along_axis(x[within], index, axis=axis)

    @_quietly
    def scatter(self, x: Handle, axis: int, index: Handle, src: Handle, reduce: str) -> Handle:
        """A copy of x with src written (or added) at the positions index names."""
        out = np.array(x, order="C")
        cells = _flat_cells(out.shape, axis, index)
        values = src.reshape(-1)
        flat = out.reshape(-1)
        if reduce == "add":
            np.add.at(flat, cells, values)  # unbuffered: repeated cells accumulate
            return out
        # numpy leaves the winner of repeated cells in a fancy assignment unspecified, so
        # keep only the last write to each cell: its first occurrence in the reversed list.
        _, first_of_reversed = np.unique(cells[::-1], return_index=True)
        wins = cells.size - 1 - first_of_reversed
        flat[cells[wins]] = values[wins]
        return out

    def index_select(self, x: Handle, axis: int, index: Handle) -> Handle:
        """np.take along `axis`."""
        return np.take(x, index, axis=axis)

    def nonzero(self, x: Handle) -> tuple[Handle, Shape]:
        """np.argwhere (which also gets 0-d inputs right), as int32."""
        found = np.argwhere(x).astype(np.int32)
        return found, found.shape

    def sort(self, x: Handle, axis: int, descending: bool) -> tuple[Handle, Handle]:
        """Stable argsort (NaN sorts last, i.e. largest), then take_along_axis.

        Descending: a stable ascending sort of the reversed input, read backwards, is
        descending with equal elements in their original order (and NaN first)."""
        if descending:
            backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
            order = (x.shape[axis] - 1) - np.flip(backwards, axis)
        else:
            order = np.argsort(x, axis=axis, kind="stable")
        return np.take_along_axis(x, order, axis=axis), order.astype(np.int32)

    # ---- linear algebra ------------------------------------------------------------------
    @_quietly
    def matmul(self, a: Handle, b: Handle) -> Handle:
        """np.matmul (BLAS for float32/float64); float16 goes through float32."""
        return _product(a, b)

    # ---- capability "linear" (see pyburn.ops.capability) -------------------------
    @_quietly
    def linear(self, x: Handle, w: Handle, b: Handle | None) -> Handle:
        """``x @ w.T + b`` as the composite computes it (the same product of x's rows with
        the transposed view of w, then the bias added), into the product's own array."""
        lead = x.shape[:-1]
        rows = x.reshape(math.prod(lead), x.shape[-1])
        # OpenBLAS is fastest on x @ W with W stored (in, out), as an ONNX file's
        # pre-transposed weight is; with w stored (out, in) it multiplies faster the more
        # rows its result has (measured here: a batch of 32 through 384 -> 1536 features,
        # 638 us as x @ w.T, 418 as (w @ x.T).T), so fewer rows than features go through the
        # transposed product, whose result is a transposed view; one row stays a
        # matrix-vector product, as fast either way
        stored_in_out = w.T.flags.c_contiguous and not w.flags.c_contiguous
        y = _product(w, rows.T).T if 1 < rows.shape[0] < w.shape[0] and not stored_in_out \
            else _product(rows, w.T)
        if b is not None:
            np.add(y, b, out=y)
        return y.reshape(lead + (w.shape[0],))

    # ---- capabilities "conv", "conv_bias" and "max_pool" (pyburn.ops.capability) --
    @_quietly
    def conv(self, x: Handle, w: Handle, stride: Sequence[int],
             padding: Sequence[tuple[int, int]], dilation: Sequence[int],
             groups: int, bias: Handle | None = None,
             activation: tuple | None = None) -> Handle:
        """Convolution as one im2col copy and one matrix product per group, the bias (when
        given) added to each chunk of the product, the activation (when given) written
        over the result."""
        return convolution.conv(x, w, stride, padding, dilation, groups, bias, activation)

    @_quietly
    def conv_transpose(self, x: Handle, w: Handle, stride: Sequence[int],
                       padding: Sequence[int], dilation: Sequence[int], groups: int,
                       size: Sequence[int]) -> Handle:
        """Transposed convolution as one matrix product per group and a col2im."""
        return convolution.conv_transpose(x, w, stride, padding, dilation, groups, size)

    @_quietly
    def conv_weight(self, x: Handle, g: Handle, kernel: Sequence[int], stride: Sequence[int],
                    padding: Sequence[tuple[int, int]], dilation: Sequence[int],
                    groups: int) -> Handle:
        """A convolution's weight gradient as one im2col copy and one matrix product."""
        return convolution.conv_weight(x, g, kernel, stride, padding, dilation, groups)

    @_quietly
    def max_pool(self, x: Handle, kernel: Sequence[int], stride: Sequence[int],
                 padding: Sequence[tuple[int, int]], dilation: Sequence[int],
                 indices: bool) -> tuple[Handle, Handle | None]:
        """Max pooling as arithmetic on one strided view per kernel offset."""
        return convolution.max_pool(x, kernel, stride, padding, dilation, indices)

    # ---- capabilities "softmax", "layer_norm", "batch_norm", "batch_norm_eval", "nll_loss"
    # and "adam" (the composites' own operations) ---------------------------------------------
    @_quietly
    def softmax(self, x: Handle, axis: int, log: bool) -> Handle:
        """Softmax or log_softmax along `axis`."""
        return fused.softmax(x, axis, log)

    @_quietly
    def layer_norm(self, x: Handle, weight: Handle | None, bias: Handle | None, ndims: int,
                   eps: float) -> Handle:
        """x normalised over its trailing `ndims` dims, scaled and shifted where given."""
        return fused.layer_norm(x, weight, bias, ndims, eps)

    @_quietly
    def batch_norm(self, x: Handle, weight: Handle | None, bias: Handle | None,
                   eps: float) -> tuple[Handle, Handle, Handle, Handle]:
        """x normalised per channel with its batch statistics, scaled and shifted where
        given; also the normalised x, the batch mean and the biased variance."""
        return fused.batch_norm(x, weight, bias, eps)

    @_quietly
    def batch_norm_eval(self, x: Handle, mean: Handle, var: Handle, weight: Handle | None,
                        bias: Handle | None, eps: float) -> Handle:
        """x normalised per channel with the given mean and variance, scaled and shifted
        where given."""
        return fused.batch_norm_eval(x, mean, var, weight, bias, eps)

    @_quietly
    def nll_loss(self, logp: Handle, target: Handle, axis: int, weight: Handle | None,
                 ignore_index: int, reduction: str) -> tuple[Handle, int | None]:
        """The negative log-likelihood of the targets, and a bad target or None."""
        return fused.nll_loss(logp, target, axis, weight, ignore_index, reduction)

    @_quietly
    def nll_loss_grad(self, g: Handle, target: Handle, axis: int, weight: Handle | None,
                      ignore_index: int, reduction: str, shape: Shape) -> Handle:
        """The gradient of `nll_loss` in its log-probabilities."""
        return fused.nll_loss_grad(g, target, axis, weight, ignore_index, reduction, shape)

    @_quietly
    def adam(self, p: Handle, g: Handle, m: Handle, v: Handle, v_max: Handle | None,
             beta1: float, beta2: float, step_size: float, bias2_sqrt: float,
             eps: float) -> tuple[Handle, Handle, Handle, Handle | None]:
        """One Adam step: the new parameter and moments."""
        return fused.adam(p, g, m, v, v_max, beta1, beta2, step_size, bias2_sqrt, eps)

    # ---- capability "activation" -----------------------------------------------------------
    @_quietly
    def activation(self, x: Handle, name: str) -> Handle:
        """The elementwise activation `name`: sigmoid, silu, hardsigmoid or hardswish."""
        return activations.activation(x, name)

    # ---- capability "quant_matmul" (packed int8/int4 weights) ----------------------------
    @_quietly
    def quant_linear(self, x: Handle, data: Handle, scale: Handle, zero: Handle | None,
                     bits: int, signed: bool, block: int, k: int,
                     bias: Handle | None) -> Handle:
        """``x @ ((q - zero) * scale).T + bias``, the weight dequantized a tile at a time."""
        return quantized.quant_linear(x, data, scale, zero, bits, signed, block, k, bias)

    @_quietly
    def quant_matmul_int(self, a: Handle, a_zero: Handle | None, data: Handle,
                         zero: Handle | None, bits: int, signed: bool, k: int) -> Handle:
        """The exact int32 ``(a - a_zero) @ (q - zero).T``."""
        return quantized.quant_matmul_int(a, a_zero, data, zero, bits, signed, k)
