"""`pyburn.vision.detection.mean_average_precision` on every device against pycocotools'
COCOeval: random ground truth and detections (jittered copies and strays, several classes,
images without detections), mAP over COCO's thresholds and at 0.5 and 0.75."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import pyburn
from pyburn.vision.detection import mean_average_precision

pytest.importorskip("pycocotools", reason="pycocotools' COCOeval is the reference")
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402

IMAGES, CLASSES = 6, 3


def scene(seed: int):
    """Per image: ground truth (boxes, labels) and detections (boxes, scores, labels), on a
    grid of half pixels (exact in float32, so no IoU lands differently on a threshold)."""
    rng = np.random.default_rng(seed)
    truths, detections = [], []
    for _ in range(IMAGES):
        count = int(rng.integers(1, 6))
        corner = rng.uniform(0, 80, (count, 2))
        size = rng.uniform(5, 40, (count, 2))
        boxes = np.round(np.concatenate([corner, corner + size], 1) * 2) / 2
        labels = rng.integers(1, CLASSES + 1, count)
        copies = int(rng.integers(0, 10))
        picked = rng.integers(0, count, copies)
        found = np.concatenate([boxes[picked] + rng.normal(0, 4, (copies, 4)),
                                rng.uniform(0, 80, (copies // 3, 4))])
        found = np.round(np.concatenate([np.minimum(found[:, :2], found[:, 2:]),
                                         np.maximum(found[:, :2], found[:, 2:])], 1) * 2) / 2
        found_labels = np.concatenate([labels[picked], rng.integers(1, CLASSES + 1, copies // 3)])
        truths.append((boxes, labels))
        detections.append((found.reshape(-1, 4), rng.random(len(found)).round(3),
                           found_labels.astype(int)))
    return truths, detections


def cocoeval(truths, detections) -> list[float]:
    annotations = [{"id": len(truths) * 100 + k * 10 + j, "image_id": k, "category_id": int(label),
                    "bbox": [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])],
                    "area": float((b[2] - b[0]) * (b[3] - b[1])), "iscrowd": 0}
                   for k, (boxes, labels) in enumerate(truths)
                   for j, (b, label) in enumerate(zip(boxes, labels))]
    results = [{"image_id": k, "category_id": int(label), "score": float(score),
                "bbox": [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]}
               for k, (boxes, scores, labels) in enumerate(detections)
               for b, score, label in zip(boxes, scores, labels)]
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = {"images": [{"id": k} for k in range(len(truths))],
                         "categories": [{"id": c} for c in range(1, CLASSES + 1)],
                         "annotations": annotations}
        truth.createIndex()
        evaluation = COCOeval(truth, truth.loadRes(results), "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return list(evaluation.stats[:3])


@pytest.mark.parametrize("seed", [0, 1])
def test_map_equals_cocoevals(device, seed):
    truths, detections = scene(seed)
    predictions = [{"boxes": pyburn.tensor(b.astype(np.float32), device=device),
                    "scores": pyburn.tensor(s.astype(np.float32), device=device),
                    "labels": pyburn.tensor(label.astype(np.int32), device=device)}
                   for b, s, label in detections]
    targets = [{"boxes": pyburn.tensor(b.astype(np.float32), device=device),
                "labels": pyburn.tensor(label.astype(np.int32), device=device)}
               for b, label in truths]
    got = mean_average_precision(predictions, targets)
    want = cocoeval(truths, detections)
    assert [got["map"], got["map_50"], got["map_75"]] == pytest.approx(want, abs=1e-6)


def test_mismatched_inputs_are_refused():
    with pytest.raises(pyburn.PyburnError, match="images"):
        mean_average_precision([], [{"boxes": pyburn.zeros(0, 4, device="flex")}])
    with pytest.raises(pyburn.PyburnError, match="scores"):
        mean_average_precision([{"boxes": pyburn.zeros(0, 4, device="flex")}],
                               [{"boxes": pyburn.zeros(0, 4, device="flex"),
                                 "labels": pyburn.zeros(0, device="flex")}])


def test_the_learner_metric_counts_every_image_of_the_epoch():
    from pyburn.train.metrics import StepOutput
    from pyburn.vision.detection import MeanAveragePrecision

    truths, detections = scene(0)
    predictions = [{"boxes": pyburn.tensor(b.astype(np.float32), device="cpu"),
                    "scores": pyburn.tensor(s.astype(np.float32), device="cpu"),
                    "labels": pyburn.tensor(label.astype(np.int32), device="cpu")}
                   for b, s, label in detections]
    targets = [{"boxes": pyburn.tensor(b.astype(np.float32), device="cpu"),
                "labels": pyburn.tensor(label.astype(np.int32), device="cpu")}
               for b, label in truths]
    metric = MeanAveragePrecision()
    assert metric.compute() is None
    for part in (slice(0, 4), slice(4, IMAGES)):
        metric.update(StepOutput(predictions[part], targets[part],
                                 pyburn.tensor(0.0, device="cpu"), 1, "valid"))
    assert metric.compute() == pytest.approx(cocoeval(truths, detections)[0], abs=1e-6)
