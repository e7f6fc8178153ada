"""Resize (every mode, coordinate transformation, nearest rounding, antialias, axes and
aspect-ratio policy) and Upsample.

Resizing is separable: each resized axis in turn is resampled by a few taps, each an
``index_select`` of source positions times a per-position weight. Positions and weights are
computed in Python (float64, like the spec's formulas) from the coordinate rules, so the
tensor work is O(output) and differentiable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ... import Tensor, tensor, where
from ...nn.functional.sampling import resample
from ..registry import check, ints, onnx_op

Taps = list[tuple[list[int], list[float] | None]]

_INTEGER_RANGES = {"uint8": (0, 255), "int32": (-(2**31), 2**31 - 1),
                   "int64": (-(2**63), 2**63 - 1)}


def _source(i: int, mode: str, n: int, scale: float, out: int,
            roi: tuple[float, float]) -> float:
    """The input coordinate that output position i maps to along one axis."""
    resized = scale * n  # the spec's length_resized, before rounding to an int
    if mode == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return -0.5 if resized == 1 else (i + 0.5) / scale - 0.5
    if mode == "align_corners":
        return 0.0 if resized == 1 else i * (n - 1) / (resized - 1)
    if mode == "asymmetric":
        return i / scale
    if mode == "half_pixel_symmetric":
        offset = n / 2 * (1 - out / resized)
        return offset + (i + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (i + 0.5) / scale
    start, end = roi  # tf_crop_and_resize
    if resized == 1:
        return (end - start) * (n - 1) / 2 + start * (n - 1)
    return i * (end - start) * (n - 1) / (resized - 1) + start * (n - 1)


_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "half_pixel_symmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")

_NEAREST: dict[str, Callable[[float], int]] = {
    "round_prefer_floor": lambda x: math.ceil(x - 0.5),
    "round_prefer_ceil": lambda x: math.floor(x + 0.5),
    "floor": math.floor,
    "ceil": math.ceil,
}


def _cubic_kernel(d: float, a: float) -> float:
    d = abs(d)
    if d <= 1.0:
        return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    if d < 2.0:
        return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
    return 0.0


def _coefficients(mode: str, ratio: float, scale: float, a: float, antialias: bool) -> list[float]:
    """The weights of the neighbours of a point `ratio` (in (0, 1]) past its left neighbour;
    antialiasing downscales stretch the kernel by 1 / scale."""
    if not antialias:
        if mode == "linear":
            return [1.0 - ratio, ratio]
        return [_cubic_kernel(ratio + 1.0, a), _cubic_kernel(ratio, a),
                _cubic_kernel(1.0 - ratio, a), _cubic_kernel(2.0 - ratio, a)]
    scale = min(scale, 1.0)
    if mode == "linear":
        start = math.floor(-1.0 / scale) + 1
        weights = [max(0.0, 1.0 - abs((k - ratio) * scale)) for k in range(start, 2 - start)]
    else:
        start = math.floor(-2.0 / scale) + 1
        weights = [_cubic_kernel(scale * (k - ratio), a) for k in range(start, 2 - start)]
    total = sum(weights)
    return [w / total for w in weights]


def _first_neighbour(x: float, count: int) -> int:
    """The first of the `count` input positions nearest to x (ties to the smaller ones)."""
    if count % 2 == 0:
        low = math.floor(x)
        return low - count // 2 + (0 if x == low else 1)
    low = math.floor(x)
    return low - (count - 1) // 2 + (1 if x - low > 0.5 else 0)


def _axis_taps(n: int, out: int, scale: float, mode: str, coordinate: str, nearest: str,
               cubic_a: float, exclude_outside: bool, antialias: bool,
               roi: tuple[float, float]) -> tuple[Taps, list[bool] | None]:
    """The taps resampling one axis from n to `out` positions, and, for
    tf_crop_and_resize, which outputs fall outside the input (else None)."""
    outside = [False] * out if coordinate == "tf_crop_and_resize" else None
    if mode == "nearest":
        index = []
        for i in range(out):
            x = _source(i, coordinate, n, scale, out, roi)
            if outside is not None:
                outside[i] = x < 0 or x > n - 1
            index.append(min(max(_NEAREST[nearest](x), 0), n - 1))
        return [(index, None)], outside
    columns: list[list[tuple[int, float]]] = []
    for i in range(out):
        x = _source(i, coordinate, n, scale, out, roi)
        if outside is not None:
            outside[i] = x < 0 or x > n - 1
        low = math.floor(x)
        ratio = 1.0 if x == low else x - low  # the left neighbour is preferred
        weights = _coefficients(mode, ratio, scale, cubic_a, antialias)
        first = _first_neighbour(x, len(weights))
        positions = range(first, first + len(weights))
        if exclude_outside:
            weights = [w if 0 <= p < n else 0.0 for p, w in zip(positions, weights)]
            total = sum(weights) or 1.0
            weights = [w / total for w in weights]
        columns.append([(min(max(p, 0), n - 1), w) for p, w in zip(positions, weights)])
    taps = [([column[k][0] for column in columns], [column[k][1] for column in columns])
            for k in range(len(columns[0]) if columns else 0)]
    return taps, outside


def _floats(t: Tensor | None) -> list[float]:
    return [] if t is None or t.numel() == 0 else [float(v) for v in t.reshape(-1).tolist()]


def resize_axes(x: Tensor, sizes: list[int], scales: list[float], axes: Sequence[int],
                roi: list[tuple[float, float]], *, mode: str, coordinate: str,
                nearest: str = "round_prefer_floor", cubic_a: float = -0.75,
                exclude_outside: bool = False, extrapolation_value: float = 0.0,
                antialias: bool = False) -> Tensor:
    """x resampled along `axes` to `sizes`, the coordinates scaled by `scales`."""
    integer = not x.dtype.is_floating_point and mode != "nearest"
    y = x.float() if integer else x
    for axis, out, scale, box in zip(axes, sizes, scales, roi):
        n = y.shape[axis]
        if out == n and scale == 1.0 and box == (0.0, 1.0):
            continue  # the identity along this axis
        taps, outside = _axis_taps(n, out, scale, mode, coordinate, nearest, cubic_a,
                                   exclude_outside, antialias, box)
        y = resample(y, axis, taps)
        if outside is not None and any(outside):
            view = (out,) + (1,) * (y.ndim - axis - 1)
            mask = tensor(outside, device=y.device).reshape(view)
            y = where(mask, extrapolation_value, y).cast(y.dtype)
    if integer:
        low, high = _INTEGER_RANGES.get(x.dtype.name, (0, 1))
        y = y.round().clamp(low, high).cast(x.dtype)
    return y


@onnx_op("Resize", since=11)
def resize(x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None,
           sizes: Tensor | None = None, *, antialias: int = 0, axes: list[int] | None = None,
           coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
           exclude_outside: int = 0, extrapolation_value: float = 0.0,
           keep_aspect_ratio_policy: str = "stretch", mode: str = "nearest",
           nearest_mode: str = "round_prefer_floor") -> Tensor:
    """Resize: x resampled to `sizes` or by `scales` (output ``floor(n * scale)``) along
    `axes` (default all), with the spec's coordinate transformations, nearest roundings,
    linear or cubic (cubic_coeff_a, exclude_outside) interpolation, antialiased
    downscaling, tf_crop_and_resize's roi and extrapolation_value, and keep_aspect_ratio
    policies for `sizes`."""
    op = "Resize"
    check(mode in ("nearest", "linear", "cubic"),
          f"{op}: mode must be nearest, linear or cubic, got {mode!r}")
    check(coordinate_transformation_mode in _COORDINATE_MODES,
          f"{op}: unknown coordinate_transformation_mode {coordinate_transformation_mode!r}")
    check(nearest_mode in _NEAREST, f"{op}: unknown nearest_mode {nearest_mode!r}")
    check(keep_aspect_ratio_policy in ("stretch", "not_larger", "not_smaller"),
          f"{op}: unknown keep_aspect_ratio_policy {keep_aspect_ratio_policy!r}")
    rank = x.ndim
    chosen = [a % rank for a in axes] if axes else list(range(rank))
    scale_list = _floats(scales)
    size_list = ints(sizes) if sizes is not None and sizes.numel() else []
    check(bool(scale_list) != bool(size_list),
          f"{op}: give exactly one of scales and sizes (scales {scale_list}, sizes "
          f"{size_list})")
    given = size_list or scale_list
    check(len(given) == len(chosen),
          f"{op}: {len(given)} scales/sizes for {len(chosen)} axes (input shape {x.shape})")
    inputs = [x.shape[a] for a in chosen]
    if size_list:
        scale_list = [o / n for o, n in zip(size_list, inputs)]
        if keep_aspect_ratio_policy != "stretch":
            pick = min if keep_aspect_ratio_policy == "not_larger" else max
            common = pick(scale_list)
            scale_list = [common] * len(chosen)
            size_list = [int(common * n + 0.5) for n in inputs]
    else:
        check(all(s > 0 for s in scale_list), f"{op}: scales must be positive, got {scale_list}")
        size_list = [int(s * n) for s, n in zip(scale_list, inputs)]
    boxes = [(0.0, 1.0)] * len(chosen)
    bounds = _floats(roi)
    if coordinate_transformation_mode == "tf_crop_and_resize":
        check(len(bounds) in (2 * len(chosen), 2 * rank),
              f"{op}: tf_crop_and_resize needs a roi of {2 * len(chosen)} values, got "
              f"{bounds}")
        half = len(bounds) // 2
        picks = chosen if half == rank else range(len(chosen))
        boxes = [(bounds[p], bounds[half + p]) for p in picks]
    return resize_axes(x, size_list, scale_list, chosen, boxes, mode=mode,
                       coordinate=coordinate_transformation_mode, nearest=nearest_mode,
                       cubic_a=cubic_coeff_a, exclude_outside=bool(exclude_outside),
                       extrapolation_value=extrapolation_value, antialias=bool(antialias))


def _legacy(x: Tensor, scales: list[float], mode: str, op: str) -> Tensor:
    """Upsample and Resize-10: asymmetric coordinates; nearest truncates when enlarging and
    rounds up when shrinking (onnxruntime's rule); linear interpolates."""
    check(mode in ("nearest", "linear", "bilinear"),
          f"{op}: mode must be nearest or linear, got {mode!r}")
    check(len(scales) == x.ndim and all(s > 0 for s in scales),
          f"{op}: scales must hold one positive value per dim of input shape {x.shape}, got "
          f"{scales}")
    y = x
    for axis, scale in enumerate(scales):
        if scale == 1.0:
            continue
        nearest = "floor" if scale >= 1.0 else "ceil"
        y = resize_axes(y, [int(scale * x.shape[axis])], [scale], [axis], [(0.0, 1.0)],
                        mode="nearest" if mode == "nearest" else "linear",
                        coordinate="asymmetric", nearest=nearest)
    return y


@onnx_op("Resize", since=10)
def resize_10(x: Tensor, scales: Tensor, *, mode: str = "nearest") -> Tensor:
    """Resize (opset 10): x scaled by `scales` with asymmetric coordinates."""
    return _legacy(x, _floats(scales), mode, "Resize")


@onnx_op("Upsample", since=7)
def upsample_7(x: Tensor, *, mode: str = "nearest", scales: list[float] | None = None) -> Tensor:
    """Upsample (opset 7): x scaled by the `scales` attribute with asymmetric coordinates."""
    return _legacy(x, list(scales or []), mode, "Upsample")


@onnx_op("Upsample", since=9)
def upsample(x: Tensor, scales: Tensor, *, mode: str = "nearest") -> Tensor:
    """Upsample (opsets 9 and 10): x scaled by the `scales` input with asymmetric
    coordinates."""
    return _legacy(x, _floats(scales), mode, "Upsample")
