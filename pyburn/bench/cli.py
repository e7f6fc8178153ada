"""The ``pyburn bench`` command: ``run`` the suite (what ``pyburn bench NAME...`` means),
``history`` of the records, ``compare`` two sets of them, draw them on a ``board``.

Records go to, and are read from, a folder: ``benchmarks/`` by default, the project's own
history in pyburn's repository.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli_args import positive_int
from ..store.atomic import atomic_write
from . import board, catalogue, compare, history, record, select
from .record import Run
from .suite import run
from .timing import Settings

#: the subcommands; `pyburn bench` followed by anything else means `pyburn bench run ...`
ACTIONS = ("run", "history", "compare", "board")
#: where records are written and read unless --record / --dir says otherwise
FOLDER = Path("benchmarks")

_EPILOG = """\
examples:
  pyburn bench                       every family bound to a device (about a minute and a
                                     half, and rl's two); burn-bench's when named
  pyburn bench train                 training steps of the MNIST models against PyTorch
  pyburn bench rl                    DQN and PPO: time and steps to solve CartPole (minutes)
  pyburn bench store                 loading a 105 MB state dict against torch.load
  pyburn bench onnx                  imported ONNX models against onnxruntime
  pyburn bench models                the zoo's models against PyTorch and onnxruntime
  pyburn bench remote                a pyburn serve subprocess against local cpu
  pyburn bench gpu                   wgpu: matmul kernels, fusion, dispatch latency
  pyburn bench kernel                pyburn.kernel's examples against built-in ops, compiles
  pyburn bench web                   in headless Chromium (WebGPU, wasm, flex) against TF.js,
                                     and int8 products against onnxruntime-web
  pyburn bench matmul overhead.cpu   one family and one benchmark
  pyburn bench gemm conv2d --devices cpu,wgpu,flex --size small
                                     burn-bench's families on three devices
  pyburn bench --size small --json   small inputs, machine-readable output
  pyburn bench --list                what there is to run
  pyburn bench history matmul        every record of the matmul benchmarks, oldest first
  pyburn bench compare benchmarks/ new/ --same-machine   regressions of new/'s run
  pyburn bench board --out board.html                   the records as charts
"""


def with_action(argv: Sequence[str]) -> list[str]:
    """The ``pyburn`` command line `argv` with ``run`` put after ``bench`` when no
    subcommand (nor --help) follows it, so that ``pyburn bench matmul`` runs matmul.

    >>> with_action(["bench", "matmul"]), with_action(["bench", "history"])
    (['bench', 'run', 'matmul'], ['bench', 'history'])
    """
    if argv[:1] != ["bench"] or argv[1:2] and argv[1] in (*ACTIONS, "-h", "--help"):
        return list(argv)
    return ["bench", "run", *argv[1:]]


def _non_negative(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
        return value

    return parse


def _devices(text: str) -> tuple[str, ...]:
    devices = tuple(name.strip() for name in text.split(",") if name.strip())
    if not devices:
        raise argparse.ArgumentTypeError("names no device")
    return devices


def _add_run(actions: Any) -> None:
    defaults = Settings()
    parser = actions.add_parser(
        "run", help="run benchmarks (the default: pyburn bench NAME... is pyburn bench run "
        "NAME...)",
        description="Time pyburn's ops and the same ops on peers (numpy, PyTorch CPU, plain\n"
        "Python) in the same run, and compare each with its target. Progress goes to\n"
        "stderr, the report to stdout, and a JSON record per case to a file in --record.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="a family (matmul, overhead, ..., web; burn-bench's: unary, "
                        "binary, custom_gelu, reduce, gemm, softmax, conv2d, ...: see --list) "
                        "or one benchmark (matmul.flex); default: all")
    parser.add_argument("--devices", type=_devices, metavar="LIST",
                        help="comma-separated devices (cpu,wgpu,flex,wasm,remote+ws://HOST:PORT"
                        "): the benchmarks of these devices, and burn-bench's families (unary, "
                        "gemm, conv2d, transformer, ...) on each; default: burn-bench's "
                        "families, when named, on cpu and wgpu")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--list", action="store_true",
                        help="list the benchmarks (all there are, without NAME) and exit")
    parser.add_argument("--size", choices=record.SIZES, default="full",
                        help="the inputs: full (default; what the targets are set for) or "
                        "small (a smoke test: targets are not judged)")
    parser.add_argument("--quick", dest="size", action="store_const", const="small",
                        help="the same as --size small")
    parser.add_argument("--repeat", type=positive_int, default=defaults.repeat,
                        help=f"timed runs per candidate (default {defaults.repeat})")
    parser.add_argument("--warmup", type=_non_negative(int), default=defaults.warmup,
                        help=f"untimed calls first (default {defaults.warmup})")
    parser.add_argument("--min-time", type=_non_negative(float), default=defaults.min_run_s,
                        metavar="SECONDS",
                        help="each timed run repeats its call for at least this long "
                        f"(default {defaults.min_run_s})")
    parser.add_argument("--record", type=Path, default=FOLDER, metavar="DIR",
                        help=f"the folder the run's records go to (default {FOLDER}/)")
    parser.add_argument("--no-record", dest="record", action="store_const", const=None,
                        help="write no records")
    parser.set_defaults(run=_run)


def _add_history(actions: Any) -> None:
    parser = actions.add_parser(
        "history", help="list the records of each benchmark case, oldest first",
        description="List the records in DIR by benchmark case, one line per run: when, "
        "pyburn's version and commit, the machine, the median with its spread, and the "
        "ratios to the peers.")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="benchmarks or families to list (default: all)")
    parser.add_argument("--dir", type=Path, default=FOLDER, help=f"default {FOLDER}/")
    parser.set_defaults(run=_history)


def _add_compare(actions: Any) -> None:
    parser = actions.add_parser(
        "compare", help="compare two sets of records; exit status 1 on a regression",
        description="Compare each benchmark case of AFTER with its newest record in BEFORE: "
        "'slower' when a two-sided Mann-Whitney U test on the samples gives p < ALPHA and "
        "the median takes more than THRESHOLD longer (a rate: is that much lower). A file "
        "or folder of records on each side; of several records of one case, the newest.")
    parser.add_argument("before", type=Path, metavar="BEFORE", help="the baseline records")
    parser.add_argument("after", type=Path, metavar="AFTER", help="the records to judge")
    parser.add_argument("--same-machine", action="store_true",
                        help="compare each case with a record from its own machine only")
    parser.add_argument("--alpha", type=float, default=compare.ALPHA,
                        help=f"the significance level (default {compare.ALPHA})")
    parser.add_argument("--threshold", type=float, default=compare.THRESHOLD,
                        help=f"the smallest change that counts (default {compare.THRESHOLD}: "
                        "5%%)")
    parser.set_defaults(run=_compare)


def _add_board(actions: Any) -> None:
    parser = actions.add_parser(
        "board", help="write the records as a static HTML page of charts",
        description="Write one self-contained HTML page (no script, nothing fetched) with a "
        "chart per benchmark case: the median and min-max band of each run, oldest first, "
        "a line per device.")
    parser.add_argument("--dir", type=Path, default=FOLDER, help=f"default {FOLDER}/")
    parser.add_argument("--out", type=Path, default=Path("board.html"),
                        help="the page to write (default board.html)")
    parser.set_defaults(run=_board)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` subcommand, with its own subcommands, to the ``pyburn`` command's
    `subparsers` (`with_action` makes ``run`` the default one)."""
    parser = subparsers.add_parser(
        "bench",
        help="measure pyburn against numpy, PyTorch and plain Python; keep and compare records",
        description="pyburn's benchmarks: every number next to a peer measured in the same "
        "run, and records of every run to follow over time.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="bench_command", title="commands", metavar="COMMAND",
                                    required=True)
    for add in (_add_run, _add_history, _add_compare, _add_board):
        add(actions)
    return parser


def _run(args: argparse.Namespace) -> int:
    chosen = select(args.names, args.devices)
    if args.list:
        shown = chosen if args.names else catalogue(args.devices)
        width = max(len(b.name) for b in shown)
        for b in shown:
            print(f"{b.name:<{width}}  {b.about}")
        return 0
    settings = Settings(repeat=args.repeat, warmup=args.warmup, min_run_s=args.min_time,
                        quick=args.size == "small")
    started = Run.here(args.size)
    report = run(chosen, settings)
    print(report.as_json() if args.json else report.as_table())
    made = record.records(report, started)
    if args.record is not None and made:
        print(f"records: {record.write(made, args.record)}", file=sys.stderr)
    return 0


def _history(args: argparse.Namespace) -> int:
    print(history.as_table(history.matching(record.read([args.dir]), args.names)))
    return 0


def _compare(args: argparse.Namespace) -> int:
    changes = compare.compare(record.read([args.before]), record.read([args.after]),
                              same_machine=args.same_machine, alpha=args.alpha,
                              threshold=args.threshold)
    print(compare.as_table(changes))
    return 1 if compare.regressions(changes) else 0


def _board(args: argparse.Namespace) -> int:
    atomic_write(args.out, [board.page(record.read([args.dir])).encode()])
    print(f"wrote {args.out}")
    return 0
