"""Metrics about the run rather than the model: the learning rate, the speed in items per
second, and the process's memory."""

from __future__ import annotations

import os
import time

from .base import Metric, StepOutput, Value


class LearningRate(Metric):
    """The learning rate of the optimizer's first parameter group at the last batch."""

    name = "lr"
    splits = ("train",)
    state_names = ("lr",)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the last value."""
        self.lr = None

    def update(self, step: StepOutput) -> None:
        """Note the optimizer's current learning rate (a Python number: no device work)."""
        groups = getattr(step.optimizer, "param_groups", None)
        if groups:
            self.lr = float(groups[0]["lr"])

    def compute(self) -> Value:
        """The last learning rate seen."""
        return self.lr

    def format(self, value: Value) -> str:
        """Learning rates are small: scientific notation."""
        return "-" if value is None else f"{value:.3g}"


class ItemsPerSecond(Metric):
    """Items processed per second of wall time since the last reset (an epoch's start),
    counting everything the loop does: loading, the step, logging."""

    name = "items_per_second"
    state_names = ("items", "seconds")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start timing now."""
        self.items = 0
        self.seconds = 0.0
        self._mark = time.perf_counter()

    def update(self, step: StepOutput) -> None:
        """Add the batch's items and the time since the previous batch."""
        now = time.perf_counter()
        self.seconds += now - self._mark
        self._mark = now
        self.items += step.items

    def compute(self) -> Value:
        """Items per second (None before the first batch)."""
        return self.items / self.seconds if self.seconds > 0 else None

    def load_state_dict(self, state: dict) -> None:
        """Put back the counts; timing goes on from now."""
        super().load_state_dict(state)
        self._mark = time.perf_counter()


def resident_memory() -> int | None:
    """Bytes of memory this process holds: the resident set size from /proc (Linux), else
    the peak resident size from `resource` (macOS, the BSDs), else None where the platform
    tells neither (Windows, Pyodide)."""
    try:
        with open("/proc/self/statm", "rb") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import resource  # optional: Unix only
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in bytes on macOS and in KiB on the other systems that have it
    return peak if os.uname().sysname == "Darwin" else peak * 1024


class CpuMemory(Metric):
    """The process's resident memory in MiB when the value is read (see `resident_memory`);
    None, and so left out of the logs, where the platform does not tell."""

    name = "cpu_memory_mib"

    def reset(self) -> None:
        """Nothing accumulates."""

    def update(self, step: StepOutput) -> None:
        """Nothing to do per batch."""

    def compute(self) -> Value:
        """Resident memory now, in MiB."""
        found = resident_memory()
        return None if found is None else found / 2**20

    def format(self, value: Value) -> str:
        """MiB, to one decimal."""
        return "-" if value is None else f"{value:,.1f}"
