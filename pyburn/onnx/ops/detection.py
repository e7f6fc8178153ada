"""Object detection: RoiAlign, MaxRoiPool and NonMaxSuppression, on pyburn.vision's
`roi.align`, `roi.roi_pool` and `boxes.nms` (per batch and class): here only ONNX's
attributes and layouts are mapped onto them.
"""

from __future__ import annotations

from ... import Tensor, stack, tensor, zeros
from ...errors import ArgumentError
from ...vision.boxes import box_convert, nms
from ...vision.roi import align, roi_pool
from ..registry import check, index_dtype, ints, onnx_op


@onnx_op("RoiAlign", since=10)
def roi_align_10(x: Tensor, rois: Tensor, batch_indices: Tensor, *, mode: str = "avg",
                 output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
                 spatial_scale: float = 1.0) -> Tensor:
    """RoiAlign (opset 10): as opset 16 with output_half_pixel coordinates."""
    return align(x, rois, ints(batch_indices), False, mode, output_height, output_width,
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
    return align(x, rois, ints(batch_indices), coordinate_transformation_mode == "half_pixel",
                 mode, output_height, output_width, sampling_ratio, spatial_scale)


@onnx_op("MaxRoiPool", since=1)
def max_roi_pool(x: Tensor, rois: Tensor, *, pooled_shape: list[int] | None = None,
                 spatial_scale: float = 1.0) -> Tensor:
    """MaxRoiPool: each box (batch, x1, y1, x2, y2) of rois (R, 5), scaled by spatial_scale
    and rounded, cut into pooled_shape bins whose max is taken (0 for an empty bin):
    (R, C, ph, pw)."""
    if pooled_shape is None or len(pooled_shape) != 2:
        raise ArgumentError(f"MaxRoiPool: pooled_shape must give 2 sizes, got {pooled_shape}")
    return roi_pool(x, rois, (pooled_shape[0], pooled_shape[1]), spatial_scale)


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
