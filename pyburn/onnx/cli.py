"""The ``pyburn onnx`` command: ``convert`` (ONNX to Python + safetensors), ``check`` (what
pyburn lacks to run a model) and ``info`` (a model's inputs, outputs and operators)."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

_EPILOG = """\
examples:
  pyburn onnx info model.onnx             inputs, outputs, opset and operator counts
  pyburn onnx info model.onnx --shapes    ... and every node's inferred output types
  pyburn onnx check model.onnx            can pyburn run it? (lists missing operators)
  pyburn onnx convert model.onnx -o out/  writes out/model.py and out/model.safetensors
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``onnx`` subcommand (with its own subcommands) to `subparsers`."""
    parser = subparsers.add_parser(
        "onnx", help="inspect ONNX models, check them, convert them to pyburn Python code",
        description="ONNX models in pyburn. `pyburn.onnx.load(path)` runs one directly; "
        "these commands inspect, check and convert.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="onnx_command", title="commands", metavar="COMMAND",
                                    required=True)
    convert = actions.add_parser(
        "convert", help="write a model as a pyburn Module in Python plus its weights",
        description="Write MODEL as OUT/NAME.py (a pyburn nn.Module subclass whose forward "
        "calls pyburn's ONNX operator functions) and OUT/NAME.safetensors (its weights).")
    convert.add_argument("model", metavar="MODEL", help="the .onnx file")
    convert.add_argument("-o", "--out", default=".", metavar="OUT",
                         help="folder to write into (default: the current one)")
    convert.add_argument("--name", help="file name stem (default: the model's)")
    convert.add_argument("--class-name", default="Model", help="the class name (default Model)")
    convert.set_defaults(run=_convert)
    for name, help_text, run in (
            ("check", "say whether pyburn can run a model; list what it lacks", _check),
            ("info", "show a model's inputs, outputs, opsets and operators", _info)):
        sub = actions.add_parser(name, help=help_text, description=help_text.capitalize() + ".")
        sub.add_argument("model", metavar="MODEL", help="the .onnx file")
        sub.set_defaults(run=run)
        if name == "info":
            sub.add_argument("--shapes", action="store_true",
                             help="also print each node's outputs with their inferred dtype "
                             "and shape")
    return parser


def _convert(args: argparse.Namespace) -> int:
    from .codegen import convert  # import time: the code generator (75 ms) loads when used

    code, weights = convert(args.model, args.out, class_name=args.class_name, name=args.name)
    print(f"wrote {code}\nwrote {weights}")
    return 0


def _check(args: argparse.Namespace) -> int:
    # import time: the reader and the passes (70 ms) load for this command only
    from . import read
    from .passes import prepare

    model = prepare(read(args.model))  # raises UnsupportedOperatorError listing what lacks
    print(f"{args.model}: pyburn runs all {len(model.graph.nodes)} nodes")
    return 0


def _info(args: argparse.Namespace) -> int:
    # import time: the reader and the passes (70 ms) load for this command only
    from . import read
    from .passes import walk

    model = read(args.model)
    graph = model.graph
    opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(model.opsets.items()))
    print(f"{args.model}: ir_version {model.ir_version}, opsets {opsets}"
          + (f", producer {model.producer_name} {model.producer_version}".rstrip()
             if model.producer_name else ""))
    for title, values in (("inputs", [v for v in graph.inputs
                                      if v.name not in graph.initializers]),
                          ("outputs", graph.outputs)):
        print(f"{title}:")
        for v in values:
            print(f"  {v.name}: {_type_text(v)}")
    weights = sum(t.numel for t in graph.initializers.values())
    print(f"initializers: {len(graph.initializers)} ({weights:,} values)")
    counts = Counter(n.op_type for n in walk(graph))
    print("operators: " + ", ".join(f"{op} x{n}" for op, n in counts.most_common()))
    if args.shapes:
        _print_shapes(model)
    return 0


def _type_text(v: Any) -> str:
    """``float32 batchx8x28x28``: a value's dtype and shape ("?" where unknown)."""
    if v is None:
        return "? ?"
    shape = "?" if v.shape is None else "x".join(
        "?" if d is None else str(d) for d in v.shape) or "scalar"
    return f"{v.dtype or '?'} {shape}"


def _print_shapes(model: Any) -> None:
    """Each node of the main graph with its outputs' inferred types (the file's graph, before
    the passes that `load` runs)."""
    # import time: shape inference and the passes load for --shapes only
    from .infer import infer
    from .passes import sort_graph

    graph = sort_graph(model.graph, ())
    types = infer(graph, model.opsets)
    print("shapes:")
    for node in graph.nodes:
        outs = ", ".join(f"{name}: {_type_text(types.get(name))}" for name in node.outputs
                         if name)
        print(f"  {node.op_type}{f' {node.name}' if node.name else ''} -> {outs}")
