"""Imported ONNX models on the cpu device against onnxruntime's CPU provider, in the same run.

Inference rows (ms per call; the ratio is onnxruntime's time over pyburn's, above 1: pyburn
faster; the issue's goal is at least 0.5): a CNN (the MNIST demo's shape: two 3x3 convs with
batch norm, ReLU and max-pool, two linear layers) at batch 1 and 64, and a transformer
encoder (2 layers, width 128, 4 heads, feed-forward 256, sequence 64) at batch 1. The models
are exported by PyTorch (``torch.onnx.export``), so these rows need torch and onnxruntime.

Import rows (ms): ``pyburn.onnx.load`` of a 105 MB model (25 float32 1024x1024 MatMul
weights, written by pyburn's own ONNX writer) next to creating an onnxruntime session for it,
and ``pyburn onnx convert`` of it (Python source + safetensors) on its own.
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from typing import Any

import pyburn

from . import peers
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

TARGET = Target("ratio", at_least=True, bound=0.5)


def _torch_models(torch: Any) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    nn = torch.nn
    cnn = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
    layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0,
                                       batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return {
        "CNN batch 1": (cnn, (torch.randn(1, 1, 28, 28),)),
        "CNN batch 64": (cnn, (torch.randn(64, 1, 28, 28),)),
        "transformer encoder batch 1, seq 64": (encoder, (torch.randn(1, 64, 128),)),
    }


def _inference_rows(settings: Settings, torch: Any, ort: Any) -> list[Row]:
    rows = []
    torch.manual_seed(0)
    label = peers.label("onnxruntime")
    for case, (model, inputs) in _torch_models(torch).items():
        model.eval()
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, inputs, buffer, dynamo=False, opset_version=17)
        data = buffer.getvalue()
        ours = pyburn.onnx.load(data, device="cpu")
        session = ort.InferenceSession(data, _quiet_options(ort),
                                       providers=["CPUExecutionProvider"])
        feed = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
        args = [pyburn.from_numpy(x.numpy(), device="cpu") for x in inputs]
        times = measure({"pyburn": lambda m=ours, a=args: m(*a).numpy(),
                         "peer": lambda s=session, f=feed: s.run(None, f)}, settings)
        rows.append(Row.compare("onnx.cpu", case, "ms", lambda s: s * 1e3, times, "peer",
                                label, TARGET, settings.quick))
    return rows


def _quiet_options(ort: Any) -> Any:
    """onnxruntime's session options: the thread count numpy's BLAS has, and the worker
    threads' spin-waiting off (by default they keep spinning after each run, which would
    slow the interleaved pyburn runs down)."""
    options = ort.SessionOptions()
    # as many threads as numpy's BLAS gets (OPENBLAS_NUM_THREADS), else its default
    options.intra_op_num_threads = int(os.environ.get("OPENBLAS_NUM_THREADS", "0") or 0)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def _big_model(layers: int, width: int) -> Any:
    from pyburn.onnx import ir  # import time: pyburn.onnx (95 ms) loads for this family only

    pyburn.manual_seed(0)
    nodes, inits = [], {}
    for i in range(layers):
        weight = pyburn.randn(width, width, device="cpu") * (1 / width ** 0.5)
        inits[f"w{i}"] = ir.TensorData(f"w{i}", "float32", (width, width), weight.to_bytes())
        nodes.append(ir.Node("MatMul", [f"h{i}" if i else "x", f"w{i}"], [f"h{i + 1}"]))
    graph = ir.Graph(nodes, [ir.ValueInfo("x", "float32", ("n", width))],
                     [ir.ValueInfo(f"h{layers}", "float32", ("n", width))], inits)
    return ir.Model(graph, {"": 17}, ir_version=8)


def _import_rows(settings: Settings, ort: Any | None) -> list[Row]:
    # import time: pyburn.onnx's reader and code generator (95 ms) load for this family only
    from pyburn.onnx import proto
    from pyburn.onnx.codegen import convert

    layers, width = (4, 64) if settings.quick else (25, 1024)
    size = layers * width * width * 4 / 1e6
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "big.onnx")
        proto.save_model(_big_model(layers, width), path)
        candidates = {"pyburn": lambda: pyburn.onnx.load(path, device="cpu")}
        if ort is not None:
            candidates["peer"] = lambda: ort.InferenceSession(
                path, providers=["CPUExecutionProvider"])
        times = measure(candidates, settings)
        rows.append(Row.compare("onnx.cpu", f"load a {size:.0f} MB model", "ms",
                                lambda s: s * 1e3, times, "peer",
                                peers.label("onnxruntime") + " session", None, settings.quick))
        out = os.path.join(folder, "out")
        times = measure({"pyburn": lambda: convert(path, out)}, settings)
        rows.append(Row.compare("onnx.cpu", f"convert a {size:.0f} MB model to Python", "ms",
                                lambda s: s * 1e3, times, "peer", "no peer", None,
                                settings.quick))
    return rows


def measure_cpu(settings: Settings) -> list[Row]:
    """Imported models' inference against onnxruntime, and import/convert times."""
    import pyburn.onnx  # noqa: F401  (import time: pyburn.onnx loads for this family only)

    torch, ort = peers.load("torch"), peers.load("onnxruntime")
    rows = _inference_rows(settings, torch, ort) if torch and ort else []
    return rows + _import_rows(settings, ort)


BENCHMARKS = (
    Benchmark("onnx", "cpu", "imported ONNX CNN/transformer vs onnxruntime; load and convert "
              "a 105 MB model", measure_cpu),
)
