"""Object detection: RoiAlign, MaxRoiPool and NonMaxSuppression.

All depend on data (box coordinates, scores), which they read back to Python: RoiAlign and
MaxRoiPool plan their samples from the boxes and then gather all of them from the feature
map in a few tensor ops; NonMaxSuppression is `pyburn.vision.nms` per batch and class (its
IoU matrix on the device, its greedy pass in Python, as the output's size depends on it).
"""

from __future__ import annotations

import math

from ... import Tensor, stack, tensor, where, zeros
from ...vision.boxes import box_convert, nms
from ..registry import check, index_dtype, ints, onnx_op


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


def _roi_align(x: Tensor, rois: Tensor, batch_indices: Tensor, half_pixel: bool, mode: str,
               output_height: int, output_width: int, sampling_ratio: int,
               spatial_scale: float) -> Tensor:
    op = "RoiAlign"
    check(mode in ("avg", "max"), f"{op}: mode must be avg or max, got {mode!r}")
    check(x.ndim == 4, f"{op}: X must be (N, C, H, W), got shape {x.shape}")
    boxes = rois.tolist()
    batches = ints(batch_indices)
    check(rois.ndim == 2 and rois.shape[1] == 4 and len(batches) == len(boxes),
          f"{op}: rois {rois.shape} must be (R, 4) with one batch index each "
          f"({len(batches)} given)")
    n, c, height, width = x.shape
    oh, ow = output_height, output_width
    if not boxes:
        return zeros(0, c, oh, ow, dtype=x.dtype, device=x.device)
    plans, counts = [], []
    offset = 0.5 if half_pixel else 0.0
    for (x1, y1, x2, y2), b in zip(boxes, batches):
        check(0 <= b < n, f"{op}: batch index {b} is out of range for {n} images")
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


@onnx_op("RoiAlign", since=10)
def roi_align_10(x: Tensor, rois: Tensor, batch_indices: Tensor, *, mode: str = "avg",
                 output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
                 spatial_scale: float = 1.0) -> Tensor:
    """RoiAlign (opset 10): as opset 16 with output_half_pixel coordinates."""
    return _roi_align(x, rois, batch_indices, False, mode, output_height, output_width,
                      sampling_ratio, spatial_scale)


@onnx_op("RoiAlign", since=16)
def roi_align(x: Tensor, rois: Tensor, batch_indices: Tensor, *,
              coordinate_transformation_mode: str = "half_pixel", mode: str = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0) -> Tensor:
    """RoiAlign: each box (x1, y1, x2, y2, scaled by spatial_scale) of rois (R, 4) cut from
    image batch_indices[r] into output_height x output_width bins, each the average (or the
    max) of sampling_ratio^2 bilinear samples (adaptive ceil(bin size) when 0): (R, C, oh,
    ow). half_pixel shifts the boxes by -0.5 pixel; output_half_pixel does not, and makes
    each box at least 1 pixel wide and high."""
    check(coordinate_transformation_mode in ("half_pixel", "output_half_pixel"),
          f"RoiAlign: coordinate_transformation_mode must be half_pixel or output_half_pixel, "
          f"got {coordinate_transformation_mode!r}")
    return _roi_align(x, rois, batch_indices, coordinate_transformation_mode == "half_pixel",
                      mode, output_height, output_width, sampling_ratio, spatial_scale)


def _round_away(v: float) -> int:
    """v rounded to the nearest int, halves away from zero (C's round, not Python's)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


@onnx_op("MaxRoiPool", since=1)
def max_roi_pool(x: Tensor, rois: Tensor, *, pooled_shape: list[int] | None = None,
                 spatial_scale: float = 1.0) -> Tensor:
    """MaxRoiPool: each box (batch, x1, y1, x2, y2) of rois (R, 5), scaled by spatial_scale
    and rounded, cut into pooled_shape bins whose max is taken (0 for an empty bin):
    (R, C, ph, pw)."""
    op = "MaxRoiPool"
    check(pooled_shape is not None and len(pooled_shape) == 2,
          f"{op}: pooled_shape must give 2 sizes, got {pooled_shape}")
    check(x.ndim == 4 and rois.ndim == 2 and rois.shape[1] == 5,
          f"{op}: X {x.shape} must be (N, C, H, W) and rois {rois.shape} (R, 5)")
    n, c, height, width = x.shape
    ph, pw = pooled_shape
    boxes = rois.tolist()
    if not boxes:
        return zeros(0, c, ph, pw, dtype=x.dtype, device=x.device)
    bins: list[list[int]] = []
    for b, x1, y1, x2, y2 in boxes:
        b = int(b)
        check(0 <= b < n, f"{op}: batch index {b} is out of range for {n} images")
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


def _corners(boxes: Tensor, center_point_box: int) -> Tensor:
    """ONNX's boxes (N, 4), (y1, x1, y2, x2) in either order or (xc, yc, w, h) with
    `center_point_box`, as (x_min, y_min, x_max, y_max)."""
    if center_point_box:
        return box_convert(boxes, "cxcywh", "xyxy")
    y1, x1, y2, x2 = (boxes[:, k] for k in range(4))
    return stack([x1.minimum(x2), y1.minimum(y2), x1.maximum(x2), y1.maximum(y2)], dim=1)


@onnx_op("NonMaxSuppression", since=10)
def non_max_suppression(boxes: Tensor, scores: Tensor,
                        max_output_boxes_per_class: Tensor | None = None,
                        iou_threshold: Tensor | None = None,
                        score_threshold: Tensor | None = None, *,
                        center_point_box: int = 0, device=None) -> Tensor:
    """NonMaxSuppression: per batch and class, greedily keep the highest-scoring boxes
    (scores above score_threshold, ties to the lower index) whose IoU with every kept box is
    at most iou_threshold, up to max_output_boxes_per_class: rows
    [batch, class, box index]. The selection is pyburn.vision's `nms`."""
    op = "NonMaxSuppression"
    check(boxes.ndim == 3 and boxes.shape[2] == 4 and scores.ndim == 3 and
          scores.shape[0] == boxes.shape[0] and scores.shape[2] == boxes.shape[1],
          f"{op}: boxes {boxes.shape} must be (B, N, 4) and scores {scores.shape} (B, C, N)")
    limit = ints(max_output_boxes_per_class)
    most = limit[0] if limit else 0
    iou_limit = float(iou_threshold.reshape(-1).tolist()[0]) if iou_threshold is not None \
        and iou_threshold.numel() else 0.0
    floor = float(score_threshold.reshape(-1).tolist()[0]) if score_threshold is not None \
        and score_threshold.numel() else None
    selected = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b], center_point_box)
        for c in range(scores.shape[1]):
            class_scores = scores[b, c]
            if floor is None:
                picked = list(range(boxes.shape[1]))
            else:
                picked = [i for i, s in enumerate(class_scores.tolist()) if s > floor]
            if not picked or most <= 0:
                continue
            chosen = tensor(picked, dtype="int32", device=boxes.device)
            kept = nms(corners[chosen], class_scores[chosen], iou_limit, limit=most)
            selected.extend([b, c, picked[i]] for i in kept.tolist())
    dtype = index_dtype(device if device is not None else boxes.device)
    if not selected:
        return zeros(0, 3, dtype=dtype, device=boxes.device)
    return tensor(selected, dtype=dtype, device=boxes.device)
