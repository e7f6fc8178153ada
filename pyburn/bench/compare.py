"""``pyburn bench compare``: each case of a new set of records against its baseline, with a
significance test, so that noise is not called a regression.

A case is "slower" only when both hold: the two-sided Mann–Whitney U test says the samples
differ (p below `alpha`, 0.01 by default) and the median moved the wrong way by more than
`threshold` (5 % by default) in time, that is after / before of a cost, before / after of a
rate. The same in the right direction is "faster"; anything else "same". A run of 15 samples
against 15 can reach p < 0.01 only if the sets hardly overlap, so one slow run cannot make a
regression, and a consistent 1 % drift, significant or not, is below the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .history import latest
from .record import Record, higher_is_better
from .report import align, format_number
from .stats import mann_whitney_u

ALPHA = 0.01
THRESHOLD = 0.05
#: the verdicts, and what `regressions` counts
SLOWER, FASTER, SAME, NO_BASELINE = "slower", "faster", "same", "no baseline"


@dataclass(frozen=True)
class Change:
    """A case's new record against its baseline (None: there is none): the median's
    relative change, the time it takes relative to before (above 1: slower), the test's
    p-value, and the verdict."""

    before: Record | None
    after: Record
    change: float  # after / before - 1 of the medians, in the record's unit
    slowdown: float
    p: float
    verdict: str


def judge(before: Record | None, after: Record, alpha: float = ALPHA,
          threshold: float = THRESHOLD) -> Change:
    """The `Change` from `before` to `after` (records of the same case)."""
    if before is None:
        return Change(None, after, 0.0, 1.0, 1.0, NO_BASELINE)
    old, new = before.summary.median, after.summary.median
    slowdown = old / new if higher_is_better(after.unit) else new / old
    _, p = mann_whitney_u(before.samples, after.samples)
    verdict = SAME
    if p < alpha and slowdown > 1 + threshold:
        verdict = SLOWER
    elif p < alpha and slowdown < 1 / (1 + threshold):
        verdict = FASTER
    return Change(before, after, new / old - 1, slowdown, p, verdict)


def compare(before: Sequence[Record], after: Sequence[Record], *, same_machine: bool = False,
            alpha: float = ALPHA, threshold: float = THRESHOLD) -> list[Change]:
    """Each case of `after` (its newest record) against the newest record of that case in
    `before`; with `same_machine`, the newest from the machine of the record in `after`."""
    changes = []
    for key in dict.fromkeys(r.key for r in after):
        new = latest(after, key)
        assert new is not None  # (the key came from `after`)
        old = latest(before, key, new.run.machine_id if same_machine else None)
        changes.append(judge(old, new, alpha, threshold))
    return changes


def regressions(changes: Sequence[Change]) -> list[Change]:
    """The changes judged slower."""
    return [c for c in changes if c.verdict == SLOWER]


def _cells(c: Change) -> tuple[str, ...]:
    after = c.after
    now = f"{format_number(after.summary.median)} {after.unit}"
    if c.before is None:
        return after.benchmark, after.case, "-", now, "-", "-", c.verdict
    return (after.benchmark, after.case,
            f"{format_number(c.before.summary.median)} {after.unit}", now,
            f"{c.change:+.1%}", f"{c.p:.2g}", c.verdict)


def as_table(changes: Sequence[Change]) -> str:
    """The changes as an aligned table, with the runs compared and a closing count."""
    header = ("benchmark", "case", "before", "after", "change", "p", "verdict")
    lines = align([header] + [_cells(c) for c in changes], right={2, 3, 4, 5})
    befores = {f"{c.before.run.label} on {c.before.run.machine_id} ({c.before.run.time})"
               for c in changes if c.before is not None}
    afters = {f"{c.after.run.label} on {c.after.run.machine_id} ({c.after.run.time})"
              for c in changes}
    lines += ["", "before: " + "; ".join(sorted(befores) or ["nothing"]),
              "after:  " + "; ".join(sorted(afters)),
              f"{len(regressions(changes))} slower, "
              f"{sum(c.verdict == FASTER for c in changes)} faster, "
              f"{sum(c.verdict == SAME for c in changes)} same, "
              f"{sum(c.verdict == NO_BASELINE for c in changes)} without a baseline"]
    return "\n".join(lines)
