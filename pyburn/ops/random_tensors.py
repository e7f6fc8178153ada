"""Random tensors: uniform, normal, integer and Bernoulli draws, each a transform of the
Philox words of a `pyburn.random.Generator`. The words are the same on every backend, and so
are the uniform, integer and Bernoulli draws (exact transforms); normal draws go through
log, sqrt and cos, which each backend rounds its own way, so they agree to about an ulp."""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor, wrap
from ..devices import Device
from ..dtypes import DType, default_float, default_int, float16, float64, int32
from ..errors import ArgumentError, DTypeError
from ..random import Generator, default_generator
from ..shape import Shape, as_shape, numel
from .creation import DeviceLike, creator, like, target
from .math_ops import binary, unary


def _words(shape: Shape, device: Device, generator: Generator | None) -> Tensor:
    seed, offset = (generator or default_generator).take(numel(shape))
    return wrap(device.backend.random_bits(shape, seed, offset), shape, int32, device)


def _uniform(shape: Shape, dt: DType, dev: Device, generator: Generator | None) -> Tensor:
    """Uniform values in [0, 1), a multiple of 2**-bits with as many bits as `dt` holds."""
    if dt is float64:
        words = _words(shape + (2,), dev, generator)
        high = binary("bitwise_and", words[..., 0], 0x3FFFFFF).cast(float64)
        low = binary("bitwise_and", words[..., 1], 0x7FFFFFF).cast(float64)
        return binary("mul", binary("add", binary("mul", high, 2.0**27), low), 2.0**-53)
    bits = 11 if dt is float16 else 24
    words = binary("bitwise_and", _words(shape, dev, generator), (1 << bits) - 1)
    return binary("mul", words.cast(dt), 2.0**-bits)


@creator
def rand(*shape: Any, dtype: Any = None, device: DeviceLike = None,
         generator: Generator | None = None) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    dev, dt = target(device, dtype, default_float)
    _require_float(dt, "rand")
    return _uniform(as_shape(shape), dt, dev, generator)


@creator
def randn(*shape: Any, dtype: Any = None, device: DeviceLike = None,
          generator: Generator | None = None) -> Tensor:
    """Standard normal random numbers (Box–Muller on two uniforms)."""
    dev, dt = target(device, dtype, default_float)
    _require_float(dt, "randn")
    shape = as_shape(shape)
    work = float64 if dt is float64 else default_float
    u1 = binary("sub", 1.0, _uniform(shape, work, dev, generator))  # in (0, 1]: log is finite
    u2 = _uniform(shape, work, dev, generator)
    radius = unary("sqrt", binary("mul", unary("log", u1), -2.0))
    return binary("mul", radius, unary("cos", binary("mul", u2, 2 * math.pi))).cast(dt)


def randint(low: int, high: int | None = None, size: Any = (), *, dtype: Any = None,
            device: DeviceLike = None, generator: Generator | None = None) -> Tensor:
    """Uniform random integers in [low, high); ``randint(high, size)`` starts at 0."""
    if high is None:
        low, high = 0, low
    if not high > low:
        raise ArgumentError(f"randint needs low < high, got low={low}, high={high}")
    if high - low > 2**31:
        raise ArgumentError(f"randint range {high - low} is larger than 2**31")
    dev, dt = target(device, dtype, default_int)
    words = binary("bitwise_and", _words(as_shape(size), dev, generator), 0x7FFFFFFF)
    return binary("add", binary("remainder", words, high - low), low).cast(dt)


def bernoulli(p: Tensor, *, generator: Generator | None = None) -> Tensor:
    """1 with probability `p` (elementwise), else 0, in p's dtype."""
    dt = p.dtype if p.dtype.is_floating_point else default_float
    draws = _uniform(p.shape, dt, p.device, generator)
    return binary("lt", draws, p).cast(dt)


@creator
def rand_like(x: Tensor, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Uniform [0, 1) numbers shaped like `x`."""
    return rand(x.shape, **like(x, dtype, device))


@creator
def randn_like(x: Tensor, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Standard normal numbers shaped like `x`."""
    return randn(x.shape, **like(x, dtype, device))


def _require_float(dtype: DType, name: str) -> None:
    if not dtype.is_floating_point:
        raise DTypeError(f"{name} makes floating-point tensors, not {dtype.name}")
