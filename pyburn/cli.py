"""The ``pyburn`` command line: ``pyburn info`` tells what this machine offers pyburn.

Each subcommand is a parser built in `build_parser` and a function that takes the parsed
arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence

import pyburn

from .backends import wgpu
from .bench import cli as bench_cli
from .devices import default_device, device_report
from .errors import PyburnError
from .models import cli as models_cli
from .models import mnist_job
from .onnx import cli as onnx_cli
from .remote import cli as remote_cli
from .runtime import IN_BROWSER
from .train import plot
from .train.dashboard import cli as dash_cli
from .web import cli as web_cli

_EPILOG = """\
examples:
  pyburn info                      devices available here, and the default one
  PYBURN_DEVICE=flex pyburn info   the same, with the default device chosen by hand
  pyburn bench                     pyburn's speed next to numpy, PyTorch and plain Python
  pyburn bench board               the benchmark records of benchmarks/ as charts
  pyburn models                    the model zoo: pyburn.models.create(name, weights=...)
  pyburn train mnist               train the MNIST CNN (what `make demo` runs), save its weights
  pyburn train mnist --model mlp --epochs 1 --run-dir runs/mlp
  pyburn plot runs/mlp             training curves of a Learner's run_dir, as SVG
  pyburn dash runs/mlp runs/cnn    the training dashboard over runs (live ones followed)
  pyburn onnx convert model.onnx -o out/   an ONNX model as pyburn Python code + weights
  pyburn web build app.py -o dist/         an app as a static site (pyburn web serve dist/)
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pyburn`` command, with one sub-parser per subcommand."""
    parser = argparse.ArgumentParser(
        prog="pyburn",
        description="pyburn: a deep-learning framework in Python modelled on Burn.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pyburn {pyburn.__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    info = commands.add_parser(
        "info",
        help="show versions, the devices available here and the default device",
        description="Show pyburn's and Python's versions, every device kind with whether it "
        "works here (and if not, why not), and which device new tensors go to.",
    )
    info.set_defaults(run=_info)
    bench_cli.add_parser(commands)
    mnist_job.add_parser(commands)
    models_cli.add_parser(commands)
    plot.add_parser(commands)
    dash_cli.add_parser(commands)
    onnx_cli.add_parser(commands)
    remote_cli.add_parser(commands)
    web_cli.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pyburn`` command on `argv` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(bench_cli.with_action(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.run(args)
    except PyburnError as exc:
        print(f"pyburn {args.command}: error: {exc}", file=sys.stderr)
        return 1


def _info(args: argparse.Namespace) -> int:
    location = os.path.dirname(pyburn.__file__)
    print(f"pyburn {pyburn.__version__} ({location})")
    print(f"Python {platform.python_version()} ({platform.python_implementation()}) "
          f"on {platform.platform()}")
    print()
    report = device_report()
    width = max(len(kind) for kind, _ in report)
    print("devices, fastest first:")
    for kind, reason in report:
        print(f"  {kind:<{width}}  {'available' if reason is None else 'unavailable: ' + reason}")
    print()
    _print_adapters()
    # Resolved last: a bad $PYBURN_DEVICE is reported after the table that helps to fix it.
    chosen = os.environ.get("PYBURN_DEVICE")
    why = (f"from PYBURN_DEVICE={chosen}" if chosen
           else "the fastest available; set PYBURN_DEVICE to choose another")
    print(f"default device: {default_device()} ({why})")
    return 0


def _print_adapters() -> None:
    """The wgpu adapters, in `wgpu:N` order, with their API, kind and key limits."""
    found = wgpu.adapters()
    if not found:
        return
    after = "wasm" if IN_BROWSER else "cpu and wasm"
    print(f"wgpu adapters (device wgpu:N; a software adapter ranks after {after}):")
    for i, (info, limits) in enumerate(found):
        print(f"  {i}  {info.name} via {info.backend} ({info.adapter_type}): bindings up to "
              f"{limits.max_storage_buffer_binding_size >> 20} MiB, buffers up to "
              f"{limits.max_buffer_size >> 20} MiB, {limits.max_workgroups_per_dimension} "
              f"workgroups per grid dim")
    print()
