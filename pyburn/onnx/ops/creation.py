"""ONNX operators that make tensors: Constant, ConstantOfShape, Range, EyeLike, Shape, Size,
the random ops (RandomNormal/Uniform(+Like), Bernoulli, Multinomial), Identity and Dropout.

Random ops with a `seed` attribute draw from a `pyburn.Generator` seeded with it, so they
give the same numbers on every run and every device (pyburn's Philox stream, not numpy's:
the values differ from onnx's reference, which uses numpy's generator). Without a seed they
draw from pyburn's default generator (`pyburn.manual_seed`).
"""

from __future__ import annotations

from typing import Any

import pyburn

from ... import Tensor, float32, where
from ...random import Generator
from ..registry import check, index_dtype, ints, onnx_op
from .cast import held_code


@onnx_op("Constant", since=1)
def constant(*, value: Tensor | None = None, value_float: float | None = None,
             value_floats: list[float] | None = None, value_int: int | None = None,
             value_ints: list[int] | None = None, value_string: str | None = None,
             value_strings: list[str] | None = None, sparse_value: Any = None,
             device: Any = None) -> Tensor:
    """Constant: the tensor given by whichever one `value*` attribute is set (strings and
    sparse tensors are refused: pyburn tensors hold dense numbers)."""
    check(value_string is None and value_strings is None,
          "Constant: string tensors are not supported (pyburn tensors hold numbers)")
    check(sparse_value is None, "Constant: sparse_value is not supported (use a dense value)")
    given = [v for v in (value, value_float, value_floats, value_int, value_ints)
             if v is not None]
    check(len(given) == 1, f"Constant needs exactly one value attribute, got {len(given)}")
    if value is not None:
        return value
    if value_float is not None or value_floats is not None:
        data = value_float if value_float is not None else list(value_floats or [])
        return pyburn.tensor(data, dtype=float32, device=device)
    data = value_int if value_int is not None else list(value_ints or [])
    return pyburn.tensor(data, dtype=index_dtype(device), device=device)


@onnx_op("ConstantOfShape", since=9)
def constant_of_shape(input: Tensor, *, value: Tensor | None = None) -> Tensor:
    """ConstantOfShape: a tensor of the shape in `input` filled with the one element of
    `value` (float32 0 by default), in value's dtype."""
    shape = tuple(ints(input))
    check(all(s >= 0 for s in shape), f"ConstantOfShape: negative size in shape {shape}")
    if value is None:
        return pyburn.zeros(shape, device=input.device)
    check(value.numel() == 1, f"ConstantOfShape: value has {value.numel()} elements, not 1")
    return pyburn.broadcast_to(value.reshape(()), shape)


@onnx_op("Range", since=11)
def range_(start: Tensor, limit: Tensor, delta: Tensor, *, stash_type: int = 1) -> Tensor:
    """Range: start, start + delta, ... up to (excluding) limit, in start's dtype (computed
    in float64 and rounded, which covers opset 27's float32 `stash_type`)."""
    first, end, step = (t.item() for t in (start, limit, delta))
    check(step != 0, "Range: delta is 0")
    return pyburn.arange(first, end, step, dtype=start.dtype, device=start.device)


@onnx_op("EyeLike", since=9)
def eye_like(input: Tensor, *, dtype: int | None = None, k: int = 0) -> Tensor:
    """EyeLike: ones on the k-th diagonal of a matrix shaped like the 2-d `input`, zeros
    elsewhere, in `dtype` (default input's)."""
    check(input.ndim == 2, f"EyeLike needs a 2-d input, got shape {input.shape}")
    rows, cols = input.shape
    out = input.dtype if dtype is None else held_code(dtype, input.device)
    row = pyburn.arange(rows, device=input.device).reshape(rows, 1)
    col = pyburn.arange(cols, device=input.device)
    return ((col - row) == k).cast(out)


@onnx_op("Shape", since=1)
def shape(data: Tensor, *, start: int = 0, end: int | None = None) -> Tensor:
    """Shape: data's dims from `start` to `end` (negative counts from the back; both clamped
    to the rank) as a 1-d int64 tensor."""
    dims = list(data.shape[start:end])
    return pyburn.tensor(dims, dtype=index_dtype(data.device), device=data.device) \
        if dims else pyburn.zeros(0, dtype=index_dtype(data.device), device=data.device)


@onnx_op("Size", since=1)
def size(data: Tensor) -> Tensor:
    """Size: the number of elements of data, as a 0-d int64 tensor."""
    return pyburn.tensor(data.numel(), dtype=index_dtype(data.device), device=data.device)


@onnx_op("Identity", since=1)
def identity(input: Any) -> Any:
    """Identity: the input itself (a tensor, or a sequence or optional value)."""
    return input


# ---- random ------------------------------------------------------------------------------

def _generator(seed: float | None) -> Generator | None:
    """A generator for the `seed` attribute, or None for pyburn's default one."""
    return None if seed is None else Generator(int(seed))


@onnx_op("RandomNormal", since=1)
def random_normal(*, shape: list[int], dtype: int = 1, mean: float = 0.0, scale: float = 1.0,
                  seed: float | None = None, device: Any = None) -> Tensor:
    """RandomNormal: normal samples of mean `mean` and deviation `scale`."""
    out = held_code(dtype, device)
    draws = pyburn.randn(tuple(shape), device=device, generator=_generator(seed))
    return (draws * scale + mean).cast(out)


@onnx_op("RandomUniform", since=1)
def random_uniform(*, shape: list[int], dtype: int = 1, high: float = 1.0, low: float = 0.0,
                   seed: float | None = None, device: Any = None) -> Tensor:
    """RandomUniform: uniform samples in [low, high)."""
    out = held_code(dtype, device)
    draws = pyburn.rand(tuple(shape), device=device, generator=_generator(seed))
    return (draws * (high - low) + low).cast(out)


@onnx_op("RandomNormalLike", since=1)
def random_normal_like(input: Tensor, *, dtype: int | None = None, mean: float = 0.0,
                       scale: float = 1.0, seed: float | None = None) -> Tensor:
    """RandomNormalLike: RandomNormal with input's shape (and dtype, by default)."""
    out = input.dtype if dtype is None else held_code(dtype, input.device)
    draws = pyburn.randn(input.shape, device=input.device, generator=_generator(seed))
    return (draws * scale + mean).cast(out)


@onnx_op("RandomUniformLike", since=1)
def random_uniform_like(input: Tensor, *, dtype: int | None = None, high: float = 1.0,
                        low: float = 0.0, seed: float | None = None) -> Tensor:
    """RandomUniformLike: RandomUniform with input's shape (and dtype, by default)."""
    out = input.dtype if dtype is None else held_code(dtype, input.device)
    draws = pyburn.rand(input.shape, device=input.device, generator=_generator(seed))
    return (draws * (high - low) + low).cast(out)


@onnx_op("Bernoulli", since=15)
def bernoulli(input: Tensor, *, dtype: int | None = None, seed: float | None = None) -> Tensor:
    """Bernoulli: 1 with probability `input` (elementwise), else 0, in `dtype` (default
    input's)."""
    out = input.dtype if dtype is None else held_code(dtype, input.device)
    return pyburn.bernoulli(input, generator=_generator(seed)).cast(out)


@onnx_op("Multinomial", since=7)
def multinomial(input: Tensor, *, dtype: int = 6, sample_size: int = 1,
                seed: float | None = None) -> Tensor:
    """Multinomial: `sample_size` class indices per row of the (batch, classes) input of
    unnormalised log-probabilities, drawn by inverting the cumulative distribution."""
    check(input.ndim == 2, f"Multinomial needs a (batch, classes) input, got {input.shape}")
    batch, classes = input.shape
    cdf = pyburn.nn.functional.softmax(input.cast(float32), -1).cumsum(-1)
    draws = pyburn.rand(batch, sample_size, device=input.device, generator=_generator(seed))
    # the class of a draw u is the number of cumulative probabilities <= u; the last sum
    # may round below 1, so the count is capped at the last class
    index = (draws.unsqueeze(-1) >= cdf.unsqueeze(1)).sum(-1).clamp(max=classes - 1)
    return index.cast(held_code(dtype, input.device))


# ---- Dropout -----------------------------------------------------------------------------

def _dropout(data: Tensor, ratio: float, training: bool, seed: int | None,
             mask_dtype: Any) -> tuple[Tensor, Tensor]:
    """(output, mask): the identity and an all-true mask unless `training`; then each
    element is kept with probability 1 - ratio and scaled by 1 / (1 - ratio)."""
    if not training or ratio == 0.0:
        return data, pyburn.ones(data.shape, dtype=mask_dtype, device=data.device)
    check(0.0 <= ratio <= 1.0, f"Dropout ratio {ratio} is not in [0, 1]")
    draws = pyburn.rand(data.shape, device=data.device, generator=_generator(seed))
    keep = draws >= ratio
    scale = 0.0 if ratio == 1.0 else 1.0 / (1.0 - ratio)
    return where(keep, data * scale, 0.0).cast(data.dtype), keep.cast(mask_dtype)


@onnx_op("Dropout", since=7)
def dropout_7(data: Tensor, *, ratio: float = 0.5) -> tuple[Tensor, Tensor]:
    """Dropout (opsets 7-9): inference, so the identity; the mask is ones of data's
    dtype."""
    return _dropout(data, ratio, False, None, data.dtype)


@onnx_op("Dropout", since=10)
def dropout_10(data: Tensor, *, ratio: float = 0.5) -> tuple[Tensor, Tensor]:
    """Dropout (opsets 10-11): inference, so the identity and an all-true bool mask."""
    return _dropout(data, ratio, False, None, pyburn.bool_)


@onnx_op("Dropout", since=12)
def dropout(data: Tensor, ratio: Tensor | None = None, training_mode: Tensor | None = None,
            *, seed: int | None = None) -> tuple[Tensor, Tensor]:
    """Dropout: the identity and an all-true mask, unless `training_mode` is true: then each
    element is zeroed with probability `ratio` (default 0.5) and the rest scaled by
    1 / (1 - ratio)."""
    training = training_mode is not None and bool(training_mode.item())
    rate = 0.5 if ratio is None else float(ratio.item())
    return _dropout(data, rate, training, seed, pyburn.bool_)
