"""``pyburn models``: the model zoo's models, a line each (name, task, whose weights load
into it, what it is)."""

from __future__ import annotations

import argparse
from typing import Any

from .registry import TASKS, describe, list_models


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``models`` subcommand to the ``pyburn`` command's `subparsers`."""
    parser = subparsers.add_parser(
        "models", help="list the model zoo's models (pyburn.models.create(name, weights))",
        description="List the models pyburn.models.create builds: each one's name, task, "
        "whose published weights (.pth, .safetensors) load into it, and what it is.")
    parser.add_argument("--task", choices=TASKS, help="only the models of this task")
    parser.set_defaults(run=_main)
    return parser


def _main(args: argparse.Namespace) -> int:
    rows = describe(list_models(args.task))
    columns = ("name", "task", "weights")
    widths = {c: max((len(row[c]) for row in rows), default=0) for c in columns}
    for row in rows:
        print("  ".join(f"{row[c]:<{widths[c]}}" for c in columns), row["description"],
              sep="  ")
    return 0
