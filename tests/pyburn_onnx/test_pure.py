"""pyburn.onnx with nothing but pyburn: a model built as `ir`, written by pyburn's protobuf
writer, read back, run on flex and converted to Python that runs too, and the generated code
of a sample of the ONNX backend node test suite against the runner on flex. No numpy and no
``onnx`` package, so this file also runs inside Pyodide (`make test-pyodide`)."""

from __future__ import annotations

import os
import struct

import pytest
from conformance.helpers import GOLDEN

import pyburn
import pyburn.nn.functional as F
import pyburn.onnx
from pyburn.onnx import UnsupportedOperatorError, ir, proto
from pyburn.onnx.codegen import convert

from . import node_cases, parity
from .node_suite_known import GENERATED_DIFFERENCES, expected

DEV = "flex"
#: the sample is every this-many-th case of the node suite (353 cases, 4 s inside Pyodide;
#: all 1,765 take 20 s)
SAMPLE_STRIDE = 5
#: where the desktop run records the node suite's folder for the Pyodide run
SUITE_KEY = "pyburn_onnx/node suite folder"


def _tensor(name: str, values: list[float], dims: tuple[int, ...]) -> ir.TensorData:
    return ir.TensorData(name, "float32", dims, struct.pack(f"<{len(values)}f", *values))


def _model() -> tuple[ir.Model, dict[str, pyburn.Tensor]]:
    pyburn.manual_seed(5)
    weights = {"conv.weight": pyburn.randn(2, 1, 3, 3, device=DEV),
               "conv.bias": pyburn.randn(2, device=DEV),
               "fc.weight": pyburn.randn(3, 8, device=DEV),
               "fc.bias": pyburn.randn(3, device=DEV)}
    inits = {name: _tensor(name, t.reshape(-1).tolist(), tuple(t.shape))
             for name, t in weights.items()}
    inits["shape"] = ir.TensorData("shape", "int64", (2,), struct.pack("<2q", -1, 8))
    nodes = [
        ir.Node("Conv", ["x", "conv.weight", "conv.bias"], ["c"],
                {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
        ir.Node("Relu", ["c"], ["r"]),
        ir.Node("Reshape", ["r", "shape"], ["flat"]),
        ir.Node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], {"transB": 1}),
        ir.Node("Softmax", ["y"], ["p"], {"axis": -1}),
    ]
    graph = ir.Graph(nodes, [ir.ValueInfo("x", "float32", ("n", 1, 4, 4))],
                     [ir.ValueInfo("p", "float32", ("n", 3))], inits, name="tiny")
    return ir.Model(graph, {"": 17}, ir_version=8, producer_name="pyburn tests"), weights


def _reference(x: pyburn.Tensor, w: dict[str, pyburn.Tensor]) -> pyburn.Tensor:
    h = F.relu(F.conv2d(x, w["conv.weight"], w["conv.bias"], stride=2, padding=1))
    return F.softmax(F.linear(h.reshape(-1, 8), w["fc.weight"], w["fc.bias"]), dim=-1)


def _close(a: pyburn.Tensor, b: pyburn.Tensor) -> bool:
    return bool(pyburn.isclose(a, b, rtol=1e-5, atol=1e-6).all().item())


def test_written_model_reads_back_and_runs(tmp_path):
    model, weights = _model()
    path = tmp_path / "tiny.onnx"
    proto.save_model(model, str(path))
    module = pyburn.onnx.load(str(path), device=DEV)
    x = pyburn.randn(2, 1, 4, 4, device=DEV)
    assert _close(module(x), _reference(x, weights))
    assert sorted(module.state_dict()) == ["conv_bias", "conv_weight", "fc_bias", "fc_weight",
                                           "shape"]


def test_generated_code_runs_without_numpy(tmp_path):
    model, weights = _model()
    code_path, weights_path = convert(model, str(tmp_path), name="tiny")
    namespace: dict = {}
    with open(code_path, encoding="utf-8") as f:
        exec(compile(f.read(), code_path, "exec"), namespace)
    generated = namespace["Model"].load(weights_path, device=DEV)
    assert isinstance(generated.conv, pyburn.nn.Conv2d)  # raised to layers
    assert isinstance(generated.fc, pyburn.nn.Linear)
    x = pyburn.randn(3, 1, 4, 4, device=DEV)
    assert _close(generated(x), _reference(x, weights))


def test_command_line_checks_converts_and_reports(tmp_path, capsys):
    from pyburn.cli import main

    model, _ = _model()
    path = tmp_path / "tiny.onnx"
    proto.save_model(model, str(path))
    assert main(["onnx", "check", str(path)]) == 0
    assert "pyburn runs all 5 nodes" in capsys.readouterr().out
    assert main(["onnx", "convert", str(path), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "tiny.py").exists()
    assert (tmp_path / "out" / "tiny.safetensors").exists()
    model.graph.nodes.append(ir.Node("NoSuchOp", ["p"], ["q"]))
    model.graph.outputs = [ir.ValueInfo("q")]
    proto.save_model(model, str(path))
    assert main(["onnx", "check", str(path)]) == 1
    assert "NoSuchOp" in capsys.readouterr().err


def _node_suite() -> str:
    """The node suite's folder: the ``onnx`` package's, which the desktop run records for the
    Pyodide run (no ``onnx`` package there, but the repository, its .venv included, is mounted
    at the same path)."""
    if node_cases.SUITE is not None:
        GOLDEN.remember(SUITE_KEY, node_cases.SUITE)
        return node_cases.SUITE
    return GOLDEN.recall(SUITE_KEY)


def test_generated_code_gives_the_runners_results_on_a_node_suite_sample(tmp_path):
    suite = _node_suite()
    if not os.path.isdir(suite):
        pytest.skip(f"the node suite recorded at {suite} is not reachable here")
    sample = node_cases.cases(suite=suite)[::SAMPLE_STRIDE]
    compared, problems = 0, []
    for folder in sample:
        case = os.path.basename(folder)
        try:
            model_class, weights = parity.generated(os.path.join(folder, "model.onnx"),
                                                    tmp_path / case)
        except UnsupportedOperatorError:
            continue
        why = parity.case_difference(folder, model_class, weights, DEV)
        compared += why is not None
        if why and expected(GENERATED_DIFFERENCES, case, DEV, why) is None:
            problems.append(f"{case}: {why}")
    assert not problems, "\n".join(problems)
    assert compared > 0.9 * len(sample)  # the runner runs all but a few of them
