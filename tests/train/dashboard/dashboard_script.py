"""A training run with the terminal dashboard, for test_terminal.py to drive in tmux:
``python dashboard_script.py RUN_DIR [--fail-at STEP]``. Each step sleeps a little, so that a
human-speed key press lands mid-run; `--fail-at` makes the loss raise at that step."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the training tests' helpers

from helpers import make_setup  # noqa: E402

import pyburn  # noqa: E402
import pyburn.nn.functional as F  # noqa: E402
from pyburn.train import Learner  # noqa: E402

STEP_S = 0.02


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--fail-at", type=int, default=None)
    args = parser.parse_args()
    model, optimizer, train, valid = make_setup(pyburn.device("cpu"), n=960)
    calls = [0]

    def loss(outputs, targets):
        calls[0] += 1
        if calls[0] == args.fail_at:
            raise RuntimeError(f"an injected failure at step {calls[0]}")
        time.sleep(STEP_S)
        return F.cross_entropy(outputs, targets)

    learner = Learner(model, optimizer, loss, run_dir=args.run_dir, log_every=5,
                      dashboard="tui")
    learner.fit(train, valid, epochs=20)


if __name__ == "__main__":
    main()
