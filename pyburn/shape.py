"""Shape arithmetic and argument checks shared by the whole tensor layer (and, for the
plain arithmetic such as `contiguous_strides`, by the backends).

Every check raises a `PyburnError` subclass whose message carries the offending values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ArgumentError, DimError, ShapeError

Shape = tuple[int, ...]


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of `shape`."""
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape: Sequence[int]) -> Shape:
    """Row-major element strides of `shape`."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def as_shape(args: Sequence, what: str = "shape") -> Shape:
    """Read ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])`` style shape arguments as a tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        shape = tuple(_as_int(s) for s in args)
    except TypeError:
        raise ArgumentError(f"a {what} is a sequence of ints, got {tuple(args)!r}") from None
    if any(s < 0 for s in shape):
        raise ShapeError(f"a {what} cannot have negative sizes: {shape}")
    return shape


def _as_int(value: object) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError
    return value.__index__()  # type: ignore[union-attr]


def broadcast_shapes(*shapes: Shape) -> Shape:
    """The shape that all `shapes` broadcast to (numpy/PyTorch rules)."""
    if len(shapes) == 2:
        # the common pair, a tensor and a bias made of its trailing dims: one slice compare
        # instead of the loop below (every broadcast op of a layer starts here)
        long, short = shapes if len(shapes[0]) >= len(shapes[1]) else shapes[::-1]
        if type(long) is tuple and long[len(long) - len(short):] == short:
            return long
    ndim = max([len(s) for s in shapes], default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, ndim - len(shape)):
            if size != out[i]:
                if out[i] == 1:
                    out[i] = size
                elif size != 1:
                    listed = " and ".join(str(tuple(s)) for s in shapes)
                    raise ShapeError(f"shapes {listed} cannot be broadcast together "
                                     f"(dim {i - ndim}: {out[i]} vs {size})")
    return tuple(out)


def norm_dim(dim: int, ndim: int, *, extra: int = 0) -> int:
    """Map a possibly negative `dim` into ``0 .. ndim + extra - 1`` (extra=1 for insertions)."""
    size = ndim + extra
    if type(dim) is int and -size <= dim < size:  # the common case in one test
        return dim + size if dim < 0 else dim
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ArgumentError(f"a dim is an int, got {dim!r}")
    if not -size <= dim < size:
        low, high = -max(size, 1), max(size, 1) - 1
        raise DimError(f"dim {dim} is out of range for a tensor of rank {ndim} "
                       f"(expected {low} to {high})")
    return dim + size if dim < 0 else dim


def norm_dims(dims: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    """Sorted distinct normalised dims; None means all of them. A 0-d tensor accepts dim 0
    and -1 (and reduces over nothing), as in PyTorch."""
    if dims is None:
        return tuple(range(ndim))
    if type(dims) is int and ndim:  # one dim cannot repeat: skip the set and the sort
        return (norm_dim(dims, ndim),)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if ndim == 0:
        for d in dims:
            norm_dim(d, 1)
        return ()
    out = tuple(norm_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise ArgumentError(f"dims {dims} name a dimension twice")
    return tuple(sorted(out))


def check_permutation(dims: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Normalise `dims` and check they are a permutation of ``range(ndim)``."""
    if len(dims) != ndim:
        raise ArgumentError(f"permute needs {ndim} dims for a tensor of rank {ndim}, "
                            f"got {tuple(dims)}")
    out = tuple(norm_dim(d, ndim) for d in dims)
    if sorted(out) != list(range(ndim)):
        raise ArgumentError(f"dims {tuple(dims)} are not a permutation of 0..{ndim - 1}")
    return out


def infer_reshape(shape: Sequence[int], size: int, old_shape: Shape) -> Shape:
    """Fill in a single -1 in `shape` so that it holds `size` elements."""
    shape = tuple(_checked_size(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"only one dimension can be -1 in a reshape, got {shape}")
    known = numel(s for s in shape if s != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape a tensor of shape {old_shape} ({size} elements) "
                             f"into {shape}")
        i = unknown[0]
        shape = shape[:i] + (size // known,) + shape[i + 1:]
    elif known != size:
        raise ShapeError(f"cannot reshape a tensor of shape {old_shape} ({size} elements) "
                         f"into {shape} ({known} elements)")
    return shape


def _checked_size(value: object) -> int:
    try:
        s = _as_int(value)
    except TypeError:
        raise ArgumentError(f"sizes are ints, got {value!r}") from None
    if s < -1:
        raise ShapeError(f"invalid size {s} in a shape")
    return s
