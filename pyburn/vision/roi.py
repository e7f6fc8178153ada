"""Regions of interest cut from feature maps (N, C, H, W) into fixed-size grids:
`roi_align` (bilinear samples averaged per bin, torchvision's) and `roi_pool` (the max
over each bin of whole pixels, torchvision's and Caffe's). The boxes are read to the host,
which plans every sample; the samples are then gathered from the map in a few tensor ops,
so the result has a gradient for the features on every device. ONNX's RoiAlign and
MaxRoiPool run on these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.creation import tensor, zeros
from ..ops.math_ops import where


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ArgumentError(message)


def _size(output_size: int | Sequence[int]) -> tuple[int, int]:
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    _check(len(size) == 2 and all(isinstance(k, int) and k > 0 for k in size),
           f"output_size is a positive int or (height, width), got {output_size!r}")
    return size[0], size[1]


def _boxes(boxes: Tensor | Sequence[Tensor]) -> tuple[Tensor, list[int]]:
    """torchvision's boxes, a (K, 5) tensor of (batch, x1, y1, x2, y2) or one (L, 4) tensor
    per image, as (K, 4) corners and each one's image."""
    if isinstance(boxes, Tensor):
        _check(boxes.ndim == 2 and boxes.shape[1] == 5,
               f"boxes are (K, 5) rows (batch, x1, y1, x2, y2) or a list of (L, 4), got "
               f"{boxes.shape}")
        return boxes[:, 1:], [int(b) for b in boxes[:, 0].tolist()]
    from ..ops.movement import cat  # the tensor layer's

    parts = list(boxes)
    _check(bool(parts) and all(isinstance(b, Tensor) and b.ndim == 2 and b.shape[1] == 4
                               for b in parts),
           "boxes are a (K, 5) tensor or a list of (L, 4) tensors, one per image")
    return cat(parts, dim=0), [k for k, b in enumerate(parts) for _ in range(b.shape[0])]


def roi_align(x: Tensor, boxes: Tensor | Sequence[Tensor], output_size: int | Sequence[int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """torchvision's ``roi_align``: each box cut from its image of `x` into `output_size`
    bins, each the mean of bilinear samples (`sampling_ratio` per dim, adaptive when 0 or
    less): (K, C, ph, pw). `aligned` shifts the boxes by half a pixel."""
    rois, batches = _boxes(boxes)
    height, width = _size(output_size)
    return align(x, rois, batches, aligned, "avg", height, width, sampling_ratio,
                 spatial_scale)


def _bilinear_corners(y: float, x: float, height: int,
                      width: int) -> list[tuple[int, float]]:
    """The four (flat position, weight) corners of a sample; all weights 0 outside
    [-1, size]. Coordinates are clamped into the map first, as RoiAlign specifies."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return [(0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return [(y_low * width + x_low, hy * hx), (y_low * width + x_high, hy * lx),
            (y_high * width + x_low, ly * hx), (y_high * width + x_high, ly * lx)]


def align(x: Tensor, rois: Tensor, batches: list[int], half_pixel: bool, mode: str,
          output_height: int, output_width: int, sampling_ratio: int,
          spatial_scale: float) -> Tensor:
    """Each box of `rois` (R, 4) from image `batches[r]` of `x`, pooled into bins of
    bilinear samples by `mode` ("avg" or "max"): (R, C, output_height, output_width).
    `half_pixel` shifts the boxes by half a pixel (torchvision's ``aligned``); without it a
    box is at least a pixel wide and high. `sampling_ratio` samples per bin and dim (0 or
    less: ceil(bin size))."""
    op = "roi_align"
    _check(mode in ("avg", "max"), f"{op}: mode must be avg or max, got {mode!r}")
    _check(x.ndim == 4, f"{op}: the features must be (N, C, H, W), got shape {x.shape}")
    boxes = rois.tolist()
    _check(rois.ndim == 2 and rois.shape[1] == 4 and len(batches) == len(boxes),
           f"{op}: rois {rois.shape} must be (R, 4) with one batch index each "
           f"({len(batches)} given)")
    n, c, height, width = x.shape
    oh, ow = output_height, output_width
    if not boxes:
        return zeros(0, c, oh, ow, dtype=x.dtype, device=x.device)
    plans, counts = [], []
    offset = 0.5 if half_pixel else 0.0
    for (x1, y1, x2, y2), b in zip(boxes, batches):
        _check(0 <= b < n, f"{op}: batch index {b} is out of range for {n} images")
        start_w, start_h = x1 * spatial_scale - offset, y1 * spatial_scale - offset
        roi_w = x2 * spatial_scale - offset - start_w
        roi_h = y2 * spatial_scale - offset - start_h
        if not half_pixel:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / oh, roi_w / ow
        grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_h / oh)
        grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_w / ow)
        counts.append(max(grid_h * grid_w, 1))
        base = b * height * width
        plan = []  # per output bin, its samples' corners
        for ph in range(oh):
            for pw in range(ow):
                samples = []
                for iy in range(grid_h):
                    y = start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                    for ix in range(grid_w):
                        xx = start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                        samples.append([(base + p, w) for p, w in
                                        _bilinear_corners(y, xx, height, width)])
                plan.append(samples)
        plans.append(plan)
    # pad every bin to the same sample count: a zero-weight sample adds nothing to a sum,
    # and a repeated sample changes no max
    most = max(counts)
    corner_pos: list[list[int]] = [[], [], [], []]
    corner_w: list[list[float]] = [[], [], [], []]
    for plan in plans:
        for samples in plan:
            filler = [(0, 0.0)] * 4 if mode == "avg" or not samples else samples[-1]
            for sample in samples + [filler] * (most - len(samples)):
                for k, (p, w) in enumerate(sample):
                    corner_pos[k].append(p)
                    corner_w[k].append(w)
    flat = x.transpose(0, 1).reshape(c, n * height * width)
    values = []
    for k in range(4):
        picked = flat.index_select(1, tensor(corner_pos[k], device=x.device))
        values.append(picked * tensor(corner_w[k], dtype=x.dtype, device=x.device))
    shape = (c, len(boxes), oh, ow, most)
    if mode == "avg":
        total = (values[0] + values[1] + values[2] + values[3]).reshape(shape).sum(-1)
        divisor = tensor([float(k) for k in counts], dtype=x.dtype, device=x.device)
        pooled = total / divisor.reshape(1, -1, 1, 1)
    else:
        best = values[0].maximum(values[1]).maximum(values[2]).maximum(values[3])
        pooled = best.reshape(shape).amax(-1)
    return pooled.transpose(0, 1)




def _round_away(v: float) -> int:
    """v rounded to the nearest int, halves away from zero (C's round, not Python's)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def roi_pool(x: Tensor, rois: Tensor, output_size: int | Sequence[int],
             spatial_scale: float = 1.0) -> Tensor:
    """RoI max pooling (torchvision's ``roi_pool``, ONNX's MaxRoiPool): each box (batch,
    x1, y1, x2, y2) of `rois` (R, 5), scaled by `spatial_scale` and rounded, cut into
    `output_size` bins whose max is taken (0 for an empty bin): (R, C, ph, pw)."""
    op = "roi_pool"
    pooled_shape = _size(output_size)
    _check(x.ndim == 4 and rois.ndim == 2 and rois.shape[1] == 5,
           f"{op}: the features {x.shape} must be (N, C, H, W) and rois {rois.shape} (R, 5)")
    n, c, height, width = x.shape
    ph, pw = pooled_shape
    boxes = rois.tolist()
    if not boxes:
        return zeros(0, c, ph, pw, dtype=x.dtype, device=x.device)
    bins: list[list[int]] = []
    for b, x1, y1, x2, y2 in boxes:
        b = int(b)
        _check(0 <= b < n, f"{op}: batch index {b} is out of range for {n} images")
        start_w, start_h = _round_away(x1 * spatial_scale), _round_away(y1 * spatial_scale)
        size_h = max(_round_away(y2 * spatial_scale) - start_h + 1, 1) / ph
        size_w = max(_round_away(x2 * spatial_scale) - start_w + 1, 1) / pw
        for i in range(ph):
            rows = range(min(max(math.floor(i * size_h) + start_h, 0), height),
                         min(max(math.ceil((i + 1) * size_h) + start_h, 0), height))
            for j in range(pw):
                cols = range(min(max(math.floor(j * size_w) + start_w, 0), width),
                             min(max(math.ceil((j + 1) * size_w) + start_w, 0), width))
                bins.append([(b * height + r) * width + q for r in rows for q in cols])
    # every bin padded to the largest by repeating its last position (no max changes); an
    # empty bin reads position 0 and is zeroed afterwards
    most = max(max(len(p) for p in bins), 1)
    index = [p + [p[-1]] * (most - len(p)) if p else [0] * most for p in bins]
    flat = x.transpose(0, 1).reshape(c, n * height * width)
    picked = flat.index_select(1, tensor([i for row in index for i in row], device=x.device))
    pooled = picked.reshape(c, len(bins), most).amax(-1)
    empty = tensor([not p for p in bins], device=x.device)
    pooled = where(empty, 0.0, pooled).cast(x.dtype)
    return pooled.reshape(c, len(boxes), ph, pw).transpose(0, 1)


