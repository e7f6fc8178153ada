"""`make test`, stage by stage: each stage is a make target, run in order and timed, and the
run ends with a table of what ran, what passed and what was skipped, with the reason.

A part of the run is skipped only when $PYBURN_SKIP names it (``PYBURN_SKIP=wgpu,browser``):
skipping is the user's choice, never the default. Where a part cannot run (no GPU adapter and
no Mesa driver, no Chromium) its stage fails and says why.

Standard library only: it runs before the project's virtual environment exists.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import system_deps  # beside this file

#: what each part of the run covers, for the summary and for bad $PYBURN_SKIP values
PARTS = {
    "wgpu": "the wgpu backend's share of the desktop suite (a GPU adapter, or Mesa's CPU driver)",
    "pyodide": "the suites inside Pyodide under Node",
    "browser": "the demo site's end-to-end tests and the conformance suite on WebGPU, in Chromium",
    "terminal": "the training dashboard's real-terminal tests of the desktop suite, in tmux",
}
#: a test runner's closing counts, as pytest prints them ("12 passed, 1 skipped in 3.2s")
COUNTS = re.compile(r"\b(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)\b")


@dataclass(frozen=True)
class Stage:
    """One step of the run: a make target, the part it belongs to (None: always runs), and
    whether later stages depend on it (a failed set-up stage ends the run)."""

    name: str
    target: str
    part: str | None = None
    setup: bool = False


STAGES = (
    Stage("system packages", "system-deps", setup=True),
    Stage("python environment", "setup-python", setup=True),
    Stage("lint", "lint"),  # ruff and the import-layer contracts
    Stage("typecheck", "typecheck"),  # mypy against its baseline, the Tensor stub current
    Stage("doctests", "test-doctests"),
    Stage("desktop suite", "test-desktop"),
    Stage("pyodide set-up", "setup-pyodide", part="pyodide", setup=True),
    Stage("pyodide suite", "test-pyodide", part="pyodide"),
    Stage("demo site", "site", part="browser", setup=True),
    Stage("end-to-end", "test-e2e", part="browser"),
    Stage("browser conformance", "test-browser-conformance", part="browser"),
)


@dataclass
class Outcome:
    """How a stage ended: "passed", "failed", "skipped" or "not run", with its time and
    its test counts (or the reason it was skipped)."""

    stage: Stage
    status: str
    seconds: float = 0.0
    detail: str = ""
    counts: dict[str, int] | None = None


def skipped_parts(environ: Mapping[str, str] = os.environ) -> set[str]:
    """The parts $PYBURN_SKIP names; an unknown name is an error that lists the known ones."""
    named = system_deps.skipped_parts(environ)
    unknown = sorted(named - set(PARTS))
    if unknown:
        raise SystemExit(f"PYBURN_SKIP names {', '.join(unknown)}, which is not a part of the "
                         f"run; the parts are: {', '.join(PARTS)}")
    return named


def closing_counts(lines: Sequence[str]) -> dict[str, int] | None:
    """The counts of the last test-runner summary among `lines`, or None."""
    for line in reversed(lines):
        found = COUNTS.findall(line)
        if found and (" in " in line or line.rstrip().endswith(("passed", "skipped"))):
            return {("error" if kind.startswith("error") else kind): int(n) for n, kind in found}
    return None


def run_stage(make: str, stage: Stage) -> Outcome:
    """Run `stage`'s make target with its output passed through; its outcome."""
    print(f"\n==== {stage.name}: {make} {stage.target}", flush=True)
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen([make, "--no-print-directory", stage.target], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line)
    seconds = time.monotonic() - started
    status = "passed" if proc.returncode == 0 else "failed"
    print(f"==== {stage.name} {status} in {format_time(seconds)}", flush=True)
    return Outcome(stage, status, seconds, counts=closing_counts(list(tail)))


def format_time(seconds: float) -> str:
    """`seconds` as "1m05s" (or "4.2s" under a minute)."""
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def summary(outcomes: Sequence[Outcome], skipped: set[str], total_s: float) -> str:
    """The closing table: one row per stage, the parts skipped on purpose, then the totals
    of every test runner (a failed stage that ran no tests counts as one failure)."""
    rows = [f"make test, {format_time(total_s)} in all:"]
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for o in outcomes:
        what = o.detail
        if o.status == "failed" and not o.counts:
            totals["failed"] += 1
        if o.counts:
            what = ", ".join(f"{n} {kind}" for kind, n in o.counts.items())
            for kind in totals:
                totals[kind] += o.counts.get(kind, 0) + (o.counts.get("error", 0)
                                                          if kind == "failed" else 0)
        took = format_time(o.seconds) if o.status in ("passed", "failed") else ""
        rows.append(f"  {o.stage.name:<20} {o.status:<8} {took:>7}  {what}".rstrip())
    rows += [f"  skipped on purpose: {part} ({PARTS[part]})" for part in PARTS if part in skipped]
    rows.append(f"tests: {totals['passed']} passed, {totals['failed']} failed, "
                f"{totals['skipped']} skipped")
    return "\n".join(rows)


def run(make: str, stages: Sequence[Stage], skipped: set[str]) -> tuple[list[Outcome], bool]:
    """Every stage in order (a failed set-up stage stops the run); the outcomes and
    whether all that ran passed."""
    outcomes: list[Outcome] = []
    stopped = False
    for stage in stages:
        if stage.part in skipped:
            outcomes.append(Outcome(stage, "skipped",
                                    detail=f"PYBURN_SKIP={stage.part}: {PARTS[stage.part]}"))
        elif stopped:
            outcomes.append(Outcome(stage, "not run", detail="an earlier set-up stage failed"))
        else:
            outcome = run_stage(make, stage)
            outcomes.append(outcome)
            stopped = stage.setup and outcome.status == "failed"
    return outcomes, all(o.status in ("passed", "skipped") for o in outcomes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `make test`'s stages; 0 when every stage that was not skipped passed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--make", default="make", help="the make program (make passes $(MAKE))")
    args = parser.parse_args(argv)
    skipped = skipped_parts()
    started = time.monotonic()
    outcomes, ok = run(args.make, STAGES, skipped)
    print("\n" + summary(outcomes, skipped, time.monotonic() - started))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
