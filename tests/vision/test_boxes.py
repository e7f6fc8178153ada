"""`pyburn.vision.boxes` on every device against plain numpy written here (IoU, GIoU, a greedy
NMS loop, masks to boxes) and OpenCV's NMS; gradients of IoU and GIoU against PyTorch's
autograd; bad shapes refused."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn.vision import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    generalized_box_iou,
    masks_to_boxes,
    nms,
)

cv2 = pytest.importorskip("cv2", reason="OpenCV's NMS is a reference: opencv-python-headless")
torch = pytest.importorskip("torch")


def random_boxes(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 50, (count, 2))
    size = rng.uniform(1, 30, (count, 2))
    return np.concatenate([corner, corner + size], axis=1).astype(np.float32)


def iou_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a.astype(np.float64)):
        for j, q in enumerate(b.astype(np.float64)):
            w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - w * h
            out[i, j] = w * h / union
    return out


def giou_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a.astype(np.float64)):
        for j, q in enumerate(b.astype(np.float64)):
            w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - w * h
            hull = (max(p[2], q[2]) - min(p[0], q[0])) * (max(p[3], q[3]) - min(p[1], q[1]))
            out[i, j] = w * h / union - (hull - union) / hull
    return out


def nms_reference(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    order = sorted(range(len(boxes)), key=lambda k: -scores[k])
    iou = iou_reference(boxes, boxes)
    kept: list[int] = []
    for k in order:
        if all(iou[k, j] <= threshold for j in kept):
            kept.append(k)
    return kept


def test_iou_and_giou_match_the_definitions(device):
    a, b = random_boxes(7, 0), random_boxes(5, 1)
    got = box_iou(pyburn.tensor(a, device=device), pyburn.tensor(b, device=device))
    np.testing.assert_allclose(got.numpy(), iou_reference(a, b), atol=1e-5)
    got = generalized_box_iou(pyburn.tensor(a, device=device), pyburn.tensor(b, device=device))
    np.testing.assert_allclose(got.numpy(), giou_reference(a, b), atol=1e-5)
    areas = box_area(pyburn.tensor(a, device=device)).numpy()
    np.testing.assert_allclose(areas, (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]), rtol=1e-6)


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7])
def test_nms_keeps_what_the_greedy_definition_and_opencv_keep(device, threshold):
    boxes = random_boxes(60, 2)
    scores = (np.random.default_rng(3).permutation(60).astype(np.float32) + 1) / 61
    got = nms(pyburn.tensor(boxes, device=device), pyburn.tensor(scores, device=device),
              threshold)
    assert got.dtype is pyburn.int32
    want = nms_reference(boxes, scores, threshold)
    assert got.tolist() == want
    xywh = [[float(x1), float(y1), float(x2 - x1), float(y2 - y1)] for x1, y1, x2, y2 in boxes]
    opencv = cv2.dnn.NMSBoxes(xywh, scores.tolist(), score_threshold=0.0,
                              nms_threshold=threshold)
    assert sorted(got.tolist()) == sorted(np.asarray(opencv).reshape(-1).tolist())


def test_batched_nms_never_suppresses_across_categories(device):
    boxes = random_boxes(40, 4)
    scores = np.random.default_rng(5).random(40).astype(np.float32)
    categories = np.random.default_rng(6).integers(0, 3, 40)
    got = batched_nms(pyburn.tensor(boxes, device=device), pyburn.tensor(scores, device=device),
                      pyburn.tensor(categories.astype(np.int32), device=device), 0.4).tolist()
    want = []
    for c in range(3):
        members = np.flatnonzero(categories == c)
        want += [int(members[k]) for k in nms_reference(boxes[members], scores[members], 0.4)]
    assert got == sorted(want, key=lambda k: -scores[k])


def test_masks_to_boxes_bound_the_true_pixels(device):
    rng = np.random.default_rng(7)
    masks = rng.random((4, 9, 11)) > 0.85
    masks[2] = False  # no pixel: (0, 0, 0, 0)
    got = masks_to_boxes(pyburn.tensor(masks, device=device)).numpy()
    for k, mask in enumerate(masks):
        ys, xs = np.nonzero(mask)
        want = [xs.min(), ys.min(), xs.max(), ys.max()] if len(xs) else [0, 0, 0, 0]
        np.testing.assert_array_equal(got[k], want)
    assert np.signbit(got[2]).sum() == 0  # zeros, not negative zeros


def test_formats_convert_both_ways(device):
    boxes = pyburn.tensor(random_boxes(6, 8), device=device)
    for fmt in ("xywh", "cxcywh"):
        there = box_convert(boxes, "xyxy", fmt)
        np.testing.assert_allclose(box_convert(there, fmt, "xyxy").numpy(), boxes.numpy(),
                                   atol=1e-5)
    xywh = box_convert(boxes, "xyxy", "xywh").numpy()
    np.testing.assert_allclose(xywh[:, 2:], boxes.numpy()[:, 2:] - boxes.numpy()[:, :2],
                               atol=1e-5)


@pytest.mark.parametrize("op", ["iou", "giou"])
def test_gradients_match_torch_autograd(device, op):
    a, b = random_boxes(5, 9), random_boxes(4, 10)
    weights = np.random.default_rng(11).standard_normal((5, 4)).astype(np.float32)
    grad_device = pyburn.device(device).autodiff()
    mine = pyburn.tensor(a, device=grad_device, requires_grad=True)
    ours = box_iou if op == "iou" else generalized_box_iou
    (ours(mine, pyburn.tensor(b, device=grad_device)) *
     pyburn.tensor(weights, device=grad_device)).sum().backward()
    ta = torch.tensor(a.astype(np.float64), requires_grad=True)
    tb = torch.tensor(b.astype(np.float64))
    top = torch.maximum(ta[:, None, :2], tb[None, :, :2])
    bottom = torch.minimum(ta[:, None, 2:], tb[None, :, 2:])
    inter = (bottom - top).clamp(min=0).prod(-1)
    area = lambda t: (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])  # noqa: E731
    union = area(ta)[:, None] + area(tb)[None] - inter
    value = inter / union
    if op == "giou":
        hull = (torch.maximum(ta[:, None, 2:], tb[None, :, 2:]) -
                torch.minimum(ta[:, None, :2], tb[None, :, :2])).clamp(min=0).prod(-1)
        value = value - (hull - union) / hull
    (value * torch.tensor(weights.astype(np.float64))).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), ta.grad.numpy(), rtol=1e-3, atol=1e-5)


def test_bad_shapes_are_refused():
    boxes = pyburn.zeros(3, 4, device="flex")
    with pytest.raises(pyburn.PyburnError, match=r"\(N, 4\)"):
        box_iou(pyburn.zeros(3, 5, device="flex"), boxes)
    with pytest.raises(pyburn.PyburnError, match="one score per box"):
        nms(boxes, pyburn.zeros(2, device="flex"), 0.5)
    with pytest.raises(pyburn.PyburnError, match="formats"):
        box_convert(boxes, "xyxy", "yxyx")
    assert nms(pyburn.zeros(0, 4, device="flex"), pyburn.zeros(0, device="flex"),
               0.5).tolist() == []
