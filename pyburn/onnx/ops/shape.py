"""ONNX operators that rearrange a tensor without reading its values: Reshape, Flatten,
Squeeze, Unsqueeze, Transpose, Expand, DepthToSpace, SpaceToDepth."""

from __future__ import annotations

from ..._tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...shape import broadcast_shapes, norm_dim, numel
from ..registry import Ints, check, ints, onnx_op


@onnx_op("Reshape", since=5)
def reshape(data: Tensor, shape: Ints, *, allowzero: int = 0) -> Tensor:
    """Reshape: a 0 copies the input's size at that position (a literal 0 with allowzero),
    one -1 is inferred."""
    target = ints(shape)
    if not allowzero:
        for i, size in enumerate(target):
            if size == 0:
                check(i < data.ndim, f"Reshape: a 0 at position {i} of shape {target} has no "
                                     f"input dim to copy (input shape {data.shape})")
                target[i] = data.shape[i]
    elif 0 in target and -1 in target:
        raise ShapeError(f"Reshape: shape {target} has both 0 and -1 under allowzero=1")
    return data.reshape(target)


@onnx_op("Flatten", since=1)
def flatten(input: Tensor, *, axis: int = 1) -> Tensor:  # noqa: A002 - ONNX's name
    """Flatten: a 2-d tensor (product of the dims before `axis`, product of the rest)."""
    a = axis + input.ndim if axis < 0 else axis  # -1 is the last dim, as for any axis
    check(0 <= a <= input.ndim, f"Flatten: axis {axis} is out of range for rank {input.ndim}")
    return input.reshape(numel(input.shape[:a]), numel(input.shape[a:]))


def squeeze_axes(data: Tensor, axes: list[int]) -> Tensor:
    """Drop the size-1 dims `axes` (all size-1 dims when `axes` is empty)."""
    if not axes:
        return data.reshape(tuple(s for s in data.shape if s != 1))
    dims = {norm_dim(a, data.ndim) for a in axes}
    for d in sorted(dims):
        if data.shape[d] != 1:
            raise ShapeError(f"Squeeze: dim {d} of shape {data.shape} has size "
                             f"{data.shape[d]}, not 1")
    return data.reshape(tuple(s for i, s in enumerate(data.shape) if i not in dims))


@onnx_op("Squeeze", since=1)
def squeeze_1(data: Tensor, *, axes: list[int] | None = None) -> Tensor:
    """Squeeze with the axes as an attribute (opsets 1 to 12)."""
    return squeeze_axes(data, list(axes or []))


@onnx_op("Squeeze", since=13)
def squeeze(data: Tensor, axes: Ints | None = None) -> Tensor:
    """Squeeze: drop the listed size-1 dims (all size-1 dims without `axes`)."""
    return squeeze_axes(data, ints(axes))


def unsqueeze_axes(data: Tensor, axes: list[int]) -> Tensor:
    """Insert size-1 dims so that they sit at `axes` of the result (negative axes count
    from the end of the result)."""
    rank = data.ndim + len(axes)
    dims = {norm_dim(a, rank) for a in axes}
    check(len(dims) == len(axes), f"Unsqueeze: axes {axes} repeat a dim")
    sizes = iter(data.shape)
    return data.reshape(tuple(1 if i in dims else next(sizes) for i in range(rank)))


@onnx_op("Unsqueeze", since=1)
def unsqueeze_1(data: Tensor, *, axes: list[int]) -> Tensor:
    """Unsqueeze with the axes as an attribute (opsets 1 to 12)."""
    return unsqueeze_axes(data, list(axes))


@onnx_op("Unsqueeze", since=13)
def unsqueeze(data: Tensor, axes: Ints) -> Tensor:
    """Unsqueeze: insert size-1 dims at `axes` of the output."""
    return unsqueeze_axes(data, ints(axes))


@onnx_op("Transpose", since=1)
def transpose(data: Tensor, *, perm: list[int] | None = None) -> Tensor:
    """Transpose: permute the dims (reversed without `perm`)."""
    return data.permute(list(perm) if perm is not None else list(reversed(range(data.ndim))))


@onnx_op("Expand", since=8)
def expand(input: Tensor, shape: Ints) -> Tensor:  # noqa: A002 - ONNX's name
    """Expand: broadcast the input and `shape` against each other (either may be larger)."""
    return input.broadcast_to(broadcast_shapes(input.shape, tuple(ints(shape))))


def _blocks(input: Tensor, blocksize: int, op: str) -> tuple[int, int, int, int]:
    check(input.ndim == 4, f"{op} needs a 4-d (N, C, H, W) input, got shape {input.shape}")
    check(blocksize > 0, f"{op}: blocksize must be positive, got {blocksize}")
    n, c, h, w = input.shape
    return n, c, h, w


@onnx_op("DepthToSpace", since=1)
def depth_to_space(input: Tensor, *, blocksize: int, mode: str = "DCR") -> Tensor:  # noqa: A002
    """DepthToSpace: (N, C b², H, W) → (N, C, H b, W b); "DCR" takes the block position
    from the outer part of the channel index, "CRD" from the inner part."""
    n, c, h, w = _blocks(input, blocksize, "DepthToSpace")
    b = blocksize
    if c % (b * b):
        raise ShapeError(f"DepthToSpace: {c} channels are not divisible by blocksize² = {b * b}")
    if mode == "DCR":
        x = input.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        x = input.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    else:
        raise ArgumentError(f"DepthToSpace mode is 'DCR' or 'CRD', got {mode!r}")
    return x.reshape(n, c // (b * b), h * b, w * b)


@onnx_op("SpaceToDepth", since=1)
def space_to_depth(input: Tensor, *, blocksize: int) -> Tensor:  # noqa: A002 - ONNX's name
    """SpaceToDepth: (N, C, H b, W b) → (N, C b², H, W), block position outermost."""
    n, c, h, w = _blocks(input, blocksize, "SpaceToDepth")
    b = blocksize
    if h % b or w % b:
        raise ShapeError(f"SpaceToDepth: spatial size {(h, w)} is not divisible by "
                         f"blocksize {b}")
    x = input.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)

