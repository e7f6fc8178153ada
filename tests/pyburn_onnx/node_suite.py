"""The ONNX backend node test suite (the cases the ``onnx`` wheel ships: a model.onnx and
its inputs and expected outputs as .pb files) run through `pyburn.onnx.load`.

    python -m tests.pyburn_onnx.node_suite [-k SUBSTRING] [--device cpu] [--reader pyburn|onnx] [-v]

prints one line per failing case (every case with -v) and a summary. The expected outputs
are read with the ``onnx`` package (an independent reader); the model and its inputs with
pyburn's own reader (``--reader onnx`` swaps in the ``onnx`` package there too).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

import pyburn
import pyburn.onnx
from pyburn.onnx import UnsupportedOperatorError, ir

from . import node_cases, onnx_reference
from .node_cases import cases
from .node_suite_known import BURN_SUPPORTED

#: the tolerances of onnx's own backend test runner
RTOL, ATOL = 1e-3, 1e-7


@dataclass
class Outcome:
    """What happened to one case: status is pass, fail, unsupported or error."""

    case: str
    status: str
    reason: str = ""


def _read_model(folder: str, reader: str) -> ir.Model:
    path = os.path.join(folder, "model.onnx")
    if reader == "onnx":
        return onnx_reference.load(path)
    return pyburn.onnx.read(path)


def _proto_of(path: str, kind: str) -> Any:
    message = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
               "optional": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        message.ParseFromString(f.read())
    return message


def _input_value(path: str, kind: str, reader: str, device: pyburn.Device) -> Any:
    if reader == "pyburn":
        return node_cases.read_input(path, kind, device)
    return node_cases.to_device(_reference_value(_proto_of(path, kind)), device)


def _reference_value(message: Any) -> Any:
    if isinstance(message, onnx.TensorProto):
        return onnx_reference.tensor_data(message)
    if isinstance(message, onnx.SequenceProto):
        return [onnx_reference.tensor_data(t) for t in message.tensor_values]
    if isinstance(message, onnx.OptionalProto):
        if message.HasField("tensor_value"):
            return onnx_reference.tensor_data(message.tensor_value)
        if message.HasField("sequence_value"):
            return _reference_value(message.sequence_value)
        return None
    raise TypeError(type(message))


def _expected(path: str, kind: str) -> Any:
    message = _proto_of(path, kind)
    if isinstance(message, onnx.TensorProto):
        return numpy_helper.to_array(message)
    if isinstance(message, onnx.SequenceProto):
        return [numpy_helper.to_array(t) for t in message.tensor_values]
    if message.HasField("tensor_value"):
        return numpy_helper.to_array(message.tensor_value)
    if message.HasField("sequence_value"):
        return [numpy_helper.to_array(t) for t in message.sequence_value.tensor_values]
    return None


def _compare(name: str, expected: Any, actual: Any) -> str:
    """Why `actual` differs from `expected` ("" when it does not)."""
    if expected is None or isinstance(expected, list):
        if expected is None:
            return "" if actual is None else f"{name}: expected an empty optional"
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{name}: expected a sequence of {len(expected)} tensors"
        return next((r for r in (_compare(f"{name}[{i}]", e, a)
                                 for i, e, a in zip(range(len(expected)), expected, actual))
                     if r), "")
    if not isinstance(actual, pyburn.Tensor):
        return f"{name}: expected a tensor, got {type(actual).__name__}"
    got = actual.numpy()
    if tuple(got.shape) != tuple(expected.shape):
        return f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    # ml_dtypes' types (bfloat16, float8s, int4, ...) have numpy kind "V": go by name
    narrow_int = expected.dtype.kind == "V" and "int" in expected.dtype.name
    if narrow_int:
        expected = expected.astype(np.int64)
    if expected.dtype.kind in "fcV":
        exp = np.asarray(expected, dtype=np.float64)
        if not got.dtype.kind == "f":
            return f"{name}: dtype {got.dtype}, expected {expected.dtype}"
        if not np.allclose(got.astype(np.float64), exp, rtol=RTOL, atol=ATOL, equal_nan=True):
            with np.errstate(invalid="ignore"):
                err = np.nanmax(np.abs(got.astype(np.float64) - exp)) if exp.size else 0.0
            return f"{name}: values differ (max abs error {err:.3g})"
        return ""
    if expected.dtype.kind == "b" and got.dtype.kind != "b":
        return f"{name}: dtype {got.dtype}, expected bool"
    if expected.dtype.kind in "iu" and got.dtype.kind not in "iu":
        return f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    if expected.dtype.kind in "OSU":
        return f"{name}: string outputs are not supported"
    if not np.array_equal(got.astype(np.int64), expected.astype(np.int64)):
        return f"{name}: values differ"
    return ""


def run_case(folder: str, device: pyburn.Device, reader: str = "pyburn") -> Outcome:
    """Run one case and say how it went."""
    case = os.path.basename(folder)
    try:
        model = _read_model(folder, reader)
        module = pyburn.onnx.load(model, device=device)
    except UnsupportedOperatorError as exc:
        return Outcome(case, "unsupported", str(exc).split(": ", 1)[-1])
    except Exception as exc:  # noqa: BLE001 - the report says what went wrong
        return Outcome(case, "error", f"load: {type(exc).__name__}: {exc}")
    try:
        feed = node_cases.inputs(folder, model, device,
                                 lambda path, kind, dev: _input_value(path, kind, reader, dev))
        outputs = module.run(feed)
    except Exception as exc:  # noqa: BLE001
        return Outcome(case, "error", f"run: {type(exc).__name__}: {exc}"[:300])
    data = os.path.join(folder, "test_data_set_0")
    for i, info in enumerate(model.graph.outputs):
        path = os.path.join(data, f"output_{i}.pb")
        if not os.path.exists(path):
            continue
        why = _compare(info.name, _expected(path, info.kind), outputs[info.name])
        if why:
            return Outcome(case, "fail", why)
    return Outcome(case, "pass")


def _operators(folder: str) -> set[str]:
    """The operator types a case's model uses (subgraphs included)."""
    from pyburn.onnx.passes import walk

    return {n.op_type for n in walk(pyburn.onnx.read(os.path.join(folder, "model.onnx")).graph)}


def main(argv: list[str] | None = None) -> int:
    """The command line: run the matching cases and print what failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--reader", default="pyburn", choices=("pyburn", "onnx"))
    parser.add_argument("-v", action="store_true", help="print passing cases too")
    args = parser.parse_args(argv)
    device = pyburn.device(args.device)
    counts: dict[str, int] = {}
    start = time.perf_counter()
    burn_cases = burn_passed = 0
    for folder in cases(args.k):
        outcome = run_case(folder, device, args.reader)
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        if _operators(folder) <= BURN_SUPPORTED:
            burn_cases += 1
            burn_passed += outcome.status == "pass"
        if args.v or outcome.status != "pass":
            print(f"{outcome.status:12} {outcome.case}  {outcome.reason}", flush=True)
    total = sum(counts.values())
    if burn_cases:
        print(f"cases whose operators are all on burn-onnx's supported list: "
              f"{burn_passed} of {burn_cases} pass ({100 * burn_passed / burn_cases:.1f}%)")
    print(f"{total} cases on {device}: " +
          ", ".join(f"{counts.get(s, 0)} {s}" for s in ("pass", "fail", "error", "unsupported"))
          + f" ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
