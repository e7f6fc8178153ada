"""``pyburn dash RUN [RUN...]``: the dashboard over run folders, read only. It follows runs
that are still training (their new events appear as they are written) and draws several
runs' curves in one chart. Where it cannot open (stdout is not a terminal, textual is
missing) it prints each run's summary instead. ``--web`` serves the same views as a local
web page (`web`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .chart import summary_line
from .follow import Follower
from .live import unavailable_reason


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``dash`` subcommand to the ``pyburn`` command's `subparsers`."""
    parser = subparsers.add_parser(
        "dash", help="the training dashboard over run folders (read only; compares runs)",
        description="Open the training dashboard over the run folders of Learners "
        "(run_dir: the folder with events.jsonl), read only: a finished run, or one still "
        "training (followed as it writes). Several runs share each metric's chart. Keys: "
        "<-/-> metric, up/down plot kind, +/- smoothing, ? help, q quit. Without a terminal "
        "(or without textual: pip install 'pyburn[tui]') it prints each run's summary. "
        "--web serves the same views as a local web page instead.")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="a Learner's run_dir")
    parser.add_argument("--web", action="store_true",
                        help="serve the dashboard as a web page (until Ctrl-C) and print its "
                        "address")
    parser.add_argument("--host", default="127.0.0.1",
                        help="with --web: the address to listen on (default 127.0.0.1: this "
                        "machine only)")
    parser.add_argument("--port", type=int, default=8765,
                        help="with --web: the port (default 8765; 0 picks a free one)")
    parser.set_defaults(run=_main)
    return parser


def labels(folders: list[str]) -> list[str]:
    """A short, distinct name per folder: its last part, with more of its path where two
    would be alike."""
    parts = [folder.rstrip("/").split("/") for folder in folders]
    depth = 1
    while depth < max(len(p) for p in parts) and \
            len({"/".join(p[-depth:]) for p in parts}) < len(parts):
        depth += 1
    names: list[str] = []
    for p in parts:  # the same folder twice: numbered
        name = "/".join(p[-depth:])
        names.append(name if name not in names else f"{name} ({names.count(name) + 1})")
    return names


def _main(args: argparse.Namespace) -> int:
    followers = {name: Follower(folder) for name, folder in zip(labels(args.runs), args.runs)}
    if args.web:
        return _serve(followers, args.host, args.port)
    for follower in followers.values():
        follower.poll()
    reason = unavailable_reason()
    if reason is not None:
        print(f"pyburn dash: no dashboard ({reason}): each run's summary instead",
              file=sys.stderr)
        _print_summary(followers)
        return 0
    from .tui import Dashboard  # import time: textual, for the dashboard only

    states = {name: follower.state for name, follower in followers.items()}
    app = Dashboard(states, title=", ".join(followers),
                    poll=lambda: [follower.poll() for follower in followers.values()])
    app.run()
    return 0


def _serve(followers: dict[str, Follower], host: str, port: int) -> int:
    from .web import make_server  # import time: http.server, for --web only

    server = make_server([(name, f.folder) for name, f in followers.items()], host, port)
    print(f"pyburn dash: http://{host}:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _print_summary(followers: dict[str, Follower]) -> None:
    for name, follower in followers.items():
        state = follower.state
        print(f"{name}: {state.status}, step {state.where.step:,}, epoch "
              f"{state.where.epoch}/{state.where.epochs or '?'}")
        for metric in state.metric_names():
            for split, points in state.series(metric).items():
                print("  " + summary_line(f"{metric} {split}", points, 24))
