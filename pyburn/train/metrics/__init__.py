"""Metrics for `Learner`: each accumulates batch by batch on the device and is read back
only when the learner logs.

>>> from pyburn.train.metrics import Accuracy, F1Score, Loss
>>> [m.name for m in (Loss(), Accuracy(), F1Score(num_classes=3))]
['loss', 'accuracy', 'f1']
"""

from __future__ import annotations

from .base import Metric, StepOutput, Value, format_number
from .classification import (
    Accuracy,
    ConfusionMatrix,
    F1Score,
    Precision,
    Recall,
    TopKAccuracy,
    target_classes,
)
from .loss import Loss
from .system import CpuMemory, ItemsPerSecond, LearningRate, resident_memory

__all__ = ["Accuracy", "ConfusionMatrix", "CpuMemory", "F1Score", "ItemsPerSecond",
           "LearningRate", "Loss", "Metric", "Precision", "Recall", "StepOutput",
           "TopKAccuracy", "Value", "format_number", "resident_memory", "target_classes"]
