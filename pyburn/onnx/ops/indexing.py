"""ONNX operators that pick elements by index or by value: Gather, GatherElements, GatherND,
OneHot, NonZero, TopK, Trilu, Unique, ReverseSequence."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..._tensor import Tensor
from ...errors import IndexOutOfRange
from ...ops.creation import arange, tensor
from ...ops.indexing import nonzero
from ...ops.linalg import tril, triu
from ...ops.math_ops import where
from ...ops.sorting import topk
from ...shape import norm_dim, numel
from ..registry import Ints, check, index_dtype, ints, onnx_op


def wrap_negative(index: Tensor, size: int) -> Tensor:
    """`index` with negative entries counted from the end of a dim of `size`."""
    return where(index < 0, index + size, index)


@onnx_op("Gather", since=1)
def gather(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """Gather: the entries `indices` (any shape, negative from the end) along `axis`;
    the output has indices' dims in place of that axis."""
    d = norm_dim(axis, data.ndim)
    if indices.ndim == 0 and data.device.backend.read_hooks() is None:
        # one index (an attention layer's q, k and v out of one projection): a view of that
        # entry costs less than gathering a copy. Not on a GPU, where reading the index
        # would wait for all the work queued before it
        i, size = ints(indices)[0], data.shape[d]
        if not -size <= i < size:
            raise IndexOutOfRange(f"Gather: index {i} is out of range for axis {axis} of "
                                  f"size {size}")
        return data.narrow(d, i % size, 1).reshape(data.shape[:d] + data.shape[d + 1:])
    picked = data.index_select(d, indices.reshape(-1))
    return picked.reshape(data.shape[:d] + indices.shape + data.shape[d + 1:])


@onnx_op("GatherElements", since=11)
def gather_elements(data: Tensor, indices: Tensor, *, axis: int = 0) -> Tensor:
    """GatherElements: ``out[i][j] = data[i][indices[i][j]]`` for axis 1 (negative indices
    count from the end)."""
    d = norm_dim(axis, data.ndim)
    return data.gather(d, wrap_negative(indices, data.shape[d]))


@onnx_op("GatherND", since=11)
def gather_nd(data: Tensor, indices: Tensor, *, batch_dims: int = 0) -> Tensor:
    """GatherND: each last-dim row of `indices` addresses a slice of `data` (after the
    leading `batch_dims`, which data and indices share)."""
    b = batch_dims
    check(indices.ndim >= 1, "GatherND needs indices of rank >= 1")
    k = indices.shape[-1]
    check(0 <= b < min(data.ndim, indices.ndim),
          f"GatherND: batch_dims {b} must be below the ranks of data {data.shape} and "
          f"indices {indices.shape}")
    check(data.shape[:b] == indices.shape[:b],
          f"GatherND: the batch dims of data {data.shape} and indices {indices.shape} differ")
    check(k <= data.ndim - b, f"GatherND: index rows of length {k} address more dims than "
                              f"data {data.shape} has after {b} batch dims")
    inner, rest = data.shape[b:b + k], data.shape[b + k:]
    batches, rows = numel(data.shape[:b]), numel(indices.shape[b:-1])
    # every index row becomes one position in data reshaped to (batches * inner, *rest)
    lin = arange(batches, dtype=indices.dtype, device=data.device).reshape(batches, 1)
    lin = (lin * numel(inner)).broadcast_to((batches, rows))
    cols = indices.reshape(batches, rows, k)
    for j, size in enumerate(inner):
        lin = lin + wrap_negative(cols[:, :, j], size) * numel(inner[j + 1:])
    flat = data.reshape((batches * numel(inner),) + rest)
    picked = flat.index_select(0, lin.reshape(-1))
    return picked.reshape(indices.shape[:-1] + rest)


@onnx_op("OneHot", since=9)
def one_hot(indices: Tensor, depth: Tensor, values: Tensor, *, axis: int = -1) -> Tensor:
    """OneHot: a new dim of size `depth` at `axis` holding ``values[1]`` at each index and
    ``values[0]`` elsewhere; indices in [-depth, 0) count from the end, others match
    nothing."""
    size = int(depth.item())
    check(size > 0, f"OneHot: depth must be positive, got {size}")
    check(values.numel() == 2, f"OneHot: values must hold (off, on), got shape {values.shape}")
    a = norm_dim(axis, indices.ndim + 1)
    index = indices if indices.dtype.is_integer else indices.cast(index_dtype(indices.device))
    index = wrap_negative(index, size).unsqueeze(a)
    classes = arange(size, dtype=index.dtype, device=indices.device)
    classes = classes.reshape((size,) + (1,) * (indices.ndim - a))
    off, on = values.reshape(2)[0], values.reshape(2)[1]
    return where(index == classes, on, off)


@onnx_op("NonZero", since=9)
def non_zero(X: Tensor) -> Tensor:  # noqa: N803 - ONNX's name
    """NonZero: the coordinates of the nonzero elements, shape (rank, count)."""
    return nonzero(X).T.cast(index_dtype(X.device))


def top_k_axis(x: Tensor, k: int, axis: int, largest: bool) -> tuple[Tensor, Tensor]:
    """The `k` largest (or smallest) along `axis`, sorted; ties keep the lower index first."""
    values, indices = topk(x, k, norm_dim(axis, x.ndim), largest=largest)
    return values, indices.cast(index_dtype(x.device))


@onnx_op("TopK", since=1)
def top_k_1(X: Tensor, *, k: int, axis: int = -1) -> tuple[Tensor, Tensor]:  # noqa: N803
    """TopK with k as an attribute (opsets 1 to 9)."""
    return top_k_axis(X, k, axis, True)


@onnx_op("TopK", since=10)
def top_k_10(X: Tensor, K: Ints, *, axis: int = -1) -> tuple[Tensor, Tensor]:  # noqa: N803
    """TopK with k as an input, always the largest (opset 10)."""
    return top_k_axis(X, ints(K)[0], axis, True)


@onnx_op("TopK", since=11)
def top_k(X: Tensor, K: Ints, *, axis: int = -1, largest: int = 1,  # noqa: N803
          sorted: int = 1) -> tuple[Tensor, Tensor]:  # noqa: A002 - ONNX's name
    """TopK: the K largest (smallest with largest=0) values along `axis` and their indices,
    always sorted (sorted=0 lets any order through, and sorted is one)."""
    return top_k_axis(X, ints(K)[0], axis, bool(largest))


@onnx_op("Trilu", since=14)
def trilu(input: Tensor, k: Ints | None = None, *,  # noqa: A002 - ONNX's name
          upper: int = 1) -> Tensor:
    """Trilu: the upper (or lower) triangle of the last two dims from diagonal `k`, zeros
    elsewhere."""
    diagonal = ints(k)[0] if k is not None else 0
    return triu(input, diagonal) if upper else tril(input, diagonal)


@onnx_op("Unique", since=11)
def unique(X: Tensor, *, axis: int | None = None,  # noqa: N803 - ONNX's name
           sorted: int = 1) -> tuple[Tensor, Tensor, Tensor, Tensor]:  # noqa: A002
    """Unique: the distinct elements (or slices along `axis`) of X, sorted or in order of
    first appearance, with the index of each one's first appearance, the position of every
    input element among them, and how often each appears."""
    x = X.reshape(-1) if axis is None else X
    d = 0 if axis is None else norm_dim(axis, X.ndim)
    # the distinct values are found on the host: the output's size depends on them
    keys = [tuple(row) for row in x.movedim(d, 0).reshape(x.shape[d], -1).tolist()]
    first: dict[Any, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    distinct = list(first)
    if sorted:
        distinct.sort()
    position = {key: j for j, key in enumerate(distinct)}
    counts = Counter(keys)
    dtype = index_dtype(X.device)

    def as_index(values: list[int]) -> Tensor:
        return tensor(values, dtype=dtype, device=X.device).reshape(len(values))

    chosen = as_index([first[key] for key in distinct])
    return (x.index_select(d, chosen), chosen, as_index([position[key] for key in keys]),
            as_index([counts[key] for key in distinct]))


@onnx_op("ReverseSequence", since=10)
def reverse_sequence(input: Tensor, sequence_lens: Tensor, *,  # noqa: A002 - ONNX's name
                     batch_axis: int = 1, time_axis: int = 0) -> Tensor:
    """ReverseSequence: for each batch entry b, reverse its first ``sequence_lens[b]``
    steps along `time_axis`."""
    check(input.ndim >= 2, f"ReverseSequence needs a rank >= 2 input, got {input.shape}")
    t, b = norm_dim(time_axis, input.ndim), norm_dim(batch_axis, input.ndim)
    check(t != b, "ReverseSequence: batch_axis and time_axis must differ")
    steps = input.shape[t]

    def along(x: Tensor, d: int) -> Tensor:
        return x.reshape(tuple(x.numel() if i == d else 1 for i in range(input.ndim)))

    lens = along(sequence_lens, b)
    time = along(arange(steps, dtype=lens.dtype, device=input.device), t)
    source = where(time < lens, lens - 1 - time, time)
    return input.gather(t, source.broadcast_to(input.shape))
