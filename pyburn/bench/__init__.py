"""pyburn's benchmarks (``pyburn bench``): every number next to a peer measured in the same run.

One module per family (matmul, overhead, elementwise, reduction, conv, autodiff, train, rl,
store, onnx, models, gpu, kernel, remote, wasm, web); each holds a ``BENCHMARKS`` tuple whose
entries are named ``family.device``. A run prints a table (or JSON with ``--json``) in which
every row gives pyburn's median, its fastest run, the peer's median, the ratio of their speeds
and the target with a pass/miss mark. Peers (numpy, PyTorch, plain Python) are optional: a missing
one is reported as "not installed".

>>> from pyburn import bench
>>> [b.name for b in bench.select(["matmul"])]
['matmul.flex', 'matmul.cpu']
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentError
from . import (
    autodiff,
    conv,
    elementwise,
    gpu,
    kernel,
    matmul,
    models,
    onnx,
    overhead,
    reduction,
    remote,
    rl,
    store,
    train,
    wasm,
    web,
)
from .report import Report, Row, Target
from .suite import Benchmark, run
from .timing import Settings, Timing, measure

#: every benchmark, in the order a full run goes through them
BENCHMARKS: tuple[Benchmark, ...] = (matmul.BENCHMARKS + overhead.BENCHMARKS
                                     + elementwise.BENCHMARKS + reduction.BENCHMARKS
                                     + conv.BENCHMARKS + autodiff.BENCHMARKS
                                     + train.BENCHMARKS + rl.BENCHMARKS + store.BENCHMARKS
                                     + onnx.BENCHMARKS + models.BENCHMARKS
                                     + gpu.BENCHMARKS + kernel.BENCHMARKS
                                     + remote.BENCHMARKS + wasm.BENCHMARKS
                                     + web.BENCHMARKS)

_EPILOG = """\
examples:
  pyburn bench                       everything (about a minute and a half, and rl's two)
  pyburn bench train                 training steps of the MNIST models against PyTorch
  pyburn bench rl                    DQN and PPO: time and steps to solve CartPole (minutes)
  pyburn bench store                 loading a 105 MB state dict against torch.load
  pyburn bench onnx                  imported ONNX models against onnxruntime
  pyburn bench models                the zoo's models against PyTorch and onnxruntime
  pyburn bench remote                a pyburn serve subprocess against local cpu
  pyburn bench gpu                   wgpu: matmul kernels, fusion, dispatch latency
  pyburn bench kernel                pyburn.kernel's examples against built-in ops, compiles
  pyburn bench web                   in headless Chromium (WebGPU, flex) against TF.js
  pyburn bench matmul overhead.cpu   one family and one benchmark
  pyburn bench --quick --json        small inputs, machine-readable output
  pyburn bench --list                what there is to run
"""


def select(names: Sequence[str]) -> list[Benchmark]:
    """The benchmarks named by `names` (a family such as "matmul" or a benchmark such as
    "matmul.flex"), in suite order; every benchmark when `names` is empty."""
    known = {b.name for b in BENCHMARKS} | {b.family for b in BENCHMARKS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ArgumentError(f"unknown benchmark {', '.join(map(repr, unknown))}; known: "
                            f"{', '.join(sorted(known))}")
    wanted = set(names)
    return [b for b in BENCHMARKS if not wanted or b.name in wanted or b.family in wanted]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
        return value

    return parse


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` subcommand to the ``pyburn`` command's `subparsers`; its parsed
    arguments carry ``run=main``."""
    defaults = Settings()
    parser = subparsers.add_parser(
        "bench",
        help="measure pyburn against numpy, PyTorch and plain Python, in one run",
        description="Time pyburn's ops and the same ops on peers (numpy, PyTorch CPU, plain\n"
        "Python) in the same run, and compare each with its target. Progress goes to\n"
        "stderr, the report to stdout.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="a family (matmul, overhead, elementwise, reduction, conv, "
                        "autodiff, train, rl, store, onnx, models, gpu, kernel, remote, web) or "
                        "one benchmark (matmul.flex); default: all")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--quick", action="store_true",
                        help="small inputs (a smoke test: targets are not judged)")
    parser.add_argument("--repeat", type=_positive, default=defaults.repeat,
                        help=f"timed runs per candidate (default {defaults.repeat})")
    parser.add_argument("--warmup", type=_non_negative(int), default=defaults.warmup,
                        help=f"untimed calls first (default {defaults.warmup})")
    parser.add_argument("--min-time", type=_non_negative(float), default=defaults.min_run_s,
                        metavar="SECONDS",
                        help="each timed run repeats its call for at least this long "
                        f"(default {defaults.min_run_s})")
    parser.set_defaults(run=main)
    return parser


def main(args: argparse.Namespace) -> int:
    """Run the ``bench`` subcommand with its parsed arguments; returns the exit status."""
    chosen = select(args.names)
    if args.list:
        width = max(len(b.name) for b in chosen)
        for b in chosen:
            print(f"{b.name:<{width}}  {b.about}")
        return 0
    settings = Settings(repeat=args.repeat, warmup=args.warmup, min_run_s=args.min_time,
                        quick=args.quick)
    report = run(chosen, settings)
    print(report.as_json() if args.json else report.as_table())
    return 0


__all__ = ["BENCHMARKS", "Benchmark", "Report", "Row", "Settings", "Target", "Timing",
           "add_parser", "main", "measure", "run", "select"]
