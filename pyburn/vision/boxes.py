"""Boxes: (N, 4) float tensors, (x1, y1, x2, y2) corners unless a format says otherwise
(torchvision's conventions). Areas, IoU and generalized IoU are tensor ops (every device,
with gradients); non-maximum suppression computes its IoU matrix on the device and makes its
greedy pass on the host over one read of that matrix (and one of the scores, ordered there,
ties to the lower index), with each row a Python integer used as a bitset, so a pass over N
boxes costs about N^2 / 64 word operations. ONNX's NonMaxSuppression runs on it.

>>> import pyburn
>>> boxes = pyburn.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], device="flex")
>>> nms(boxes, pyburn.tensor([0.9, 0.8, 0.7], device="flex"), 0.5).tolist()
[0, 2]
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dtypes import bool_, float32, int32
from ..errors import ArgumentError, ShapeError
from ..ops.creation import arange, tensor
from ..ops.math_ops import where
from ..ops.movement import stack

#: the formats `box_convert` knows
FORMATS = ("xyxy", "xywh", "cxcywh")


def _check(boxes: Tensor, name: str) -> None:
    if not isinstance(boxes, Tensor) or boxes.ndim != 2 or boxes.shape[1] != 4:
        shape = boxes.shape if isinstance(boxes, Tensor) else type(boxes).__name__
        raise ShapeError(f"{name} takes boxes of shape (N, 4), got {shape}")


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """`boxes` from `in_fmt` to `out_fmt`: "xyxy" (corners), "xywh" (corner, size) or
    "cxcywh" (centre, size)."""
    _check(boxes, "box_convert")
    for fmt in (in_fmt, out_fmt):
        if fmt not in FORMATS:
            raise ArgumentError(f"box formats are {', '.join(FORMATS)}, got {fmt!r}")
    a, b, c, d = (boxes[:, k] for k in range(4))
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - c / 2, b - d / 2, a + c / 2, b + d / 2
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return stack([a, b, c, d], dim=1)


def box_area(boxes: Tensor) -> Tensor:
    """(x2 - x1) * (y2 - y1) of each box, (N,)."""
    _check(boxes, "box_area")
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _overlaps(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """The intersections' areas and the unions' areas of every pair, (N, M) each."""
    top_left = a[:, None, :2].maximum(b[None, :, :2])
    bottom_right = a[:, None, 2:].minimum(b[None, :, 2:])
    size = (bottom_right - top_left).clamp(min=0)
    inter = size[..., 0] * size[..., 1]
    return inter, box_area(a)[:, None] + box_area(b)[None, :] - inter


def box_iou(a: Tensor, b: Tensor) -> Tensor:
    """The intersection over union of every box of `a` with every box of `b`, (N, M)."""
    _check(a, "box_iou")
    _check(b, "box_iou")
    inter, union = _overlaps(a, b)
    return inter / union


def generalized_box_iou(a: Tensor, b: Tensor) -> Tensor:
    """IoU less the part of the smallest box around both that neither covers, (N, M), in
    [-1, 1] (Rezatofighi et al., 2019): defined, and with a gradient, for boxes that do not
    overlap."""
    _check(a, "generalized_box_iou")
    _check(b, "generalized_box_iou")
    inter, union = _overlaps(a, b)
    top_left = a[:, None, :2].minimum(b[None, :, :2])
    bottom_right = a[:, None, 2:].maximum(b[None, :, 2:])
    size = (bottom_right - top_left).clamp(min=0)
    hull = size[..., 0] * size[..., 1]
    return inter / union - (hull - union) / hull


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float,
        limit: int | None = None) -> Tensor:
    """The indices (int32, by decreasing score, ties to the lower index) of the boxes kept by
    greedy non-maximum suppression: the best-scoring box is kept, every box whose IoU with
    it exceeds `iou_threshold` is dropped, and so on with the best of those left; at most
    `limit` of them (None: all). A box of no area overlaps nothing."""
    _check(boxes, "nms")
    if not isinstance(scores, Tensor) or scores.shape != (boxes.shape[0],):
        raise ShapeError(f"nms takes one score per box: boxes {boxes.shape}, scores "
                         f"{getattr(scores, 'shape', type(scores).__name__)}")
    count = boxes.shape[0]
    if count == 0:
        return tensor([], dtype=int32, device=boxes.device)
    values = scores.detach().tolist()
    order = sorted(range(count), key=lambda k: (-values[k], k))
    ranked = boxes.detach()[tensor(order, dtype=int32, device=boxes.device)]
    over = box_iou(ranked, ranked) > iou_threshold  # NaN (no area) is never over
    rows = over.to_bytes()  # a byte a pair, 0 or 1: row i's bytes as an integer's bits 8j
    alive = int.from_bytes(b"\x01" * count, "little")
    kept: list[int] = []
    for i in range(count):
        if limit is not None and len(kept) >= limit:
            break
        if alive >> (8 * i) & 1:
            kept.append(order[i])
            alive &= ~int.from_bytes(rows[i * count:(i + 1) * count], "little")
    return tensor(kept, dtype=int32, device=boxes.device)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """`nms` within each category of `idxs` (one integer per box): boxes of different
    categories never suppress each other. Each category's boxes are moved apart by more
    than the boxes' extent, so that one `nms` does them all."""
    _check(boxes, "batched_nms")
    if not isinstance(idxs, Tensor) or idxs.shape != (boxes.shape[0],):
        raise ShapeError(f"batched_nms takes one category per box: boxes {boxes.shape}, "
                         f"idxs {getattr(idxs, 'shape', type(idxs).__name__)}")
    if boxes.shape[0] == 0:
        return tensor([], dtype=int32, device=boxes.device)
    extent = boxes.detach().amax() - boxes.detach().amin() + 1
    shift = (idxs.to(boxes.dtype) * extent)[:, None]
    return nms(boxes.detach() + shift, scores, iou_threshold)


def masks_to_boxes(masks: Tensor) -> Tensor:
    """The box around the true (nonzero) pixels of each mask (N, H, W), as float xyxy with
    inclusive corners (torchvision's): a mask with no pixel gives (0, 0, 0, 0)."""
    if not isinstance(masks, Tensor) or masks.ndim != 3:
        raise ShapeError(f"masks_to_boxes takes masks (N, H, W), got "
                         f"{getattr(masks, 'shape', type(masks).__name__)}")
    on = masks.to(bool_)
    x1, x2 = first_last(on.any(dim=1))  # the columns any pixel is in, (N, W)
    y1, y2 = first_last(on.any(dim=2))  # the rows, (N, H)
    return stack([x1, y1, x2, y2], dim=1)


def first_last(hit: Tensor) -> tuple[Tensor, Tensor]:
    """The first and the last place along the last dim of bool `hit` (..., L) that is true,
    as floats (0 and 0 where none is)."""
    length = hit.shape[-1]
    places = arange(length, dtype=float32, device=hit.device)
    missing = hit.logical_not().to(float32) * length
    found = hit.any(dim=-1)
    return (where(found, (places + missing).amin(dim=-1), 0.0),
            where(found, (places - missing).amax(dim=-1), 0.0))
