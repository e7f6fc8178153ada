"""`make typecheck`: mypy over pyburn and tests/typing/usage.py ([tool.mypy] in pyproject.toml),
held to a baseline that may only shrink.

typecheck-baseline.txt lists the errors pyburn still has, one line each as ``path: message
[code]`` with no line number, so that editing a file does not churn it. The run fails on any
error the baseline does not list, and also when a listed error is gone, asking for
``--update`` so that the fix is recorded and the error cannot come back unseen. Before mypy
it checks that pyburn/_tensor.pyi is current (scripts/tensor_stub.py), since mypy reads the
Tensor methods from there.

    python scripts/typecheck.py           # check
    python scripts/typecheck.py --update  # record fixed errors (refuses new ones)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import tensor_stub  # beside this file

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "typecheck-baseline.txt"
BASELINE_HEADER = """\
# mypy's errors that pyburn still has (scripts/typecheck.py, `make typecheck`): one line per
# error, `path: message  [code]`, no line numbers. This list may only shrink: an error not in
# it fails the check, and a fixed one asks for `python scripts/typecheck.py --update`.
"""
#: one error of mypy's plain output: ``path:line[:column]: error: message  [code]``
ERROR = re.compile(r"^(?P<path>[^:\n]+):\d+(?::\d+)?: error: (?P<message>.*)$")
#: line numbers inside messages ("already defined on line 349")
LINE_REF = re.compile(r"\bline \d+\b")
MYPY_ARGS = ("--no-error-summary", "--hide-error-context", "--no-pretty", "--no-color-output",
             "--show-error-codes")


def normalize(output: str) -> Counter[str]:
    """The errors of mypy's `output` as baseline lines (notes dropped), with their counts."""
    errors: Counter[str] = Counter()
    for line in output.splitlines():
        match = ERROR.match(line.strip())
        if match:
            path = match["path"].replace("\\", "/")
            errors[f"{path}: {LINE_REF.sub('line N', match['message'].rstrip())}"] += 1
    return errors


def read_baseline(path: Path) -> Counter[str]:
    """The baseline's errors with their counts (an absent file lists none)."""
    if not path.exists():
        return Counter()
    lines = (line.rstrip("\n") for line in path.read_text().splitlines())
    return Counter(line for line in lines if line and not line.startswith("#"))


def write_baseline(errors: Counter[str], path: Path) -> None:
    path.write_text(BASELINE_HEADER + "".join(f"{e}\n" for e in sorted(errors.elements())))


def run_mypy(args: Sequence[str] = ()) -> tuple[int, str, float]:
    """mypy's exit status, its output and its run time in seconds."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mypy", *MYPY_ARGS, *args], cwd=ROOT,
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def listing(title: str, errors: Iterable[str], limit: int = 50) -> str:
    errors = list(errors)
    shown = [f"  {e}" for e in errors[:limit]]
    more = [f"  ... and {len(errors) - limit} more"] if len(errors) > limit else []
    return "\n".join([title, *shown, *more])


def compare(current: Counter[str], baseline: Counter[str]) -> tuple[list[str], list[str]]:
    """(errors not in the baseline, baseline errors that are gone), each sorted, an error
    that occurs n times more than listed counting n times."""
    return sorted((current - baseline).elements()), sorted((baseline - current).elements())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="rewrite the baseline without the errors that are fixed (or "
                             "write it, where there is none)")
    parser.add_argument("--accept-new", action="store_true",
                        help="with --update, also list new errors: only for errors that moved "
                             "with their file (a renamed module), never to let one in")
    args = parser.parse_args(argv)
    if tensor_stub.main(["--check"]) != 0:
        return 1
    try:
        import mypy  # noqa: F401
    except ImportError:
        print("typecheck: mypy is not installed here; `make setup-python` installs the dev "
              "extra", file=sys.stderr)
        return 2
    status, output, seconds = run_mypy()
    current = normalize(output)
    if status not in (0, 1) or (status == 1 and not current):
        print(output, file=sys.stderr)
        print(f"typecheck: mypy failed to run (exit status {status})", file=sys.stderr)
        return 2
    baseline = read_baseline(BASELINE)
    new, fixed = compare(current, baseline)
    # no number before a word such as "errors": stages.py would read it as test counts
    took = f"mypy: errors found {sum(current.values())}, listed in {BASELINE.name} " \
           f"{sum(baseline.values())} ({seconds:.1f} s)"
    if args.update:
        if new and BASELINE.exists() and not args.accept_new:
            print(listing(f"{took}\nnot updated: these errors are new; fix them (the baseline "
                          "only shrinks):", new), file=sys.stderr)
            return 1
        write_baseline(current, BASELINE)
        print(f"{took}\nwrote {BASELINE.name}: fixed errors removed {len(fixed)}"
              + (f", added {len(new)}" if new else ""))
        return 0
    print(took)
    if new:
        keys = set(new)
        lines = [line for line in output.splitlines() if normalize(line).keys() & keys]
        print(listing(f"new errors ({len(new)}): fix them, the baseline only shrinks; mypy "
                      "says:", lines), file=sys.stderr)
    if fixed:
        print(listing(f"fixed errors ({len(fixed)}) that {BASELINE.name} still lists: run "
                      "`python scripts/typecheck.py --update` to record the fix:", fixed),
              file=sys.stderr)
    if new and fixed:
        print("(an error that moved with its code, to another file, counts as fixed there and "
              "new here: after such a move, `python scripts/typecheck.py --update --accept-new`)",
              file=sys.stderr)
    return 1 if new or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
