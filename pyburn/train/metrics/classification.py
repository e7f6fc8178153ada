"""Classification metrics: accuracy, top-k accuracy, the confusion matrix, and macro
precision, recall and F1 derived from it.

Outputs are scores (logits or probabilities) with the class dimension at 1, as
``cross_entropy`` takes them: (N, C) or (N, C, d1, ...). Targets are class indices of shape
(N, d1, ...), or class probabilities / one-hot rows of the outputs' shape (their argmax is the
class). Counts accumulate on the device as int32 tensors and are read back only by `compute`.
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...dtypes import int32
from ...errors import ArgumentError, ShapeError
from ...ops.creation import ones_like, zeros
from ...ops.math_ops import where
from .base import Metric, StepOutput, Value, add


def _check_classes(num_classes: Any, what: str) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ArgumentError(f"{what} needs num_classes, a positive int, got {num_classes!r}")
    return num_classes


def target_classes(outputs: Tensor, targets: Tensor) -> Tensor:
    """The class index of every target: `targets` itself for integer class indices, the
    argmax over dim 1 for probabilities or one-hot rows (same shape as `outputs`)."""
    if not isinstance(outputs, Tensor) or not isinstance(targets, Tensor):
        raise ArgumentError("classification metrics need tensor outputs and targets, got "
                            f"{type(outputs).__name__} and {type(targets).__name__}")
    if outputs.ndim < 2:
        raise ShapeError(f"classification outputs have the class dim at 1, (N, C, ...); got "
                         f"shape {outputs.shape}")
    if targets.shape == outputs.shape and targets.dtype.is_floating_point:
        return targets.argmax(dim=1)
    expected = outputs.shape[:1] + outputs.shape[2:]
    if targets.shape != expected:
        raise ShapeError(f"targets of shape {targets.shape} do not fit outputs of shape "
                         f"{outputs.shape}: expected class indices {expected} or "
                         f"probabilities {outputs.shape}")
    return targets.cast(int32)


class Accuracy(Metric):
    """The fraction of items whose highest-scoring class is the target class."""

    name = "accuracy"
    higher_is_better = True
    state_names = ("correct", "count")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start counting again."""
        self.correct = None
        self.count = 0

    def update(self, step: StepOutput) -> None:
        """Count the batch's hits on the device."""
        target = target_classes(step.outputs, step.targets)
        hits = (step.outputs.argmax(dim=1) == target).sum()
        self.correct = add(self.correct, hits.cast(int32))
        self.count += target.numel()

    def compute(self) -> Value:
        """Hits / items (None before the first batch)."""
        if self.correct is None or not self.count:
            return None
        return self.correct.item() / self.count


class TopKAccuracy(Accuracy):
    """The fraction of items whose target class is among the `k` highest-scoring ones; its
    name is ``top{k}_accuracy``."""

    def __init__(self, k: int = 5) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ArgumentError(f"TopKAccuracy needs k, a positive int, got {k!r}")
        self.k = k
        self.name = f"top{k}_accuracy"
        super().__init__()

    def update(self, step: StepOutput) -> None:
        """Count the batch's items whose class is in the top k, on the device."""
        target = target_classes(step.outputs, step.targets)
        if step.outputs.shape[1] < self.k:
            raise ShapeError(f"top-{self.k} accuracy of outputs with only "
                             f"{step.outputs.shape[1]} classes")
        top = step.outputs.topk(self.k, dim=1).indices
        hits = (top == target.unsqueeze(1)).any(dim=1).sum()
        self.correct = add(self.correct, hits.cast(int32))
        self.count += target.numel()

    def __repr__(self) -> str:
        return f"TopKAccuracy(k={self.k})"


class ConfusionMatrix(Metric):
    """Counts of (target class, predicted class) pairs: ``matrix[t][p]``, a list of
    `num_classes` rows. Targets outside ``[0, num_classes)`` (such as an ignore index of
    -100) are left out. The counts are one scatter-add per batch on the device."""

    name = "confusion_matrix"
    state_names = ("counts",)

    def __init__(self, num_classes: int) -> None:
        self.num_classes = _check_classes(num_classes, type(self).__name__)
        self.reset()

    def reset(self) -> None:
        """Start counting again."""
        self.counts = None

    def update(self, step: StepOutput) -> None:
        """Add the batch's pairs to the counts."""
        c = self.num_classes
        target = target_classes(step.outputs, step.targets).flatten()
        predicted = step.outputs.argmax(dim=1).flatten()
        valid = (target >= 0) & (target < c)
        # out-of-range targets go to one extra bin past the matrix, dropped by `matrix`
        index = where(valid, target * c + predicted, c * c)
        if self.counts is None:
            self.counts = zeros(c * c + 1, dtype=int32, device=index.device)
        self.counts = self.counts.scatter_add(0, index, ones_like(index))

    def matrix(self) -> list[list[int]] | None:
        """The counts as rows (target class) of columns (predicted class); None when
        nothing was counted yet."""
        if self.counts is None:
            return None
        c = self.num_classes
        flat = self.counts.tolist()
        return [flat[i * c:(i + 1) * c] for i in range(c)]

    def compute(self) -> Value:
        """The matrix (see `matrix`)."""
        return self.matrix()

    def format(self, value: Value) -> str:
        """Matrices are too big for a progress line: only their size is shown."""
        return f"{self.num_classes}x{self.num_classes}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_classes={self.num_classes})"


def per_class(matrix: list[list[int]]) -> list[tuple[int, int, int]]:
    """(true positives, false positives, false negatives) of each class that occurs among
    the targets or the predictions; classes that never occur are left out."""
    c = len(matrix)
    out = []
    for k in range(c):
        tp = matrix[k][k]
        fp = sum(matrix[t][k] for t in range(c)) - tp
        fn = sum(matrix[k]) - tp
        if tp + fp + fn:
            out.append((tp, fp, fn))
    return out


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


class _MacroAverage(ConfusionMatrix):
    """A per-class score from the confusion matrix, averaged over the classes that occur
    (macro average, each class weighing the same); a 0/0 score of a class counts as 0."""

    higher_is_better = True

    @staticmethod
    def score(tp: int, fp: int, fn: int) -> float:
        """The score of one class."""
        raise NotImplementedError

    def compute(self) -> Value:
        """The macro average (None when nothing was counted yet)."""
        matrix = self.matrix()
        classes = per_class(matrix) if matrix is not None else []
        if not classes:
            return None
        return sum(self.score(*counts) for counts in classes) / len(classes)

    def format(self, value: Value) -> str:
        """As any number."""
        return Metric.format(self, value)


class Precision(_MacroAverage):
    """Macro precision: the mean over classes of tp / (tp + fp)."""

    name = "precision"

    @staticmethod
    def score(tp: int, fp: int, fn: int) -> float:
        """Precision of one class."""
        return _ratio(tp, tp + fp)


class Recall(_MacroAverage):
    """Macro recall: the mean over classes of tp / (tp + fn)."""

    name = "recall"

    @staticmethod
    def score(tp: int, fp: int, fn: int) -> float:
        """Recall of one class."""
        return _ratio(tp, tp + fn)


class F1Score(_MacroAverage):
    """Macro F1: the mean over classes of 2 tp / (2 tp + fp + fn) (each class's harmonic
    mean of precision and recall, then averaged)."""

    name = "f1"

    @staticmethod
    def score(tp: int, fp: int, fn: int) -> float:
        """F1 of one class."""
        return _ratio(2 * tp, 2 * tp + fp + fn)
