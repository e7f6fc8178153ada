"""Detection quality: `mean_average_precision`, COCO's mAP (pycocotools' COCOeval with every
box area and at most `max_detections` per image and class, no crowd regions): per class and IoU
threshold, each image's detections by decreasing score are matched greedily to the unmatched
ground-truth box they overlap most (IoU at least the threshold); over all images, precision
is made non-increasing in recall and read at 101 recall levels; the mean of those is the
class's AP, and the mean over classes (those with ground truth) and thresholds is the mAP.
The boxes' IoU is `boxes.box_iou` on their device; the matching runs on the host, as its
shape depends on the data. `MeanAveragePrecision` is the same as a Learner metric.

>>> import pyburn
>>> box = pyburn.tensor([[0.0, 0, 10, 10]], device="flex")
>>> one = [{"boxes": box, "scores": pyburn.tensor([0.9], device="flex"),
...         "labels": pyburn.tensor([1], device="flex")}]
>>> mean_average_precision(one, [{"boxes": box, "labels": pyburn.tensor([1], device="flex")}])
{'map': 1.0, 'map_50': 1.0, 'map_75': 1.0}
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ArgumentError
from ..train.metrics.base import Metric, StepOutput, Value
from .boxes import box_iou

#: COCO's IoU thresholds 0.50, 0.55, ..., 0.95, and its 101 recall levels
COCO_THRESHOLDS = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))
RECALL_LEVELS = tuple(k / 100 for k in range(101))


def _lists(image: dict[str, Tensor], keys: tuple[str, ...]) -> list[list]:
    for key in keys:
        if not isinstance(image.get(key), Tensor):
            raise ArgumentError(f"each image is a dict with tensors {', '.join(keys)}; "
                                f"{key!r} is missing")
    return [image[key].tolist() for key in keys]


def mean_average_precision(predictions: Sequence[dict[str, Tensor]],
                           targets: Sequence[dict[str, Tensor]],
                           thresholds: Sequence[float] = COCO_THRESHOLDS,
                           max_detections: int = 100) -> dict[str, float]:
    """COCO's mAP over `thresholds` ("map"), and at IoU 0.5 and 0.75 ("map_50", "map_75"),
    of `predictions` (per image: "boxes" (K, 4) corners, "scores" (K,), "labels" (K,))
    against `targets` (per image: "boxes" (G, 4), "labels" (G,)); -1 where no class has
    ground truth."""
    if len(predictions) != len(targets):
        raise ArgumentError(f"{len(predictions)} images of predictions, {len(targets)} of "
                            "targets")
    levels = sorted(set(thresholds) | {0.5, 0.75})
    # per class: [(score, image, matched at each level)], and the ground truth's count
    found: dict[int, list[tuple[float, int, list[bool]]]] = {}
    truths: dict[int, int] = {}
    for index, (prediction, target) in enumerate(zip(predictions, targets)):
        _, scores, labels = _lists(prediction, ("boxes", "scores", "labels"))
        _, truth_labels = _lists(target, ("boxes", "labels"))
        for label in truth_labels:
            truths[int(label)] = truths.get(int(label), 0) + 1
        order = sorted(range(len(scores)), key=lambda k: -scores[k])
        if not order:
            continue
        overlaps = box_iou(prediction["boxes"].float(), target["boxes"].float()).tolist() \
            if truth_labels else [[] for _ in scores]
        for label in {int(labels[k]) for k in order}:
            mine = [k for k in order if int(labels[k]) == label][:max_detections]
            theirs = [g for g, t in enumerate(truth_labels) if int(t) == label]
            matched = [[False] * len(mine) for _ in levels]
            for level, threshold in enumerate(levels):
                taken: set[int] = set()
                for d, k in enumerate(mine):
                    best, choice = min(threshold, 1 - 1e-10), None
                    for g in theirs:
                        if g not in taken and overlaps[k][g] >= best:
                            best, choice = overlaps[k][g], g
                    if choice is not None:
                        taken.add(choice)
                        matched[level][d] = True
            found.setdefault(label, []).extend(
                (scores[k], index, [matched[level][d] for level in range(len(levels))])
                for d, k in enumerate(mine))
    averages: dict[float, list[float]] = {t: [] for t in levels}
    for label, count in truths.items():
        detections = sorted(found.get(label, []), key=lambda row: -row[0])
        for level, threshold in enumerate(levels):
            averages[threshold].append(_average_precision(
                [row[2][level] for row in detections], count))

    def mean_over(chosen: Sequence[float]) -> float:
        values = [v for t in chosen for v in averages[t]]
        return sum(values) / len(values) if values else -1.0
    return {"map": mean_over(thresholds), "map_50": mean_over([0.5]),
            "map_75": mean_over([0.75])}


def _average_precision(hits: list[bool], truths: int) -> float:
    """COCO's 101-point interpolated AP of detections in score order (True: matched)."""
    precision, recall, tp = [], [], 0
    for k, hit in enumerate(hits, 1):
        tp += hit
        precision.append(tp / k)
        recall.append(tp / truths)
    for k in range(len(precision) - 2, -1, -1):  # non-increasing in recall
        precision[k] = max(precision[k], precision[k + 1])
    total = 0.0
    for level in RECALL_LEVELS:
        at = bisect.bisect_left(recall, level)
        total += precision[at] if at < len(precision) else 0.0
    return total / len(RECALL_LEVELS)


class MeanAveragePrecision(Metric):
    """COCO's mAP as a Learner metric: a detection model's outputs for a batch are one dict
    per image ("boxes", "scores", "labels") and its targets one dict per image ("boxes",
    "labels"); every image of the epoch counts, and `compute` matches them all at once."""

    name = "map"
    higher_is_better = True
    splits = ("valid",)
    state_names = ("predictions", "targets")

    def __init__(self, thresholds: Sequence[float] = COCO_THRESHOLDS,
                 max_detections: int = 100):
        self.thresholds, self.max_detections = tuple(thresholds), max_detections
        self.reset()

    def reset(self) -> None:
        """Forget the images seen."""
        self.predictions: list[dict[str, Tensor]] = []
        self.targets: list[dict[str, Tensor]] = []

    def update(self, step: StepOutput) -> None:
        """Keep the batch's images (their tensors stay on the device until `compute`)."""
        if len(step.outputs) != len(step.targets):
            raise ArgumentError(f"{len(step.outputs)} images of outputs, "
                                f"{len(step.targets)} of targets")
        self.predictions.extend(step.outputs)
        self.targets.extend(step.targets)

    def compute(self) -> Value:
        """mAP over every image since `reset` (None before the first)."""
        if not self.predictions:
            return None
        return mean_average_precision(self.predictions, self.targets, self.thresholds,
                                      self.max_detections)["map"]
