"""Training: `Learner` runs the loop (metrics, logs, checkpoints, exact resumption after a
kill, early stopping, clean stops on Ctrl-C) and `pyburn plot` draws its curves.

>>> from pyburn.train import EarlyStopping, Learner, metrics
>>> EarlyStopping("valid/accuracy", patience=3)
EarlyStopping('valid/accuracy', patience=3, min_delta=0.0, mode=None)

docs/train.md describes the loop, the run folder and the resume guarantee.
"""

from __future__ import annotations

from . import metrics
from .checkpoints import CheckpointManager
from .control import Control, TrainingAborted
from .learner import Learner
from .metrics import (
    Accuracy,
    ConfusionMatrix,
    CpuMemory,
    F1Score,
    ItemsPerSecond,
    LearningRate,
    Loss,
    Metric,
    Precision,
    Recall,
    TopKAccuracy,
)
from .monitor import EarlyStopping, Monitor
from .plot import plot_run
from .render import Progress, Renderer, TerminalRenderer
from .runlog import RunLog, read_events, read_metrics

__all__ = ["Accuracy", "CheckpointManager", "ConfusionMatrix", "Control", "CpuMemory",
           "EarlyStopping", "F1Score", "ItemsPerSecond", "Learner", "LearningRate", "Loss",
           "Metric", "Monitor", "Precision", "Progress", "Recall", "Renderer", "RunLog",
           "TerminalRenderer", "TopKAccuracy", "TrainingAborted", "metrics", "plot_run",
           "read_events", "read_metrics"]
