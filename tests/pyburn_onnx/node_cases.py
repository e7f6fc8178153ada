"""The ONNX backend node test suite's cases read with pyburn alone (no numpy, no ``onnx``
package), so that the Pyodide run reads them as the desktop does: where the suite is, its
case folders, and a case's inputs. `node_suite` adds the stored outputs, the ``onnx``
package's reader and the runner's report."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

import pyburn
from pyburn.onnx import ir, proto
from pyburn.onnx.tensors import to_tensor

#: reads one input file: (path, value kind, device) -> the value on the device
Reader = Callable[[str, str, pyburn.Device], Any]


def _suite() -> str | None:
    """The suite's folder in the installed ``onnx`` package (its wheel ships the suite), or
    None where that package is not installed (Pyodide)."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), "backend", "test", "data", "node")


SUITE = _suite()


def cases(pattern: str = "", suite: str | None = SUITE) -> list[str]:
    """The case folders of `suite` whose name contains `pattern`, sorted."""
    if suite is None:
        return []
    return sorted(os.path.join(suite, name) for name in os.listdir(suite)
                  if pattern in name and os.path.isdir(os.path.join(suite, name)))


def read_input(path: str, kind: str, device: pyburn.Device) -> Any:
    """An input file (a tensor, sequence or optional) read by pyburn's reader, on `device`."""
    with open(path, "rb") as f:
        data = f.read()
    return to_device(proto.read_tensor(data) if kind == "tensor" else
                     proto.read_value(data, kind), device)


def to_device(value: Any, device: pyburn.Device) -> Any:
    """An input value (`ir.TensorData`, a list of them, or None) as tensors on `device`."""
    if isinstance(value, ir.TensorData):
        return to_tensor(value, device)
    if isinstance(value, list):
        return [to_device(v, device) for v in value]
    return value


def inputs(folder: str, model: ir.Model, device: pyburn.Device,
           read: Reader = read_input) -> dict[str, Any]:
    """The case's inputs on `device`, by name (those its data set gives), each file read by
    `read`."""
    graph = model.graph
    real_inputs = [v for v in graph.inputs if v.name not in graph.initializers]
    feed = {}
    for i, info in enumerate(real_inputs):
        path = os.path.join(folder, "test_data_set_0", f"input_{i}.pb")
        if os.path.exists(path):
            feed[info.name] = read(path, info.kind, device)
    return feed
